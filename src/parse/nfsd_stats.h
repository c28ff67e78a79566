/* nfsd_stats.h — parser for the kernel NFS server's /proc/net/rpc/nfsd:
 * reply cache (rc), file handles (fh), bytes (io), threads (th), network
 * (net), RPC (rpc) and per-procedure counts for NFSv2/3/4 (proc2, proc3,
 * proc4, proc4ops). Format: fs/nfsd/stats.c and net/sunrpc/stats.c in the
 * kernel. Lines may come in any order; unknown lines (newer kernels add
 * e.g. "wdeleg_getattr") are skipped. A pure function on text: never
 * reads past len, never crashes on truncated or garbage input. */
#ifndef HERD_NFSD_STATS_H
#define HERD_NFSD_STATS_H

#include <stddef.h>
#include <stdint.h>

#define NFSD_V3_OPS 22
#define NFSD_V4_OPS_MAX 96

/* Which lines were present (bits of nfsd_stats.have). */
enum {
    NFSD_HAVE_RC = 1 << 0,
    NFSD_HAVE_IO = 1 << 1,
    NFSD_HAVE_TH = 1 << 2,
    NFSD_HAVE_NET = 1 << 3,
    NFSD_HAVE_RPC = 1 << 4,
    NFSD_HAVE_PROC3 = 1 << 5,
    NFSD_HAVE_PROC4 = 1 << 6,
    NFSD_HAVE_PROC4OPS = 1 << 7,
};

struct nfsd_stats {
    unsigned have;
    uint64_t rc_hits, rc_misses, rc_nocache;
    uint64_t io_read, io_write; /* bytes */
    int64_t threads;            /* th: thread count; -1 when no th line */
    uint64_t th_full;           /* th: times every thread was busy (0 on new kernels) */
    uint64_t net_count, net_udp, net_tcp, net_tcp_conn;
    uint64_t rpc_calls, rpc_bad;     /* rpc: calls, badcalls (itself the sum of badfmt,
                                      * badauth, badclnt that follow it) */
    int nv3;                         /* entries in v3 (proc3's count, capped) */
    uint64_t v3[NFSD_V3_OPS];        /* indexed by NFSv3 procedure number */
    uint64_t v4_null, v4_compound;   /* proc4 */
    int nv4ops;                      /* entries in v4ops (proc4ops' count, capped) */
    uint64_t v4ops[NFSD_V4_OPS_MAX]; /* indexed by NFSv4 operation number */
};

/* Returns 0, or -1 when a known line is malformed (a count larger than
 * the numbers that follow, a non-number) or no known line is present. */
int nfsd_stats_parse(const char *text, size_t len, struct nfsd_stats *out);

/* "null", "getattr", ... for NFSv3 procedure i (0 <= i < NFSD_V3_OPS). */
const char *nfsd_v3_op_name(int i);
/* "access", "close", ... for NFSv4 operation number i (RFC 7530/8881/7862
 * numbering); "op<N>" into buf for numbers without a name. */
const char *nfsd_v4_op_name(int i, char *buf, size_t len);

#endif
