/* libnfs_queue.c — a paced client's calls in flight on one libnfs file
 * (libnfs_queue.h). */
#include "libnfs_queue.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h> /* before libnfs.h */

#include <nfsc/libnfs.h> /* before the raw header, which needs its types */

#include <nfsc/libnfs-raw.h> /* nfs_get_rpc_context */

#include "clock.h"
#include "rpcwait.h"

struct queue_call;

/* One RPC of a call: [at, at + len) of the call's bytes. resend: a short
 * WRITE's remainder, to send again from the next reap. */
struct queue_part {
    struct queue_call *call;
    size_t at, len;
    double sent;
    bool resend;
};

/* One call: busy from its submit until reaped; ended once no RPC of it
 * is outstanding. */
struct queue_call {
    struct nfs_queue *q;
    bool busy, ended, write;
    uint64_t tag, seq; /* seq: the order of submits, for the oldest first */
    unsigned char *buf;
    size_t len;
    uint64_t offset;
    unsigned left;   /* its RPCs unanswered */
    int err;         /* the first failed RPC's libnfs result, or 0 */
    size_t short_at; /* a READ's bytes before its first short reply; len: none */
    double at, deadline;
    struct queue_part *parts;
    unsigned nparts, cap;
};

struct nfs_queue {
    unsigned depth, busy;
    uint64_t seq;
    volatile bool progress; /* a reply came since the wait began */
    const struct rpc_observer *obs;
    struct queue_call *calls;
};

struct nfs_queue *queue_new(unsigned depth)
{
    struct nfs_queue *q = calloc(1, sizeof *q);
    if (!q || !(q->calls = calloc(depth ? depth : 1, sizeof *q->calls))) {
        free(q);
        return NULL;
    }
    q->depth = depth ? depth : 1;
    for (unsigned i = 0; i < q->depth; i++)
        q->calls[i].q = q;
    return q;
}

void queue_free(struct nfs_queue *q)
{
    if (!q)
        return;
    for (unsigned i = 0; i < q->depth; i++)
        free(q->calls[i].parts);
    free(q->calls);
    free(q);
}

unsigned queue_busy(const struct nfs_queue *q)
{
    return q ? q->busy : 0;
}

/* libnfs's callback: data is a READ's bytes (valid only now). */
static void queue_replied(int err, struct nfs_context *nfs, void *data, void *priv)
{
    (void)nfs;
    struct queue_part *p = priv;
    struct queue_call *k = p->call;
    double t = clock_mono();
    rpc_observe(k->q->obs, k->write, t - p->sent);
    size_t n = rpc_reply_bytes(err, p->len);
    if (err < 0 || (k->write && err == 0)) {
        if (!k->err)
            k->err = err < 0 ? err : -EIO;
    } else if (!k->write) {
        memcpy(k->buf + p->at, data, n);
        if (n < p->len && p->at + n < k->short_at)
            k->short_at = p->at + n;
    } else if (n < p->len) { /* the rest of a short WRITE goes again */
        p->at += n;
        p->len -= n;
        p->resend = true;
        k->q->progress = true;
        return;
    }
    if (--k->left == 0) {
        k->ended = true;
        k->at = t;
    }
    k->q->progress = true;
}

/* Send part p of its call; 0 or libnfs's negative result (nothing sent). */
static int queue_send(const struct stream_io *io, struct queue_part *p)
{
    struct queue_call *k = p->call;
    uint64_t off = k->offset + p->at;
    p->sent = clock_mono();
    p->resend = false;
    if (io->send)
        return io->send(io->send_arg, io->nfs, k->write, off, p->len,
                        k->write ? k->buf + p->at : NULL, queue_replied, p);
    return k->write
               ? nfs_pwrite_async(io->nfs, io->fh, off, p->len, k->buf + p->at, queue_replied, p)
               : nfs_pread_async(io->nfs, io->fh, off, p->len, queue_replied, p);
}

