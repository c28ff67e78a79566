/* test_promtext.c — unit tests for promtext.c on a node_exporter /metrics
 * excerpt (tests/data/promtext-node-exporter.txt) and hand-made lines:
 * the sample count equals the number of sample lines; names, raw label
 * texts and values come out exact (decimals, exponent form, NaN, +Inf,
 * a sample with a timestamp); comments, blank lines, CRLF and a missing
 * final newline are handled; promtext_label finds present keys, unescapes
 * \" \\ \n, and fails on absent keys, a too small buffer or a malformed
 * label text; a well-formed line whose name or label set is too long is
 * skipped and the lines after it still come; malformed lines (unbalanced
 * braces or quotes, bad escapes, bad values or timestamps) give -1 after
 * the samples before them were delivered. Fuzz: every prefix of the sample and
 * 24000 random mutations of it through promtext_parse, and prefixes and
 * 24000 mutations of label texts through promtext_label, each in an
 * exactly sized heap buffer so that ASan catches a read past the end. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fuzz.h"
#include "promtext.h"

/* The samples a parse delivered. */
#define MAXS 256
struct sample {
    char name[PROMTEXT_NAME_MAX];
    char labels[PROMTEXT_LABELS_MAX];
    double value;
};
struct got {
    int n;
    struct sample s[MAXS];
};

static void collect(void *arg, const char *name, const char *labels, double value)
{
    struct got *g = arg;
    assert_true(strlen(name) < PROMTEXT_NAME_MAX);
    assert_true(strlen(labels) < PROMTEXT_LABELS_MAX);
    if (g->n < MAXS) {
        strcpy(g->s[g->n].name, name);
        strcpy(g->s[g->n].labels, labels);
        g->s[g->n].value = value;
    }
    g->n++;
}

/* Parse n bytes of s from an exactly sized heap copy (no NUL after it). */
static int parse_n(const char *s, size_t n, struct got *g)
{
    char *buf = fuzz_copy(s, n);
    g->n = 0;
    int r = promtext_parse(buf, n, collect, g);
    free(buf);
    return r;
}

static int parse_str(const char *s, struct got *g)
{
    return parse_n(s, strlen(s), g);
}

static const struct sample *find(const struct got *g, const char *name, const char *labels)
{
    for (int i = 0; i < g->n && i < MAXS; i++)
        if (strcmp(g->s[i].name, name) == 0 && strcmp(g->s[i].labels, labels) == 0)
            return &g->s[i];
    fail_msg("no sample %s{%s}", name, labels);
    return NULL;
}

/* value of name{labels}, which must be there */
static double value(const struct got *g, const char *name, const char *labels)
{
    return find(g, name, labels)->value;
}

static struct got g; /* large: kept off the stack */

