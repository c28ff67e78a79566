/* test_timeheap.c — unit tests for timeheap.c: the top is always the
 * earliest of the times set (checked against a plain scan over many
 * random sets, moves and removals), an id is there at most once, and
 * removing what is not there changes nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "timeheap.h"

/* The earliest id of the plain table (at[i] < 0: not set), -1: none. */
static int scan_earliest(const double *at, int n)
{
    int best = -1;
    for (int i = 0; i < n; i++)
        if (at[i] >= 0 && (best < 0 || at[i] < at[best]))
            best = i;
    return best;
}

static void test_matches_a_scan(void **state)
{
    (void)state;
    enum { N = 257 };
    struct timeheap h;
    assert_int_equal(timeheap_init(&h, N), 0);
    double at[N];
    for (int i = 0; i < N; i++)
        at[i] = -1;
    uint64_t rng = 12345;
    for (int step = 0; step < 200000; step++) {
        rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
        int id = (int)((rng >> 33) % N);
        int what = (int)((rng >> 20) % 4);
        if (what == 3) { /* the earliest one leaves, as a timer that fired */
            double t;
            int top = timeheap_top(&h, &t);
            if (top >= 0) {
                assert_true(t == at[top]);
                timeheap_remove(&h, top);
                at[top] = -1;
            }
        } else if (what == 2) {
            timeheap_remove(&h, id);
            at[id] = -1;
        } else {
            double t = (double)((rng >> 40) % 1000) / 7.0; /* ties happen */
            timeheap_set(&h, id, t);
            at[id] = t;
        }
        double t;
        int top = timeheap_top(&h, &t), want = scan_earliest(at, N);
        if (want < 0) {
            assert_int_equal(top, -1);
        } else {
            assert_true(top >= 0);
            assert_true(t == at[want]); /* a tie may name another id of that time */
            assert_true(at[top] == at[want]);
        }
        int count = 0;
        for (int i = 0; i < N; i++) {
            assert_true(timeheap_has(&h, i) == (at[i] >= 0));
            count += at[i] >= 0;
        }
        assert_int_equal(h.n, count);
    }
    timeheap_free(&h);
}

static void test_bounds_and_absent(void **state)
{
    (void)state;
    struct timeheap h;
    assert_int_equal(timeheap_init(&h, 4), 0);
    double t = 0;
    assert_int_equal(timeheap_top(&h, &t), -1);
    timeheap_remove(&h, 2);   /* not there */
    timeheap_remove(&h, -1);  /* no such id */
    timeheap_set(&h, 4, 1.0); /* past the ids: ignored */
    assert_int_equal(h.n, 0);
    timeheap_set(&h, 1, 5.0);
    timeheap_set(&h, 1, 3.0); /* moved, not added twice */
    assert_int_equal(h.n, 1);
    assert_int_equal(timeheap_top(&h, &t), 1);
    assert_true(t == 3.0);
    timeheap_free(&h);
    assert_int_equal(timeheap_init(&h, 0), 0); /* no ids: an empty heap */
    assert_int_equal(timeheap_top(&h, &t), -1);
    timeheap_free(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches_a_scan),
        cmocka_unit_test(test_bounds_and_absent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
