/* holds.c — lock hold intervals and their overlap (see holds.h).
 *
 * The overlap is one sweep over the holds' grants and releases in time
 * order. Beside the holders' count it keeps the number of clashing pairs
 * among the active holds (another owner's, ranges meeting, one of the two
 * exclusive): a hold that comes or goes changes it by the active holds it
 * clashes with, which counting trees over byte-range positions give in
 * O(log n): the active holds that start before its end, less those that
 * end at or before its start; less the clashes with its own owner's active
 * holds, which are few (a client holds one lock at a time). Time with a
 * pair or more is exclusive_clash. */
#include "holds.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "holds_index.h"
#include "holds_waits.h"

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

/* Counts of the active holds by position (a Fenwick tree): how many lie
 * below a position, in O(log n). */
struct counts {
    size_t n;
    size_t *c; /* [n + 1], 1-based */
};

static void counts_add(struct counts *k, size_t pos, int delta)
{
    for (size_t i = pos + 1; i <= k->n; i += i & -i)
        k->c[i] += (size_t)delta;
}

static size_t counts_below(const struct counts *k, size_t pos)
{
    size_t sum = 0;
    for (size_t i = pos; i > 0; i -= i & -i)
        sum += k->c[i];
    return sum;
}

/* The active holds of one kind (every one, or the exclusive ones) by where
 * their ranges start and end. */
struct tally {
    struct counts starts, ends;
};

/* The state of the sweep: the active holds in tallies, and in a list per
 * owner (next/prev by hold, head by owner; SIZE_MAX ends a list). */
struct sweep {
    const struct hold *h;
    const struct holds_index *ix;
    struct tally all, exclusive;
    size_t *next, *prev, *head;
    uint64_t pairs; /* active pairs that clash */
};

static void tally_add(struct tally *t, const struct holds_index *ix, size_t i, int delta)
{
    counts_add(&t->starts, ix->from[i], delta);
    counts_add(&t->ends, ix->to[i], delta);
}

/* Active holds of t whose ranges meet hold i's (not empty): those that
 * start before its end, less those that end at or before its start. */
static size_t tally_meet(const struct tally *t, const struct holds_index *ix, size_t i)
{
    return counts_below(&t->starts, ix->to[i]) - counts_below(&t->ends, ix->from[i] + 1);
}

/* The active holds (i not among them) that clash with hold i. */
static uint64_t sweep_clashes(const struct sweep *s, size_t i)
{
    const struct holds_index *ix = s->ix;
    if (ix->from[i] == ix->to[i])
        return 0;
    bool excl = s->h[i].exclusive != 0;
    uint64_t n = tally_meet(excl ? &s->all : &s->exclusive, ix, i);
    for (size_t j = s->head[ix->owner[i]]; j != SIZE_MAX; j = s->next[j])
        n -= (excl || s->h[j].exclusive) && holds_index_meet(ix, i, j);
    return n;
}

static void sweep_enter(struct sweep *s, size_t i)
{
    s->pairs += sweep_clashes(s, i);
    tally_add(&s->all, s->ix, i, +1);
    if (s->h[i].exclusive)
        tally_add(&s->exclusive, s->ix, i, +1);
    size_t *head = &s->head[s->ix->owner[i]];
    s->next[i] = *head;
    s->prev[i] = SIZE_MAX;
    if (*head != SIZE_MAX)
        s->prev[*head] = i;
    *head = i;
}

static void sweep_leave(struct sweep *s, size_t i)
{
    tally_add(&s->all, s->ix, i, -1);
    if (s->h[i].exclusive)
        tally_add(&s->exclusive, s->ix, i, -1);
    if (s->prev[i] != SIZE_MAX)
        s->next[s->prev[i]] = s->next[i];
    else
        s->head[s->ix->owner[i]] = s->next[i];
    if (s->next[i] != SIZE_MAX)
        s->prev[s->next[i]] = s->prev[i];
    s->pairs -= sweep_clashes(s, i);
}

