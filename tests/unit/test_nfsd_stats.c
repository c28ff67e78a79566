/* test_nfsd_stats.c — unit tests for nfsd_stats.c on three samples of
 * /proc/net/rpc/nfsd in tests/data: nfsd-older-kernel.txt (8 threads,
 * proc4ops of 72) and nfsd-newer-kernel.txt (1024 threads, a trailing
 * wdeleg_getattr line) come from the prometheus/procfs project's test
 * fixtures (Apache License 2.0); nfsd-2.6-era.txt is written after
 * fs/nfsd/stats.c of Linux 2.6/3.x (th with a busy-time histogram, ra,
 * proc4ops of 59). Every kept field is checked against them; lines come
 * in any order and unknown ones are skipped; no th line leaves threads at
 * -1; proc3/proc4ops store up to their arrays' size; a count larger than
 * the numbers that follow, a non-number or an overflow gives -1, as do
 * empty text and text without a known line; CRLF and a missing final
 * newline are fine. The NFSv3 and NFSv4 operation names are checked, with
 * "opN" for numbers without a name. Fuzz tests feed every prefix of each
 * sample and 20000 seeded random mutations of it, each in a buffer of
 * exactly its length so that AddressSanitizer catches a read past len, and
 * want 0 or -1 back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fuzz.h"
#include "nfsd_stats.h"

#define FUZZ_ROUNDS 20000
#define ALL_LINES                                                                                  \
    (NFSD_HAVE_RC | NFSD_HAVE_IO | NFSD_HAVE_TH | NFSD_HAVE_NET | NFSD_HAVE_RPC |                  \
     NFSD_HAVE_PROC3 | NFSD_HAVE_PROC4 | NFSD_HAVE_PROC4OPS)

static int parse_file(const char *name, struct nfsd_stats *s)
{
    size_t n;
    char *t = fuzz_read_data(name, &n);
    int r = nfsd_stats_parse(t, n, s);
    free(t);
    return r;
}

/* Parses a copy of s without its NUL, so that a read past len is caught. */
static int parse_str(const char *s, struct nfsd_stats *out)
{
    size_t n = strlen(s);
    char *t = fuzz_copy(s, n);
    int r = nfsd_stats_parse(t, n, out);

    free(t);
    return r;
}

static void test_older_kernel(void **state)
{
    (void)state;
    struct nfsd_stats s;

    assert_int_equal(parse_file("nfsd-older-kernel.txt", &s), 0);
    assert_int_equal(s.have, ALL_LINES);
    assert_int_equal(s.rc_hits, 0);
    assert_int_equal(s.rc_misses, 6);
    assert_int_equal(s.rc_nocache, 18622);
    assert_int_equal(s.io_read, 157286400);
    assert_int_equal(s.io_write, 0);
    assert_int_equal(s.threads, 8);
    assert_int_equal(s.th_full, 0);
    assert_int_equal(s.net_count, 18628);
    assert_int_equal(s.net_udp, 0);
    assert_int_equal(s.net_tcp, 18628);
    assert_int_equal(s.net_tcp_conn, 6);
    assert_int_equal(s.rpc_calls, 18628);
    assert_int_equal(s.rpc_bad, 0);
    /* proc3 22 2 112 0 2719 111 0 ... 27 216 0 2 1 0 */
    assert_int_equal(s.nv3, 22);
    assert_int_equal(s.v3[0], 2);    /* null */
    assert_int_equal(s.v3[1], 112);  /* getattr */
    assert_int_equal(s.v3[2], 0);    /* setattr */
    assert_int_equal(s.v3[3], 2719); /* lookup */
    assert_int_equal(s.v3[4], 111);  /* access */
    assert_int_equal(s.v3[16], 27);  /* readdir */
    assert_int_equal(s.v3[17], 216); /* readdirplus */
    assert_int_equal(s.v3[19], 2);   /* fsinfo */
    assert_int_equal(s.v3[20], 1);   /* pathconf */
    assert_int_equal(s.v3[21], 0);   /* commit */
    assert_int_equal(s.v4_null, 2);
    assert_int_equal(s.v4_compound, 10853);
    assert_int_equal(s.nv4ops, 72);
    assert_int_equal(s.v4ops[0], 0);
    assert_int_equal(s.v4ops[3], 1098);  /* access */
    assert_int_equal(s.v4ops[4], 2);     /* close */
    assert_int_equal(s.v4ops[9], 8179);  /* getattr */
    assert_int_equal(s.v4ops[10], 5896); /* getfh */
    assert_int_equal(s.v4ops[15], 5900); /* lookup */
    assert_int_equal(s.v4ops[22], 9609); /* putfh */
    assert_int_equal(s.v4ops[25], 150);  /* read */
    assert_int_equal(s.v4ops[26], 1272); /* readdir */
    assert_int_equal(s.v4ops[30], 1236); /* renew */
    assert_int_equal(s.v4ops[36], 3);    /* setclientid_confirm */
    assert_int_equal(s.v4ops[38], 0);    /* write */
    assert_int_equal(s.v4ops[71], 0);    /* clone */
}

