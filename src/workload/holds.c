/* holds.c — lock hold intervals and their overlap (see holds.h). */
#include "holds.h"

#include <stdbool.h>
#include <stdlib.h>

void holds_add(struct holds *h, int rank, int exclusive, double asked, double granted,
               double released, uint64_t start, uint64_t len)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 256;
        struct hold *v = realloc(h->v, cap * sizeof *v);
        if (!v)
            return; /* the counters still hold; only the timeline loses a row */
        h->v = v;
        h->cap = cap;
    }
    h->v[h->n++] = (struct hold){.rank = rank,
                                 .exclusive = exclusive,
                                 .granted = granted,
                                 .released = released,
                                 .start = start,
                                 .len = len,
                                 .asked = asked};
}

void holds_free(struct holds *h)
{
    free(h->v);
    h->v = NULL;
    h->n = h->cap = 0;
}

struct event {
    double t;
    int delta;   /* +1 grant, -1 release */
    size_t hold; /* index of the hold */
};

static int event_cmp(const void *a, const void *b)
{
    const struct event *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->delta - y->delta; /* releases before grants at the same instant */
}

/* The same lock owner: one client of one rank. */
static bool holds_same_owner(const struct hold *a, const struct hold *b)
{
    return a->rank == b->rank && a->client == b->client;
}

static bool ranges_meet(const struct hold *a, const struct hold *b)
{
    uint64_t a_end = a->len ? a->start + a->len : UINT64_MAX;
    uint64_t b_end = b->len ? b->start + b->len : UINT64_MAX;
    return a->start < b_end && b->start < a_end;
}

/* Whether, among the active holds, an exclusive one meets another owner's. */
static bool active_clash(const struct hold *h, const size_t *active, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!h[active[i]].exclusive)
            continue;
        for (size_t j = 0; j < n; j++)
            if (j != i && !holds_same_owner(&h[active[j]], &h[active[i]]) &&
                ranges_meet(&h[active[i]], &h[active[j]]))
                return true;
    }
    return false;
}

static int by_granted(const void *a, const void *b, void *holds)
{
    const struct hold *h = holds;
    double x = h[*(const size_t *)a].granted, y = h[*(const size_t *)b].granted;
    return (x > y) - (x < y);
}

/* Whether o (another rank's) kept g waiting: they conflict, o was granted
 * before g and released after g asked (by more than the slack). */
static bool kept_waiting(const struct hold *g, const struct hold *o, double slack)
{
    return !holds_same_owner(o, g) && (o->exclusive || g->exclusive) && ranges_meet(g, o) &&
           o->granted < g->granted && o->released > g->asked + slack;
}

/* out's wait_seconds and waited. Holds in grant order: a hold that kept g
 * waiting was granted after g->asked - the longest hold, so the scan back
 * from g stops there. */
static void holds_waits(const struct hold *h, size_t n, double slack, struct holds_overlap *out)
{
    size_t *order = malloc(n * sizeof *order + 1);
    double longest = 0;
    for (size_t i = 0; i < n; i++) {
        out->wait_seconds += h[i].granted > h[i].asked ? h[i].granted - h[i].asked : 0;
        longest = h[i].released - h[i].granted > longest ? h[i].released - h[i].granted : longest;
        if (order)
            order[i] = i;
    }
    if (!order)
        return; /* without memory: the waits are summed, the count is not */
    qsort_r(order, n, sizeof *order, by_granted, (void *)h);
    for (size_t k = 0; k < n; k++) {
        const struct hold *g = &h[order[k]];
        for (size_t j = k; j-- > 0 && h[order[j]].granted >= g->asked - longest;)
            if (kept_waiting(g, &h[order[j]], slack)) {
                out->waited++;
                break;
            }
    }
    free(order);
}

void holds_overlap(const struct hold *h, size_t n, double slack, struct holds_overlap *out)
{
    out->together = out->exclusive_clash = 0;
    out->max_holders = 0;
    out->wait_seconds = 0;
    out->waited = 0;
    holds_waits(h, n, slack, out);
    struct event *ev = malloc(2 * n * sizeof *ev + 1);
    size_t *active = malloc(n * sizeof *active + 1);
    if (!ev || !active) {
        free(ev);
        free(active);
        return;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        /* Shrink each hold by the clock slack at both ends. */
        double a = h[i].granted + slack / 2, b = h[i].released - slack / 2;
        if (b <= a)
            continue;
        ev[m++] = (struct event){a, +1, i};
        ev[m++] = (struct event){b, -1, i};
    }
    qsort(ev, m, sizeof *ev, event_cmp);
    size_t nactive = 0, nexclusive = 0;
    for (size_t i = 0; i < m; i++) {
        if (i > 0) {
            double span = ev[i].t - ev[i - 1].t;
            if (nactive >= 2)
                out->together += span;
            if (nactive >= 2 && nexclusive >= 1 && active_clash(h, active, nactive))
                out->exclusive_clash += span;
        }
        const struct hold *x = &h[ev[i].hold];
        if (ev[i].delta > 0) {
            active[nactive++] = ev[i].hold;
            nexclusive += x->exclusive != 0;
        } else {
            for (size_t k = 0; k < nactive; k++)
                if (active[k] == ev[i].hold) {
                    active[k] = active[--nactive];
                    break;
                }
            nexclusive -= x->exclusive != 0;
        }
        if ((int)nactive > out->max_holders)
            out->max_holders = (int)nactive;
    }
    free(ev);
    free(active);
}