static void test_node_exporter(void **state)
{
    (void)state;
    size_t len;
    char *text = fuzz_read_data("promtext-node-exporter.txt", &len);
    /* count the sample lines independently: not blank, not '#' */
    int lines = 0;
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t e = nl ? (size_t)(nl - text) : len;
        if (e > i && text[i] != '#')
            lines++;
        i = e + 1;
    }
    assert_int_equal(lines, 57);
    g.n = 0;
    assert_int_equal(promtext_parse(text, len, collect, &g), lines);
    assert_int_equal(g.n, lines);
    free(text);

    /* first and last, in order */
    assert_string_equal(g.s[0].name, "go_gc_duration_seconds");
    assert_string_equal(g.s[0].labels, "quantile=\"0\"");
    assert_string_equal(g.s[56].name, "herd_last_run_timestamp_seconds");
    assert_string_equal(g.s[56].labels, "");

    assert_true(isnan(value(&g, "go_gc_duration_seconds", "quantile=\"0\"")));
    assert_true(isnan(value(&g, "go_gc_duration_seconds", "quantile=\"0.25\"")));
    assert_true(value(&g, "go_gc_duration_seconds", "quantile=\"0.5\"") == 2.1543e-05);
    assert_true(value(&g, "go_gc_duration_seconds_count", "") == 9);
    assert_true(value(&g, "node_cpu_seconds_total", "cpu=\"0\",mode=\"idle\"") == 4649.1);
    assert_true(value(&g, "node_cpu_seconds_total", "cpu=\"0\",mode=\"irq\"") == 0);
    assert_true(value(&g, "node_cpu_seconds_total", "cpu=\"1\",mode=\"user\"") == 1329.42);
    assert_true(value(&g, "node_cpu_seconds_total", "cpu=\"1\",mode=\"steal\"") == 4.18);
    int cpu_lines = 0;
    for (int i = 0; i < g.n; i++)
        cpu_lines += strcmp(g.s[i].name, "node_cpu_seconds_total") == 0;
    assert_int_equal(cpu_lines, 16);
    assert_true(value(&g, "node_load1", "") == 1.1);
    assert_true(value(&g, "node_load5", "") == 1.4);
    assert_true(value(&g, "node_load15", "") == 1.64);
    assert_true(value(&g, "node_memory_MemTotal_bytes", "") == 25276059648.0);
    assert_true(value(&g, "node_memory_MemFree_bytes", "") == 22407475200.0);
    assert_true(value(&g, "node_memory_MemAvailable_bytes", "") == 24738455552.0);
    assert_true(value(&g, "node_memory_Cached_bytes", "") == 1966915584.0);
    assert_true(value(&g, "node_memory_Buffers_bytes", "") == 21680128.0);
    assert_true(value(&g, "node_memory_Dirty_bytes", "") == 8945664.0);
    assert_true(value(&g, "node_memory_Writeback_bytes", "") == 0);
    assert_true(value(&g, "node_nfsd_disk_bytes_read_total", "") == 1234000.0);
    assert_true(value(&g, "node_nfsd_disk_bytes_written_total", "") == 8589934592.0);
    assert_true(value(&g, "node_nfsd_reply_cache_hits_total", "") == 3);
    assert_true(value(&g, "node_nfsd_server_threads", "") == 8);
    assert_true(value(&g, "node_nfsd_requests_total", "method=\"Read\",proto=\"3\"") == 4100);
    assert_true(value(&g, "node_nfsd_requests_total", "method=\"Write\",proto=\"4\"") == 4096);
    assert_true(value(&g, "node_scrape_collector_duration_seconds", "collector=\"nfsd\"") ==
                2.1372e-05);
    assert_true(value(&g, "http_request_duration_seconds_bucket",
                      "handler=\"/metrics\",le=\"+Inf\"") == 140);
    assert_true(value(&g, "http_request_duration_seconds_sum", "handler=\"/metrics\"") == 0.7243);
    /* the timestamp is not the value */
    assert_true(value(&g, "herd_last_run_timestamp_seconds", "") == 1712345678.0);

    /* escaped label values stay escaped in the labels text ... */
    const char *raw = find(&g, "herd_run_info",
                           "cmd=\"herd --job \\\"nightly io\\\" --out C:\\\\results\","
                           "note=\"first\\nsecond\",host=\"n01\"")
                          ->labels;
    /* ... and promtext_label unescapes them */
    char buf[128];
    assert_int_equal(promtext_label(raw, "cmd", buf, sizeof buf), 0);
    assert_string_equal(buf, "herd --job \"nightly io\" --out C:\\results");
    assert_int_equal(promtext_label(raw, "note", buf, sizeof buf), 0);
    assert_string_equal(buf, "first\nsecond");
    assert_int_equal(promtext_label(raw, "host", buf, sizeof buf), 0);
    assert_string_equal(buf, "n01");
    assert_int_equal(promtext_label(raw, "hos", buf, sizeof buf), -1);
    assert_int_equal(promtext_label(raw, "hosts", buf, sizeof buf), -1);
    assert_int_equal(promtext_label(raw, "nightly", buf, sizeof buf), -1);

    const char *bucket = "handler=\"/metrics\",le=\"+Inf\"";
    assert_int_equal(promtext_label(bucket, "le", buf, sizeof buf), 0);
    assert_string_equal(buf, "+Inf");
    assert_int_equal(promtext_label(bucket, "handler", buf, sizeof buf), 0);
    assert_string_equal(buf, "/metrics");
}