static void test_newer_kernel(void **state)
{
    (void)state;
    struct nfsd_stats s;
    static const uint64_t v3[NFSD_V3_OPS] = {
        747, 7259760, 1383711, 1570520, 3464939, 8436, 4688207, 21668847, 1173194, 6457, 2127,
        172, 213538,  1253,    556401,  14950,   1101, 56245,   90790,    742,     367,  1989658,
    };

    assert_int_equal(parse_file("nfsd-newer-kernel.txt", &s), 0);
    assert_int_equal(s.have, ALL_LINES);
    assert_int_equal(s.rc_hits, 0);
    assert_int_equal(s.rc_misses, 25020854);
    assert_int_equal(s.rc_nocache, 19157796);
    assert_int_equal(s.io_read, 899844043);
    assert_int_equal(s.io_write, 2470085989u);
    assert_int_equal(s.threads, 1024);
    assert_int_equal(s.th_full, 0);
    assert_int_equal(s.net_count, 44179842);
    assert_int_equal(s.net_udp, 1);
    assert_int_equal(s.net_tcp, 44179026);
    assert_int_equal(s.net_tcp_conn, 3092);
    assert_int_equal(s.rpc_calls, 44177753);
    assert_int_equal(s.rpc_bad, 0);
    assert_int_equal(s.nv3, NFSD_V3_OPS);
    for (int i = 0; i < NFSD_V3_OPS; i++)
        assert_int_equal(s.v3[i], v3[i]);
    assert_int_equal(s.v4_null, 0);
    assert_int_equal(s.v4_compound, 0);
    assert_int_equal(s.nv4ops, 40);
    for (int i = 0; i < NFSD_V4_OPS_MAX; i++)
        assert_int_equal(s.v4ops[i], 0);
}

static void test_2_6_era(void **state)
{
    (void)state;
    struct nfsd_stats s;

    assert_int_equal(parse_file("nfsd-2.6-era.txt", &s), 0);
    assert_int_equal(s.have, ALL_LINES);
    assert_int_equal(s.rc_hits, 0);
    assert_int_equal(s.rc_misses, 3144326);
    assert_int_equal(s.rc_nocache, 82143);
    assert_int_equal(s.io_read, 2830237183u);
    assert_int_equal(s.io_write, 3862380288u);
    /* th 16 1206 812.536 211.080 ... 22.040 */
    assert_int_equal(s.threads, 16);
    assert_int_equal(s.th_full, 1206);
    assert_int_equal(s.net_count, 3226487);
    assert_int_equal(s.net_udp, 0);
    assert_int_equal(s.net_tcp, 3226372);
    assert_int_equal(s.net_tcp_conn, 5671);
    /* rpc calls badcalls badfmt badauth badclnt */
    assert_int_equal(s.rpc_calls, 3226472);
    assert_int_equal(s.rpc_bad, 3);
    assert_int_equal(s.nv3, 22);
    assert_int_equal(s.v3[0], 12);
    assert_int_equal(s.v3[1], 741256);  /* getattr */
    assert_int_equal(s.v3[6], 901233);  /* read */
    assert_int_equal(s.v3[7], 1421787); /* write */
    assert_int_equal(s.v3[11], 0);      /* mknod */
    assert_int_equal(s.v3[21], 83020);  /* commit */
    assert_int_equal(s.v4_null, 11);
    assert_int_equal(s.v4_compound, 512931);
    assert_int_equal(s.nv4ops, 59);
    assert_int_equal(s.v4ops[3], 40322);   /* access */
    assert_int_equal(s.v4ops[9], 301744);  /* getattr */
    assert_int_equal(s.v4ops[22], 502331); /* putfh */
    assert_int_equal(s.v4ops[25], 90121);  /* read */
    assert_int_equal(s.v4ops[38], 41877);  /* write */
    assert_int_equal(s.v4ops[39], 33);     /* release_lockowner */
    assert_int_equal(s.v4ops[58], 0);      /* reclaim_complete */
    assert_int_equal(s.v4ops[59], 0);      /* past the count */
}

