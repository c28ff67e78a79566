/* libnfs_attr.c — a mix phase's calls on a file's handle and on a kept
 * directory's (libnfs_ctx.h): GETATTR, SETATTR (mode or size), ACCESS,
 * and a directory listed whole (NFSv3 READDIRPLUS, NFSv4 READDIR, as
 * many as it takes). herd's own RPCs, one per call (a listing: one per
 * reply page), so that a mix's calls are the server's operations. */
#include "libnfs_ctx.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "libnfs_call.h"
#include "libnfs_rpc.h"

/* The handle of f, opened: the one herd made or found (f->id), else
 * libnfs's open's. 0 or -errno. */
static int attr_handle(struct backend_file *f, const char **fh, unsigned *len)
{
    if (f->id.len) {
        *fh = f->id.val;
        *len = f->id.len;
        return 0;
    }
    if (!f->fh)
        return -ENOTCONN;
    const struct nfs_fh *got = nfs_get_fh(f->fh);
    if (got->len <= 0 || got->len > LIBNFS_FH_MAX)
        return -EIO;
    *fh = got->val;
    *len = (unsigned)got->len;
    return 0;
}

/* The reply's status as 0 or -errno (noted), or the RPC's -errno. */
static int attr_status(struct libnfs_ctx *c, int rc, const struct libnfs_reply *r)
{
    if (rc < 0)
        return rc;
    return r->st == 0 ? 0 : -libnfs_status_errno(c, r->st, c->v4);
}

/* NFSv3: a call of proc on the handle alone, awaited. */
enum attr_proc { ATTR_GETATTR, ATTR_SETATTR, ATTR_ACCESS };

static int attr_call3(struct libnfs_ctx *c, enum attr_proc proc, const char *fh, unsigned len,
                      int mode, int64_t size)
{
    struct libnfs_reply r;
    memset(&r, 0, sizeof r);
    nfs_fh3 object = {.data = {.data_len = len, .data_val = (char *)fh}};
    struct rpc_context *rpc = nfs_get_rpc_context(c->nfs);
    int queued = -1;
    if (proc == ATTR_GETATTR) {
        GETATTR3args a = {.object = object};
        queued = rpc_nfs3_getattr_async(rpc, libnfs_replied, &a, &r);
    } else if (proc == ATTR_ACCESS) {
        ACCESS3args a = {.object = object, .access = ACCESS3_READ | ACCESS3_MODIFY};
        queued = rpc_nfs3_access_async(rpc, libnfs_replied, &a, &r);
    } else {
        SETATTR3args a;
        memset(&a, 0, sizeof a);
        a.object = object;
        a.new_attributes.mode.set_it = mode >= 0;
        a.new_attributes.mode.set_mode3_u.mode = (mode3)(mode >= 0 ? mode : 0);
        a.new_attributes.size.set_it = size >= 0;
        a.new_attributes.size.set_size3_u.size = (size3)(size >= 0 ? size : 0);
        queued = rpc_nfs3_setattr_async(rpc, libnfs_replied, &a, &r);
    }
    if (queued != 0)
        return -ENOMEM;
    return attr_status(c, libnfs_reply_wait(c, &r), &r);
}

/* NFSv4: PUTFH and the one op. A SETATTR of the size carries the file's
 * open stateid when herd opened it, else the anonymous one (RFC 7530
 * 9.1.4.3). */
static int attr_call4(struct libnfs_ctx *c, enum attr_proc proc, struct backend_file *f,
                      const char *fh, unsigned len, int mode, int64_t size)
{
    nfs_argop4 ops[2];
    uint32_t mask[2], val[2];
    libnfs_op_putfh(&ops[0], fh, len);
    if (proc == ATTR_GETATTR) {
        libnfs_op_getattr(&ops[1]);
    } else if (proc == ATTR_ACCESS) {
        libnfs_op(&ops[1], OP_ACCESS);
        ops[1].nfs_argop4_u.opaccess.access = ACCESS4_READ | ACCESS4_MODIFY;
    } else {
        libnfs_op(&ops[1], OP_SETATTR);
        SETATTR4args *a = &ops[1].nfs_argop4_u.opsetattr;
        if (f->own4) {
            a->stateid.seqid = f->own4_seqid;
            memcpy(a->stateid.other, f->own4_other, sizeof a->stateid.other);
        }
        if (mode >= 0)
            libnfs_fattr4_mode(&a->obj_attributes, mask, val, (uint32_t)mode);
        else
            libnfs_fattr4_size(&a->obj_attributes, mask, val, (uint64_t)size);
    }
    struct libnfs_reply r;
    return attr_status(c, libnfs_compound(c, ops, 2, &r), &r);
}

static int attr_call(struct libnfs_ctx *c, enum attr_proc proc, struct backend_file *f, int mode,
                     int64_t size)
{
    const char *fh;
    unsigned len;
    int rc = attr_handle(f, &fh, &len);
    if (rc < 0)
        return rc;
    return c->v4 ? attr_call4(c, proc, f, fh, len, mode, size)
                 : attr_call3(c, proc, fh, len, mode, size);
}

int libnfs_attr_get(struct libnfs_ctx *c, struct backend_file *f)
{
    return attr_call(c, ATTR_GETATTR, f, -1, -1);
}

int libnfs_attr_set(struct libnfs_ctx *c, struct backend_file *f, int mode, int64_t size)
{
    return attr_call(c, ATTR_SETATTR, f, mode, size);
}

