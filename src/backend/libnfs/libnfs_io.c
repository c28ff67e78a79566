/* libnfs_io.c — the stream's view of one libnfs file (its context, the
 * lock context when it has one, chunk sizes, windows, the phase's
 * observer), the errno of a failed READ or WRITE, the drain of a
 * file's RPCs in flight, and a paced client's calls kept in flight
 * (libnfs_ctx.h; the stream itself: libnfs_stream.c; the paced calls:
 * libnfs_queue.c). */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/time.h> /* before libnfs.h, which needs struct timeval */

#include <nfsc/libnfs.h> /* before the raw headers, which need its types */

#include <nfsc/libnfs-raw.h> /* nfs_get_fh */

#include <nfsc/libnfs-raw-nfs.h>
#include <nfsc/libnfs-raw-nfs4.h>

#include "libnfs_call.h"
#include "libnfs_ctx.h"
#include "libnfs_queue.h"

/* libnfs 4.0's nfs_pwrite loses the server's status of a refused WRITE:
 * every NFS3ERR_* comes back as -EFAULT with an empty message. The one a
 * load test meets is a full export (NFS3ERR_NOSPC): when the export has
 * less room left than this chunk, say ENOSPC; otherwise EFAULT stays,
 * meaning "refused, status unknown". */
static int libnfs_write_refused(struct libnfs_ctx *c, size_t chunk)
{
    struct nfs_statvfs_64 st;
    if (libnfs_call_statvfs(c, "/", &st) == 0 && st.f_bavail * st.f_frsize < chunk)
        return -ENOSPC;
    return -EFAULT;
}

static int libnfs_rpc_errno(void *arg, int rc, bool write, size_t len)
{
    struct libnfs_ctx *c = arg;
    return write && rc == -EFAULT ? libnfs_write_refused(c, len) : libnfs_errno(c, rc);
}

/* The stream call's view of file f: its context (the lock context when it
 * has one), chunk sizes and the phase's observer (ctx's); a file herd
 * opened itself over NFSv4 sends herd's own RPCs (libnfs_data4.c). */
struct stream_io libnfs_io(struct libnfs_ctx *top, struct backend_file *f, const char **why)
{
    struct libnfs_ctx *c = f->lk ? f->lk : top;
    bool own = f->own4 && !f->lk;
    *why = NULL;
    return (struct stream_io){.nfs = c->nfs,
                              .fh = f->fh,
                              .send = own ? libnfs_data4_send : NULL,
                              .send_arg = f,
                              .rchunk = c->rchunk,
                              .wchunk = c->wchunk,
                              .deadline = c->deadline,
                              .obs = &top->obs,
                              .rwin = &top->rwin,
                              .wwin = &top->wwin,
                              .rpc_errno = own ? libnfs_data4_errno : libnfs_rpc_errno,
                              .arg = c,
                              .broken = &c->broken,
                              .why = why};
}

/* After a stream call: a failed wait names its reason. */
void libnfs_io_done(struct backend_file *f, struct libnfs_ctx *top, const char *why)
{
    if (why)
        libnfs_note(f->lk ? f->lk : top, why);
}

/* Wait for f's RPCs in flight: 0, a WRITE's error not reported yet, or
 * -errno of the wait. */
int libnfs_drain(struct libnfs_ctx *top, struct backend_file *f)
{
    struct libnfs_ctx *c = f->lk ? f->lk : top;
    if (c->broken || (!f->fh && !f->own4) || !f->stream)
        return 0; /* broken: the call that broke it said why */
    const char *why;
    struct stream_io io = libnfs_io(top, f, &why);
    int rc = stream_drain(f->stream, &io);
    libnfs_io_done(f, top, why);
    return rc;
}

int libnfs_submit_io(struct libnfs_ctx *top, struct backend_file *f, bool write, void *buf,
                     size_t len, uint64_t offset, uint64_t tag)
{
    struct libnfs_ctx *c = f->lk ? f->lk : top;
    if (!f->queue && !(f->queue = queue_new(c->inflight)))
        return -ENOMEM;
    const char *why;
    struct stream_io io = libnfs_io(top, f, &why);
    int rc = queue_submit(f->queue, &io, write, buf, len, offset, tag);
    libnfs_io_done(f, top, why);
    return rc;
}

int libnfs_reap_io(struct libnfs_ctx *top, struct backend_file *f, double until,
                   struct backend_done *done)
{
    struct libnfs_ctx *c = f->lk ? f->lk : top;
    if (!queue_busy(f->queue))
        return 0;
    if (c->broken)
        return -ENOTCONN; /* the wait that broke it said why */
    const char *why;
    struct stream_io io = libnfs_io(top, f, &why);
    struct queue_done d;
    int rc = queue_reap(f->queue, &io, until, &d);
    libnfs_io_done(f, top, why);
    if (rc == 1)
        *done = (struct backend_done){.tag = d.tag, .result = d.result, .at = d.at};
    return rc;
}

void libnfs_queue_end(struct libnfs_ctx *top, struct backend_file *f)
{
    struct backend_done d;
    while (queue_busy(f->queue) && libnfs_reap_io(top, f, 0, &d) > 0)
        ;
    queue_free(f->queue); /* idle, or its context broken: never serviced again */
    f->queue = NULL;
}
