/* progress_count.h — the part of the progress display a workload sees:
 * counting this rank's bytes, from any thread, without MPI (progress.h is
 * the runner's side, which sends and prints). */
#ifndef HERD_PROGRESS_COUNT_H
#define HERD_PROGRESS_COUNT_H

#include <stdint.h>

struct progress;

/* Count bytes done; from any thread. */
void progress_add(struct progress *p, uint64_t bytes);

#endif
