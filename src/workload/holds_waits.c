/* holds_waits.c — the grants that waited (see holds_waits.h).
 *
 * Going through the holds in grant order, the holds granted before g are
 * in the trees. g's range meets o's when o starts inside g's range or o's
 * range covers g's start: one tree answers the first (a point per hold,
 * looked up over a range of positions), another the second (a range per
 * hold, looked up at a point). Each node keeps the latest release among
 * its holds and the latest among the holds of every other owner than that
 * one's, so the latest release of any owner but g's is at hand. A shared
 * hold is kept waiting by exclusive holds only: the trees come twice,
 * over every hold and over the exclusive ones. */
#include "holds_waits.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

/* The latest release of the holds below a node, and of those not its owner's. */
struct latest {
    double top, other;
    size_t owner; /* top's; SIZE_MAX while empty */
};

static void latest_add(struct latest *l, double released, size_t owner)
{
    if (owner == l->owner) {
        l->top = released > l->top ? released : l->top;
    } else if (released > l->top) {
        l->other = l->top; /* the former top is another owner's, and the latest of them */
        l->top = released;
        l->owner = owner;
    } else {
        l->other = released > l->other ? released : l->other;
    }
}

/* The latest release among the holds of owners other than owner. */
static double latest_for(const struct latest *l, size_t owner)
{
    return owner != l->owner ? l->top : l->other;
}

/* Bottom-up segment trees over npos positions: leaves at npos + p. */
struct trees {
    size_t npos;
    struct latest *starts; /* a hold at its start's leaf and the nodes above it */
    struct latest *covers; /* a hold at the nodes that make up its range */
};

static int trees_init(struct trees *t, size_t npos)
{
    size_t nodes = 2 * npos + 1;
    t->npos = npos;
    t->starts = malloc(nodes * sizeof *t->starts);
    t->covers = malloc(nodes * sizeof *t->covers);
    if (!t->starts || !t->covers)
        return -ENOMEM;
    for (size_t i = 0; i < nodes; i++)
        t->starts[i] = t->covers[i] = (struct latest){-INFINITY, -INFINITY, SIZE_MAX};
    return 0;
}

static void trees_free(struct trees *t)
{
    free(t->starts);
    free(t->covers);
}

static void trees_add(struct trees *t, size_t from, size_t to, double released, size_t owner)
{
    for (size_t p = from + t->npos; p > 0; p >>= 1)
        latest_add(&t->starts[p], released, owner);
    for (size_t l = from + t->npos, r = to + t->npos; l < r; l >>= 1, r >>= 1) {
        if (l & 1)
            latest_add(&t->covers[l++], released, owner);
        if (r & 1)
            latest_add(&t->covers[--r], released, owner);
    }
}

static double max2(double a, double b)
{
    return b > a ? b : a;
}

/* The latest release of another owner's hold that meets [from, to). */
static double trees_latest(const struct trees *t, size_t from, size_t to, size_t owner)
{
    double m = -INFINITY;
    for (size_t p = from + t->npos; p > 0; p >>= 1)
        m = max2(m, latest_for(&t->covers[p], owner));
    for (size_t l = from + t->npos, r = to + t->npos; l < r; l >>= 1, r >>= 1) {
        if (l & 1)
            m = max2(m, latest_for(&t->starts[l++], owner));
        if (r & 1)
            m = max2(m, latest_for(&t->starts[--r], owner));
    }
    return m;
}

static int by_granted(const void *a, const void *b, void *holds)
{
    const struct hold *h = holds;
    double x = h[*(const size_t *)a].granted, y = h[*(const size_t *)b].granted;
    return (x > y) - (x < y);
}

/* The sweep: each group of equal grant times looked up, then added (a
 * hold granted at the same instant kept none of them waiting). */
static int waits_sweep(const struct hold *h, const size_t *order, size_t n,
                       const struct holds_index *ix, double slack, struct trees t[2],
                       uint64_t *waited)
{
    for (size_t k = 0; k < n;) {
        size_t end = k;
        for (; end < n && h[order[end]].granted == h[order[k]].granted; end++) {
            size_t g = order[end];
            if (holds_stopped(end))
                return -EINTR;
            const struct trees *kept_by = &t[h[g].exclusive ? 0 : 1];
            if (ix->from[g] < ix->to[g] &&
                trees_latest(kept_by, ix->from[g], ix->to[g], ix->owner[g]) > h[g].asked + slack)
                (*waited)++;
        }
        for (; k < end; k++) {
            size_t o = order[k];
            if (ix->from[o] == ix->to[o])
                continue; /* an empty range keeps nobody waiting */
            trees_add(&t[0], ix->from[o], ix->to[o], h[o].released, ix->owner[o]);
            if (h[o].exclusive)
                trees_add(&t[1], ix->from[o], ix->to[o], h[o].released, ix->owner[o]);
        }
    }
    return 0;
}

int holds_waits(const struct hold *h, size_t n, const struct holds_index *ix, double slack,
                uint64_t *waited)
{
    *waited = 0;
    struct trees t[2] = {{0}, {0}}; /* every hold; the exclusive ones */
    size_t *order = malloc(n ? n * sizeof *order : 1);
    int rc =
        order && trees_init(&t[0], ix->npos) == 0 && trees_init(&t[1], ix->npos) == 0 ? 0 : -ENOMEM;
    if (rc == 0) {
        for (size_t i = 0; i < n; i++)
            order[i] = i;
        qsort_r(order, n, sizeof *order, by_granted, (void *)h);
        rc = waits_sweep(h, order, n, ix, slack, t, waited);
    }
    trees_free(&t[0]);
    trees_free(&t[1]);
    free(order);
    return rc;
}
