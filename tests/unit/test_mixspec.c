/* test_mixspec.c — unit tests for mixspec.c: weights to shares, names
 * and their aliases, every malformed text refused with a reason, and the
 * pick's shares over many draws. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mixspec.h"
#include "ops.h"

static void test_parse_and_shares(void **state)
{
    (void)state;
    struct mix_spec s;
    char why[256];
    assert_null(mixspec_parse("getattr:40,lookup:15,read:20,write:10,readdir:5,create:4,"
                              "remove:3,rename:3",
                              &s, why, sizeof why));
    assert_int_equal(s.n, 8);
    assert_int_equal(s.op[6], OP_UNLINK); /* remove: mountstats' name */
    assert_true(fabs(mixspec_share(&s, OP_GETATTR) - 0.4) < 1e-12);
    assert_true(mixspec_share(&s, OP_LOCK) == 0);
    assert_true(s.upto[s.n - 1] == 1.0);
    for (int i = 1; i < s.n; i++)
        assert_true(s.upto[i] > s.upto[i - 1]);
    assert_null(mixspec_parse("commit:2.5,read_file:0.5", &s, why, sizeof why));
    assert_int_equal(s.op[0], OP_FSYNC);
    assert_true(fabs(mixspec_data_share(&s) - 0.5 / 3) < 1e-12);
    assert_false(mixspec_locks(&s));
}

static void test_refused(void **state)
{
    (void)state;
    static const struct {
        const char *text, *words;
    } bad[] = {
        {"", "is not OP:WEIGHT"},
        {"getattr", "is not OP:WEIGHT"},
        {"getattr:", "the weight must be a number above 0"},
        {"getattr:0", "the weight must be a number above 0"},
        {"getattr:-1", "the weight must be a number above 0"},
        {"getattr:1e3", "the weight must be a number above 0"},
        {"open:5", "'open' is not a mix operation"},
        {"connect:5", "'connect' is not a mix operation"},
        {"response:5", "'response' is not a mix operation"},
        {"read:1,read:2", "read appears twice"},
        {"read:1,,write:2", "is not OP:WEIGHT"},
        {"read:1,", "is not OP:WEIGHT"},
        {",read:1", "is not OP:WEIGHT"},
        {":5", "is not OP:WEIGHT"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct mix_spec s;
        char why[256] = "";
        if (!mixspec_parse(bad[i].text, &s, why, sizeof why))
            fail_msg("'%s' accepted", bad[i].text);
        if (!strstr(why, bad[i].words))
            fail_msg("'%s': '%s' lacks '%s'", bad[i].text, why, bad[i].words);
    }
    char long_text[MIXSPEC_TEXT_MAX + 10];
    memset(long_text, 'a', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = '\0';
    struct mix_spec s;
    char why[256];
    assert_non_null(mixspec_parse(long_text, &s, why, sizeof why));
}

static void test_pick_shares(void **state)
{
    (void)state;
    struct mix_spec s;
    char why[256];
    assert_null(mixspec_parse("getattr:50,read:30,write:20", &s, why, sizeof why));
    int counts[3] = {0};
    const int n = 100000;
    for (int i = 0; i < n; i++) {
        int op = mixspec_pick(&s, (i + 0.5) / n); /* evenly spread draws */
        counts[op == OP_GETATTR ? 0 : op == OP_READ ? 1 : 2]++;
    }
    assert_int_equal(counts[0], 50000);
    assert_int_equal(counts[1], 30000);
    assert_int_equal(counts[2], 20000);
    assert_int_equal(mixspec_pick(&s, 0.0), OP_GETATTR);
    assert_int_equal(mixspec_pick(&s, 0.9999999), OP_WRITE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_and_shares),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_pick_shares),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
