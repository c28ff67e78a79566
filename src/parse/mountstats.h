/* mountstats.h — parser for /proc/self/mountstats, the NFS client's
 * per-mount counters: the bytes line, the RPC transport (xprt) line and
 * the per-op lines ("READ: ops trans timeouts bytes_sent bytes_recv queue
 * rtt execute [errors]"). Format: fs/nfs/iostat.h and net/sunrpc/stats.c
 * in the kernel (statvers 1.0 and 1.1). A pure function on text: never
 * reads past len, never crashes on truncated or garbage input. */
#ifndef HERD_MOUNTSTATS_H
#define HERD_MOUNTSTATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MOUNTSTATS_OPS_MAX 96

struct mountstats_op {
    char name[32];     /* "READ", "WRITE", "GETATTR", ... as printed */
    uint64_t ops;      /* requests */
    uint64_t trans;    /* transmissions; trans - ops = retransmissions */
    uint64_t timeouts; /* major timeouts */
    uint64_t bytes_sent, bytes_recv;
    uint64_t queue_ms, rtt_ms, execute_ms; /* cumulative milliseconds */
    uint64_t errors;                       /* 9th column on newer kernels, else 0 */
};

/* The xprt line(s); with nconnect > 1 several, summed here. */
struct mountstats_xprt {
    char proto[8];     /* tcp, udp, rdma */
    int count;         /* xprt lines summed */
    uint64_t connects; /* tcp/rdma connect_count; 0 for udp */
    uint64_t sends, recvs, bad_xids;
    uint64_t req_u, backlog_u; /* cumulative queue sums (divide by sends) */
    uint64_t max_slots;        /* largest of the lines (not summed) */
    uint64_t sending_u, pending_u;
};

struct mountstats {
    char device[256]; /* "server:/export" */
    char mount_point[256];
    char fstype[16];  /* nfs, nfs4 */
    char statvers[8]; /* "1.1" */
    char opts[512];   /* the opts: line, when present */
    /* bytes: normal read, normal write, direct read, direct write,
     * server read, server write, read pages, write pages */
    uint64_t bytes[8];
    uint64_t age; /* seconds since the mount (age:); after mountstats_delta, between the two */
    bool has_age; /* the entry had an age: line */
    struct mountstats_xprt xprt;
    int nops;
    struct mountstats_op ops[MOUNTSTATS_OPS_MAX];
};

/* Parse the entry mounted on mount_point (exact match after decoding the
 * kernel's octal escapes such as \040; the last entry on that path decides,
 * so NFS over-mounted by another file system gives 1). Returns 0 found, 1
 * no NFS entry mounted there, -1 the entry is malformed or truncated. */
int mountstats_parse(const char *text, size_t len, const char *mount_point, struct mountstats *out);

/* The mount points of the NFS entries in text, each once, in order
 * (decoded), the first max into points; how many there are. */
int mountstats_mounts(const char *text, size_t len, char (*points)[256], int max);

/* out = after - before for every counter (per op by name; an op only in
 * after counts from 0). Unsigned wrap-around is the kernel counters' own.
 * Identity fields, xprt.count and max_slots are after's. out may be
 * either input. */
void mountstats_delta(const struct mountstats *before, const struct mountstats *after,
                      struct mountstats *out);

#endif