/* Value forms: Go floats as Prometheus writes them. */
static void test_values(void **state)
{
    (void)state;
    const char *text = "a 1\n"
                       "a -1.5e-3\n"
                       "a 1.234e+06\n"
                       "a 1E6\n"
                       "a .5\n"
                       "a 5.\n"
                       "a +Inf\n"
                       "a -Inf\n"
                       "a Inf\n"
                       "a NaN\n"
                       "a nan\n"
                       "a 18446744073709551616\n"
                       "a 1e-400\n"
                       "a -0\n";
    assert_int_equal(parse_str(text, &g), 14);
    assert_true(g.s[0].value == 1);
    assert_true(g.s[1].value == -0.0015);
    assert_true(g.s[2].value == 1234000.0);
    assert_true(g.s[3].value == 1e6);
    assert_true(g.s[4].value == 0.5);
    assert_true(g.s[5].value == 5);
    assert_true(isinf(g.s[6].value) && g.s[6].value > 0);
    assert_true(isinf(g.s[7].value) && g.s[7].value < 0);
    assert_true(isinf(g.s[8].value) && g.s[8].value > 0);
    assert_true(isnan(g.s[9].value));
    assert_true(isnan(g.s[10].value));
    assert_true(g.s[11].value == 18446744073709551616.0);
    assert_true(g.s[12].value == 0); /* underflow is 0, as in Go */
    assert_true(g.s[13].value == 0 && signbit(g.s[13].value));
}

/* Labels: the raw text between the braces, whatever the spacing. */
static void test_labels(void **state)
{
    (void)state;
    const char *text = "a{} 1\n"
                       "b{x=\"1\",} 2\n"
                       "c { x = \"1\" , y=\"}\" } 3\n"
                       "d{x=\"\"}4\n"
                       "ns:sub_metric:rate5m{job=\"node\"} 5\n"
                       "_x{a_b1=\"{\\\\}\"} 6\n";
    assert_int_equal(parse_str(text, &g), 6);
    assert_string_equal(g.s[0].labels, "");
    assert_string_equal(g.s[1].labels, "x=\"1\",");
    assert_string_equal(g.s[2].name, "c");
    assert_string_equal(g.s[2].labels, " x = \"1\" , y=\"}\" ");
    assert_true(g.s[2].value == 3);
    assert_string_equal(g.s[3].labels, "x=\"\"");
    assert_true(g.s[3].value == 4);
    assert_string_equal(g.s[4].name, "ns:sub_metric:rate5m");
    assert_string_equal(g.s[5].labels, "a_b1=\"{\\\\}\"");
    char buf[16];
    assert_int_equal(promtext_label(g.s[2].labels, "y", buf, sizeof buf), 0);
    assert_string_equal(buf, "}");
    assert_int_equal(promtext_label(g.s[2].labels, "x", buf, sizeof buf), 0);
    assert_string_equal(buf, "1");
    assert_int_equal(promtext_label(g.s[3].labels, "x", buf, sizeof buf), 0);
    assert_string_equal(buf, "");
    assert_int_equal(promtext_label(g.s[5].labels, "a_b1", buf, sizeof buf), 0);
    assert_string_equal(buf, "{\\}");
    assert_int_equal(promtext_label(g.s[1].labels, "x", buf, sizeof buf), 0);
    assert_string_equal(buf, "1");
    assert_int_equal(promtext_label("", "x", buf, sizeof buf), -1);
}

