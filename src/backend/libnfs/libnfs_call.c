/* libnfs_call.c — libnfs's own calls, sent asynchronously and awaited by
 * rpcwait within the backend call's deadline (libnfs_call.h). */
#include "libnfs_call.h"

#include <errno.h>
#include <string.h>

#include <nfsc/libnfs-raw.h> /* nfs_get_rpc_context */

#include "rpcwait.h"

/* One call in flight: libnfs's result and where its reply goes. */
struct libnfs_call {
    volatile bool done;
    int err;           /* libnfs's result: >= 0, or -errno */
    struct nfsfh **fh; /* open, create: the file's handle */
    void *out;         /* lstat, statvfs: the reply, copied */
    size_t out_len;
};

/* libnfs's callback: data is the reply (a handle, attributes) when err >=
 * 0, libnfs's message otherwise; valid only now. */
static void libnfs_call_replied(int err, struct nfs_context *nfs, void *data, void *priv)
{
    (void)nfs;
    struct libnfs_call *k = priv;
    k->err = err;
    if (err >= 0 && k->fh)
        *k->fh = data;
    else if (err >= 0 && k->out && data)
        memcpy(k->out, data, k->out_len);
    k->done = true;
}

int libnfs_call_await(struct libnfs_ctx *c, volatile bool *done)
{
    const char *why = NULL;
    int rc = rpcwait(nfs_get_rpc_context(c->nfs), done, c->deadline, &why);
    if (rc < 0) {
        c->broken = true;
        if (why)
            libnfs_note(c, why);
    }
    return rc;
}

/* Wait for k, which the nfs_*_async call queued (queued: its result). */
static int libnfs_call_wait(struct libnfs_ctx *c, struct libnfs_call *k, int queued)
{
    if (queued != 0)
        return libnfs_errno(c, queued < 0 ? queued : -EIO); /* not sent: nothing queued */
    int rc = libnfs_call_await(c, &k->done);
    if (rc < 0)
        return rc;
    return k->err < 0 ? libnfs_errno(c, k->err) : k->err;
}

int libnfs_call_lstat(struct libnfs_ctx *c, const char *p, struct nfs_stat_64 *st)
{
    struct libnfs_call k = {.out = st, .out_len = sizeof *st};
    return libnfs_call_wait(c, &k, nfs_lstat64_async(c->nfs, p, libnfs_call_replied, &k));
}

int libnfs_call_statvfs(struct libnfs_ctx *c, const char *p, struct nfs_statvfs_64 *st)
{
    struct libnfs_call k = {.out = st, .out_len = sizeof *st};
    return libnfs_call_wait(c, &k, nfs_statvfs64_async(c->nfs, p, libnfs_call_replied, &k));
}

int libnfs_call_open(struct libnfs_ctx *c, const char *p, int flags, int mode, struct nfsfh **fh)
{
    struct libnfs_call k = {.fh = fh};
    return libnfs_call_wait(c, &k,
                            nfs_open2_async(c->nfs, p, flags, mode, libnfs_call_replied, &k));
}

int libnfs_call_create(struct libnfs_ctx *c, const char *p, int flags, int mode, struct nfsfh **fh)
{
    struct libnfs_call k = {.fh = fh};
    return libnfs_call_wait(c, &k,
                            nfs_create_async(c->nfs, p, flags, mode, libnfs_call_replied, &k));
}

int libnfs_call_close(struct libnfs_ctx *c, struct nfsfh *fh)
{
    struct libnfs_call k = {0};
    return libnfs_call_wait(c, &k, nfs_close_async(c->nfs, fh, libnfs_call_replied, &k));
}

int libnfs_call_fsync(struct libnfs_ctx *c, struct nfsfh *fh)
{
    struct libnfs_call k = {0};
    return libnfs_call_wait(c, &k, nfs_fsync_async(c->nfs, fh, libnfs_call_replied, &k));
}

int libnfs_call_unlink(struct libnfs_ctx *c, const char *p)
{
    struct libnfs_call k = {0};
    return libnfs_call_wait(c, &k, nfs_unlink_async(c->nfs, p, libnfs_call_replied, &k));
}

int libnfs_call_mkdir(struct libnfs_ctx *c, const char *p, int mode)
{
    struct libnfs_call k = {0};
    return libnfs_call_wait(c, &k, nfs_mkdir2_async(c->nfs, p, mode, libnfs_call_replied, &k));
}

int libnfs_call_rmdir(struct libnfs_ctx *c, const char *p)
{
    struct libnfs_call k = {0};
    return libnfs_call_wait(c, &k, nfs_rmdir_async(c->nfs, p, libnfs_call_replied, &k));
}

int libnfs_call_rename(struct libnfs_ctx *c, const char *from, const char *to)
{
    struct libnfs_call k = {0};
    return libnfs_call_wait(c, &k, nfs_rename_async(c->nfs, from, to, libnfs_call_replied, &k));
}