/* A free call with room for n parts, or NULL (-EBUSY, -ENOMEM in *rc). */
static struct queue_call *queue_free_call(struct nfs_queue *q, unsigned n, int *rc)
{
    struct queue_call *k = NULL;
    for (unsigned i = 0; i < q->depth && !k; i++)
        k = q->calls[i].busy ? NULL : &q->calls[i];
    *rc = -EBUSY;
    if (!k)
        return NULL;
    if (k->cap < n) {
        struct queue_part *more = realloc(k->parts, n * sizeof *more);
        *rc = -ENOMEM;
        if (!more)
            return NULL;
        k->parts = more;
        k->cap = n;
    }
    return k;
}

int queue_submit(struct nfs_queue *q, const struct stream_io *io, bool write, void *buf, size_t len,
                 uint64_t offset, uint64_t tag)
{
    size_t chunk = write ? io->wchunk : io->rchunk;
    unsigned n = len ? (unsigned)((len + chunk - 1) / chunk) : 1;
    int rc;
    struct queue_call *k = queue_free_call(q, n, &rc);
    if (!k)
        return rc;
    q->obs = io->obs;
    *k = (struct queue_call){.q = q,
                             .write = write,
                             .tag = tag,
                             .seq = q->seq++,
                             .buf = buf,
                             .len = len,
                             .offset = offset,
                             .short_at = len,
                             .deadline = io->deadline,
                             .parts = k->parts,
                             .nparts = n,
                             .cap = k->cap};
    for (unsigned i = 0; i < n; i++) {
        size_t at = (size_t)i * chunk;
        k->parts[i] =
            (struct queue_part){.call = k, .at = at, .len = len - at < chunk ? len - at : chunk};
        rc = queue_send(io, &k->parts[i]);
        if (rc < 0) {
            k->err = rc;
            break;
        }
        k->left++;
    }
    if (k->left == 0) /* nothing on the way: the call is over */
        return io->rpc_errno(io->arg, rc, write, len);
    k->busy = true;
    k->ended = false;
    q->busy++;
    return 0;
}

/* The oldest ended call, or NULL. */
static struct queue_call *queue_ended(struct nfs_queue *q)
{
    struct queue_call *best = NULL;
    for (unsigned i = 0; i < q->depth; i++) {
        struct queue_call *k = &q->calls[i];
        if (k->busy && k->ended && (!best || k->seq < best->seq))
            best = k;
    }
    return best;
}

/* Send the remainders of short WRITEs; the earliest deadline of the
 * calls outstanding (0: none). */
static double queue_resend(struct nfs_queue *q, const struct stream_io *io)
{
    double deadline = 0;
    for (unsigned i = 0; i < q->depth; i++) {
        struct queue_call *k = &q->calls[i];
        if (!k->busy || k->ended)
            continue;
        for (unsigned j = 0; j < k->nparts; j++) {
            if (!k->parts[j].resend)
                continue;
            int rc = queue_send(io, &k->parts[j]);
            if (rc >= 0)
                continue;
            k->err = k->err ? k->err : rc; /* this RPC ends here, failed */
            if (--k->left == 0) {
                k->ended = true;
                k->at = clock_mono();
            }
        }
        if (k->deadline > 0 && (deadline <= 0 || k->deadline < deadline))
            deadline = k->deadline;
    }
    return deadline;
}

int queue_reap(struct nfs_queue *q, const struct stream_io *io, double until,
               struct queue_done *done)
{
    for (;;) {
        double deadline = queue_resend(q, io);
        struct queue_call *k = queue_ended(q);
        if (k) {
            ssize_t res = k->write ? (ssize_t)k->len : (ssize_t)k->short_at;
            if (k->err)
                res = io->rpc_errno(io->arg, k->err, k->write, k->len);
            *done = (struct queue_done){.tag = k->tag, .result = res, .at = k->at};
            k->busy = false;
            q->busy--;
            return 1;
        }
        if (q->busy == 0)
            return 0;
        q->progress = false;
        const char *why = NULL;
        int rc = rpcwait_until(nfs_get_rpc_context(io->nfs), &q->progress, until, deadline, &why);
        if (rc == 1)
            return 0;
        if (rc < 0) {
            *io->broken = true;
            *io->why = why;
            return rc;
        }
    }
}