static void test_missing_th(void **state)
{
    (void)state;
    struct nfsd_stats s;

    assert_int_equal(parse_str("rc 1 2 3\nio 4 5\n", &s), 0);
    assert_int_equal(s.have, NFSD_HAVE_RC | NFSD_HAVE_IO);
    assert_int_equal(s.threads, -1);
    assert_int_equal(s.rc_nocache, 3);
    assert_int_equal(s.io_write, 5);
    assert_int_equal(s.nv3, 0);
    assert_int_equal(s.nv4ops, 0);
    /* A th line of a newer kernel: no histogram needed past fullcnt. */
    assert_int_equal(parse_str("th 4 0\n", &s), 0);
    assert_int_equal(s.threads, 4);
    assert_int_equal(s.have, NFSD_HAVE_TH);
}

static void test_order_and_unknown(void **state)
{
    (void)state;
    struct nfsd_stats s;

    assert_int_equal(parse_str("wdeleg_getattr 9\nproc4 2 7 8\nfuture x y z\n\n  \nth 3 1 0.5 "
                               "12 0.000\nrc 1 2 3 4\n",
                               &s),
                     0);
    assert_int_equal(s.have, NFSD_HAVE_PROC4 | NFSD_HAVE_TH | NFSD_HAVE_RC);
    assert_int_equal(s.v4_null, 7);
    assert_int_equal(s.v4_compound, 8);
    assert_int_equal(s.threads, 3);
    assert_int_equal(s.th_full, 1);
    assert_int_equal(s.rc_hits, 1);
    /* fh, ra and proc2 are known lines, though not kept. */
    assert_int_equal(parse_str("fh 0 0 0 0 0\n", &s), 0);
    assert_int_equal(s.have, 0);
    assert_int_equal(parse_str("proc2 2 0 0\n", &s), 0);
    /* A line starting with a known name is not that line. */
    assert_int_equal(parse_str("rcx 1 2 3\nproc 1 2\nproc44 1 2\n", &s), -1);
}

static void test_counts(void **state)
{
    (void)state;
    struct nfsd_stats s;
    char text[2048];
    int n = 0;

    /* More numbers than the count: those past it are not kept. */
    assert_int_equal(parse_str("proc3 3 1 2 3 4 5\n", &s), 0);
    assert_int_equal(s.nv3, 3);
    assert_int_equal(s.v3[2], 3);
    assert_int_equal(s.v3[3], 0);
    /* A count larger than the arrays: the first ones are kept. */
    n = snprintf(text, sizeof text, "proc3 25");
    for (int i = 0; i < 25; i++)
        n += snprintf(text + n, sizeof text - (size_t)n, " %d", 100 + i);
    n += snprintf(text + n, sizeof text - (size_t)n, "\nproc4ops 100");
    for (int i = 0; i < 100; i++)
        n += snprintf(text + n, sizeof text - (size_t)n, " %d", 1000 + i);
    assert_int_equal(parse_str(text, &s), 0);
    assert_int_equal(s.nv3, NFSD_V3_OPS);
    assert_int_equal(s.v3[NFSD_V3_OPS - 1], 100 + NFSD_V3_OPS - 1);
    assert_int_equal(s.nv4ops, NFSD_V4_OPS_MAX);
    assert_int_equal(s.v4ops[NFSD_V4_OPS_MAX - 1], 1000 + NFSD_V4_OPS_MAX - 1);
    /* A count of 0. */
    assert_int_equal(parse_str("proc4ops 0\n", &s), 0);
    assert_int_equal(s.nv4ops, 0);
    assert_int_equal(s.have, NFSD_HAVE_PROC4OPS);
    /* A count larger than the numbers present. */
    assert_int_equal(parse_str("proc3 22 1 2 3\n", &s), -1);
    assert_int_equal(parse_str("proc2 18 1 2 3\n", &s), -1);
    assert_int_equal(parse_str("proc4ops 72 0 0 0\n", &s), -1);
    assert_int_equal(parse_str("proc4 2 5\n", &s), -1);
    assert_int_equal(parse_str("proc3 99999999999999999999 1\n", &s), -1);
    assert_int_equal(parse_str("proc3\n", &s), -1);
}

