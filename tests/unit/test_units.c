/* test_units.c — unit tests for units.c: what sizes and durations parse,
 * what is refused, and that formatted sizes parse back to the same value. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "units.h"

static void check_size(const char *text, uint64_t want)
{
    uint64_t v = 12345;
    if (units_parse_size(text, &v) != 0)
        fail_msg("'%s' refused, want %llu", text, (unsigned long long)want);
    if (v != want)
        fail_msg("'%s' -> %llu, want %llu", text, (unsigned long long)v, (unsigned long long)want);
}

static void check_bad_size(const char *text)
{
    uint64_t v = 777;
    if (units_parse_size(text, &v) == 0)
        fail_msg("'%s' accepted as %llu", text, (unsigned long long)v);
    assert_int_equal(v, 777); /* untouched on error */
}

static void test_size_valid(void **state)
{
    (void)state;
    const uint64_t K = 1024, M = K * K, G = M * K, T = G * K;
    check_size("0", 0);
    check_size("4096", 4096);
    check_size("4096B", 4096);
    check_size("007", 7);
    check_size("16M", 16 * M);
    check_size("16m", 16 * M);
    check_size("16MiB", 16 * M);
    check_size("4k", 4 * K);
    check_size("4K", 4 * K);
    check_size("4KiB", 4 * K);
    check_size("2G", 2 * G);
    check_size("2g", 2 * G);
    check_size("3GiB", 3 * G);
    check_size("1T", T);
    check_size("1t", T);
    check_size("1TiB", T);
    check_size("16KB", 16 * K); /* fio's: KB = KiB */
    check_size("16MB", 16 * M);
    check_size("2gB", 2 * G);
    check_size("1.5M", 3 * M / 2);
    check_size("1.5K", 1536);
    check_size("0.5KiB", 512);
    check_size("2.25G", 9 * G / 4);
    check_size("2.0", 2);
    check_size("0.000244140625M", 256);             /* 2^-12 M */
    check_size("16777215T", 16777215 * T);          /* just fits */
    check_size("18446744073709551615", UINT64_MAX); /* largest plain */
}

static void test_size_invalid(void **state)
{
    (void)state;
    const char *bad[] = {
        "",
        "-1",
        "+1",
        " 1",
        "1 ",
        "16 MiB",
        "1.5",
        "0.1K",
        "1.",
        ".5M",
        "1.5.5M",
        "1.0000000000001M",
        "16777216.5T",
        "16777215.99999999T",
        "16X",
        "16MM",
        "M",
        "B",
        "16Mi",
        "16KiBB",
        "16BB",
        "16MiBx",
        "16mib",
        "0x10",
        "1e3",
        "16777216T",
        "99999999999999999999",
        "18446744073709551616",
        "17179869184G",
        "abc",
        "4096BB",
        "4096b",
        /* hostile values of the fuzz test (test_fuzz.py) */
        "1e30",
        "nan",
        "inf",
        "-0",
        "99999999999999T",
        "16777216TiB",
        "9223372036854775808T",
        "1\nM",
        "1\x01",
        "\xff",
        "0x",
        "1M\n",
        /* no sign and no space, before or after (job.c's integers: the same) */
        "+16M",
        " 16M",
        "16M ",
        "\t16M",
        "16M\t",
        "-0K",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        check_bad_size(bad[i]);
    uint64_t v;
    assert_int_equal(units_parse_size(NULL, &v), -1);
}

static void check_dur(const char *text, double want)
{
    double v = -1;
    if (units_parse_duration(text, &v) != 0)
        fail_msg("'%s' refused, want %g", text, want);
    if (fabs(v - want) > 1e-12 * (want > 1 ? want : 1))
        fail_msg("'%s' -> %.17g, want %.17g", text, v, want);
}

static void test_duration_valid(void **state)
{
    (void)state;
    check_dur("10", 10.0);
    check_dur("0", 0.0);
    check_dur("1.5s", 1.5);
    check_dur("1.5", 1.5);
    check_dur(".5", 0.5);
    check_dur("250ms", 0.25);
    check_dur("10us", 10e-6);
    check_dur("100ns", 100e-9);
    check_dur("2m", 120.0);
    check_dur("1h", 3600.0);
    check_dur("0.5h", 1800.0);
    check_dur("1.25ms", 1.25e-3);
}

static void test_duration_invalid(void **state)
{
    (void)state;
    /* the last six: no sign and no space, before or after */
    const char *bad[] = {"-inf", "1e30", "99999999999999T",
                         "1\n",  "\x01", "",
                         "-1",   "-1s",  "+1",
                         "abc",  "1x",   "1 s",
                         " 1",   "1s ",  ".",
                         "s",    "ms",   "nan",
                         "inf",  "NaN",  "1e3",
                         "0x10", "1..2", "1.2.3",
                         "1msx", "1min", "1S",
                         "-0s",  "+1s",  " 1s",
                         "1 ",   "\t1",  "1\t"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        double v = 42;
        if (units_parse_duration(bad[i], &v) == 0)
            fail_msg("'%s' accepted as %g", bad[i], v);
        assert_true(v == 42);
    }
    /* Too many digits to be finite. */
    char huge[400];
    memset(huge, '9', sizeof(huge) - 1);
    huge[sizeof(huge) - 1] = '\0';
    double v;
    assert_int_equal(units_parse_duration(huge, &v), -1);
    assert_int_equal(units_parse_duration(NULL, &v), -1);
}

static void test_rate(void **state)
{
    (void)state;
    const struct {
        const char *text;
        double want;
    } good[] = {{"50", 50},    {"2.5", 2.5},    {"0", 0},   {"50/s", 50},
                {"30/m", 0.5}, {"90/h", 0.025}, {".5", 0.5}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        double v = -1;
        if (units_parse_rate(good[i].text, &v) != 0 || fabs(v - good[i].want) > 1e-12)
            fail_msg("'%s' -> %g, want %g", good[i].text, v, good[i].want);
    }
    const char *bad[] = {"",      "-1",  "+1", "1e3",  "inf",  "nan", "50/", "50/sec",
                         "50 /s", "50s", "/s", "1/ms", "0x10", " 5",  "5 "};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        double v = 42;
        if (units_parse_rate(bad[i], &v) == 0)
            fail_msg("'%s' accepted as %g", bad[i], v);
        assert_true(v == 42);
    }
    double v;
    assert_int_equal(units_parse_rate(NULL, &v), -1);
}

