/* holds_index.h — n lock holds indexed once for the overlap sweeps of
 * holds.c and holds_waits.c: each hold's lock owner (one client of one
 * rank) as a small number, and its byte range as positions among the
 * holds' distinct start offsets, [from, to): two ranges meet exactly when
 * their positions do, so trees of at most n leaves can be keyed by them.
 * Also how those sweeps hear a stop. */
#ifndef HERD_HOLDS_INDEX_H
#define HERD_HOLDS_INDEX_H

#include <stdbool.h>
#include <stddef.h>

#include "hold.h"

struct holds_index {
    size_t npos;   /* distinct start offsets: positions 0 .. npos-1 */
    size_t *owner; /* per hold: its owner, 0 .. n-1, the same for the same (rank, client) */
    size_t *from;  /* per hold: the position of its start */
    size_t *to;    /* per hold: how many distinct starts lie before its end; from < to,
                      or from == to for an empty range (it meets none) */
};

/* 0, or -ENOMEM (nothing allocated; holds_index_free is harmless). */
int holds_index_build(struct holds_index *ix, const struct hold *h, size_t n);
void holds_index_free(struct holds_index *ix);

/* Whether holds a and b lock at least one byte in common. */
bool holds_index_meet(const struct holds_index *ix, size_t a, size_t b);

/* The sweeps call this at each step: every HOLDS_POLL_EVERY steps, whether
 * a stop came (signals_stop_requested: a stop signal here or, in a run,
 * any rank's). Cheap enough to keep a sweep of millions of holds within a
 * millisecond of hearing it. */
#define HOLDS_POLL_EVERY 1024
bool holds_stopped(size_t step);

#endif
