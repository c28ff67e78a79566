/* test_hist.c — unit tests for hist.c: bucket index and bounds are exact
 * inverses, buckets are narrow enough, merging equals adding, and
 * quantiles land where they should. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hist.h"

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static void check_inverse(uint64_t v)
{
    int i = hist_bucket_index(v);
    if (i < 0 || i >= HIST_BUCKETS)
        fail_msg("value %llu: index %d out of range", (unsigned long long)v, i);
    uint64_t lo = hist_bucket_lower(i), hi = hist_bucket_upper(i);
    if (!(lo <= v && v < hi))
        fail_msg("value %llu in bucket %d [%llu, %llu)", (unsigned long long)v, i,
                 (unsigned long long)lo, (unsigned long long)hi);
    /* width at most 1/16 of the lower bound (exact below 16) */
    if (v < 16)
        assert_true(hi - lo == 1);
    else
        assert_true((hi - lo) * 16 <= lo);
}

static void test_small_values(void **state)
{
    (void)state;
    for (uint64_t v = 0; v < 16; v++)
        assert_int_equal(hist_bucket_index(v), (int)v);
    for (uint64_t v = 0; v < 4096; v++)
        check_inverse(v);
    assert_int_equal(hist_bucket_index(16), 16);
    assert_int_equal(hist_bucket_index(31), 31);
    assert_int_equal(hist_bucket_index(32), 32);
    assert_int_equal(hist_bucket_index(33), 32); /* width 2 from 32 */
    assert_int_equal(hist_bucket_index(34), 33);
}

static void test_random_values(void **state)
{
    (void)state;
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 1000000; i++) {
        uint64_t r = rng_next(&s);
        check_inverse(r >> (22 + r % 42)); /* all magnitudes below 2^42 */
    }
    for (int b = 4; b < 42; b++) { /* around every power of two */
        uint64_t p = UINT64_C(1) << b;
        check_inverse(p - 1);
        check_inverse(p);
        check_inverse(p + 1);
    }
}

static void test_bounds_consistent(void **state)
{
    (void)state;
    /* Buckets tile [0, 2^42) without gaps, in order. */
    assert_int_equal(hist_bucket_lower(0), 0);
    for (int i = 0; i < HIST_BUCKETS; i++) {
        uint64_t lo = hist_bucket_lower(i), hi = hist_bucket_upper(i);
        assert_true(lo < hi);
        assert_int_equal(hist_bucket_index(lo), i);
        assert_int_equal(hist_bucket_index(hi - 1), i);
        if (i + 1 < HIST_BUCKETS)
            assert_true(hi == hist_bucket_lower(i + 1));
    }
    assert_true(hist_bucket_upper(HIST_BUCKETS - 1) == UINT64_C(1) << HIST_MAX_BITS);
}

static void test_monotonic_and_clamp(void **state)
{
    (void)state;
    int prev = -1;
    for (uint64_t v = 0; v < (UINT64_C(1) << 42); v = v < 64 ? v + 1 : v + v / 7) {
        int i = hist_bucket_index(v);
        assert_true(i >= prev);
        prev = i;
    }
    assert_int_equal(hist_bucket_index((UINT64_C(1) << 42) - 1), HIST_BUCKETS - 1);
    assert_int_equal(hist_bucket_index(UINT64_C(1) << 42), HIST_BUCKETS - 1);
    assert_int_equal(hist_bucket_index(UINT64_C(1) << 50), HIST_BUCKETS - 1);
    assert_int_equal(hist_bucket_index(UINT64_MAX), HIST_BUCKETS - 1);
    struct hist h;
    memset(&h, 0, sizeof(h));
    hist_add(&h, UINT64_MAX);
    assert_int_equal(h.counts[HIST_BUCKETS - 1], 1);
}

static void test_merge(void **state)
{
    (void)state;
    struct hist *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b)),
                *all = calloc(1, sizeof(*all));
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(all);
    uint64_t s = 12345;
    for (int i = 0; i < 100000; i++) {
        uint64_t v = rng_next(&s) >> (20 + i % 44);
        hist_add(i % 3 ? a : b, v);
        hist_add(all, v);
    }
    assert_int_equal(hist_count(a) + hist_count(b), 100000);
    hist_merge(a, b);
    assert_memory_equal(a->counts, all->counts, sizeof(all->counts));
    assert_int_equal(hist_count(a), 100000);
    free(a);
    free(b);
    free(all);
}

static void test_quantiles(void **state)
{
    (void)state;
    struct hist h;
    memset(&h, 0, sizeof(h));
    assert_int_equal(hist_quantile(&h, 0.5), 0);
    assert_int_equal(hist_count(&h), 0);

    for (uint64_t us = 1; us <= 1000; us++)
        hist_add(&h, us * 1000);
    assert_int_equal(hist_count(&h), 1000);
    struct {
        double q;
        uint64_t exact;
    } cases[] = {{0.5, 500000}, {0.9, 900000},  {0.99, 990000},
                 {0.001, 1000}, {1.0, 1000000}, {0.0, 1000}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint64_t got = hist_quantile(&h, cases[i].q), want = cases[i].exact;
        /* the bucket upper bound: above the sample, by at most 6.25 % */
        if (!(got > want && (double)got <= want * 1.0625))
            fail_msg("q=%g: %llu, sample %llu", cases[i].q, (unsigned long long)got,
                     (unsigned long long)want);
    }
    /* q = 1 is the highest non-empty bucket's upper bound */
    assert_true(hist_quantile(&h, 1.0) == hist_bucket_upper(hist_bucket_index(1000000)));
    /* out-of-range q is clamped */
    assert_true(hist_quantile(&h, 2.0) == hist_quantile(&h, 1.0));
    assert_true(hist_quantile(&h, -1.0) == hist_quantile(&h, 0.0));

    /* Two-valued distribution: the median flips exactly at the count. */
    memset(&h, 0, sizeof(h));
    for (int i = 0; i < 90; i++)
        hist_add(&h, 100);
    for (int i = 0; i < 10; i++)
        hist_add(&h, 10000000);
    assert_true(hist_quantile(&h, 0.9) == hist_bucket_upper(hist_bucket_index(100)));
    assert_true(hist_quantile(&h, 0.91) == hist_bucket_upper(hist_bucket_index(10000000)));
    memset(&h, 0, sizeof(h));
    hist_add(&h, 5);
    assert_int_equal(hist_quantile(&h, 0.5), 6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_values),
        cmocka_unit_test(test_random_values),
        cmocka_unit_test(test_bounds_consistent),
        cmocka_unit_test(test_monotonic_and_clamp),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_quantiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