static void test_malformed(void **state)
{
    (void)state;
    struct nfsd_stats s;

    assert_int_equal(parse_str("", &s), -1);
    assert_int_equal(nfsd_stats_parse(NULL, 0, &s), -1);
    assert_int_equal(parse_str("\n\n", &s), -1);
    assert_int_equal(parse_str("wdeleg_getattr 9\n", &s), -1); /* no known line */
    assert_int_equal(parse_str("rc 1 2\n", &s), -1);           /* too few numbers */
    assert_int_equal(parse_str("io 12a 0\n", &s), -1);
    assert_int_equal(parse_str("io 1 -2\n", &s), -1);
    assert_int_equal(parse_str("net 1 2 3\n", &s), -1);
    assert_int_equal(parse_str("rpc 1\n", &s), -1);
    assert_int_equal(parse_str("rpc 1 2 3 x 5\n", &s), -1);
    assert_int_equal(parse_str("th\n", &s), -1);
    assert_int_equal(parse_str("th 8\n", &s), -1);
    assert_int_equal(parse_str("th 8 0 0.000 abc\n", &s), -1);
    assert_int_equal(parse_str("th 8 0 0.000 1.\n", &s), -1);
    assert_int_equal(parse_str("th 8 0 .5\n", &s), -1);
    assert_int_equal(parse_str("th 8 0 1.2.3\n", &s), -1);
    assert_int_equal(parse_str("th 9223372036854775808 0\n", &s), -1); /* threads > INT64_MAX */
    assert_int_equal(parse_str("proc3 2 1 two\n", &s), -1);
    /* Overflow: 2^64 - 1 is the largest. */
    assert_int_equal(parse_str("io 18446744073709551615 0\n", &s), 0);
    assert_true(s.io_read == UINT64_MAX);
    assert_int_equal(parse_str("io 18446744073709551616 0\n", &s), -1);
    /* A bad line anywhere spoils the whole text. */
    assert_int_equal(parse_str("rc 1 2 3\nio 1 2\nnet x 1 2 3\n", &s), -1);
}

static void test_line_ends(void **state)
{
    (void)state;
    struct nfsd_stats s;

    assert_int_equal(parse_str("rc 1 2 3\r\nth 8 0 0.000 0.000\r\nproc4 2 3 4\r\n", &s), 0);
    assert_int_equal(s.rc_nocache, 3);
    assert_int_equal(s.threads, 8);
    assert_int_equal(s.v4_compound, 4);
    assert_int_equal(parse_str("rc 1 2 3\nio 5 6", &s), 0); /* no final newline */
    assert_int_equal(s.io_write, 6);
    assert_int_equal(parse_str("\tio\t5  6 \n", &s), 0);
    assert_int_equal(s.io_read, 5);
}

static void test_v3_names(void **state)
{
    (void)state;
    static const char *const want[NFSD_V3_OPS] = {
        "null",    "getattr",     "setattr", "lookup", "access",   "readlink", "read",   "write",
        "create",  "mkdir",       "symlink", "mknod",  "remove",   "rmdir",    "rename", "link",
        "readdir", "readdirplus", "fsstat",  "fsinfo", "pathconf", "commit",
    };
    for (int i = 0; i < NFSD_V3_OPS; i++)
        assert_string_equal(nfsd_v3_op_name(i), want[i]);
    assert_non_null(nfsd_v3_op_name(-1));
    assert_non_null(nfsd_v3_op_name(NFSD_V3_OPS));
}

