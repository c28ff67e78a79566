/* watchdog.h — notice operations that hang. Workloads mark each backend
 * call in flight (op, path, start); a thread per rank looks every
 * threshold/4 (10 ms to 1 s) and records any call running longer than a
 * threshold: which op, which
 * path, since when, and when (if ever in the phase) it returned. A hard-
 * mounted NFS server that stops answering shows up here, by rank and host,
 * even when the call never returns. */
#ifndef HERD_WATCHDOG_H
#define HERD_WATCHDOG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "errtab.h"
#include "ops.h"

/* The call a rank has in flight; written by the rank, read by its watchdog. */
struct inflight {
    _Atomic int op;
    _Atomic(const char *) path; /* stable for the whole phase */
    _Atomic double since;       /* local monotonic start; 0 = nothing in flight */
};

struct stuck_entry {
    int32_t rank;
    int32_t op;
    int32_t client; /* the rank's client whose call it is */
    int32_t pad;
    double since;    /* common clock: when the call started */
    double noticed;  /* common clock: when the watchdog saw it stuck */
    double returned; /* common clock: when it returned; -1 if not in the phase */
    char path[ERRTAB_PATH_MAX];
};

static inline void inflight_begin(struct inflight *f, enum op op, const char *path, double t)
{
    atomic_store_explicit(&f->op, (int)op, memory_order_relaxed);
    atomic_store_explicit(&f->path, path, memory_order_relaxed);
    atomic_store_explicit(&f->since, t, memory_order_release);
}

static inline void inflight_end(struct inflight *f)
{
    atomic_store_explicit(&f->since, 0.0, memory_order_release);
}

struct watchdog;

/* Start watching f[0 .. nf-1], the calls of a rank's nf clients; calls
 * longer than threshold seconds are recorded and reported on stderr as
 * "herd: rank R on HOST: OP of PATH stuck for Ns" ("rank R client C"
 * when nf > 1). Returns NULL if the thread cannot start (herd then runs
 * unwatched). */
struct watchdog *watchdog_start(struct inflight *f, int nf, const struct clock *clock,
                                double threshold, int rank, const char *host);

/* Stop the thread; hand over what it recorded (caller frees *entries). */
void watchdog_stop(struct watchdog *w, struct stuck_entry **entries, size_t *n);

#endif
