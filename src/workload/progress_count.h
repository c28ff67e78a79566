/* progress_count.h — how a workload reports its progress: a counter of
 * this rank's bytes, callable from any thread, that the runner hands it
 * (phase_ctx.progress). workload/ owns the interface, so a workload needs
 * nothing of the runner's display (core/progress.h implements it). */
#ifndef HERD_PROGRESS_COUNT_H
#define HERD_PROGRESS_COUNT_H

#include <stdint.h>

struct progress_count {
    /* Count bytes done; from any thread. */
    void (*add)(struct progress_count *self, uint64_t bytes);
};

/* Count bytes on c, if there is one. */
static inline void progress_count_add(struct progress_count *c, uint64_t bytes)
{
    if (c)
        c->add(c, bytes);
}

#endif