static void test_label_lookup(void **state)
{
    (void)state;
    char buf[8];
    const char *l = "mode=\"idle\",cpu=\"12\",esc=\"a\\\"b\\\\c\\nd\"";
    assert_int_equal(promtext_label(l, "mode", buf, sizeof buf), 0);
    assert_string_equal(buf, "idle");
    assert_int_equal(promtext_label(l, "cpu", buf, sizeof buf), 0);
    assert_string_equal(buf, "12");
    assert_int_equal(promtext_label(l, "esc", buf, sizeof buf), 0);
    assert_string_equal(buf, "a\"b\\c\nd");
    assert_int_equal(promtext_label(l, "idle", buf, sizeof buf), -1);
    assert_int_equal(promtext_label(l, "", buf, sizeof buf), -1);
    /* buffer sizes: "idle" needs 5 */
    assert_int_equal(promtext_label(l, "mode", buf, 5), 0);
    assert_string_equal(buf, "idle");
    assert_int_equal(promtext_label(l, "mode", buf, 4), -1);
    assert_int_equal(promtext_label(l, "esc", buf, 8), 0); /* 7 chars unescaped */
    assert_int_equal(promtext_label(l, "esc", buf, 7), -1);
    assert_int_equal(promtext_label(l, "mode", buf, 0), -1);
    assert_int_equal(promtext_label(l, "mode", NULL, 8), -1);
    assert_int_equal(promtext_label(NULL, "mode", buf, 8), -1);
    assert_int_equal(promtext_label(l, NULL, buf, 8), -1);
    /* malformed label texts */
    assert_int_equal(promtext_label("mode=\"idle", "mode", buf, sizeof buf), -1);
    assert_int_equal(promtext_label("mode=idle", "mode", buf, sizeof buf), -1);
    assert_int_equal(promtext_label("x=\"1\" mode=\"idle\"", "mode", buf, sizeof buf), -1);
    assert_int_equal(promtext_label("mode=\"id\\le\"", "mode", buf, sizeof buf), -1);
    /* the first of two is taken */
    assert_int_equal(promtext_label("k=\"1\",k=\"2\"", "k", buf, sizeof buf), 0);
    assert_string_equal(buf, "1");
}

/* Timestamps, comments, blank lines, CRLF, no final newline. */
static void test_layout(void **state)
{
    (void)state;
    const char *text = "# HELP a A thing.\n"
                       "# TYPE a counter\n"
                       "\n"
                       "   # an indented comment\n"
                       "a 1 1712345678123\n"
                       "a{x=\"y\"} 2 -5\r\n"
                       "\t  \r\n"
                       "  b\t3\t \n"
                       "c 4 +17";
    assert_int_equal(parse_str(text, &g), 4);
    assert_string_equal(g.s[0].name, "a");
    assert_true(g.s[0].value == 1);
    assert_string_equal(g.s[1].labels, "x=\"y\"");
    assert_true(g.s[1].value == 2);
    assert_string_equal(g.s[2].name, "b");
    assert_true(g.s[2].value == 3);
    assert_string_equal(g.s[3].name, "c");
    assert_true(g.s[3].value == 4);
    assert_int_equal(parse_str("", &g), 0);
    assert_int_equal(parse_str("# only a comment", &g), 0);
    assert_int_equal(parse_str("\n\n\n", &g), 0);
    assert_int_equal(promtext_parse(NULL, 0, collect, &g), 0);
    assert_int_equal(parse_str("a 1\nb 2\n", &g), 2);
    /* fn may be NULL: only count */
    assert_int_equal(promtext_parse("a 1\nb 2\n", 8, NULL, NULL), 2);
}

