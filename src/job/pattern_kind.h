/* pattern_kind.h — which data a job asks herd to write (the key
 * pattern): a choice of the job model, which workload/pattern.h turns
 * into bytes. Apart so that the job model needs nothing of the
 * generator. */
#ifndef HERD_PATTERN_KIND_H
#define HERD_PATTERN_KIND_H

enum pattern_kind { PATTERN_RANDOM, PATTERN_ZERO, PATTERN_COMPRESSIBLE };

#endif
