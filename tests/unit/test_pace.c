/* test_pace.c — unit tests for pace.c: the schedule's instants (fixed:
 * exactly 1/rate apart after a seeded offset; Poisson: exponential gaps
 * whose mean and spread are 1/rate), independent of when calls are
 * made, late calls and herd's lag as defined in pace.h. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "pace.h"

static void test_fixed_instants(void **state)
{
    (void)state;
    struct pace p;
    pace_init(&p, 50, PACE_FIXED, 7, 100.0);
    struct pace_call c;
    pace_take(&p, 100.0, &c);
    double first = c.intended;
    assert_true(first > 100.0 && first <= 100.0 + 1.0 / 50);
    for (int i = 1; i < 1000; i++) {
        pace_take(&p, 100.0, &c);
        assert_true(fabs(c.intended - (first + i / 50.0)) < 1e-9);
    }
}

static void test_fixed_offsets_differ_by_seed(void **state)
{
    (void)state;
    double firsts[16];
    for (int s = 0; s < 16; s++) {
        struct pace p;
        struct pace_call c;
        pace_init(&p, 10, PACE_FIXED, (uint64_t)s, 0.0);
        pace_take(&p, 0.0, &c);
        firsts[s] = c.intended;
    }
    int distinct = 0;
    for (int i = 0; i < 16; i++) {
        int same = 0;
        for (int j = 0; j < i; j++)
            same |= fabs(firsts[i] - firsts[j]) < 1e-6;
        distinct += !same;
    }
    assert_true(distinct >= 15); /* clients of one rate do not fire together */
}

static void test_poisson_gaps(void **state)
{
    (void)state;
    struct pace p;
    pace_init(&p, 200, PACE_POISSON, 42, 0.0);
    struct pace_call c;
    double last = 0, sum = 0, sum2 = 0;
    const int n = 200000;
    for (int i = 0; i < n; i++) {
        pace_take(&p, 0.0, &c);
        double gap = c.intended - last;
        assert_true(gap > 0); /* strictly increasing */
        sum += gap;
        sum2 += gap * gap;
        last = c.intended;
    }
    double mean = sum / n, sd = sqrt(sum2 / n - mean * mean);
    /* exponential: mean = sd = 1/rate; 200000 gaps put both within 1 % */
    assert_true(fabs(mean * 200 - 1) < 0.01);
    assert_true(fabs(sd * 200 - 1) < 0.02);
}

static void test_same_seed_same_instants(void **state)
{
    (void)state;
    struct pace a, b;
    pace_init(&a, 33, PACE_POISSON, 9, 5.0);
    pace_init(&b, 33, PACE_POISSON, 9, 5.0);
    for (int i = 0; i < 100; i++) {
        struct pace_call x, y;
        /* when calls are made does not move the instants */
        pace_take(&a, 5.0, &x);
        pace_take(&b, 1e6, &y);
        assert_true(x.intended == y.intended);
    }
}

static void test_late_and_lag(void **state)
{
    (void)state;
    struct pace p;
    pace_init(&p, 10, PACE_FIXED, 1, 0.0);
    struct pace_call c;
    pace_take(&p, 0.0, &c); /* free before its instant: on time */
    assert_false(pace_call_late(&c));
    c.sent = c.intended + 0.002; /* the timer woke 2 ms late */
    assert_true(fabs(pace_lag(&c) - 0.002) < 1e-12);
    pace_take(&p, 10.0, &c); /* free only long after: late, sent when free */
    assert_true(pace_call_late(&c));
    assert_true(c.sent == 10.0);
    c.sent = 10.0005;
    assert_true(fabs(pace_lag(&c) - 0.0005) < 1e-12); /* lag from the ready time */
    c.sent = 9.0;                                     /* never negative */
    assert_true(pace_lag(&c) == 0);
}

static void test_restart(void **state)
{
    (void)state;
    struct pace p;
    pace_init(&p, 4, PACE_FIXED, 3, 0.0);
    struct pace_call c;
    for (int i = 0; i < 10; i++)
        pace_take(&p, 0.0, &c);
    pace_restart(&p, 100.0);
    pace_take(&p, 100.0, &c);
    assert_true(c.intended > 100.0 && c.intended <= 100.25);
}

static void test_due(void **state)
{
    (void)state;
    struct pace p;
    pace_init(&p, 10, PACE_FIXED, 5, 0.0);
    struct pace_call c;
    pace_take(&p, 0.0, &c);
    double first = c.intended;
    /* taken and on time: due up to its instant, not before */
    assert_true(pace_due(&p, first) == 1);
    assert_true(pace_due(&p, first - 1e-6) == 0);
    /* a client 1 s behind has 10 more calls due, taken or not */
    assert_true(pace_due(&p, first + 1.0 + 1e-9) == 11);
    /* Poisson: the same count a walk of the same stream gives */
    struct pace q, walk;
    pace_init(&q, 100, PACE_POISSON, 8, 0.0);
    walk = q;
    uint64_t n = 0;
    for (struct pace_call w; pace_take(&walk, 0.0, &w), w.intended <= 2.0;)
        n++;
    assert_true(pace_due(&q, 2.0) == n);
    /* a restart keeps the old schedule's pending calls due */
    pace_restart(&q, 2.0);
    assert_true(pace_due(&q, 2.0) == n);
}

static void test_no_rate(void **state)
{
    (void)state;
    struct pace p;
    pace_init(&p, 0, PACE_POISSON, 3, 0.0);
    assert_true(p.rate == 0);
    pace_init(&p, -5, PACE_FIXED, 3, 0.0);
    assert_true(p.rate == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_instants), cmocka_unit_test(test_fixed_offsets_differ_by_seed),
        cmocka_unit_test(test_poisson_gaps),   cmocka_unit_test(test_same_seed_same_instants),
        cmocka_unit_test(test_late_and_lag),   cmocka_unit_test(test_restart),
        cmocka_unit_test(test_no_rate),        cmocka_unit_test(test_due),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