/* Every bad line comes after two good ones, which must be delivered. */
static void test_malformed(void **state)
{
    (void)state;
    static char name127[200], name128[200], labels511[700], labels512[700];
    static char text_skip[2048];
    memset(name127, 'n', 127);
    memcpy(name127 + 127, " 1", 3);
    memset(name128, 'n', 128);
    memcpy(name128 + 128, " 1", 3);
    /* x{l="vvv..."} with the text between the braces 511 or 512 long */
    strcpy(labels511, "x{l=\"");
    memset(labels511 + 5, 'v', 511 - 4);
    strcpy(labels511 + 5 + 507, "\"} 1");
    strcpy(labels512, "x{l=\"");
    memset(labels512 + 5, 'v', 512 - 4);
    strcpy(labels512 + 5 + 508, "\"} 1");

    const char *good[] = {name127, labels511, "a 1 2", "a{b=\"}\"} 1"};
    /* Too long to hand over, but well formed: skipped, the rest parsed. */
    const char *skipped[] = {name128, labels512};
    for (size_t i = 0; i < 2; i++) {
        snprintf(text_skip, sizeof text_skip, "ok 1\n%s\nlater 3\n", skipped[i]);
        assert_int_equal(parse_str(text_skip, &g), 2);
        assert_string_equal(g.s[1].name, "later");
    }
    const char *bad[] = {
        "a{b=\"c\" 1",           /* no closing brace */
        "a{b=\"c} 1",            /* no closing quote */
        "a{b=\"c\"",             /* the line ends in the set */
        "a{b=\"c\\",             /* ... in an escape */
        "a{b=\"\\x\"} 1",        /* unknown escape */
        "a{b=c} 1",              /* unquoted value */
        "a{=\"c\"} 1",           /* no label name */
        "a{1b=\"c\"} 1",         /* bad label name */
        "a{b=\"c\" d=\"e\"} 1",  /* no comma */
        "a{b=\"c\",,d=\"e\"} 1", /* two commas */
        "a{,} 1",                /* a lone comma */
        "a{b=\"c\"}} 1",         /* a stray brace */
        "a}{ 1",                 /* a stray brace */
        "a 1.2.3",               /* bad values */
        "a abc",
        "a 0x10",
        "a 1e",
        "a 1e+",
        "a +",
        "a .",
        "a e5",
        "a 1e999", /* out of range */
        "a +NaN",
        "a nan(1)",
        "a 1,5",
        "a", /* no value */
        "a{}",
        "a{} ",
        "1a 1", /* bad names */
        "-a 1",
        "a-b 1",
        "{a=\"b\"} 1",
        "a 1 1.5", /* bad timestamps */
        "a 1 x",
        "a 1 2 3",
        "a 1 99999999999999999999",
        "a 1 9223372036854775808",
        "a 1 -",
    };
    char text[2048];
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        snprintf(text, sizeof text, "ok 1\n%s\n", good[i]);
        assert_int_equal(parse_str(text, &g), 2);
    }
    assert_int_equal(parse_str("a 1 9223372036854775807\na 1 -9223372036854775808\n", &g), 2);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text, "# TYPE ok gauge\nok 1\nok{x=\"2\"} 2\n%s\nlater 3\n", bad[i]);
        int r = parse_str(text, &g);
        if (r != -1)
            fail_msg("accepted: %s", bad[i]);
        assert_int_equal(g.n, 2);
        assert_true(g.s[1].value == 2);
        /* the same line last, without its newline */
        snprintf(text, sizeof text, "ok 1\nok 2\n%s", bad[i]);
        assert_int_equal(parse_str(text, &g), -1);
        assert_int_equal(g.n, 2);
    }
}

/* ---- fuzz ---- */

static const char *const dict[] = {
    "NaN",     "+Inf",        "-Inf", "Inf", "1.234e+06",      "e+99", "e-999",
    "le=\"",   "\"}",         "{",    "}",   "\\\"",           "\\\\", "\\n",
    "# TYPE ", "node_load1 ", "=\"",  "\",", " 1712345678123",
};

/* The fuzz tests' generator (label_probe and probe_fn draw from it too),
 * with this format's characters and words. */
static struct fuzz fz = {
    .rng = 0x2545f4914f6cdd1dull,
    .alphabet = "0123456789 \t\n{}\"\\=,#.eE+-_:xaN",
    .words = dict,
    .nwords = sizeof dict / sizeof dict[0],
};

/* promtext_label on a NUL-terminated copy of s[0..n) in an exact buffer,
 * with result buffers of exact sizes too. */
