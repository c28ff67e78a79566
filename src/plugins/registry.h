/* registry.h — the plug-ins, joined for the job model: the backends'
 * key rows and checks (backend/backend.c lists the backends), the
 * monitor's keys and rules, and the sizes of the workloads' records,
 * installed into job/ (job_registry_set) so that job/ names no plug-in.
 * Every program and test that reads a job calls registry_install()
 * first. */
#ifndef HERD_REGISTRY_H
#define HERD_REGISTRY_H

/* Install the registry into job/; idempotent, any thread. */
void registry_install(void);

#endif
