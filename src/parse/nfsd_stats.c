/* nfsd_stats.c — parser for the kernel NFS server's /proc/net/rpc/nfsd
 * (fs/nfsd/stats.c, net/sunrpc/stats.c) and the names of the NFSv3
 * procedures and NFSv4 operations its per-procedure lines count. The text
 * is walked with a textscan.h cursor that never reads text[len]: lines end
 * at '\n' (a '\r' before it is blank space), tokens are runs of non-blanks. */
#include "nfsd_stats.h"

#include "textscan.h"

#include <stdio.h>
#include <string.h>

/* The th line's "%u.%03u" seconds: digits, optionally a '.' and digits. */
static int span_is_decimal(struct textscan s)
{
    const char *dot = NULL;

    for (const char *p = s.p; p < s.end; p++) {
        if (*p == '.' && !dot && p > s.p)
            dot = p;
        else if (*p < '0' || *p > '9')
            return 0;
    }
    return s.p < s.end && s.end[-1] != '.';
}

/* A counted line ("proc3 22 v0 v1 ..."): the count, then at least that
 * many numbers, the first min(count, nv) of them into v. */
static int nfsd_read_counted(struct textscan *line, uint64_t *v, size_t nv, uint64_t *count)
{
    struct textscan tok;
    size_t n;

    if (!textscan_field(line, &tok) || textscan_u64(tok, count) < 0)
        return -1;
    if (nv > *count)
        nv = (size_t)*count;
    if (textscan_u64s(line, v, nv, &n) < 0 || n < *count)
        return -1;
    return 0;
}

/* One line of /proc/net/rpc/nfsd after its key: 0, or -1 when it is
 * malformed. */
typedef int line_parser(struct textscan *line, struct nfsd_stats *out);

/* The lines of a fixed count of numbers, each kept in one member. */
#define NFSD_FIELD(m) offsetof(struct nfsd_stats, m)
static const struct fixed_line {
    const char *key;
    unsigned n;      /* numbers kept; more may follow */
    size_t field[4]; /* where each goes */
    unsigned have;   /* NFSD_HAVE_* */
} fixed_lines[] = {
    {"rc", 3, {NFSD_FIELD(rc_hits), NFSD_FIELD(rc_misses), NFSD_FIELD(rc_nocache)}, NFSD_HAVE_RC},
    {"io", 2, {NFSD_FIELD(io_read), NFSD_FIELD(io_write)}, NFSD_HAVE_IO},
    {"net",
     4,
     {NFSD_FIELD(net_count), NFSD_FIELD(net_udp), NFSD_FIELD(net_tcp), NFSD_FIELD(net_tcp_conn)},
     NFSD_HAVE_NET},
    /* calls, badcalls (= badfmt + badauth + badclnt), then those three */
    {"rpc", 2, {NFSD_FIELD(rpc_calls), NFSD_FIELD(rpc_bad)}, NFSD_HAVE_RPC},
};

static int line_fixed(const struct fixed_line *f, struct textscan *line, struct nfsd_stats *out)
{
    uint64_t v[4];
    size_t got;
    if (textscan_u64s(line, v, f->n, &got) < 0 || got < f->n)
        return -1;
    for (unsigned i = 0; i < f->n; i++)
        memcpy((char *)out + f->field[i], &v[i], sizeof v[i]);
    out->have |= f->have;
    return 0;
}

/* threads, fullcnt, then a histogram of seconds ("0.000"), ignored */
static int line_th(struct textscan *line, struct nfsd_stats *out)
{
    uint64_t v[2];
    struct textscan tok;
    for (int n = 0; n < 2; n++)
        if (!textscan_field(line, &tok) || textscan_u64(tok, &v[n]) < 0)
            return -1;
    if (v[0] > INT64_MAX)
        return -1;
    while (textscan_field(line, &tok))
        if (!span_is_decimal(tok))
            return -1;
    out->threads = (int64_t)v[0], out->th_full = v[1];
    out->have |= NFSD_HAVE_TH;
    return 0;
}

static int line_proc2(struct textscan *line, struct nfsd_stats *out)
{
    (void)out;
    uint64_t v[1], n;
    return nfsd_read_counted(line, v, 0, &n) < 0 ? -1 : 0;
}

static int line_proc3(struct textscan *line, struct nfsd_stats *out)
{
    uint64_t n;
    memset(out->v3, 0, sizeof out->v3);
    if (nfsd_read_counted(line, out->v3, NFSD_V3_OPS, &n) < 0)
        return -1;
    out->nv3 = n < NFSD_V3_OPS ? (int)n : NFSD_V3_OPS;
    out->have |= NFSD_HAVE_PROC3;
    return 0;
}

static int line_proc4(struct textscan *line, struct nfsd_stats *out)
{
    uint64_t v[2], n;
    if (nfsd_read_counted(line, v, 2, &n) < 0 || n < 2)
        return -1;
    out->v4_null = v[0], out->v4_compound = v[1];
    out->have |= NFSD_HAVE_PROC4;
    return 0;
}