static void test_format_size(void **state)
{
    (void)state;
    char buf[32];
    struct {
        uint64_t v;
        const char *want;
    } cases[] = {
        {0, "0"},
        {1000, "1000"},
        {1024, "1K"},
        {1536 * 1024, "1536K"},
        {16u << 20, "16M"},
        {UINT64_C(3) << 30, "3G"},
        {UINT64_C(5) << 40, "5T"},
        {UINT64_C(2048) << 40, "2048T"},
        {(UINT64_C(1) << 30) + 4096, "1048580K"},
        {4097, "4097"},
        {UINT64_MAX, "18446744073709551615"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        units_format_size(cases[i].v, buf, sizeof(buf));
        assert_string_equal(buf, cases[i].want);
    }
    /* Round trip on a spread of values. */
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 10000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint64_t v = x >> (x % 64);
        if (i % 3 == 0)
            v &= ~((UINT64_C(1) << (x % 45)) - 1); /* many trailing zeros */
        uint64_t back = 0;
        units_format_size(v, buf, sizeof(buf));
        assert_int_equal(units_parse_size(buf, &back), 0);
        assert_true(back == v);
    }
    /* Truncation is safe. */
    units_format_size(16u << 20, buf, 3);
    assert_string_equal(buf, "16");
}

static void test_format_human(void **state)
{
    (void)state;
    char buf[32];
    struct {
        double v;
        const char *want;
    } cases[] = {
        {0, "0 B"},
        {512, "512 B"},
        {1023, "1023 B"},
        {1024, "1.0 KiB"},
        {1536, "1.5 KiB"},
        {16.0 * 1024 * 1024, "16.0 MiB"},
        {15.3 * 1024 * 1024 * 1024, "15.3 GiB"},
        {1024.0 * 1024 * 1024 * 1024, "1.0 TiB"},
        {1024.0 * 1024 - 1, "1.0 MiB"}, /* not "1024.0 KiB" */
        {1023.7, "1.0 KiB"},            /* not "1024 B" */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        units_format_human(cases[i].v, buf, sizeof(buf));
        assert_string_equal(buf, cases[i].want);
    }
}

static void test_format_ms(void **state)
{
    (void)state;
    char buf[32];
    struct {
        double seconds;
        const char *want;
    } cases[] = {
        {0.0318822, "31.9 ms"},
        {0.0000000123, "0.0000123 ms"},
        {0.0000123, "0.0123 ms"},
        {0.009996, "10.0 ms"},
        {31.8822, "31900 ms"},
        {0.25, "250 ms"},
        {0, "0 ms"},
        {NAN, "-"},
        {1e-9, "0.00000100 ms"},
        {1e-12, "0.00000000 ms"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        units_format_ms(cases[i].seconds, buf, sizeof(buf));
        assert_string_equal(buf, cases[i].want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_size_valid),     cmocka_unit_test(test_size_invalid),
        cmocka_unit_test(test_duration_valid), cmocka_unit_test(test_duration_invalid),
        cmocka_unit_test(test_format_size),    cmocka_unit_test(test_format_human),
        cmocka_unit_test(test_format_ms),      cmocka_unit_test(test_rate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