/* The grants and releases, each hold shrunk by the clock slack at both
 * ends (a hold no longer than it is left out), in time order; m: how many. */
static struct event *holds_events(const struct hold *h, size_t n, double slack, size_t *m)
{
    struct event *ev = malloc(n ? 2 * n * sizeof *ev : 1);
    *m = 0;
    for (size_t i = 0; ev && i < n; i++) {
        double a = h[i].granted + slack / 2, b = h[i].released - slack / 2;
        if (b <= a)
            continue;
        ev[(*m)++] = (struct event){a, +1, i};
        ev[(*m)++] = (struct event){b, -1, i};
    }
    if (ev)
        qsort(ev, *m, sizeof *ev, event_cmp);
    return ev;
}

static int sweep_run(struct sweep *s, const struct event *ev, size_t m, struct holds_overlap *out)
{
    size_t nactive = 0;
    for (size_t i = 0; i < m; i++) {
        if (holds_stopped(i))
            return -EINTR;
        if (i > 0) {
            double span = ev[i].t - ev[i - 1].t;
            if (nactive >= 2)
                out->together += span;
            if (s->pairs > 0)
                out->exclusive_clash += span;
        }
        if (ev[i].delta > 0) {
            sweep_enter(s, ev[i].hold);
            nactive++;
        } else {
            sweep_leave(s, ev[i].hold);
            nactive--;
        }
        if ((int)nactive > out->max_holders)
            out->max_holders = (int)nactive;
    }
    return 0;
}

/* together, exclusive_clash and max_holders of out. */
static int holds_clash(const struct hold *h, size_t n, const struct holds_index *ix, double slack,
                       struct holds_overlap *out)
{
    size_t m, npos = ix->npos + 1, each = n ? n : 1;
    struct event *ev = holds_events(h, n, slack, &m);
    struct sweep s = {.h = h, .ix = ix};
    s.all.starts = s.all.ends = s.exclusive.starts = s.exclusive.ends = (struct counts){npos, NULL};
    s.all.starts.c = calloc(npos + 1, sizeof(size_t));
    s.all.ends.c = calloc(npos + 1, sizeof(size_t));
    s.exclusive.starts.c = calloc(npos + 1, sizeof(size_t));
    s.exclusive.ends.c = calloc(npos + 1, sizeof(size_t));
    s.next = malloc(each * sizeof(size_t));
    s.prev = malloc(each * sizeof(size_t));
    s.head = malloc(each * sizeof(size_t));
    int rc = -ENOMEM;
    if (ev && s.all.starts.c && s.all.ends.c && s.exclusive.starts.c && s.exclusive.ends.c &&
        s.next && s.prev && s.head) {
        for (size_t i = 0; i < n; i++)
            s.head[i] = SIZE_MAX;
        rc = sweep_run(&s, ev, m, out);
    }
    free(ev);
    free(s.all.starts.c);
    free(s.all.ends.c);
    free(s.exclusive.starts.c);
    free(s.exclusive.ends.c);
    free(s.next);
    free(s.prev);
    free(s.head);
    return rc;
}

int holds_overlap(const struct hold *h, size_t n, double slack, struct holds_overlap *out)
{
    *out = (struct holds_overlap){0};
    for (size_t i = 0; i < n; i++)
        out->wait_seconds += h[i].granted > h[i].asked ? h[i].granted - h[i].asked : 0;
    struct holds_index ix;
    int rc = holds_index_build(&ix, h, n);
    if (rc == 0)
        rc = holds_clash(h, n, &ix, slack, out);
    if (rc == 0)
        rc = holds_waits(h, n, &ix, slack, &out->waited);
    holds_index_free(&ix);
    if (rc < 0) /* only the waits' sum is whole */
        *out = (struct holds_overlap){.wait_seconds = out->wait_seconds};
    out->complete = rc == 0;
    return rc;
}