static int line_proc4ops(struct textscan *line, struct nfsd_stats *out)
{
    uint64_t n;
    memset(out->v4ops, 0, sizeof out->v4ops);
    if (nfsd_read_counted(line, out->v4ops, NFSD_V4_OPS_MAX, &n) < 0)
        return -1;
    out->nv4ops = n < NFSD_V4_OPS_MAX ? (int)n : NFSD_V4_OPS_MAX;
    out->have |= NFSD_HAVE_PROC4OPS;
    return 0;
}

/* The other keys herd reads; fh and ra are known but not kept (no parser). */
static const struct {
    const char *key;
    line_parser *parse;
} line_kinds[] = {
    {"th", line_th},       {"proc2", line_proc2},       {"proc3", line_proc3},
    {"proc4", line_proc4}, {"proc4ops", line_proc4ops}, {"fh", NULL},
    {"ra", NULL},
};

/* One line whose first token is key: 0 (read, or known and not kept),
 * -1 if malformed, 1 for an unknown key. */
static int nfsd_parse_line(struct textscan key, struct textscan *line, struct nfsd_stats *out)
{
    for (size_t i = 0; i < sizeof fixed_lines / sizeof fixed_lines[0]; i++)
        if (textscan_eq(key, fixed_lines[i].key))
            return line_fixed(&fixed_lines[i], line, out);
    for (size_t i = 0; i < sizeof line_kinds / sizeof line_kinds[0]; i++)
        if (textscan_eq(key, line_kinds[i].key))
            return line_kinds[i].parse ? line_kinds[i].parse(line, out) : 0;
    return 1;
}

int nfsd_stats_parse(const char *text, size_t len, struct nfsd_stats *out)
{
    struct textscan rest, line, key;
    int known = 0;

    if (!text || !out)
        return -1;
    rest.p = text;
    rest.end = text + len;
    memset(out, 0, sizeof *out);
    out->threads = -1;
    while (textscan_line(&rest, &line)) {
        int r;
        if (!textscan_field(&line, &key))
            continue;
        r = nfsd_parse_line(key, &line, out);
        if (r < 0)
            return -1;
        if (r == 0)
            known = 1;
    }
    return known ? 0 : -1;
}

const char *nfsd_v3_op_name(int i)
{
    static const char *const names[NFSD_V3_OPS] = {
        "null",    "getattr",     "setattr", "lookup", "access",   "readlink", "read",   "write",
        "create",  "mkdir",       "symlink", "mknod",  "remove",   "rmdir",    "rename", "link",
        "readdir", "readdirplus", "fsstat",  "fsinfo", "pathconf", "commit",
    };
    return i >= 0 && i < NFSD_V3_OPS ? names[i] : "?";
}

/* Operation numbers 3..75: RFC 7530, 8881 (4.1), 7862 (4.2), 8276 (xattrs). */
static const char *const v4_op_names[] = {
    [3] = "access",
    [4] = "close",
    [5] = "commit",
    [6] = "create",
    [7] = "delegpurge",
    [8] = "delegreturn",
    [9] = "getattr",
    [10] = "getfh",
    [11] = "link",
    [12] = "lock",
    [13] = "lockt",
    [14] = "locku",
    [15] = "lookup",
    [16] = "lookupp",
    [17] = "nverify",
    [18] = "open",
    [19] = "openattr",
    [20] = "open_confirm",
    [21] = "open_downgrade",
    [22] = "putfh",
    [23] = "putpubfh",
    [24] = "putrootfh",
    [25] = "read",
    [26] = "readdir",
    [27] = "readlink",
    [28] = "remove",
    [29] = "rename",
    [30] = "renew",
    [31] = "restorefh",
    [32] = "savefh",
    [33] = "secinfo",
    [34] = "setattr",
    [35] = "setclientid",
    [36] = "setclientid_confirm",
    [37] = "verify",
    [38] = "write",
    [39] = "release_lockowner",
    [40] = "backchannel_ctl",
    [41] = "bind_conn_to_session",
    [42] = "exchange_id",
    [43] = "create_session",
    [44] = "destroy_session",
    [45] = "free_stateid",
    [46] = "get_dir_delegation",
    [47] = "getdeviceinfo",
    [48] = "getdevicelist",
    [49] = "layoutcommit",
    [50] = "layoutget",
    [51] = "layoutreturn",
    [52] = "secinfo_no_name",
    [53] = "sequence",
    [54] = "set_ssv",
    [55] = "test_stateid",
    [56] = "want_delegation",
    [57] = "destroy_clientid",
    [58] = "reclaim_complete",
    [59] = "allocate",
    [60] = "copy",
    [61] = "copy_notify",
    [62] = "deallocate",
    [63] = "io_advise",
    [64] = "layouterror",
    [65] = "layoutstats",
    [66] = "offload_cancel",
    [67] = "offload_status",
    [68] = "read_plus",
    [69] = "seek",
    [70] = "write_same",
    [71] = "clone",
    [72] = "getxattr",
    [73] = "setxattr",
    [74] = "listxattrs",
    [75] = "removexattr",
};

const char *nfsd_v4_op_name(int i, char *buf, size_t len)
{
    if (i >= 0 && (size_t)i < sizeof v4_op_names / sizeof v4_op_names[0] && v4_op_names[i])
        return v4_op_names[i];
    if (!buf || len == 0)
        return "?";
    snprintf(buf, len, "op%d", i);
    return buf;
}
