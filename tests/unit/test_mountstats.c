/* test_mountstats.c — unit tests for mountstats.c on sample
 * /proc/self/mountstats texts in tests/data:
 * - mountstats-nfs4.0.txt: an NFSv4.0 mount, statvers=1.1, copied from the
 *   prometheus/procfs test fixtures (Apache License 2.0; its ACCESS line
 *   holds 18446743919241604546, near the top of u64);
 * - mountstats-nfs3.txt: local mounts and an NFSv3 mount over TCP with
 *   9-column per-op lines (errors), retransmissions and a major timeout;
 * - mountstats-nfs4.2-nconnect.txt: an NFSv4.2 mount with nconnect=2 (two
 *   xprt lines, summed) and 8-column per-op lines (errors 0).
 * Every parsed field is checked against the samples; the udp, rdma and
 * statvers 1.0 xprt forms; a mount point absent or not NFS gives 1;
 * mount points with spaces (literal or the kernel's \040) match; the last
 * entry on a mount point wins; malformed or truncated entries give -1;
 * ops past MOUNTSTATS_OPS_MAX are dropped; mountstats_delta of two
 * snapshots is exact, by op name, also with out aliasing an input. Fuzz:
 * every prefix of each sample and 24000 random mutations, each in an
 * exactly sized heap buffer so that ASan catches a read past len. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fuzz.h"
#include "mountstats.h"

/* Parse n bytes of s from an exactly sized heap copy (no NUL after it). */
static int parse_n(const char *s, size_t n, const char *mp, struct mountstats *out)
{
    char *buf = fuzz_copy(s, n);
    int r = mountstats_parse(buf, n, mp, out);
    free(buf);
    return r;
}

static int parse_str(const char *s, const char *mp, struct mountstats *out)
{
    return parse_n(s, strlen(s), mp, out);
}

static int parse_file(const char *name, const char *mp, struct mountstats *out)
{
    size_t len;
    char *text = fuzz_read_data(name, &len);
    int r = mountstats_parse(text, len, mp, out);
    free(text);
    return r;
}

static const struct mountstats_op *op_find(const struct mountstats *m, const char *name)
{
    for (int i = 0; i < m->nops; i++)
        if (strcmp(m->ops[i].name, name) == 0)
            return &m->ops[i];
    return NULL;
}

static void op_check(const struct mountstats_op *o, const struct mountstats_op *want)
{
    assert_non_null(o);
    assert_string_equal(o->name, want->name);
    assert_true(o->ops == want->ops);
    assert_true(o->trans == want->trans);
    assert_true(o->timeouts == want->timeouts);
    assert_true(o->bytes_sent == want->bytes_sent);
    assert_true(o->bytes_recv == want->bytes_recv);
    assert_true(o->queue_ms == want->queue_ms);
    assert_true(o->rtt_ms == want->rtt_ms);
    assert_true(o->execute_ms == want->execute_ms);
    assert_true(o->errors == want->errors);
}

static void xprt_check(const struct mountstats_xprt *x, const struct mountstats_xprt *want)
{
    assert_string_equal(x->proto, want->proto);
    assert_int_equal(x->count, want->count);
    assert_true(x->connects == want->connects);
    assert_true(x->sends == want->sends);
    assert_true(x->recvs == want->recvs);
    assert_true(x->bad_xids == want->bad_xids);
    assert_true(x->req_u == want->req_u);
    assert_true(x->backlog_u == want->backlog_u);
    assert_true(x->max_slots == want->max_slots);
    assert_true(x->sending_u == want->sending_u);
    assert_true(x->pending_u == want->pending_u);
}

static void bytes_check(const struct mountstats *m, const uint64_t want[8])
{
    for (int i = 0; i < 8; i++)
        assert_true(m->bytes[i] == want[i]);
}

/* The procfs fixture: NFSv4.0, 13-field tcp xprt, 8-column ops. */
static void test_nfs4_0(void **state)
{
    (void)state;
    struct mountstats m;
    memset(&m, 0xa5, sizeof m); /* every field must be set */
    assert_int_equal(parse_file("mountstats-nfs4.0.txt", "/mnt/nfs/test", &m), 0);
    assert_string_equal(m.device, "192.168.1.1:/srv/test");
    assert_string_equal(m.mount_point, "/mnt/nfs/test");
    assert_string_equal(m.fstype, "nfs4");
    assert_string_equal(m.statvers, "1.1");
    assert_string_equal(m.opts,
                        "rw,vers=4.0,rsize=1048576,wsize=1048576,namlen=255,acregmin=3,"
                        "acregmax=60,acdirmin=30,acdirmax=60,hard,proto=tcp,port=0,timeo=600,"
                        "retrans=2,sec=sys,mountaddr=192.168.1.1,clientaddr=192.168.1.5,"
                        "local_lock=none");
    const uint64_t bytes[8] = {1207640230, 0, 0, 0, 1210214218, 0, 295483, 0};
    bytes_check(&m, bytes);
    /* tcp 832 0 1 0 11 6428 6428 0 12154 0 24 26 5726 */
    const struct mountstats_xprt x = {"tcp", 1, 1, 6428, 6428, 0, 12154, 0, 24, 26, 5726};
    xprt_check(&m.xprt, &x);
    assert_int_equal(m.nops, 4);
    const struct mountstats_op want[4] = {
        {"NULL", 0, 0, 0, 0, 0, 0, 0, 0, 0},
        {"READ", 1298, 1298, 0, 207680, 1210292152, 6, 79386, 79407, 0},
        {"WRITE", 0, 0, 0, 0, 0, 0, 0, 0, 0},
        {"ACCESS", 2927395007ull, 2927394995ull, 0, 526931094212ull, 362996810236ull,
         18446743919241604546ull, 1667369447, 1953587717, 0},
    };
    for (int i = 0; i < 4; i++)
        op_check(&m.ops[i], &want[i]);
}