static void test_v4_names(void **state)
{
    (void)state;
    static const struct {
        int op;
        const char *name;
    } want[] = {
        {3, "access"},
        {4, "close"},
        {9, "getattr"},
        {10, "getfh"},
        {18, "open"},
        {20, "open_confirm"},
        {22, "putfh"},
        {24, "putrootfh"},
        {25, "read"},
        {30, "renew"},
        {35, "setclientid"},
        {36, "setclientid_confirm"},
        {38, "write"},
        {39, "release_lockowner"},
        {40, "backchannel_ctl"},
        {42, "exchange_id"},
        {46, "get_dir_delegation"},
        {53, "sequence"},
        {58, "reclaim_complete"},
        {59, "allocate"},
        {68, "read_plus"},
        {71, "clone"},
        {72, "getxattr"},
        {75, "removexattr"},
    };
    char buf[16];

    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        assert_string_equal(nfsd_v4_op_name(want[i].op, buf, sizeof buf), want[i].name);
    for (int op = 3; op <= 75; op++) {
        const char *name = nfsd_v4_op_name(op, buf, sizeof buf);
        assert_true(name != buf && name[0] >= 'a' && name[0] <= 'z');
    }
    assert_string_equal(nfsd_v4_op_name(0, buf, sizeof buf), "op0");
    assert_ptr_equal(nfsd_v4_op_name(0, buf, sizeof buf), buf);
    assert_string_equal(nfsd_v4_op_name(1, buf, sizeof buf), "op1");
    assert_string_equal(nfsd_v4_op_name(2, buf, sizeof buf), "op2");
    assert_string_equal(nfsd_v4_op_name(76, buf, sizeof buf), "op76");
    assert_string_equal(nfsd_v4_op_name(10044, buf, sizeof buf), "op10044"); /* OP_ILLEGAL */
    assert_string_equal(nfsd_v4_op_name(-1, buf, sizeof buf), "op-1");
    /* A small buffer gets a truncated, terminated name. */
    assert_string_equal(nfsd_v4_op_name(12345, buf, 4), "op1");
    assert_non_null(nfsd_v4_op_name(100, NULL, 0));
}

/* ---- fuzzing ---- */

/* A fuzz_fn: 0 or -1, and a success holds what it must. */
static void check(void *arg, const char *text, size_t len)
{
    struct nfsd_stats s;
    int r = nfsd_stats_parse(text, len, &s);

    (void)arg;
    assert_true(r == 0 || r == -1);
    if (r == 0) {
        assert_true(s.nv3 >= 0 && s.nv3 <= NFSD_V3_OPS);
        assert_true(s.nv4ops >= 0 && s.nv4ops <= NFSD_V4_OPS_MAX);
        assert_true(s.threads >= -1);
        assert_true((s.threads >= 0) == ((s.have & NFSD_HAVE_TH) != 0));
    }
}

/* Every prefix of the sample, then FUZZ_ROUNDS mutations of it of one to
 * four edits (fuzz.h: bytes, digit runs, long lines, spans, and these
 * separators). */
static void fuzz_sample(const char *sample, uint64_t seed)
{
    struct fuzz f = {.rng = seed, .alphabet = " \n\t\r()#./-:"};

    fuzz_file(&f, sample, FUZZ_ROUNDS, 4, check, NULL);
}

static void test_fuzz_nfsd_stats(void **state)
{
    (void)state;
    fuzz_sample("nfsd-older-kernel.txt", 0x5eed1001);
    fuzz_sample("nfsd-newer-kernel.txt", 0x5eed1002);
    fuzz_sample("nfsd-2.6-era.txt", 0x5eed1003);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_older_kernel),      cmocka_unit_test(test_newer_kernel),
        cmocka_unit_test(test_2_6_era),           cmocka_unit_test(test_missing_th),
        cmocka_unit_test(test_order_and_unknown), cmocka_unit_test(test_counts),
        cmocka_unit_test(test_malformed),         cmocka_unit_test(test_line_ends),
        cmocka_unit_test(test_v3_names),          cmocka_unit_test(test_v4_names),
        cmocka_unit_test(test_fuzz_nfsd_stats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