int libnfs_attr_access(struct libnfs_ctx *c, struct backend_file *f)
{
    return attr_call(c, ATTR_ACCESS, f, -1, -1);
}

/* ---- a directory listed whole ---- */

/* One reply page: where the listing goes on, and what it held. */
struct listing {
    volatile bool done;
    int rpc_status;
    int st;
    uint64_t entries; /* names other than . and .. */
    uint64_t cookie;
    char verf[8];
    bool eof;
};

static bool name_counts(const char *name, size_t len)
{
    return !(len == 1 && name[0] == '.') && !(len == 2 && name[0] == '.' && name[1] == '.');
}

static void listed3(struct rpc_context *rpc, int status, void *data, void *priv)
{
    (void)rpc;
    struct listing *l = priv;
    l->rpc_status = status == RPC_STATUS_SUCCESS && !data ? RPC_STATUS_ERROR : status;
    if (l->rpc_status == RPC_STATUS_SUCCESS) {
        const READDIRPLUS3res *res = data;
        l->st = (int)res->status;
        if (l->st == NFS3_OK) {
            const READDIRPLUS3resok *ok = &res->READDIRPLUS3res_u.resok;
            memcpy(l->verf, ok->cookieverf, sizeof l->verf);
            for (const entryplus3 *e = ok->reply.entries; e; e = e->nextentry) {
                l->entries += e->name && name_counts(e->name, strlen(e->name));
                l->cookie = e->cookie;
            }
            l->eof = ok->reply.eof;
        }
    }
    l->done = true;
}

static void listed4(struct rpc_context *rpc, int status, void *data, void *priv)
{
    (void)rpc;
    struct listing *l = priv;
    l->rpc_status = status == RPC_STATUS_SUCCESS && !data ? RPC_STATUS_ERROR : status;
    if (l->rpc_status == RPC_STATUS_SUCCESS) {
        const COMPOUND4res *res = data;
        l->st = (int)res->status;
        if (l->st == NFS4_OK && res->resarray.resarray_len == 2) {
            /* libnfs 4.0 decodes the results 4-byte aligned: read a copy */
            nfs_resop4 op;
            memcpy(&op, (const char *)res->resarray.resarray_val + sizeof op, sizeof op);
            const READDIR4resok *ok = &op.nfs_resop4_u.opreaddir.READDIR4res_u.resok4;
            memcpy(l->verf, ok->cookieverf, sizeof l->verf);
            for (const entry4 *e = ok->reply.entries; e; e = e->nextentry) {
                l->entries += name_counts(e->name.utf8string_val, e->name.utf8string_len);
                l->cookie = e->cookie;
            }
            l->eof = ok->reply.eof;
        }
    }
    l->done = true;
}

/* One page of the directory of handle fh from l's cookie; 0 or -errno. */
static int list_page(struct libnfs_ctx *c, const char *fh, unsigned len, struct listing *l)
{
    struct rpc_context *rpc = nfs_get_rpc_context(c->nfs);
    l->done = false;
    int queued;
    if (c->v4) {
        nfs_argop4 ops[2];
        libnfs_op_putfh(&ops[0], fh, len);
        libnfs_op(&ops[1], OP_READDIR);
        READDIR4args *a = &ops[1].nfs_argop4_u.opreaddir;
        a->cookie = l->cookie;
        memcpy(a->cookieverf, l->verf, sizeof a->cookieverf);
        a->dircount = 8192;
        a->maxcount = 32768;
        COMPOUND4args args;
        memset(&args, 0, sizeof args);
        args.argarray.argarray_len = 2;
        args.argarray.argarray_val = ops;
        queued = rpc_nfs4_compound_async(rpc, listed4, &args, l);
    } else {
        READDIRPLUS3args a;
        memset(&a, 0, sizeof a);
        a.dir.data.data_len = len;
        a.dir.data.data_val = (char *)fh;
        a.cookie = l->cookie;
        memcpy(a.cookieverf, l->verf, sizeof a.cookieverf);
        a.dircount = 8192;
        a.maxcount = 32768;
        queued = rpc_nfs3_readdirplus_async(rpc, listed3, &a, l);
    }
    if (queued != 0)
        return -ENOMEM;
    int rc = libnfs_call_await(c, &l->done);
    if (rc < 0)
        return rc;
    if (l->rpc_status != RPC_STATUS_SUCCESS) {
        c->broken = true;
        libnfs_note(c, l->rpc_status == RPC_STATUS_TIMEOUT ? "RPC_TIMEOUT" : "RPC_ERROR");
        return l->rpc_status == RPC_STATUS_TIMEOUT ? -ETIMEDOUT : -ECONNRESET;
    }
    return l->st == 0 ? 0 : -libnfs_status_errno(c, l->st, c->v4);
}

int libnfs_attr_list(struct libnfs_ctx *c, const struct libnfs_dir *d, uint64_t *entries)
{
    struct listing l;
    memset(&l, 0, sizeof l);
    /* Bounded: a server that never says eof ends at the call's deadline,
     * and a cookie that does not move ends the listing (-EIO). */
    for (;;) {
        uint64_t before = l.cookie;
        int rc = list_page(c, d->fh, d->fh_len, &l);
        if (rc < 0)
            return rc;
        if (l.eof)
            break;
        if (l.cookie == before)
            return -EIO;
    }
    *entries = l.entries;
    return 0;
}