/* The NFSv3 sample's 22 ops, as written in mountstats-nfs3.txt. */
static const struct mountstats_op nfs3_ops[22] = {
    {"NULL", 1, 1, 0, 44, 24, 0, 0, 0, 0},
    {"GETATTR", 15230, 15230, 0, 2010360, 1705760, 6, 4711, 4951, 0},
    {"SETATTR", 122, 122, 0, 19520, 17568, 0, 61, 66, 0},
    {"LOOKUP", 3548, 3548, 0, 581872, 851520, 3, 1212, 1290, 412},
    {"ACCESS", 2207, 2207, 0, 300152, 264840, 1, 655, 702, 0},
    {"READLINK", 3, 3, 0, 384, 444, 0, 1, 1, 0},
    {"READ", 4100, 4103, 1, 574000, 4295721440ull, 18, 61234, 61987, 0},
    {"WRITE", 2048, 2050, 0, 2147885056ull, 278528, 2210, 48876, 51544, 0},
    {"CREATE", 64, 64, 0, 12544, 16896, 0, 57, 61, 0},
    {"MKDIR", 8, 8, 0, 1376, 2112, 0, 9, 9, 0},
    {"SYMLINK", 2, 2, 0, 408, 528, 0, 2, 2, 0},
    {"MKNOD", 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"REMOVE", 60, 60, 0, 9600, 8160, 0, 44, 47, 0},
    {"RMDIR", 4, 4, 0, 624, 544, 0, 3, 3, 1},
    {"RENAME", 16, 16, 0, 3584, 4160, 0, 14, 15, 0},
    {"LINK", 1, 1, 0, 196, 232, 0, 1, 1, 0},
    {"READDIR", 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {"READDIRPLUS", 40, 40, 0, 5920, 132400, 0, 52, 55, 0},
    {"FSSTAT", 12, 12, 0, 1440, 2016, 0, 4, 4, 0},
    {"FSINFO", 2, 2, 0, 240, 336, 0, 1, 1, 0},
    {"PATHCONF", 1, 1, 0, 120, 140, 0, 0, 0, 0},
    {"COMMIT", 32, 32, 0, 4736, 4096, 0, 2103, 2110, 0},
};

static void test_nfs3(void **state)
{
    (void)state;
    struct mountstats m;
    memset(&m, 0x5a, sizeof m);
    assert_int_equal(parse_file("mountstats-nfs3.txt", "/mnt/scratch", &m), 0);
    assert_string_equal(m.device, "10.0.0.5:/export/scratch");
    assert_string_equal(m.mount_point, "/mnt/scratch");
    assert_string_equal(m.fstype, "nfs");
    assert_string_equal(m.statvers, "1.1");
    assert_string_equal(m.opts, "rw,vers=3,rsize=1048576,wsize=1048576,namlen=255,acregmin=3,"
                                "acregmax=60,acdirmin=30,acdirmax=60,hard,proto=tcp,timeo=600,"
                                "retrans=2,sec=sys,mountaddr=10.0.0.5,mountvers=3,"
                                "mountport=20048,mountproto=udp,local_lock=none");
    const uint64_t bytes[8] = {4294967296ull, 2147483648ull, 0,       0,
                               4295229440ull, 2147483648ull, 1048576, 524288};
    bytes_check(&m, bytes);
    /* tcp 875 1 2 3 0 27506 27501 0 82518 0 65 55012 6876 */
    const struct mountstats_xprt x = {"tcp", 1, 2, 27506, 27501, 0, 82518, 0, 65, 55012, 6876};
    xprt_check(&m.xprt, &x);
    assert_int_equal(m.nops, 22);
    uint64_t trans = 0;
    for (int i = 0; i < 22; i++) {
        op_check(&m.ops[i], &nfs3_ops[i]);
        trans += m.ops[i].trans;
    }
    assert_true(trans == m.xprt.sends); /* every transmission is a send */
    const struct mountstats_op *rd = op_find(&m, "READ"), *wr = op_find(&m, "WRITE");
    assert_true(rd->trans - rd->ops == 3); /* retransmissions */
    assert_true(rd->timeouts == 1);        /* one major timeout */
    assert_true(wr->trans - wr->ops == 2);
    assert_true(op_find(&m, "LOOKUP")->errors == 412);

    /* The local mounts around it are not NFS; an unknown path is absent. */
    assert_int_equal(parse_file("mountstats-nfs3.txt", "/", &m), 1);
    assert_int_equal(parse_file("mountstats-nfs3.txt", "/proc", &m), 1);
    assert_int_equal(parse_file("mountstats-nfs3.txt", "/run", &m), 1);
    assert_int_equal(parse_file("mountstats-nfs3.txt", "/data", &m), 1);
    assert_int_equal(parse_file("mountstats-nfs3.txt", "/mnt", &m), 1);
    assert_int_equal(parse_file("mountstats-nfs3.txt", "/mnt/scratch/", &m), 1);
}

/* nconnect=2: two xprt lines summed, max_slots the larger; 8 columns. */
static void test_nfs4_2_nconnect(void **state)
{
    (void)state;
    struct mountstats m;
    assert_int_equal(parse_file("mountstats-nfs4.2-nconnect.txt", "/projects", &m), 0);
    assert_string_equal(m.device, "fs01.example.org:/projects");
    assert_string_equal(m.fstype, "nfs4");
    assert_string_equal(m.statvers, "1.1");
    assert_non_null(strstr(m.opts, ",vers=4.2,"));
    assert_non_null(strstr(m.opts, ",nconnect=2,"));
    const uint64_t bytes[8] = {8589934592ull, 4294967296ull, 0,       0,
                               8589934592ull, 4294967296ull, 2097152, 1048576};
    bytes_check(&m, bytes);
    /* tcp 801 0 1 0 12 8751 8751 0 17502 0 64 26253 1750
     * tcp 802 0 1 0 9 8738 8738 0 17476 0 63 26214 1747 */
    const struct mountstats_xprt x = {"tcp", 2, 2, 17489, 17489, 0, 34978, 0, 64, 52467, 3497};
    xprt_check(&m.xprt, &x);
    assert_int_equal(m.nops, 64);
    assert_string_equal(m.ops[0].name, "NULL");
    assert_string_equal(m.ops[63].name, "COPY_NOTIFY");
    uint64_t trans = 0;
    for (int i = 0; i < m.nops; i++) {
        assert_true(m.ops[i].errors == 0); /* no 9th column */
        trans += m.ops[i].trans;
    }
    assert_true(trans == m.xprt.sends);
    const struct mountstats_op want[] = {
        {"READ", 8192, 8192, 0, 2064384, 8590983168ull, 41, 90112, 91344, 0},
        {"WRITE", 4096, 4096, 0, 4296015872ull, 868352, 6120, 77824, 86010, 0},
        {"OPEN", 300, 300, 0, 111600, 156000, 2, 240, 251, 0},
        {"CLOSE", 300, 300, 0, 80400, 63600, 0, 150, 156, 0},
        {"GETATTR", 2500, 2500, 0, 560000, 660000, 1, 800, 835, 0},
        {"SEQUENCE", 1440, 1440, 0, 241920, 190080, 0, 430, 445, 0},
        {"RENEW", 0, 0, 0, 0, 0, 0, 0, 0, 0},
        {"SETCLIENTID_CONFIRM", 0, 0, 0, 0, 0, 0, 0, 0, 0},
        {"BIND_CONN_TO_SESSION", 1, 1, 0, 128, 80, 0, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        op_check(op_find(&m, want[i].name), &want[i]);
}

/* A minimal NFS entry around one xprt line. */
static int parse_xprt(const char *statvers, const char *xprt, struct mountstats *m)
{
    char text[1024];
    snprintf(text, sizeof text,
             "device srv:/e mounted on /m with fstype nfs statvers=%s\n"
             "\tbytes:\t1 2 3 4 5 6 7 8\n"
             "\tRPC iostats version: 1.1  p/v: 100003/3 (nfs)\n"
             "\txprt:\t%s\n"
             "\tper-op statistics\n"
             "\t        NULL: 0 0 0 0 0 0 0 0 0\n",
             statvers, xprt);
    return parse_str(text, "/m", m);
}

static void test_xprt_forms(void **state)
{
    (void)state;
    struct mountstats m;
    /* udp at 1.1: srcport bind sends recvs bad_xids req_u bklog_u max_slots sending_u pending_u */
    assert_int_equal(parse_xprt("1.1", "udp 1021 3 900 899 1 2700 4 16 1800 90", &m), 0);
    const struct mountstats_xprt udp11 = {"udp", 1, 0, 900, 899, 1, 2700, 4, 16, 1800, 90};
    xprt_check(&m.xprt, &udp11);
    /* udp at 1.0: no max_slots sending_u pending_u */
    assert_int_equal(parse_xprt("1.0", "udp 1021 3 900 899 1 2700 4", &m), 0);
    const struct mountstats_xprt udp10 = {"udp", 1, 0, 900, 899, 1, 2700, 4, 0, 0, 0};
    xprt_check(&m.xprt, &udp10);
    /* tcp at 1.0: 10 numbers */
    assert_int_equal(parse_xprt("1.0", "tcp 700 1 3 10 2 500 498 0 1500 7", &m), 0);
    const struct mountstats_xprt tcp10 = {"tcp", 1, 3, 500, 498, 0, 1500, 7, 0, 0, 0};
    xprt_check(&m.xprt, &tcp10);
    /* at 1.1 the three newer fields are required */
    assert_int_equal(parse_xprt("1.1", "tcp 700 1 3 10 2 500 498 0 1500 7", &m), -1);
    assert_int_equal(parse_xprt("1.1", "udp 1021 3 900 899 1 2700 4", &m), -1);
    assert_int_equal(parse_xprt("1.0", "udp 1021 3 900 899 1 2700", &m), -1);
    assert_int_equal(parse_xprt("1.1", "tcp", &m), -1);
    assert_int_equal(parse_xprt("1.1", "", &m), -1);
    assert_int_equal(parse_xprt("1.1", "tcp 700 1 3 10 2 500 498 0 1500 7 64 1000 x", &m), -1);
    /* rdma: counted, counters left 0 */
    assert_int_equal(
        parse_xprt("1.1", "rdma 0 0 1 0 5 100 100 0 300 0 32 0 0 0 0 0 0 0 0 0 0 0 0 0 0", &m), 0);
    const struct mountstats_xprt rdma = {"rdma", 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    xprt_check(&m.xprt, &rdma);
    assert_int_equal(parse_xprt("1.1", "averylongproto 1 2 3", &m), -1);
}

/* The kernel escapes a space in a path as \040; a literal space works too. */
static void test_mount_point_spaces(void **state)
{
    (void)state;
    const char *text = "device /dev/sda1 mounted on / with fstype ext4\n"
                       "device srv:/my\\040export mounted on /mnt/my\\040data with fstype nfs "
                       "statvers=1.1\n"
                       "\tbytes:\t1 0 0 0 1 0 1 0\n"
                       "\txprt:\ttcp 1 0 1 0 0 5 5 0 5 0 2 5 0\n"
                       "\tper-op statistics\n"
                       "\t        READ: 1 1 0 100 200 0 1 1 0\n"
                       "\n"
                       "device srv2:/b mounted on /mnt/with two  spaces with fstype nfs4 "
                       "statvers=1.1\n"
                       "\tbytes:\t2 0 0 0 2 0 1 0\n"
                       "\txprt:\ttcp 2 0 1 0 0 7 7 0 7 0 3 7 0\n"
                       "\tper-op statistics\n"
                       "\t        READ: 2 2 0 100 200 0 1 1 0\n"
                       "device tmpfs mounted on /mnt/a b mounted on c with fstype tmpfs\n";
    struct mountstats m;
    assert_int_equal(parse_str(text, "/mnt/my data", &m), 0);
    assert_string_equal(m.device, "srv:/my export");
    assert_string_equal(m.mount_point, "/mnt/my data");
    assert_int_equal(m.nops, 1);
    assert_true(m.ops[0].ops == 1);
    assert_int_equal(parse_str(text, "/mnt/my\\040data", &m), 1);
    assert_int_equal(parse_str(text, "/mnt/with two  spaces", &m), 0);
    assert_string_equal(m.device, "srv2:/b");
    assert_true(m.ops[0].ops == 2);
    assert_true(m.xprt.max_slots == 3);
    assert_int_equal(parse_str(text, "/mnt/with two spaces", &m), 1);
    assert_int_equal(parse_str(text, "/mnt/a b mounted on c", &m), 1); /* tmpfs */
}

/* The last entry on a mount point is the one in use. */
static void test_last_entry(void **state)
{
    (void)state;
    const char *nfs1 = "device a:/1 mounted on /m with fstype nfs statvers=1.1\n"
                       "\tbytes:\t1 0 0 0 0 0 0 0\n"
                       "\txprt:\ttcp 1 0 1 0 0 5 5 0 5 0 2 5 0\n"
                       "\tper-op statistics\n"
                       "\t        NULL: 0 0 0 0 0 0 0 0\n";
    const char *nfs2 = "device b:/2 mounted on /m with fstype nfs4 statvers=1.1\n"
                       "\tbytes:\t2 0 0 0 0 0 0 0\n"
                       "\txprt:\ttcp 1 0 1 0 0 5 5 0 5 0 2 5 0\n"
                       "\tper-op statistics\n"
                       "\t        NULL: 0 0 0 0 0 0 0 0\n";
    const char *tmp = "device tmpfs mounted on /m with fstype tmpfs\n";
    char text[2048];
    struct mountstats m;
    snprintf(text, sizeof text, "%s%s", nfs1, nfs2);
    assert_int_equal(parse_str(text, "/m", &m), 0);
    assert_string_equal(m.device, "b:/2");
    assert_true(m.bytes[0] == 2);
    snprintf(text, sizeof text, "%s%s", nfs2, nfs1);
    assert_int_equal(parse_str(text, "/m", &m), 0);
    assert_string_equal(m.device, "a:/1");
    assert_string_equal(m.fstype, "nfs");
    snprintf(text, sizeof text, "%s%s", nfs1, tmp); /* over-mounted: not NFS now */
    assert_int_equal(parse_str(text, "/m", &m), 1);
    snprintf(text, sizeof text, "%s%s", tmp, nfs1);
    assert_int_equal(parse_str(text, "/m", &m), 0);
}

/* The NFS entry the cases below break, one line at a time. */
static const char good_head[] = "device s:/e mounted on /m with fstype nfs statvers=1.1\n"
                                "\topts:\trw,vers=3\n";
static const char good_bytes[] = "\tbytes:\t1 2 3 4 5 6 7 8\n";
static const char good_xprt[] = "\txprt:\ttcp 1 0 1 0 0 5 5 0 5 0 2 5 0\n";
static const char good_perop[] = "\tper-op statistics\n";
static const char good_op[] = "\t        READ: 1 1 0 100 200 0 1 1 0\n";

static int parse_parts(const char *head, const char *bytes, const char *xprt, const char *perop,
                       const char *op, struct mountstats *m)
{
    char text[8192];
    snprintf(text, sizeof text, "%s%s%s%s%s", head, bytes, xprt, perop, op);
    return parse_str(text, "/m", m);
}

static void test_malformed(void **state)
{
    (void)state;
    struct mountstats m;
    assert_int_equal(parse_parts(good_head, good_bytes, good_xprt, good_perop, good_op, &m), 0);
    assert_true(m.bytes[7] == 8);
    /* bytes: fewer than 8, a word, a sign, overflow; more than 8 is fine */
    assert_int_equal(
        parse_parts(good_head, "\tbytes:\t1 2 3 4 5 6 7\n", good_xprt, good_perop, good_op, &m),
        -1);
    assert_int_equal(
        parse_parts(good_head, "\tbytes:\t1 2 3 4 5 6 7 x\n", good_xprt, good_perop, good_op, &m),
        -1);
    assert_int_equal(
        parse_parts(good_head, "\tbytes:\t1 2 3 4 5 6 7 -8\n", good_xprt, good_perop, good_op, &m),
        -1);
    assert_int_equal(parse_parts(good_head, "\tbytes:\t1 2 3 4 5 6 7 18446744073709551616\n",
                                 good_xprt, good_perop, good_op, &m),
                     -1);
    assert_int_equal(parse_parts(good_head, "\tbytes:\t1 2 3 4 5 6 7 99999999999999999999\n",
                                 good_xprt, good_perop, good_op, &m),
                     -1);
    assert_int_equal(parse_parts(good_head, "\tbytes:\t1 2 3 4 5 6 7 18446744073709551615 9\n",
                                 good_xprt, good_perop, good_op, &m),
                     0);
    assert_true(m.bytes[7] == UINT64_MAX);
    /* op lines: fewer than 8 numbers, no name, a space in the name, too long a name */
    assert_int_equal(parse_parts(good_head, good_bytes, good_xprt, good_perop,
                                 "\t        READ: 1 1 0 100 200 0 1\n", &m),
                     -1);
    assert_int_equal(
        parse_parts(good_head, good_bytes, good_xprt, good_perop, "\t: 1 1 0 100 200 0 1 1\n", &m),
        -1);
    assert_int_equal(parse_parts(good_head, good_bytes, good_xprt, good_perop,
                                 "\tRE AD: 1 1 0 100 200 0 1 1\n", &m),
                     -1);
    assert_int_equal(parse_parts(good_head, good_bytes, good_xprt, good_perop,
                                 "\tREAD 1 1 0 100 200 0 1 1\n", &m),
                     -1);
    assert_int_equal(parse_parts(good_head, good_bytes, good_xprt, good_perop,
                                 "\tAN_OPERATION_NAME_OF_32_CHARS_XX: 1 1 0 100 200 0 1 1\n", &m),
                     -1);
    assert_int_equal(parse_parts(good_head, good_bytes, good_xprt, good_perop,
                                 "\tAN_OPERATION_NAME_OF_31_CHARS_X: 1 1 0 100 200 0 1 1\n", &m),
                     0);
    assert_int_equal(parse_parts(good_head, good_bytes, good_xprt, good_perop,
                                 "\t        READ: 1 1 0 100 200 0 1 18446744073709551616\n", &m),
                     -1);
    /* a missing bytes:, xprt: or per-op statistics line: truncated */
    assert_int_equal(parse_parts(good_head, "", good_xprt, good_perop, good_op, &m), -1);
    assert_int_equal(parse_parts(good_head, good_bytes, "", good_perop, good_op, &m), -1);
    assert_int_equal(parse_parts(good_head, good_bytes, good_xprt, "", "", &m), -1);
    /* no ops after the per-op header is a (strange but) complete entry */
    assert_int_equal(parse_parts(good_head, good_bytes, good_xprt, good_perop, "", &m), 0);
    assert_int_equal(m.nops, 0);
    /* the text ends inside the entry's last line */
    assert_int_equal(parse_parts(good_head, good_bytes, good_xprt, good_perop,
                                 "\t        READ: 1 1 0 100 200 0 1 1 0", &m),
                     -1);
    assert_int_equal(parse_str("device s:/e mounted on /m with fstype nfs statvers=1.1", "/m", &m),
                     -1);
    /* opts too long for its field */
    char head[1024];
    char longopts[600];
    memset(longopts, 'o', sizeof longopts - 1);
    longopts[sizeof longopts - 1] = '\0';
    snprintf(head, sizeof head,
             "device s:/e mounted on /m with fstype nfs statvers=1.1\n\topts:\t%s\n", longopts);
    assert_int_equal(parse_parts(head, good_bytes, good_xprt, good_perop, good_op, &m), -1);
    longopts[511] = '\0';
    snprintf(head, sizeof head,
             "device s:/e mounted on /m with fstype nfs statvers=1.1\n\topts:\t%s\n", longopts);
    assert_int_equal(parse_parts(head, good_bytes, good_xprt, good_perop, good_op, &m), 0);
    assert_int_equal(strlen(m.opts), 511);
    /* a bad entry on another mount point does not matter */
    char text[4096];
    snprintf(text, sizeof text, "%s%s%s%s%s%s", good_head, good_bytes, good_xprt, good_perop,
             good_op, "device x:/y mounted on /other with fstype nfs statvers=1.1\n\tbytes:\t1\n");
    assert_int_equal(parse_str(text, "/m", &m), 0);
    assert_int_equal(parse_str(text, "/other", &m), -1);
    /* nothing at all */
    assert_int_equal(mountstats_parse(NULL, 0, "/m", &m), 1);
    assert_int_equal(parse_n("", 0, "/m", &m), 1);
    assert_int_equal(parse_str("\n\n", "/m", &m), 1);
}

/* Ops past MOUNTSTATS_OPS_MAX are dropped, the rest kept. */
static void test_ops_max(void **state)
{
    (void)state;
    static char text[16384];
    size_t n = (size_t)snprintf(text, sizeof text, "%s%s%s%s", good_head, good_bytes, good_xprt,
                                good_perop);
    for (int i = 0; i < MOUNTSTATS_OPS_MAX + 10; i++)
        n +=
            (size_t)snprintf(text + n, sizeof text - n, "\tOP%d: %d %d 0 0 0 0 0 0\n", i, i, i + 1);
    assert_true(n < sizeof text);
    struct mountstats m;
    assert_int_equal(parse_str(text, "/m", &m), 0);
    assert_int_equal(m.nops, MOUNTSTATS_OPS_MAX);
    assert_string_equal(m.ops[0].name, "OP0");
    assert_string_equal(m.ops[MOUNTSTATS_OPS_MAX - 1].name, "OP95");
    assert_true(m.ops[95].ops == 95 && m.ops[95].trans == 96);
}

/* A second snapshot of the NFSv3 mount, some time after the sample file:
 * larger counters, a second xprt connect, and an op the first lacks. */
static const char nfs3_later[] =
    "device rootfs mounted on / with fstype rootfs\n"
    "device 10.0.0.5:/export/scratch mounted on /mnt/scratch with fstype nfs statvers=1.1\n"
    "\topts:\trw,vers=3,rsize=1048576,wsize=1048576,hard,proto=tcp\n"
    "\tage:\t86460\n"
    "\tbytes:\t5368709120 3221225472 4096 0 5368971264 3221225472 1310720 786432\n"
    "\tRPC iostats version: 1.1  p/v: 100003/3 (nfs)\n"
    "\txprt:\ttcp 876 1 3 4 0 29610 29600 2 90000 12 80 60000 7000\n"
    "\tper-op statistics\n"
    "\t        NULL: 1 1 0 44 24 0 0 0 0\n"
    "\t     GETATTR: 16230 16230 0 2142360 1817760 7 5011 5271 0\n"
    "\t     SETATTR: 122 122 0 19520 17568 0 61 66 0\n"
    "\t      LOOKUP: 3648 3648 0 598272 875520 3 1242 1322 430\n"
    "\t      ACCESS: 2307 2307 0 313752 276840 1 685 734 0\n"
    "\t    READLINK: 3 3 0 384 444 0 1 1 0\n"
    "\t        READ: 5124 5130 2 717360 5369347040 20 76530 77460 0\n"
    "\t       WRITE: 3072 3075 0 3221618176 417792 3300 73300 77300 1\n"
    "\t      CREATE: 64 64 0 12544 16896 0 57 61 0\n"
    "\t       MKDIR: 8 8 0 1376 2112 0 9 9 0\n"
    "\t     SYMLINK: 2 2 0 408 528 0 2 2 0\n"
    "\t       MKNOD: 0 0 0 0 0 0 0 0 0\n"
    "\t      REMOVE: 60 60 0 9600 8160 0 44 47 0\n"
    "\t       RMDIR: 4 4 0 624 544 0 3 3 1\n"
    "\t      RENAME: 16 16 0 3584 4160 0 14 15 0\n"
    "\t        LINK: 1 1 0 196 232 0 1 1 0\n"
    "\t     READDIR: 0 0 0 0 0 0 0 0 0\n"
    "\t READDIRPLUS: 40 40 0 5920 132400 0 52 55 0\n"
    "\t      FSSTAT: 12 12 0 1440 2016 0 4 4 0\n"
    "\t      FSINFO: 2 2 0 240 336 0 1 1 0\n"
    "\t    PATHCONF: 1 1 0 120 140 0 0 0 0\n"
    "\t      COMMIT: 48 48 0 7104 6144 0 3150 3160 0\n"
    "\t   READ_PLUS: 7 7 0 980 28700 0 5 6 0\n"
    "\n";

static void delta_check(const struct mountstats *d)
{
    assert_string_equal(d->device, "10.0.0.5:/export/scratch");
    assert_string_equal(d->mount_point, "/mnt/scratch");
    assert_string_equal(d->fstype, "nfs");
    assert_string_equal(d->statvers, "1.1");
    assert_string_equal(d->opts, "rw,vers=3,rsize=1048576,wsize=1048576,hard,proto=tcp");
    const uint64_t bytes[8] = {1073741824, 1073741824, 4096,   0,
                               1073741824, 1073741824, 262144, 262144};
    bytes_check(d, bytes);
    /* after: tcp 876 1 3 4 0 29610 29600 2 90000 12 80 60000 7000
     * before: tcp 875 1 2 3 0 27506 27501 0 82518 0 65 55012 6876 */
    const struct mountstats_xprt x = {"tcp", 1, 1, 2104, 2099, 2, 7482, 12, 80, 4988, 124};
    xprt_check(&d->xprt, &x);
    assert_int_equal(d->nops, 23);
    const struct mountstats_op want[] = {
        {"NULL", 0, 0, 0, 0, 0, 0, 0, 0, 0},
        {"GETATTR", 1000, 1000, 0, 132000, 112000, 1, 300, 320, 0},
        {"LOOKUP", 100, 100, 0, 16400, 24000, 0, 30, 32, 18},
        {"ACCESS", 100, 100, 0, 13600, 12000, 0, 30, 32, 0},
        {"READ", 1024, 1027, 1, 143360, 1073625600, 2, 15296, 15473, 0},
        {"WRITE", 1024, 1025, 0, 1073733120, 139264, 1090, 24424, 25756, 1},
        {"COMMIT", 16, 16, 0, 2368, 2048, 0, 1047, 1050, 0},
        {"READ_PLUS", 7, 7, 0, 980, 28700, 0, 5, 6, 0}, /* only in after: from 0 */
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        op_check(op_find(d, want[i].name), &want[i]);
    const struct mountstats_op zero = {"MKNOD", 0, 0, 0, 0, 0, 0, 0, 0, 0};
    op_check(op_find(d, "MKNOD"), &zero);
    assert_string_equal(d->ops[22].name, "READ_PLUS");
}

static void test_delta(void **state)
{
    (void)state;
    static struct mountstats before, after, d;
    assert_int_equal(parse_file("mountstats-nfs3.txt", "/mnt/scratch", &before), 0);
    assert_int_equal(parse_str(nfs3_later, "/mnt/scratch", &after), 0);
    memset(&d, 0x77, sizeof d);
    mountstats_delta(&before, &after, &d);
    delta_check(&d);

    /* out may be either input */
    static struct mountstats a, b;
    a = before;
    b = after;
    mountstats_delta(&a, &b, &b);
    delta_check(&b);
    a = before;
    b = after;
    mountstats_delta(&a, &b, &a);
    delta_check(&a);

    /* A snapshot minus itself is all zero but the identity and max_slots. */
    mountstats_delta(&after, &after, &d);
    assert_string_equal(d.device, after.device);
    assert_true(d.xprt.max_slots == 80);
    assert_int_equal(d.xprt.count, 1);
    assert_true(d.xprt.sends == 0 && d.bytes[0] == 0 && d.ops[6].ops == 0);

    /* Ops only in before are dropped; counters wrap as the kernel's do. */
    mountstats_delta(&after, &before, &d);
    assert_int_equal(d.nops, 22);
    assert_null(op_find(&d, "READ_PLUS"));
    assert_true(op_find(&d, "READ")->ops == (uint64_t)0 - 1024);
}

/* ---- fuzz ---- */

static const char *const dict[] = {
    "device ",
    " mounted on ",
    " with fstype ",
    "nfs",
    "nfs4",
    " statvers=1.0",
    " statvers=1.1",
    "\topts:\t",
    "\tbytes:\t",
    "\txprt:\t",
    "tcp ",
    "udp ",
    "rdma ",
    "\tper-op statistics\n",
    "\\040",
    ": ",
    "18446744073709551615",
    "18446744073709551616",
    "/mnt/scratch",
    "/projects",
    "/mnt/nfs/test",
};

/* The mutations' generator, with this format's characters and words. */
static struct fuzz fz = {
    .rng = 0x9e3779b97f4a7c15ull,
    .alphabet = "0123456789 \t\n:\\/-=,{}\"#x",
    .words = dict,
    .nwords = sizeof dict / sizeof dict[0],
};

static void result_check(int r, const struct mountstats *m)
{
    assert_true(r == -1 || r == 0 || r == 1);
    if (r != 0)
        return;
    assert_true(m->nops >= 0 && m->nops <= MOUNTSTATS_OPS_MAX);
    assert_true(m->xprt.count >= 1);
    assert_true(strnlen(m->device, sizeof m->device) < sizeof m->device);
    assert_true(strnlen(m->fstype, sizeof m->fstype) < sizeof m->fstype);
    assert_true(strnlen(m->statvers, sizeof m->statvers) < sizeof m->statvers);
    assert_true(strnlen(m->opts, sizeof m->opts) < sizeof m->opts);
    assert_true(strnlen(m->xprt.proto, sizeof m->xprt.proto) < sizeof m->xprt.proto);
    for (int i = 0; i < m->nops; i++)
        assert_true(strnlen(m->ops[i].name, sizeof m->ops[i].name) < sizeof m->ops[i].name);
}

static const struct {
    const char *file, *mp;
} samples[] = {
    {"mountstats-nfs4.0.txt", "/mnt/nfs/test"},
    {"mountstats-nfs3.txt", "/mnt/scratch"},
    {"mountstats-nfs4.2-nconnect.txt", "/projects"},
};
#define NSAMPLES (sizeof samples / sizeof samples[0])

/* A sample, and what its checks found. */
struct probe {
    const char *mp;
    size_t len; /* the whole sample's */
    int found;  /* mutations that parsed */
};

/* A fuzz_fn for prefixes: a documented result, and the whole text parses. */
static void prefix_check(void *arg, const char *text, size_t n)
{
    static struct mountstats m;
    const struct probe *p = arg;
    int r = mountstats_parse(text, n, p->mp, &m);
    result_check(r, &m);
    if (n == p->len)
        assert_int_equal(r, 0);
    result_check(mountstats_parse(text, n, "/", &m), &m);
}

/* A fuzz_fn for mutations: a documented result; counts the parses. */
static void mutation_check(void *arg, const char *text, size_t n)
{
    static struct mountstats m;
    struct probe *p = arg;
    int r = mountstats_parse(text, n, p->mp, &m);
    result_check(r, &m);
    p->found += r == 0;
    result_check(mountstats_parse(text, n, "/mnt/my data", &m), &m);
}

/* Every prefix of every sample: never past len, always a documented result,
 * and the whole text parses. */
static void test_fuzz_prefixes(void **state)
{
    (void)state;
    for (size_t s = 0; s < NSAMPLES; s++) {
        struct probe p = {samples[s].mp, 0, 0};
        char *text = fuzz_read_data(samples[s].file, &p.len);
        fuzz_prefixes(text, p.len, prefix_check, &p);
        free(text);
    }
}

/* Random edits of the samples: 8000 mutations of each, 24000 in all. */
static void test_fuzz_mutations(void **state)
{
    (void)state;
    int found = 0;
    for (size_t s = 0; s < NSAMPLES; s++) {
        struct probe p = {samples[s].mp, 0, 0};
        char *text = fuzz_read_data(samples[s].file, &p.len);
        fuzz_mutations(&fz, text, p.len, 8000, 4, mutation_check, &p);
        found += p.found;
        free(text);
    }
    assert_true(found > 1000); /* the edits leave many entries whole */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nfs4_0),
        cmocka_unit_test(test_nfs3),
        cmocka_unit_test(test_nfs4_2_nconnect),
        cmocka_unit_test(test_xprt_forms),
        cmocka_unit_test(test_mount_point_spaces),
        cmocka_unit_test(test_last_entry),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_ops_max),
        cmocka_unit_test(test_delta),
        cmocka_unit_test(test_fuzz_prefixes),
        cmocka_unit_test(test_fuzz_mutations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
