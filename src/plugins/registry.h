/* registry.h — the plug-ins, joined for the job model: the kinds (from
 * workload/workload_kinds.c), the backends' key rows and checks
 * (backend/backend.c lists the backends), the monitor's keys and rules,
 * and the sizes of the workloads' records, in one constant table that
 * job/ reaches through its section (job.h's JOB_REGISTRY), so that
 * job/ names no plug-in. It is defined at compile time: nothing
 * installs it, and nothing can ask job/ before it is there. Every
 * program linked with herdcore links it (CMakeLists.txt requires the
 * symbol); one without it does not link. */
#ifndef HERD_REGISTRY_H
#define HERD_REGISTRY_H

#include "job.h"

extern const struct job_registry registry_table;

#endif
