/* holds.h — lock hold intervals (rank, asked, granted, released on the
 * common clock) and what they show when all ranks' are put together: how
 * long two or more ranks held the lock at once, whether an exclusive hold
 * ever overlapped another (a violation seen from the clock, independent of
 * the token check), and how long and how often ranks waited for a grant
 * while another rank held a conflicting lock. */
#ifndef HERD_HOLDS_H
#define HERD_HOLDS_H

#include <stddef.h>
#include <stdint.h>

struct hold {
    int32_t rank;
    int32_t exclusive; /* 1 exclusive (write) lock, 0 shared (read) lock */
    double granted;    /* common clock, s */
    double released;   /* common clock, s */
    uint64_t start;    /* locked byte range; len 0 = to the end of the file */
    uint64_t len;
    double asked;   /* common clock, s: when the lock call began */
    int32_t client; /* the rank's client that held it (clients_per_rank) */
    int32_t pad;
};

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
};

/* Overlap of n intervals (any order), and their waits. Intervals of
 * different ranks that meet closer than `slack` seconds (the clocks'
 * error) are not counted as overlapping, nor as a reason to wait. */
void holds_overlap(const struct hold *h, size_t n, double slack, struct holds_overlap *out);

#endif
