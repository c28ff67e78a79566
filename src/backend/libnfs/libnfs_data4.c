/* libnfs_data4.c — the READs, WRITEs and COMMITs of an NFSv4 file herd
 * opened itself (libnfs_ctx.h: libnfs_data4_*). libnfs 4.0 cannot WRITE
 * over NFSv4 (it encodes a COMPOUND into 4 KiB), and its open resolves
 * the path by name; so a file herd writes over NFSv4 is opened by herd's
 * own OPEN on its parent's kept handle (libnfs_open4.c) and its data
 * goes to the handle that OPEN returned, with its open stateid: a
 * COMPOUND of PUTFH and WRITE (or READ) per RPC, sent with room for its
 * data (libnfs_compound_send) and kept in flight by the file's stream
 * (libnfs_stream.c) as libnfs's own NFSv3 calls are. A WRITE is
 * UNSTABLE4 (FILE_SYNC4 when the file was opened O_SYNC), as libnfs's
 * NFSv3 WRITEs are; fsync and close COMMIT what is not stable yet, and a
 * COMMIT whose verifier differs from the WRITEs' (the server restarted
 * in between and may have lost them) fails EIO. The stateid renews the
 * client's lease with every READ and WRITE (RFC 7530 §9.5). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "libnfs_rpc.h"

/* A failed status travels through the stream as -(DATA4_STATUS + status)
 * until the stream's rpc_errno (libnfs_data4_errno) names it: so the name
 * noted is that WRITE's, also when it is reported late (write-behind). */
#define DATA4_STATUS 0x10000

/* One RPC on the way: the stream's callback and what its reply needs. */
struct data4_rpc {
    nfs_cb cb;
    void *priv;
    struct backend_file *f;
    bool write;
};

/* Result n of one op of a COMPOUND's reply, copied: libnfs 4.0 decodes
 * the results 4-byte aligned. */
static nfs_resop4 data4_result(const COMPOUND4res *res, u_int n)
{
    nfs_resop4 op;
    memcpy(&op, (const char *)res->resarray.resarray_val + n * sizeof op, sizeof op);
    return op;
}

/* A WRITE's reply: an UNSTABLE4 one leaves the file dirty, its verifier
 * kept (a second verifier marks the file). Returns the bytes written. */
static int data4_written(struct backend_file *f, const WRITE4resok *ok)
{
    if (ok->committed != FILE_SYNC4) {
        if (!f->own4_dirty)
            memcpy(f->own4_verf, ok->writeverf, sizeof f->own4_verf);
        else if (memcmp(f->own4_verf, ok->writeverf, sizeof f->own4_verf) != 0)
            f->own4_verf_changed = true;
        f->own4_dirty = true;
    }
    return (int)ok->count;
}

/* The rpc_cb of a READ or WRITE: the stream's callback gets the bytes
 * written or read (*data: a READ's bytes, valid only now), or the
 * failure (-errno of the RPC, or the status as above). */
static void data4_replied(struct rpc_context *rpc, int status, void *data, void *priv)
{
    (void)rpc;
    struct data4_rpc *q = priv;
    void *bytes = NULL;
    int err;
    const COMPOUND4res *res = data;
    if (status != RPC_STATUS_SUCCESS || !res) {
        err = status == RPC_STATUS_TIMEOUT ? -ETIMEDOUT : -ECONNRESET;
    } else if (res->status != NFS4_OK || res->resarray.resarray_len < 2) {
        err = -(DATA4_STATUS + (res->status != NFS4_OK ? (int)res->status : NFS4ERR_SERVERFAULT));
    } else {
        nfs_resop4 op = data4_result(res, 1);
        if (q->write) {
            err = data4_written(q->f, &op.nfs_resop4_u.opwrite.WRITE4res_u.resok4);
        } else {
            const READ4resok *ok = &op.nfs_resop4_u.opread.READ4res_u.resok4;
            err = (int)ok->data.data_len;
            bytes = ok->data.data_val;
        }
    }
    q->cb(err, NULL, bytes, q->priv);
    free(q);
}

int libnfs_data4_send(void *file, struct nfs_context *nfs, bool write, uint64_t offset, size_t len,
                      const void *buf, nfs_cb cb, void *priv)
{
    struct backend_file *f = file;
    struct data4_rpc *q = malloc(sizeof *q);
    if (!q)
        return -ENOMEM;
    *q = (struct data4_rpc){cb, priv, f, write};
    stateid4 sid;
    sid.seqid = f->own4_seqid;
    memcpy(sid.other, f->own4_other, sizeof sid.other);
    nfs_argop4 ops[2];
    libnfs_op_putfh(&ops[0], f->id.val, f->id.len);
    if (write) {
        libnfs_op(&ops[1], OP_WRITE);
        WRITE4args *a = &ops[1].nfs_argop4_u.opwrite;
        a->stateid = sid;
        a->offset = offset;
        a->stable = (f->oflags & O_SYNC) ? FILE_SYNC4 : UNSTABLE4;
        a->data.data_len = (u_int)len;
        a->data.data_val = (char *)buf;
    } else {
        libnfs_op(&ops[1], OP_READ);
        READ4args *a = &ops[1].nfs_argop4_u.opread;
        a->stateid = sid;
        a->offset = offset;
        a->count = (count4)len;
    }
    int rc =
        libnfs_compound_send(nfs_get_rpc_context(nfs), ops, 2, write ? len : 0, data4_replied, q);
    if (rc < 0)
        free(q);
    return rc;
}

int libnfs_data4_errno(void *arg, int rc, bool write, size_t len)
{
    (void)write;
    (void)len;
    struct libnfs_ctx *c = arg;
    if (rc <= -DATA4_STATUS)
        return -libnfs_status_errno(c, -rc - DATA4_STATUS, true);
    if (rc == -ETIMEDOUT || rc == -ECONNRESET) { /* as libnfs_reply_wait: never used again */
        c->broken = true;
        libnfs_note(c, rc == -ETIMEDOUT ? "RPC_TIMEOUT" : "RPC_ERROR");
    }
    return rc;
}

int libnfs_data4_verified(struct libnfs_ctx *c, struct backend_file *f, const char *verf)
{
    bool lost = f->own4_dirty &&
                (f->own4_verf_changed || memcmp(f->own4_verf, verf, sizeof f->own4_verf) != 0);
    f->own4_dirty = f->own4_verf_changed = false;
    if (!lost)
        return 0;
    libnfs_note(c, "NFS4_WRITEVERF_CHANGED");
    return -EIO;
}

int libnfs_data4_commit(struct libnfs_ctx *c, struct backend_file *f)
{
    nfs_argop4 ops[2];
    libnfs_op_putfh(&ops[0], f->id.val, f->id.len);
    libnfs_op(&ops[1], OP_COMMIT); /* offset 0, count 0: the whole file */
    struct libnfs_reply r;
    int rc = libnfs_compound(c, ops, 2, &r);
    if (rc < 0)
        return rc;
    if (r.st != NFS4_OK)
        return -libnfs_status_errno(c, r.st, true);
    return libnfs_data4_verified(c, f, r.commit_verf);
}
