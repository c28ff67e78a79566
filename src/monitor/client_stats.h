/* client_stats.h — what the NFS client on a host did during a phase: one
 * rank per host reads /proc/self/mountstats for the mount holding the
 * target at the phase start and end, and the difference becomes rows of
 * /monitor/client_ops (per op) and /monitor/clients (transport and bytes).
 * A retransmission storm shows as trans > ops on that host's rows. */
#ifndef HERD_CLIENT_STATS_H
#define HERD_CLIENT_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "job.h"
#include "mountstats.h"

/* /monitor/client_ops: one host, one op, one phase. */
struct client_op_row {
    char phase[JOB_NAME_MAX];
    int32_t host;
    char op[32];
    double ops, trans, retrans, timeouts;
    double bytes_sent, bytes_recv;
    double queue_ms, rtt_ms, execute_ms, errors;
};

/* /monitor/clients: one host, one phase. */
struct client_row {
    char phase[JOB_NAME_MAX];
    int32_t host;
    char mount_point[256];
    char proto[8];
    double xprt_count, connects, sends, recvs, bad_xids, req_u, backlog_u;
    double read_bytes, write_bytes, direct_read_bytes, direct_write_bytes;
    double server_read_bytes, server_write_bytes;
};

/* Read /proc/self/mountstats (or the file named by path) and parse the
 * NFS entry on mount_point into out. 0, 1 (no NFS mount there) or -errno /
 * -1 (unreadable, malformed). */
int client_stats_read(const char *path, const char *mount_point, struct mountstats *out);

/* Rows for the difference after - before: *ops gets one per op with any
 * calls (malloc'd, *nops), row the mount's totals. */
int client_stats_rows(const struct mountstats *before, const struct mountstats *after,
                      const char *phase, int host, struct client_op_row **ops, size_t *nops,
                      struct client_row *row);

#endif