static void label_probe(const char *s, size_t n)
{
    static const char *const keys[] = {"cpu", "mode", "le", "cmd", "note", "handler", "x", "l"};
    char *lab = malloc(n + 1);
    assert_non_null(lab);
    memcpy(lab, s, n);
    lab[n] = '\0';
    const char *key = keys[fuzz_below(&fz, sizeof keys / sizeof keys[0])];
    size_t cap = 1 + fuzz_below(&fz, 48);
    char *buf = malloc(cap);
    assert_non_null(buf);
    int r = promtext_label(lab, key, buf, cap);
    assert_true(r == 0 || r == -1);
    if (r == 0)
        assert_true(strnlen(buf, cap) < cap);
    free(buf);
    free(lab);
}

/* A callback that also feeds every delivered labels text to promtext_label. */
static void probe_fn(void *arg, const char *name, const char *labels, double value)
{
    (void)value;
    assert_true(strlen(name) < PROMTEXT_NAME_MAX && strlen(labels) < PROMTEXT_LABELS_MAX);
    (*(int *)arg)++;
    if (fuzz_rng(&fz) % 8 == 0)
        label_probe(labels, strlen(labels));
}

/* promtext_parse on text[0, n) (an exactly sized buffer), probing the
 * labels it delivers. */
static int parse_probe(const char *text, size_t n)
{
    int calls = 0;
    int r = promtext_parse(text, n, probe_fn, &calls);
    assert_true(r == -1 || r == calls);
    return r;
}

/* A fuzz_fn for prefixes of the sample, whose length is *arg. */
static void prefix_check(void *arg, const char *text, size_t n)
{
    int r = parse_probe(text, n);
    assert_true(r >= -1 && r <= 57);
    if (n == *(const size_t *)arg)
        assert_int_equal(r, 57);
}

/* A fuzz_fn for mutations: counts in *arg the texts that parse. */
static void mutation_check(void *arg, const char *text, size_t n)
{
    *(int *)arg += parse_probe(text, n) >= 0;
}

static void test_fuzz_prefixes(void **state)
{
    (void)state;
    size_t len;
    char *text = fuzz_read_data("promtext-node-exporter.txt", &len);
    fuzz_prefixes(text, len, prefix_check, &len);
    free(text);
}

static void test_fuzz_mutations(void **state)
{
    (void)state;
    size_t len;
    char *text = fuzz_read_data("promtext-node-exporter.txt", &len);
    int whole = 0;
    fuzz_mutations(&fz, text, len, 24000, 4, mutation_check, &whole);
    assert_true(whole > 1000); /* many edits leave a valid text */
    free(text);
}

/* A fuzz_fn: label_probe, *arg times (each with a random key and size). */
static void label_check(void *arg, const char *text, size_t n)
{
    for (int k = 0; k < *(const int *)arg; k++)
        label_probe(text, n);
}

/* promtext_label on prefixes and edits (6000 of each, 24000 in all) of
 * label texts. */
static void test_fuzz_label(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "cpu=\"0\",mode=\"idle\"",
        "handler=\"/metrics\",le=\"+Inf\"",
        ("cmd=\"herd --job \\\"nightly io\\\" --out C:\\\\results\",note=\"first\\nsecond\","
         "host=\"n01\""),
        " x = \"1\" , y=\"}\" ,",
    };
    int per_prefix = 4, per_mutation = 1;
    for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
        fuzz_prefixes(texts[t], strlen(texts[t]), label_check, &per_prefix);
        fuzz_mutations(&fz, texts[t], strlen(texts[t]), 6000, 3, label_check, &per_mutation);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_exporter), cmocka_unit_test(test_values),
        cmocka_unit_test(test_labels),        cmocka_unit_test(test_label_lookup),
        cmocka_unit_test(test_layout),        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_fuzz_prefixes), cmocka_unit_test(test_fuzz_mutations),
        cmocka_unit_test(test_fuzz_label),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
