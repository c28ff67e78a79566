/* client_stats.c — per-phase NFS client counters from mountstats (see
 * client_stats.h). */
#include "client_stats.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "textfile.h"

int client_stats_read(const char *path, const char *mount_point, struct mountstats *out)
{
    char *buf = NULL;
    size_t cap = 0;
    long n = textfile_read(path ? path : "/proc/self/mountstats", TEXTFILE_PROC_MAX, &buf, &cap);
    int rc = n < 0 ? (int)n : mountstats_parse(buf, (size_t)n, mount_point, out);
    free(buf);
    return rc;
}

int client_stats_rows(const struct mountstats *before, const struct mountstats *after,
                      const char *phase, int host, struct client_op_row **ops, size_t *nops,
                      struct client_row *row)
{
    struct mountstats *d = malloc(sizeof *d);
    *ops = calloc(MOUNTSTATS_OPS_MAX, sizeof **ops);
    *nops = 0;
    if (!d || !*ops) {
        free(d);
        free(*ops);
        *ops = NULL;
        return -ENOMEM;
    }
    mountstats_delta(before, after, d);
    for (int i = 0; i < d->nops; i++) {
        const struct mountstats_op *o = &d->ops[i];
        if (o->ops == 0 && o->trans == 0)
            continue;
        struct client_op_row *r = &(*ops)[(*nops)++];
        snprintf(r->phase, sizeof r->phase, "%s", phase);
        r->host = host;
        snprintf(r->op, sizeof r->op, "%s", o->name);
        r->ops = (double)o->ops;
        r->trans = (double)o->trans;
        r->retrans = o->trans > o->ops ? (double)(o->trans - o->ops) : 0;
        r->timeouts = (double)o->timeouts;
        r->bytes_sent = (double)o->bytes_sent;
        r->bytes_recv = (double)o->bytes_recv;
        r->queue_ms = (double)o->queue_ms;
        r->rtt_ms = (double)o->rtt_ms;
        r->execute_ms = (double)o->execute_ms;
        r->errors = (double)o->errors;
    }
    memset(row, 0, sizeof *row);
    snprintf(row->phase, sizeof row->phase, "%s", phase);
    row->host = host;
    snprintf(row->mount_point, sizeof row->mount_point, "%s", after->mount_point);
    snprintf(row->proto, sizeof row->proto, "%s", d->xprt.proto);
    row->xprt_count = d->xprt.count;
    row->connects = (double)d->xprt.connects;
    row->sends = (double)d->xprt.sends;
    row->recvs = (double)d->xprt.recvs;
    row->bad_xids = (double)d->xprt.bad_xids;
    row->req_u = (double)d->xprt.req_u;
    row->backlog_u = (double)d->xprt.backlog_u;
    row->read_bytes = (double)d->bytes[0];
    row->write_bytes = (double)d->bytes[1];
    row->direct_read_bytes = (double)d->bytes[2];
    row->direct_write_bytes = (double)d->bytes[3];
    row->server_read_bytes = (double)d->bytes[4];
    row->server_write_bytes = (double)d->bytes[5];
    free(d);
    return 0;
}
