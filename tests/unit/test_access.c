/* test_access.c — unit tests for access.c: every order visits each block
 * exactly once for many sizes (around powers of two, the stride and 1),
 * random orders differ by seed and are not sequential, strided passes go
 * in steps of the stride, and rwmix_read's decisions are deterministic and
 * near the asked proportion. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "access.h"

/* Block counts to try: small ones, both sides of powers of two (the
 * Feistel domain) and of multiples of the stride. */
static const uint64_t sizes[] = {
    1,    2,    3,    4,    5,    7,     8,     9,     15,     16,     17,     31,   32,
    33,   63,   64,   65,   100,  127,   128,   129,   255,    256,    257,    1000, 1023,
    1024, 1025, 4095, 4096, 4097, 65535, 65536, 65537, 262143, 262144, 1000003};

/* Visit all n blocks; fails unless each index in [0, n) comes exactly once.
 * Returns how many visits were in place (block == i). */
static uint64_t check_permutation(enum access kind, uint64_t n, uint64_t seed)
{
    struct access_order a;
    assert_int_equal(access_init(&a, kind, n, seed), 0);
    unsigned char *seen = calloc(n, 1);
    assert_non_null(seen);
    uint64_t fixed = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t b = access_block(&a, i);
        if (b >= n)
            fail_msg("kind %d n %llu: visit %llu is block %llu", (int)kind, (unsigned long long)n,
                     (unsigned long long)i, (unsigned long long)b);
        if (seen[b])
            fail_msg("kind %d n %llu: block %llu visited twice", (int)kind, (unsigned long long)n,
                     (unsigned long long)b);
        seen[b] = 1;
        fixed += b == i;
    }
    free(seen); /* n visits, none twice, all in range: each block once */
    return fixed;
}

static void test_sequential(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
        assert_int_equal(check_permutation(ACCESS_SEQUENTIAL, sizes[k], 1), sizes[k]);
}

static void test_random_is_permutation(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
        for (uint64_t seed = 0; seed < 3; seed++) {
            uint64_t n = sizes[k];
            uint64_t fixed = check_permutation(ACCESS_RANDOM, n, access_seed(seed, 42, 0));
            /* A random permutation fixes about one point; sequential order
             * would fix all n. */
            if (n >= 64 && fixed > n / 8)
                fail_msg("n %llu: %llu blocks in place: not shuffled", (unsigned long long)n,
                         (unsigned long long)fixed);
        }
}

static void test_random_depends_on_seed(void **state)
{
    (void)state;
    const uint64_t n = 10000;
    struct access_order a, b, c;
    assert_int_equal(access_init(&a, ACCESS_RANDOM, n, access_seed(1, 7, 0)), 0);
    assert_int_equal(access_init(&b, ACCESS_RANDOM, n, access_seed(1, 7, 0)), 0);
    assert_int_equal(access_init(&c, ACCESS_RANDOM, n, access_seed(1, 7, 1)), 0);
    uint64_t same_ab = 0, same_ac = 0, adjacent = 0;
    for (uint64_t i = 0; i < n; i++) {
        same_ab += access_block(&a, i) == access_block(&b, i);
        same_ac += access_block(&a, i) == access_block(&c, i);
        if (i && access_block(&a, i) == access_block(&a, i - 1) + 1)
            adjacent++;
    }
    assert_int_equal(same_ab, n);    /* deterministic */
    assert_true(same_ac < n / 100);  /* another iteration, another order */
    assert_true(adjacent < n / 100); /* consecutive visits rarely neighbours */
    /* The file key matters too. */
    assert_int_not_equal(access_seed(1, 7, 0), access_seed(1, 8, 0));
    assert_int_not_equal(access_seed(1, 7, 0), access_seed(2, 7, 0));
}

static void test_strided(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
        check_permutation(ACCESS_STRIDED, sizes[k], 0);

    /* 40 blocks: passes 0,16,32 / 1,17,33 / ... / 7,23,39 / 8,24 / ... */
    struct access_order a;
    assert_int_equal(access_init(&a, ACCESS_STRIDED, 40, 0), 0);
    static const uint64_t head[] = {0, 16, 32, 1, 17, 33, 2, 18, 34};
    for (uint64_t i = 0; i < sizeof head / sizeof *head; i++)
        assert_int_equal(access_block(&a, i), head[i]);
    assert_int_equal(access_block(&a, 8 * 3 - 1), 39); /* last of the long passes */
    assert_int_equal(access_block(&a, 8 * 3), 8);
    assert_int_equal(access_block(&a, 8 * 3 + 1), 24);
    assert_int_equal(access_block(&a, 39), 31);
    /* Inside a pass, steps of exactly the stride. */
    for (uint64_t i = 1; i < 40; i++) {
        uint64_t prev = access_block(&a, i - 1), b = access_block(&a, i);
        assert_true(b == prev + ACCESS_STRIDE || b < prev);
    }
    /* Fewer blocks than the stride: S = n, i.e. in order. */
    assert_int_equal(access_init(&a, ACCESS_STRIDED, 5, 0), 0);
    for (uint64_t i = 0; i < 5; i++)
        assert_int_equal(access_block(&a, i), i);
}

static void test_unknown_kind(void **state)
{
    (void)state;
    struct access_order a;
    assert_int_equal(access_init(&a, (enum access)99, 10, 0), -EINVAL);
}

static void test_mix_proportions(void **state)
{
    (void)state;
    const uint64_t n = 100000;
    static const int percents[] = {0, 1, 30, 50, 70, 99, 100};
    for (size_t k = 0; k < sizeof percents / sizeof *percents; k++) {
        int p = percents[k];
        uint64_t reads = 0;
        for (uint64_t b = 0; b < n; b++)
            reads += access_reads(5, 99, 3, 0, b, p);
        double got = 100.0 * (double)reads / (double)n;
        /* Binomial: sd <= 0.16 % at n = 1e5; allow 1 %. 0 and 100 exact. */
        if (got < p - 1.0 || got > p + 1.0 || (p == 0 && reads) || (p == 100 && reads != n))
            fail_msg("rwmix_read %d: %.2f %% of blocks read", p, got);
    }
    /* Deterministic, and another rank or iteration decides differently. */
    uint64_t same = 0, other_rank = 0, other_iter = 0;
    for (uint64_t b = 0; b < 10000; b++) {
        bool x = access_reads(5, 99, 3, 0, b, 50);
        same += x == access_reads(5, 99, 3, 0, b, 50);
        other_rank += x == access_reads(5, 99, 4, 0, b, 50);
        other_iter += x == access_reads(5, 99, 3, 1, b, 50);
    }
    assert_int_equal(same, 10000);
    assert_true(other_rank > 4500 && other_rank < 5500); /* independent: ~half agree */
    assert_true(other_iter > 4500 && other_iter < 5500);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sequential),
        cmocka_unit_test(test_random_is_permutation),
        cmocka_unit_test(test_random_depends_on_seed),
        cmocka_unit_test(test_strided),
        cmocka_unit_test(test_unknown_kind),
        cmocka_unit_test(test_mix_proportions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
