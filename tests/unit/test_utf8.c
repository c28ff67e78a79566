/* test_utf8.c — unit tests for utf8.c: which bytes are valid UTF-8 text
 * without control bytes or display controls (C1, line separators, bidi
 * marks, embeddings, overrides, isolates), how messages escape the others,
 * and where a long string may be cut. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "utf8.h"

static void test_check(void **state)
{
    (void)state;
    char why[128];
    const char *ok[] = {
        "",     "plain",           "caf\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x90\x91",
        "$(x)", "\xf4\x8f\xbf\xbf" /* U+10FFFF */};
    const char *bad[] = {"a\nb",     "\t",       "\x7f",         "\xff",
                         "\xc3",     "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                         "\xe2\x82", "\x80",     "\xe0\x80\xaf", "\xf0\x80\x80\xaf"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (utf8_check(ok[i], why, sizeof why) != 0)
            fail_msg("'%s' refused: %s", ok[i], why);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(utf8_check(bad[i], why, sizeof why), -EILSEQ);
    assert_int_equal(utf8_check("ab\x01", why, sizeof why), -EILSEQ);
    assert_string_equal(why, "control byte 0x01 at byte 3 is not allowed");
    assert_int_equal(utf8_check("caf\xc3", why, sizeof why), -EILSEQ);
    assert_string_equal(why, "byte 0xc3 at byte 4 is not valid UTF-8");
}

static void test_len_is_bounded(void **state)
{
    (void)state;
    const char euro[] = "\xe2\x82\xac";
    assert_int_equal(utf8_len(euro, 3), 3);
    assert_int_equal(utf8_len(euro, 2), 0); /* never reads past n */
    assert_int_equal(utf8_len(euro, 0), 0);
    assert_int_equal(utf8_len("a", 1), 1);
}

static void test_escape(void **state)
{
    (void)state;
    char out[64];
    utf8_escape("a\nb\xff"
                "c\xc3\xa9",
                out, sizeof out);
    assert_string_equal(out, "a\\x0ab\\xff"
                             "c\xc3\xa9");
    utf8_escape("abcdef\n", out, 8); /* never cut an escape in half */
    assert_string_equal(out, "abcdef");
    utf8_escape("ab\xe2\x82\xac", out, 5); /* nor a character */
    assert_string_equal(out, "ab");
    utf8_escape("x", out, 1);
    assert_string_equal(out, "");
}

/* Code point c (below U+10000) as UTF-8 between prefix and suffix. */
static void encode(char *s, size_t len, const char *prefix, uint32_t c, const char *suffix)
{
    char ch[4] = {0};
    if (c < 0x80) {
        ch[0] = (char)c;
    } else if (c < 0x800) {
        ch[0] = (char)(0xc0 | (c >> 6));
        ch[1] = (char)(0x80 | (c & 0x3f));
    } else {
        ch[0] = (char)(0xe0 | (c >> 12));
        ch[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        ch[2] = (char)(0x80 | (c & 0x3f));
    }
    snprintf(s, len, "%s%s%s", prefix, ch, suffix);
}

/* Every display control herd-report and herd-compare escape
 * (analysis/herd_safe.py): refused by utf8_check with its code point,
 * escaped by utf8_escape as they show it; its neighbours pass. */
static void test_display_controls(void **state)
{
    (void)state;
    static const uint32_t codes[] = {0x80,   0x85,   0x9f,   0x200e, 0x200f, 0x2028,
                                     0x2029, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e,
                                     0x2066, 0x2067, 0x2068, 0x2069};
    static const uint32_t shown[] = {0x7e, 0xa0, 0x200d, 0x2010, 0x2027, 0x202f, 0x2065, 0x206a};
    char s[16], why[128], want[64], out[64];
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        uint32_t c = codes[i];
        encode(s, sizeof s, "ab", c, "z");
        assert_int_equal(utf8_display_control(s + 2, utf8_len(s + 2, strlen(s + 2))), c);
        assert_int_equal(utf8_check(s, why, sizeof why), -EILSEQ);
        snprintf(want, sizeof want, "control character U+%04X at byte 3 is not allowed",
                 (unsigned)c);
        assert_string_equal(why, want);
        utf8_escape(s, out, sizeof out);
        snprintf(want, sizeof want, c < 0x100 ? "ab\\x%02xz" : "ab\\u%04xz", (unsigned)c);
        assert_string_equal(out, want);
    }
    for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++) {
        encode(s, sizeof s, "", shown[i], "");
        assert_int_equal(utf8_display_control(s, strlen(s)), 0);
        assert_int_equal(utf8_check(s, why, sizeof why), 0);
        utf8_escape(s, out, sizeof out);
        assert_string_equal(out, s);
    }
    utf8_escape("a\xe2\x80\xae", out, 7); /* never cut an escape in half */
    assert_string_equal(out, "a");
}

static void test_cut(void **state)
{
    (void)state;
    const char *s = "ab\xe2\x82\xac"
                    "c";
    assert_int_equal(utf8_cut(s, 2), 2);
    assert_int_equal(utf8_cut(s, 3), 2); /* inside the euro sign */
    assert_int_equal(utf8_cut(s, 4), 2);
    assert_int_equal(utf8_cut(s, 5), 5);
    assert_int_equal(utf8_cut("\x80\x80", 1), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check),  cmocka_unit_test(test_len_is_bounded),
        cmocka_unit_test(test_escape), cmocka_unit_test(test_display_controls),
        cmocka_unit_test(test_cut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
