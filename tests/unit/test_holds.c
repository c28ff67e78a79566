/* test_holds.c — unit tests for holds.c: the overlap of lock hold
 * intervals on hand-made timelines. Disjoint holds never overlap; shared
 * holds overlap without clashing; an exclusive hold clashes with another
 * rank's hold only where their byte ranges meet (len 0 = to the end of the
 * file) and never with the same owner's (a rank's client); the clock slack shrinks every
 * hold; max_holders is the most holders at one instant (a release and a
 * grant at the same instant do not meet); holds_add grows and holds_free
 * empties. Waits: every grant's wait is summed, and a grant waited only
 * when another rank's conflicting hold, granted before it, outlasted its
 * ask (not a shared hold beside a shared one, not its own rank's, not a
 * range it does not meet, not within the clock slack). Random timelines
 * (thousands, small: ties, touching and nested ranges, whole-file and
 * open-ended ranges, several clients per rank) give exactly what a plain
 * O(n^2) reading of those definitions gives. A stop (the stop check says
 * so) cuts a large check short: complete false, wait_seconds still whole;
 * a small one ends before its first poll. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "holds.h"
#include "signals.h"

#define EPS 1e-9
#define assert_near(a, b) assert_true(fabs((double)(a) - (double)(b)) < EPS)

/* A hold: rank, exclusive, granted, released, start, len (asked when
 * granted: no wait); W: the same, asked at `ask`. */
#define H(rk, excl, t0, t1, from, n)                                                               \
    {                                                                                              \
        .rank = (rk), .exclusive = (excl), .granted = (t0), .released = (t1), .start = (from),     \
        .len = (n), .asked = (t0)                                                                  \
    }
#define W(rk, excl, ask, t0, t1, from, n)                                                          \
    {                                                                                              \
        .rank = (rk), .exclusive = (excl), .granted = (t0), .released = (t1), .start = (from),     \
        .len = (n), .asked = (ask)                                                                 \
    }

static struct holds_overlap overlap(const struct hold *h, size_t n, double slack)
{
    /* Poison the output: holds_overlap must set every field. */
    struct holds_overlap o = {-1.0, -1.0, -1, -1.0, 99, false};
    assert_int_equal(holds_overlap(h, n, slack, &o), 0);
    assert_true(o.complete);
    return o;
}

static void test_none(void **state)
{
    (void)state;
    struct holds_overlap o = overlap(NULL, 0, 0);
    assert_near(o.together, 0);
    assert_near(o.exclusive_clash, 0);
    assert_int_equal(o.max_holders, 0);
}

static void test_single(void **state)
{
    (void)state;
    const struct hold h[] = {H(0, 1, 1.0, 2.0, 0, 0)};
    struct holds_overlap o = overlap(h, 1, 0);
    assert_near(o.together, 0);
    assert_near(o.exclusive_clash, 0);
    assert_int_equal(o.max_holders, 1);
}

/* Holds one after the other, exclusive on the whole file: nothing together. */
static void test_disjoint(void **state)
{
    (void)state;
    const struct hold h[] = {
        H(0, 1, 0.0, 1.0, 0, 0),
        H(1, 1, 2.0, 3.0, 0, 0),
        H(2, 1, 1.5, 1.75, 0, 0),
        H(3, 0, 4.0, 5.0, 0, 0),
    };
    struct holds_overlap o = overlap(h, 4, 0);
    assert_near(o.together, 0);
    assert_near(o.exclusive_clash, 0);
    assert_int_equal(o.max_holders, 1);
}

/* A release and a grant at the same instant: releases go first. */
static void test_back_to_back(void **state)
{
    (void)state;
    const struct hold h[] = {
        H(1, 1, 1.0, 2.0, 0, 0),
        H(0, 1, 0.0, 1.0, 0, 0),
        H(2, 1, 2.0, 3.0, 0, 0),
    };
    struct holds_overlap o = overlap(h, 3, 0);
    assert_near(o.together, 0);
    assert_near(o.exclusive_clash, 0);
    assert_int_equal(o.max_holders, 1);
}

/* Two shared holds on the whole file: together for the overlap, no clash. */
static void test_shared_overlap(void **state)
{
    (void)state;
    const struct hold h[] = {
        H(0, 0, 0.0, 2.0, 0, 0),
        H(1, 0, 1.5, 3.0, 0, 0),
    };
    struct holds_overlap o = overlap(h, 2, 0);
    assert_near(o.together, 0.5);
    assert_near(o.exclusive_clash, 0);
    assert_int_equal(o.max_holders, 2);
}

