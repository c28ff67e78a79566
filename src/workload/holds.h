/* holds.h — lock hold intervals (rank, asked, granted, released on the
 * common clock) and what they show when all ranks' are put together: how
 * long two or more ranks held the lock at once, whether an exclusive hold
 * ever overlapped another (a violation seen from the clock, independent of
 * the token check), and how long and how often ranks waited for a grant
 * while another rank held a conflicting lock. */
#ifndef HERD_HOLDS_H
#define HERD_HOLDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hold.h"

struct holds {
    struct hold *v;
    size_t n, cap;
};

void holds_add(struct holds *h, int rank, int exclusive, double asked, double granted,
               double released, uint64_t start, uint64_t len);
void holds_free(struct holds *h);

struct holds_overlap {
    double together;        /* seconds with two or more holders */
    double exclusive_clash; /* seconds an exclusive hold overlapped another rank's
                               hold on an overlapping byte range */
    int max_holders;        /* most holders at one instant */
    /* Waiting for grants: the seconds from asking to the grant, summed
     * over every grant, and the grants that had to wait: asked while
     * another rank held a conflicting lock (byte ranges meet, one of the
     * two exclusive) that it released only later. */
    double wait_seconds;
    uint64_t waited;
    /* false: a stop or a lack of memory cut the check short; then only
     * wait_seconds is known, the other figures are 0. */
    bool complete;
};

/* Overlap of n intervals (any order), and their waits. Intervals of
 * different ranks that meet closer than `slack` seconds (the clocks'
 * error) are not counted as overlapping, nor as a reason to wait. A sort
 * and a sweep: O(n log n) for holds that hold one lock per owner at a
 * time (100,000 holds in well under a second, bench/holds_overlap.sh).
 * It hears a stop (signals_stop_requested, polled every 1024 steps) and
 * then ends at once. 0; -EINTR when a stop came, -ENOMEM without memory
 * (out->complete false either way). */
int holds_overlap(const struct hold *h, size_t n, double slack, struct holds_overlap *out);

#endif
