/* holds_index.c — owners and byte ranges of lock holds, indexed (see
 * holds_index.h). A range runs from start for len bytes, len 0 to the end
 * of the file; one that would pass 2^64 ends there. */
#include "holds_index.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "signals.h"

static uint64_t hold_end(const struct hold *h)
{
    return h->len && h->len <= UINT64_MAX - h->start ? h->start + h->len : UINT64_MAX;
}

static int by_owner(const void *a, const void *b, void *holds)
{
    const struct hold *h = holds;
    const struct hold *x = &h[*(const size_t *)a], *y = &h[*(const size_t *)b];
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return (x->client > y->client) - (x->client < y->client);
}

static int by_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The first of the n sorted values v at or past x. */
static size_t lower_bound(const uint64_t *v, size_t n, uint64_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Owners numbered in (rank, client) order; order is scratch of n. */
static void index_owners(struct holds_index *ix, const struct hold *h, size_t n, size_t *order)
{
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    qsort_r(order, n, sizeof *order, by_owner, (void *)h);
    size_t id = 0;
    for (size_t k = 0; k < n; k++) {
        if (k > 0 && by_owner(&order[k - 1], &order[k], (void *)h) != 0)
            id++;
        ix->owner[order[k]] = id;
    }
}

int holds_index_build(struct holds_index *ix, const struct hold *h, size_t n)
{
    size_t bytes = n ? n * sizeof(size_t) : 1;
    *ix = (struct holds_index){.owner = malloc(bytes), .from = malloc(bytes), .to = malloc(bytes)};
    uint64_t *starts = malloc(n ? n * sizeof *starts : 1);
    if (!ix->owner || !ix->from || !ix->to || !starts) {
        free(starts);
        holds_index_free(ix);
        return -ENOMEM;
    }
    index_owners(ix, h, n, ix->from); /* from: scratch until filled below */
    for (size_t i = 0; i < n; i++)
        starts[i] = h[i].start;
    qsort(starts, n, sizeof *starts, by_value);
    for (size_t i = 0; i < n; i++)
        if (ix->npos == 0 || starts[ix->npos - 1] != starts[i])
            starts[ix->npos++] = starts[i];
    for (size_t i = 0; i < n; i++) {
        ix->from[i] = lower_bound(starts, ix->npos, h[i].start);
        ix->to[i] = lower_bound(starts, ix->npos, hold_end(&h[i]));
    }
    free(starts);
    return 0;
}

void holds_index_free(struct holds_index *ix)
{
    free(ix->owner);
    free(ix->from);
    free(ix->to);
    *ix = (struct holds_index){0};
}

bool holds_index_meet(const struct holds_index *ix, size_t a, size_t b)
{
    return ix->from[a] < ix->to[b] && ix->from[b] < ix->to[a];
}

bool holds_stopped(size_t step)
{
    return step % HOLDS_POLL_EVERY == HOLDS_POLL_EVERY - 1 && signals_stop_requested();
}