/* An exclusive hold meeting another rank's shared hold on overlapping byte
 * ranges: clash for exactly the overlap. */
static void test_exclusive_clash(void **state)
{
    (void)state;
    const struct hold h[] = {
        H(0, 1, 0.0, 2.0, 0, 100),
        H(1, 0, 1.25, 3.0, 50, 100),
    };
    struct holds_overlap o = overlap(h, 2, 0);
    assert_near(o.together, 0.75);
    assert_near(o.exclusive_clash, 0.75);
    assert_int_equal(o.max_holders, 2);

    /* Both exclusive, given in the other order: the same. */
    const struct hold g[] = {
        H(1, 1, 1.25, 3.0, 50, 100),
        H(0, 1, 0.0, 2.0, 0, 100),
    };
    o = overlap(g, 2, 0);
    assert_near(o.together, 0.75);
    assert_near(o.exclusive_clash, 0.75);
    assert_int_equal(o.max_holders, 2);
}

/* len 0 runs to the end of the file: it meets any range from its start on. */
static void test_whole_file_meets(void **state)
{
    (void)state;
    const struct hold h[] = {
        H(0, 1, 0.0, 1.0, 0, 0),
        H(1, 0, 0.5, 1.5, 1u << 30, 4096),
    };
    struct holds_overlap o = overlap(h, 2, 0);
    assert_near(o.exclusive_clash, 0.5);
    assert_near(o.together, 0.5);

    /* An open-ended hold from 8192 on does not meet [0, 4096). */
    const struct hold g[] = {
        H(0, 1, 0.0, 1.0, 8192, 0),
        H(1, 1, 0.5, 1.5, 0, 4096),
    };
    o = overlap(g, 2, 0);
    assert_near(o.exclusive_clash, 0);
    assert_near(o.together, 0.5);
}

/* Exclusive holds on disjoint byte ranges (lock_range = block): together,
 * but no clash; ranges that only touch (end == start) do not meet. */
static void test_exclusive_disjoint_ranges(void **state)
{
    (void)state;
    const struct hold h[] = {
        H(0, 1, 0.0, 2.0, 0, 4096),
        H(1, 1, 1.0, 3.0, 4096, 4096),
        H(2, 1, 0.5, 2.5, 8192, 4096),
    };
    struct holds_overlap o = overlap(h, 3, 0);
    assert_near(o.exclusive_clash, 0);
    /* two or more holders from 0.5 to 2.5 */
    assert_near(o.together, 2.0);
    assert_int_equal(o.max_holders, 3);
}

/* The same rank overlapping itself (POSIX locks of one process merge) is
 * never a clash. */
static void test_same_rank_no_clash(void **state)
{
    (void)state;
    const struct hold h[] = {
        H(3, 1, 0.0, 2.0, 0, 0),
        H(3, 1, 1.0, 3.0, 0, 0),
    };
    struct holds_overlap o = overlap(h, 2, 0);
    assert_near(o.exclusive_clash, 0);

    /* ... but another rank's in the middle is, for its own length. */
    const struct hold g[] = {
        H(3, 1, 0.0, 2.0, 0, 0),
        H(3, 1, 1.0, 3.0, 0, 0),
        H(4, 0, 1.5, 1.75, 0, 0),
    };
    o = overlap(g, 3, 0);
    assert_near(o.exclusive_clash, 0.25);
    assert_int_equal(o.max_holders, 3);

    /* Two clients of one rank (clients_per_rank) are two lock owners. */
    struct hold c[] = {
        H(3, 1, 0.0, 2.0, 0, 0),
        H(3, 1, 1.0, 3.0, 0, 0),
    };
    c[1].client = 1;
    o = overlap(c, 2, 0);
    assert_near(o.exclusive_clash, 1.0);
}

/* Shared holds together with an exclusive one: only the time the
 * exclusive hold meets another rank's is a clash. */
static void test_mixed(void **state)
{
    (void)state;
    const struct hold h[] = {
        H(0, 0, 0.0, 4.0, 0, 0),
        H(1, 0, 1.0, 3.0, 0, 0),
        H(2, 1, 2.5, 5.0, 0, 0),
    };
    struct holds_overlap o = overlap(h, 3, 0);
    /* 1..4 two or more holders (1..2.5 two shared, 2.5..3 three, 3..4 two) */
    assert_near(o.together, 3.0);
    /* exclusive rank 2 meets rank 0 from 2.5 to 4 */
    assert_near(o.exclusive_clash, 1.5);
    assert_int_equal(o.max_holders, 3);

    /* Two shared holds on one range while an exclusive one holds another:
     * the shared pair is no clash, the exclusive one meets neither. */
    const struct hold g[] = {
        H(0, 0, 0.0, 2.0, 0, 100),
        H(1, 0, 0.0, 2.0, 50, 100),
        H(2, 1, 0.0, 2.0, 200, 100),
    };
    o = overlap(g, 3, 0);
    assert_near(o.together, 2.0);
    assert_near(o.exclusive_clash, 0);
    assert_int_equal(o.max_holders, 3);
}

/* slack shrinks each hold by slack/2 at both ends: overlaps shrink by
 * slack, those shorter than slack vanish, and so do holds shorter than it. */
static void test_slack(void **state)
{
    (void)state;
    const struct hold h[] = {
        H(0, 1, 0.0, 1.0, 0, 0),
        H(1, 1, 0.75, 2.0, 0, 0),
    };
    struct holds_overlap o = overlap(h, 2, 0);
    assert_near(o.together, 0.25);
    assert_near(o.exclusive_clash, 0.25);
    assert_int_equal(o.max_holders, 2);

    o = overlap(h, 2, 0.125);
    assert_near(o.together, 0.125);
    assert_near(o.exclusive_clash, 0.125);
    assert_int_equal(o.max_holders, 2);

    o = overlap(h, 2, 0.25); /* they just touch */
    assert_near(o.together, 0);
    assert_near(o.exclusive_clash, 0);
    assert_int_equal(o.max_holders, 1);

    o = overlap(h, 2, 0.5);
    assert_near(o.together, 0);
    assert_near(o.exclusive_clash, 0);
    assert_int_equal(o.max_holders, 1);

    /* A hold no longer than the slack is gone entirely. */
    const struct hold g[] = {H(0, 1, 0.0, 0.25, 0, 0)};
    o = overlap(g, 1, 0.25);
    assert_int_equal(o.max_holders, 0);
    assert_near(o.together, 0);
}

/* max_holders: the most at one instant, whatever the order given. */
static void test_max_holders(void **state)
{
    (void)state;
    const struct hold h[] = {
        H(4, 0, 10.0, 11.0, 0, 0), H(0, 0, 0.0, 3.0, 0, 0), H(1, 0, 1.0, 4.0, 0, 0),
        H(2, 0, 2.0, 5.0, 0, 0),   H(3, 0, 3.0, 6.0, 0, 0), /* granted as rank 0 releases */
        H(5, 0, 10.5, 12.0, 0, 0),
    };
    struct holds_overlap o = overlap(h, 6, 0);
    assert_int_equal(o.max_holders, 3);
    /* 1..5 and 10.5..11 */
    assert_near(o.together, 4.5);
    assert_near(o.exclusive_clash, 0);
}

static void test_add_free(void **state)
{
    (void)state;
    struct holds hs = {0};
    for (int i = 0; i < 1000; i++)
        holds_add(&hs, i % 7, i % 2, (double)i - 0.25, (double)i, (double)i + 0.5, (uint64_t)i * 10,
                  10);
    assert_int_equal(hs.n, 1000);
    assert_true(hs.cap >= 1000);
    assert_int_equal(hs.v[999].rank, 999 % 7);
    assert_int_equal(hs.v[999].exclusive, 1);
    assert_near(hs.v[999].asked, 998.75);
    assert_near(hs.v[999].granted, 999.0);
    assert_near(hs.v[999].released, 999.5);
    assert_int_equal(hs.v[999].start, 9990);
    assert_int_equal(hs.v[999].len, 10);
    assert_int_equal(hs.v[0].exclusive, 0);
    struct holds_overlap o = overlap(hs.v, hs.n, 0);
    assert_int_equal(o.max_holders, 1);
    assert_near(o.together, 0);
    holds_free(&hs);
    assert_null(hs.v);
    assert_int_equal(hs.n, 0);
    assert_int_equal(hs.cap, 0);
    holds_free(&hs); /* twice is harmless */
}

/* Three ranks queue for one exclusive whole-file lock: rank 1 asks at 1.5
 * while rank 0 holds it (1-2), rank 2 asks at 2.2 while rank 1 holds it
 * (2-3): both waited; rank 0 did not. Shared holds beside each other,
 * the same rank's own hold, ranges that do not meet and a release within
 * the slack keep nobody waiting. */
static void test_waits(void **state)
{
    (void)state;
    const struct hold queue[] = {W(0, 1, 1.0, 1.0, 2.0, 0, 0), W(1, 1, 1.5, 2.0, 3.0, 0, 0),
                                 W(2, 1, 2.2, 3.0, 4.0, 0, 0)};
    struct holds_overlap o = overlap(queue, 3, 0);
    assert_int_equal(o.waited, 2);
    assert_near(o.wait_seconds, 0.5 + 0.8);
    const struct hold free_[] = {
        W(0, 0, 1.0, 1.0, 2.0, 0, 0),    W(1, 0, 1.5, 1.5, 2.5, 0, 0),      /* shared, shared */
        W(2, 1, 5.0, 5.0, 6.0, 0, 0),    W(2, 1, 5.5, 6.0, 7.0, 0, 0),      /* its own rank's */
        W(3, 1, 8.0, 8.0, 9.0, 0, 100),  W(4, 1, 8.5, 8.6, 9.5, 100, 100),  /* apart */
        W(5, 1, 10.0, 10.0, 11.0, 0, 0), W(6, 1, 10.995, 11.0, 12.0, 0, 0), /* slack */
    };
    o = overlap(free_, 8, 0.01);
    assert_int_equal(o.waited, 0);
    assert_near(o.wait_seconds, 0.5 + 0.1 + 0.005);
    o = overlap(free_, 8, 0);
    assert_int_equal(o.waited, 1); /* without slack, the last one waited */
}

/* ---- the same figures read off the definitions, pair by pair ---- */

static uint64_t oracle_end(const struct hold *h)
{
    return h->len && h->len <= UINT64_MAX - h->start ? h->start + h->len : UINT64_MAX;
}

static bool oracle_meet(const struct hold *a, const struct hold *b)
{
    return a->start < oracle_end(b) && b->start < oracle_end(a);
}

static bool oracle_other_owner(const struct hold *a, const struct hold *b)
{
    return a->rank != b->rank || a->client != b->client;
}

/* Whether hold i, shrunk by the slack, holds at instant t. */
static bool oracle_holds_at(const struct hold *h, double slack, double t)
{
    double a = h->granted + slack / 2, b = h->released - slack / 2;
    return b > a && a < t && t < b;
}

static int by_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Between each two successive grant or release instants, who holds (at
 * the midpoint): two or more, and an exclusive hold meeting another
 * owner's. */
static struct holds_overlap oracle(const struct hold *h, size_t n, double slack)
{
    struct holds_overlap o = {.complete = true};
    double *t = malloc((2 * n + 1) * sizeof *t);
    assert_non_null(t);
    for (size_t i = 0; i < n; i++) {
        t[2 * i] = h[i].granted + slack / 2;
        t[2 * i + 1] = h[i].released - slack / 2;
    }
    qsort(t, 2 * n, sizeof *t, by_double);
    for (size_t k = 0; k + 1 < 2 * n; k++) {
        double mid = (t[k] + t[k + 1]) / 2;
        int holders = 0;
        bool clash = false;
        for (size_t i = 0; i < n; i++) {
            if (!oracle_holds_at(&h[i], slack, mid))
                continue;
            holders++;
            for (size_t j = 0; j < n; j++)
                clash |= j != i && h[i].exclusive && oracle_holds_at(&h[j], slack, mid) &&
                         oracle_other_owner(&h[i], &h[j]) && oracle_meet(&h[i], &h[j]);
        }
        o.max_holders = holders > o.max_holders ? holders : o.max_holders;
        o.together += holders >= 2 ? t[k + 1] - t[k] : 0;
        o.exclusive_clash += clash ? t[k + 1] - t[k] : 0;
    }
    for (size_t g = 0; g < n; g++) {
        o.wait_seconds += h[g].granted > h[g].asked ? h[g].granted - h[g].asked : 0;
        for (size_t j = 0; j < n; j++)
            if (oracle_other_owner(&h[g], &h[j]) && (h[g].exclusive || h[j].exclusive) &&
                oracle_meet(&h[g], &h[j]) && h[j].granted < h[g].granted &&
                h[j].released > h[g].asked + slack) {
                o.waited++;
                break;
            }
    }
    free(t);
    return o;
}

/* A start offset: mostly a few small ones, so that ranges nest, touch
 * and coincide; now and then one near the end of the offsets. */
static uint64_t random_start(void)
{
    static const uint64_t far[] = {UINT64_MAX, UINT64_MAX - 1, UINT64_MAX - 4};
    return rand() % 16 ? (uint64_t)(rand() % 8) : far[rand() % 3];
}

/* A length: 0 (to the end of the file) or 1 to 4, and now and then one
 * that would run past 2^64. */
static uint64_t random_len(void)
{
    return rand() % 16 ? (uint64_t)(rand() % 5) : UINT64_MAX - 1;
}

/* n random holds on a grid of quarter seconds (exact sums, many ties). */
static void random_holds(struct hold *h, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double asked = (rand() % 40) / 4.0, granted = asked + (rand() % 3) / 4.0;
        h[i] = (struct hold){.rank = rand() % 3,
                             .client = rand() % 2,
                             .exclusive = rand() % 2,
                             .asked = asked,
                             .granted = granted,
                             .released = granted + (rand() % 9) / 4.0,
                             .start = random_start(),
                             .len = random_len()};
    }
}

static void test_random_against_oracle(void **state)
{
    (void)state;
    static const double slacks[] = {0, 0.25, 0.5};
    srand(61);
    struct hold h[24];
    for (int round = 0; round < 4000; round++) {
        size_t n = 1 + (size_t)(rand() % 24);
        random_holds(h, n);
        double slack = slacks[round % 3];
        struct holds_overlap got = overlap(h, n, slack), want = oracle(h, n, slack);
        if (got.max_holders != want.max_holders || got.waited != want.waited ||
            fabs(got.together - want.together) > EPS ||
            fabs(got.exclusive_clash - want.exclusive_clash) > EPS ||
            fabs(got.wait_seconds - want.wait_seconds) > EPS)
            fail_msg("round %d (n %zu, slack %g): got together %g clash %g max %d waited %llu, "
                     "want %g %g %d %llu",
                     round, n, slack, got.together, got.exclusive_clash, got.max_holders,
                     (unsigned long long)got.waited, want.together, want.exclusive_clash,
                     want.max_holders, (unsigned long long)want.waited);
    }
}

/* ---- a stop ---- */

static int stop_calls;

static bool stop_now(void *arg)
{
    (void)arg;
    stop_calls++;
    return true;
}

/* n holds of n clients, each on a block of its own, all at once. */
static struct hold *many_holds(size_t n)
{
    struct hold *h = calloc(n, sizeof *h);
    assert_non_null(h);
    for (size_t i = 0; i < n; i++)
        h[i] = (struct hold){.rank = (int32_t)(i / 100),
                             .client = (int32_t)(i % 100),
                             .exclusive = 1,
                             .asked = 0.0,
                             .granted = 0.5,
                             .released = 1.0 + (double)i,
                             .start = 4096 * i,
                             .len = 4096};
    return h;
}

static void test_stop_cuts_short(void **state)
{
    (void)state;
    size_t n = 10000;
    struct hold *h = many_holds(n);
    signals_stop_check(stop_now, NULL);
    stop_calls = 0;
    struct holds_overlap o = {.complete = true, .max_holders = -1};
    assert_int_equal(holds_overlap(h, n, 0, &o), -EINTR);
    assert_false(o.complete);
    assert_int_equal(stop_calls, 1); /* it ended at the first poll */
    assert_near(o.wait_seconds, 0.5 * (double)n);
    assert_int_equal(o.max_holders, 0);
    assert_near(o.together, 0);

    /* Fewer steps than a poll's worth: done before it looks. */
    stop_calls = 0;
    assert_int_equal(holds_overlap(h, 100, 0, &o), 0);
    assert_true(o.complete);
    assert_int_equal(stop_calls, 0);
    assert_int_equal(o.max_holders, 100);
    signals_stop_check(NULL, NULL);

    /* Without a stop, the same 10,000: every one held at once, none
     * clashing (blocks apart), none waiting. */
    o = overlap(h, n, 0);
    assert_int_equal(o.max_holders, (int)n);
    assert_near(o.exclusive_clash, 0);
    assert_int_equal(o.waited, 0);
    free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_none),
        cmocka_unit_test(test_single),
        cmocka_unit_test(test_disjoint),
        cmocka_unit_test(test_back_to_back),
        cmocka_unit_test(test_shared_overlap),
        cmocka_unit_test(test_exclusive_clash),
        cmocka_unit_test(test_whole_file_meets),
        cmocka_unit_test(test_exclusive_disjoint_ranges),
        cmocka_unit_test(test_same_rank_no_clash),
        cmocka_unit_test(test_mixed),
        cmocka_unit_test(test_slack),
        cmocka_unit_test(test_max_holders),
        cmocka_unit_test(test_add_free),
        cmocka_unit_test(test_waits),
        cmocka_unit_test(test_random_against_oracle),
        cmocka_unit_test(test_stop_cuts_short),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
