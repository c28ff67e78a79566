/* libnfs_dirs.c — calls on a name in a directory held by its file handle
 * (libnfs_ctx.h: libnfs_dir_*), as the POSIX backend's *at() calls act
 * on a directory descriptor. libnfs resolves every path from the
 * export's root and follows links; so the parent of a path is walked
 * once refusing a link at any component, its handle kept in a small
 * cache, and the call goes to that handle with the leaf's name: no path
 * is resolved by name again, so a directory swapped for a link after the
 * walk is not followed (the handle names the directory itself). A kept
 * directory that is gone (STALE) is walked again once.
 *
 * NFSv3: the walk is a LOOKUP a component from the kept directory
 * nearest above (else from the export's root), each reply's type checked
 * (a link or a non-directory refused): like a kernel's walk it needs
 * only search permission on each directory; a call is one RPC: LOOKUP,
 * CREATE GUARDED, MKDIR, RENAME (handle to handle), and a LOOKUP (the
 * leaf's type) before REMOVE or RMDIR.
 *
 * NFSv4: libnfs 4.0 resolves a path in one COMPOUND but follows a link it
 * meets (NFS4ERR_SYMLINK, READLINK, again); herd builds its own: the walk
 * is PUTROOTFH and a LOOKUP of every component (the server refuses a
 * LOOKUP from a link: NFS4ERR_SYMLINK), and each call is one COMPOUND on
 * the kept handle (PUTFH): LOOKUP+GETATTR; CREATE of a directory; a
 * removal as LOOKUP, VERIFY of the leaf's type, and REMOVE, so the type
 * check and the removal are one round trip; RENAME from the SAVEFH'd
 * source directory to the destination's. libnfs_dirs_check4 is the
 * walk of a whole path for the calls that still go by name. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "libnfs_call.h"
#include "libnfs_rpc.h"

/* An NFSv4 COMPOUND's VERIFY found another type: the caller asks why. */
#define DIR_NOT_SAME 2

void libnfs_dirs_forget(struct libnfs_ctx *c, const char *dir)
{
    size_t n = dir ? strlen(dir) : 0;
    for (int i = 0; i < LIBNFS_DIRS; i++) {
        struct libnfs_dir *d = &c->dirs[i];
        if (d->fh_len &&
            (!dir || (strncmp(d->path, dir, n) == 0 && (d->path[n] == '\0' || d->path[n] == '/'))))
            d->fh_len = 0;
    }
}

/* The export's path (the URL's, as libnfs mounted it), then p, in out. */
static int dirs_full_path(const struct libnfs_ctx *c, const char *p, char *out, size_t len)
{
    const char *host = strstr(c->target, "://");
    const char *exp = host ? strchr(host + 3, '/') : NULL;
    int n = snprintf(out, len, "%.*s%s", exp ? (int)strcspn(exp, "?") : 0, exp ? exp : "", p);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

#define DIRS_WALK_OPS 128 /* PUTROOTFH, the LOOKUPs of a path's components, and two more */

/* ops: PUTROOTFH and a LOOKUP of every component of the export's path
 * and of p (path: its storage); the count, or 0 when too long. */
static u_int dirs_walk_ops(const struct libnfs_ctx *c, const char *p, char *path, size_t len,
                           nfs_argop4 *ops)
{
    if (dirs_full_path(c, p, path, len) < 0)
        return 0;
    libnfs_op(&ops[0], OP_PUTROOTFH);
    u_int n = libnfs_compound_lookups(ops + 1, DIRS_WALK_OPS - 3, path);
    return n > DIRS_WALK_OPS - 3 ? 0 : n + 1;
}

/* A directory's LOOKUP reply r: its handle in h; -ELOOP for a link,
 * -ENOTDIR for anything else but a directory, -EIO without attributes or
 * a handle that fits. */
static int dir_reply_handle(const struct libnfs_reply *r, struct libnfs_handle *h)
{
    if (!r->has_attr || !r->fh_len || r->fh_len > sizeof h->val)
        return -EIO;
    if (S_ISLNK(r->attr.nfs_mode))
        return -ELOOP;
    if (!S_ISDIR(r->attr.nfs_mode))
        return -ENOTDIR;
    h->len = r->fh_len;
    memcpy(h->val, r->fh, h->len);
    return 0;
}

/* NFSv4: one COMPOUND of the walk to dir (export-absolute) and then the
 * ntail (at most 2) ops of tail; r: its reply. 0 or -errno (a failed
 * status's too). */
static int dir_walk4_send(struct libnfs_ctx *c, const char *dir, const nfs_argop4 *tail,
                          u_int ntail, struct libnfs_reply *r)
{
    char path[JOB_PATH_MAX + LIBNFS_PATH_MAX];
    nfs_argop4 ops[DIRS_WALK_OPS];
    u_int n = dirs_walk_ops(c, dir, path, sizeof path, ops);
    if (n == 0)
        return -ENAMETOOLONG;
    memcpy(ops + n, tail, ntail * sizeof *tail);
    int rc = libnfs_compound(c, ops, n + ntail, r);
    if (rc < 0)
        return rc;
    return r->st == NFS4_OK ? 0 : -libnfs_status_errno(c, r->st, true);
}

/* NFSv4: walk dir (export-absolute) to its handle in h: a link or a
 * non-directory at any component refused. 0 or -errno. */
static int dir_walk4(struct libnfs_ctx *c, const char *dir, struct libnfs_handle *h)
{
    nfs_argop4 tail[2];
    libnfs_op_getattr(&tail[0]);
    libnfs_op(&tail[1], OP_GETFH);
    struct libnfs_reply r;
    int rc = dir_walk4_send(c, dir, tail, 2, &r);
    return rc < 0 ? rc : dir_reply_handle(&r, h);
}

enum dir_op { DIR_LOOKUP, DIR_CREATE, DIR_REMOVE, DIR_MKDIR, DIR_RMDIR };

/* NFSv3: send op on (dir, leaf); 0 or -1 when libnfs could not queue it. */
static int dir_send3(struct libnfs_ctx *c, enum dir_op op, const char *fh, unsigned fh_len,
                     const char *leaf, struct libnfs_reply *r)
{
    diropargs3 where = {.dir = {.data = {.data_len = fh_len, .data_val = (char *)fh}},
                        .name = (char *)leaf};
    struct rpc_context *rpc = nfs_get_rpc_context(c->nfs);
    switch (op) {
    case DIR_LOOKUP: {
        LOOKUP3args a = {.what = where};
        r->lookup = true;
        return rpc_nfs3_lookup_async(rpc, libnfs_replied, &a, r);
    }
    case DIR_CREATE: { /* GUARDED: never an existing name, a link included */
        CREATE3args a = {.where = where};
        a.how.mode = GUARDED;
        a.how.createhow3_u.g_obj_attributes.mode.set_it = 1;
        a.how.createhow3_u.g_obj_attributes.mode.set_mode3_u.mode = 0644;
        return rpc_nfs3_create_async(rpc, libnfs_replied, &a, r);
    }
    case DIR_REMOVE: {
        REMOVE3args a = {.object = where};
        return rpc_nfs3_remove_async(rpc, libnfs_replied, &a, r);
    }
    case DIR_MKDIR: {
        MKDIR3args a = {.where = where};
        a.attributes.mode.set_it = 1;
        a.attributes.mode.set_mode3_u.mode = 0755;
        return rpc_nfs3_mkdir_async(rpc, libnfs_replied, &a, r);
    }
    case DIR_RMDIR: {
        RMDIR3args a = {.object = where};
        return rpc_nfs3_rmdir_async(rpc, libnfs_replied, &a, r);
    }
    }
    return -1;
}

/* NFSv3: op on (the directory of handle fh, leaf), sent and waited for;
 * 0 or -errno of the RPC (r->st: how it was answered). */
static int dir_call3(struct libnfs_ctx *c, enum dir_op op, const char *fh, unsigned fh_len,
                     const char *leaf, struct libnfs_reply *r)
{
    memset(r, 0, sizeof *r);
    return dir_send3(c, op, fh, fh_len, leaf, r) != 0 ? -ENOMEM : libnfs_reply_wait(c, r);
}

/* NFSv3: the export's root in h: libnfs's open of "/" (the handle it
 * mounted). LIBNFS_DIR_BY_PATH for EACCES: a root the user may not read
 * (libnfs's open asks for read access). */
static int dir_root3(struct libnfs_ctx *c, struct libnfs_handle *h)
{
    struct nfsfh *fh = NULL;
    int rc = libnfs_call_open(c, "/", O_RDONLY | O_NOFOLLOW, 0, &fh);
    if (rc < 0)
        return rc == -EACCES ? LIBNFS_DIR_BY_PATH : rc;
    const struct nfs_fh *got = nfs_get_fh(fh);
    rc = got->len > 0 && (size_t)got->len <= sizeof h->val ? 0 : -EIO;
    if (rc == 0) {
        h->len = (unsigned)got->len;
        memcpy(h->val, got->val, h->len);
    }
    libnfs_call_close(c, fh); /* read-only: frees, sends nothing */
    return rc;
}

/* NFSv3: the directory name in directory h, h replaced by its handle:
 * one LOOKUP (the parent's search permission is enough). 0, -errno, or
 * LIBNFS_DIR_BY_PATH for a server that sent no attributes. */
static int dir_lookup3(struct libnfs_ctx *c, struct libnfs_handle *h, const char *name)
{
    struct libnfs_reply r;
    int rc = dir_call3(c, DIR_LOOKUP, h->val, h->len, name, &r);
    if (rc < 0)
        return rc;
    if (r.st != 0)
        return -libnfs_status_errno(c, r.st, false);
    return r.has_attr ? dir_reply_handle(&r, h) : LIBNFS_DIR_BY_PATH;
}

/* The kept directory nearest above dir (a proper ancestor; the export's
 * root is ""), or NULL. */
static const struct libnfs_dir *dir_kept_above(const struct libnfs_ctx *c, const char *dir)
{
    const struct libnfs_dir *best = NULL;
    size_t best_n = 0;
    for (int i = 0; i < LIBNFS_DIRS; i++) {
        const struct libnfs_dir *d = &c->dirs[i];
        size_t n = strlen(d->path);
        if (d->fh_len && strncmp(d->path, dir, n) == 0 && dir[n] == '/' && (!best || n > best_n)) {
            best = d;
            best_n = n;
        }
    }
    return best;
}

/* NFSv3: walk dir (export-absolute; its components cut in place while
 * walked, restored after) to its handle in h: from the kept directory
 * nearest above it, else the root, one LOOKUP a component, so a
 * directory the user may search but not read is walked too; a link or a
 * non-directory at any component refused. A stale start is forgotten and
 * the walk begins again at the root, once. 0, -errno or
 * LIBNFS_DIR_BY_PATH (dir_root3, dir_lookup3). */
static int dir_walk3(struct libnfs_ctx *c, char *dir, struct libnfs_handle *h)
{
    for (int attempt = 0;; attempt++) {
        const struct libnfs_dir *start = attempt ? NULL : dir_kept_above(c, dir);
        size_t at = start ? strlen(start->path) : 0;
        int rc = 0;
        if (start) {
            h->len = start->fh_len;
            memcpy(h->val, start->fh, h->len);
        } else {
            rc = dir_root3(c, h);
        }
        while (rc == 0 && dir[at] == '/') {
            char *name = dir + at + 1, *end = strchr(name, '/');
            if (end)
                *end = '\0';
            rc = dir_lookup3(c, h, name);
            if (end)
                *end = '/';
            at = end ? (size_t)(end - dir) : strlen(dir);
        }
        if (rc != -ESTALE || !start)
            return rc;
        libnfs_dirs_forget(c, start->path);
    }
}

/* A slot for a directory to keep: a free one, else the least recently
 * used. */
static struct libnfs_dir *dir_slot(struct libnfs_ctx *c)
{
    struct libnfs_dir *oldest = &c->dirs[0];
    for (int i = 0; i < LIBNFS_DIRS; i++) {
        struct libnfs_dir *d = &c->dirs[i];
        if (!d->fh_len)
            return d;
        if (d->used < oldest->used)
            oldest = d;
    }
    return oldest;
}

int libnfs_dir_get(struct libnfs_ctx *c, const char *p, struct libnfs_dir **out, const char **leaf)
{
    const char *slash = strrchr(p, '/');
    size_t n = slash ? (size_t)(slash - p) : 0;
    *leaf = slash ? slash + 1 : p;
    if (!slash || n >= sizeof c->dirs[0].path)
        return -EINVAL; /* libnfs_begin's paths are export-absolute */
    struct libnfs_dir *hit = NULL;
    for (int i = 0; i < LIBNFS_DIRS && !hit; i++) {
        struct libnfs_dir *d = &c->dirs[i];
        if (d->fh_len && strncmp(d->path, p, n) == 0 && d->path[n] == '\0')
            hit = d;
    }
    if (!hit) {
        char dir[sizeof hit->path];
        memcpy(dir, p, n);
        dir[n] = '\0';
        struct libnfs_handle h;
        int rc = c->v4 ? dir_walk4(c, dir, &h) : dir_walk3(c, dir, &h);
        if (rc != 0)
            return rc;
        hit = dir_slot(c);
        memcpy(hit->path, dir, n + 1);
        hit->fh_len = h.len;
        memcpy(hit->fh, h.val, h.len);
    }
    hit->used = ++c->dir_tick;
    *out = hit;
    return 0;
}

static void op_name(nfs_argop4 *op, enum nfs_opnum4 num, const char *leaf)
{
    libnfs_op(op, num);
    component4 *name = &op->nfs_argop4_u.oplookup.objname;
    if (num == OP_REMOVE)
        name = &op->nfs_argop4_u.opremove.target;
    else if (num == OP_CREATE)
        name = &op->nfs_argop4_u.opcreate.objname;
    name->utf8string_len = (u_int)strlen(leaf);
    name->utf8string_val = (char *)leaf;
}

/* NFSv4: op on (dir, leaf) as one COMPOUND; 0 or -errno of the RPC. A
 * removal verifies the leaf's type first (DIR_CREATE of a regular file
 * is no NFSv4 CREATE: the caller opens it). */
static int dir_call4(struct libnfs_ctx *c, enum dir_op op, struct libnfs_dir *d, const char *leaf,
                     struct libnfs_reply *r)
{
    nfs_argop4 ops[6];
    uint32_t mask[2], val[1];
    u_int n = 0;
    libnfs_op_putfh(&ops[n++], d->fh, d->fh_len);
    if (op == DIR_LOOKUP) {
        op_name(&ops[n++], OP_LOOKUP, leaf);
        libnfs_op_getattr(&ops[n++]);
        libnfs_op(&ops[n++], OP_GETFH);
    } else if (op == DIR_MKDIR) {
        op_name(&ops[n], OP_CREATE, leaf);
        CREATE4args *a = &ops[n++].nfs_argop4_u.opcreate;
        a->objtype.type = NF4DIR;
        libnfs_fattr4_mode(&a->createattrs, mask, val, 0755);
    } else { /* DIR_REMOVE, DIR_RMDIR */
        libnfs_op(&ops[n++], OP_SAVEFH);
        op_name(&ops[n++], OP_LOOKUP, leaf);
        libnfs_op(&ops[n], OP_VERIFY);
        libnfs_fattr4_type(&ops[n++].nfs_argop4_u.opverify.obj_attributes, mask, val,
                           op == DIR_REMOVE ? NF4REG : NF4DIR);
        libnfs_op(&ops[n++], OP_RESTOREFH);
        op_name(&ops[n++], OP_REMOVE, leaf);
    }
    return libnfs_compound(c, ops, n, r);
}

/* op on p's leaf in its parent's handle; a stale parent is walked again
 * once. 0, -errno, LIBNFS_DIR_BY_PATH or DIR_NOT_SAME; r holds the reply. */
static int dir_call(struct libnfs_ctx *c, enum dir_op op, const char *p, struct libnfs_reply *r)
{
    for (int attempt = 0;; attempt++) {
        struct libnfs_dir *d;
        const char *leaf;
        int rc = libnfs_dir_get(c, p, &d, &leaf);
        if (rc != 0)
            return rc;
        if (c->v4) {
            rc = dir_call4(c, op, d, leaf, r);
        } else {
            rc = dir_call3(c, op, d->fh, d->fh_len, leaf, r);
        }
        if (rc < 0)
            return rc;
        if (r->st == NFS4ERR_NOT_SAME && c->v4)
            return DIR_NOT_SAME;
        rc = r->st == 0 ? 0 : -libnfs_status_errno(c, r->st, c->v4);
        if (rc != -ESTALE || attempt > 0)
            return rc;
        libnfs_dirs_forget(c, d->path);
    }
}

int libnfs_dir_lstat(struct libnfs_ctx *c, const char *p, struct nfs_stat_64 *st,
                     struct libnfs_handle *h)
{
    struct libnfs_reply r;
    int rc = dir_call(c, DIR_LOOKUP, p, &r);
    if (rc != 0)
        return rc;
    if (!r.has_attr)
        return c->v4 ? -EIO : LIBNFS_DIR_BY_PATH; /* an NFSv3 server that sent none */
    *st = r.attr;
    if (h) {
        if (!r.fh_len || r.fh_len > sizeof h->val)
            return -EIO;
        h->len = r.fh_len;
        memcpy(h->val, r.fh, r.fh_len);
    }
    return 0;
}

int libnfs_dirs_check3(struct libnfs_ctx *c, const char *p)
{
    struct libnfs_dir *d;
    const char *leaf;
    int rc = libnfs_dir_get(c, p, &d, &leaf);
    return rc == LIBNFS_DIR_BY_PATH ? -EACCES : rc;
}

/* A removal of p's leaf (op: DIR_REMOVE, a regular file; DIR_RMDIR, a
 * directory) once its type allows (libnfs_leaf_refused): NFSv3 a LOOKUP
 * first, NFSv4 a VERIFY in the same COMPOUND, and the LOOKUP only when
 * it failed, for the errno. */
static int dir_removal(struct libnfs_ctx *c, enum dir_op op, const char *p)
{
    bool file_only = op == DIR_REMOVE;
    struct libnfs_reply r;
    struct nfs_stat_64 st;
    int rc;
    if (c->v4 && (rc = dir_call(c, op, p, &r)) != DIR_NOT_SAME)
        return rc;
    rc = libnfs_dir_lstat(c, p, &st, NULL);
    if (rc == 0)
        rc = libnfs_leaf_refused(&st, file_only);
    if (rc != 0 || !c->v4)
        return rc != 0 ? rc : dir_call(c, op, p, &r);
    return file_only ? -EPERM : -ENOTDIR; /* the type VERIFY refused */
}

int libnfs_dir_unlink(struct libnfs_ctx *c, const char *p)
{
    return dir_removal(c, DIR_REMOVE, p);
}

int libnfs_dir_create(struct libnfs_ctx *c, const char *p)
{
    if (c->v4)
        return LIBNFS_DIR_BY_PATH; /* an NFSv4 file is made by an OPEN */
    struct libnfs_reply r;
    return dir_call(c, DIR_CREATE, p, &r);
}

int libnfs_dir_mkdir(struct libnfs_ctx *c, const char *p)
{
    struct libnfs_reply r;
    return dir_call(c, DIR_MKDIR, p, &r);
}

int libnfs_dir_rmdir(struct libnfs_ctx *c, const char *p)
{
    int rc = dir_removal(c, DIR_RMDIR, p);
    if (rc == 0)
        libnfs_dirs_forget(c, p);
    return rc;
}

/* One RENAME from (src, from's leaf) to (dst, to's leaf); r: its reply.
 * 0 or -errno of the RPC. */
static int dir_rename_send(struct libnfs_ctx *c, const struct libnfs_dir *src, const char *from,
                           const struct libnfs_dir *dst, const char *to, struct libnfs_reply *r)
{
    if (c->v4) { /* RENAME: the saved handle is the source's directory */
        nfs_argop4 ops[4];
        libnfs_op_putfh(&ops[0], src->fh, src->fh_len);
        libnfs_op(&ops[1], OP_SAVEFH);
        libnfs_op_putfh(&ops[2], dst->fh, dst->fh_len);
        libnfs_op(&ops[3], OP_RENAME);
        RENAME4args *a = &ops[3].nfs_argop4_u.oprename;
        a->oldname.utf8string_len = (u_int)strlen(from);
        a->oldname.utf8string_val = (char *)from;
        a->newname.utf8string_len = (u_int)strlen(to);
        a->newname.utf8string_val = (char *)to;
        return libnfs_compound(c, ops, 4, r);
    }
    RENAME3args a = {
        .from = {.dir = {.data = {.data_len = src->fh_len, .data_val = (char *)src->fh}},
                 .name = (char *)from},
        .to = {.dir = {.data = {.data_len = dst->fh_len, .data_val = (char *)dst->fh}},
               .name = (char *)to}};
    memset(r, 0, sizeof *r);
    if (rpc_nfs3_rename_async(nfs_get_rpc_context(c->nfs), libnfs_replied, &a, r) != 0)
        return -ENOMEM;
    return libnfs_reply_wait(c, r);
}

int libnfs_dir_rename(struct libnfs_ctx *c, const char *from, const char *to)
{
    for (int attempt = 0;; attempt++) {
        struct libnfs_dir *d, src;
        const char *from_leaf, *to_leaf;
        int rc = libnfs_dir_get(c, from, &d, &from_leaf);
        if (rc != 0)
            return rc;
        src = *d; /* the second get may take its slot */
        rc = libnfs_dir_get(c, to, &d, &to_leaf);
        if (rc != 0)
            return rc;
        struct libnfs_reply r;
        rc = dir_rename_send(c, &src, from_leaf, d, to_leaf, &r);
        if (rc < 0)
            return rc;
        rc = r.st == 0 ? 0 : -libnfs_status_errno(c, r.st, c->v4);
        if (rc != -ESTALE || attempt > 0)
            return rc;
        libnfs_dirs_forget(c, src.path);
        libnfs_dirs_forget(c, d->path);
    }
}

int libnfs_dirs_check4(struct libnfs_ctx *c, const char *p)
{
    char path[JOB_PATH_MAX + LIBNFS_PATH_MAX];
    nfs_argop4 ops[DIRS_WALK_OPS];
    u_int n = dirs_walk_ops(c, p, path, sizeof path, ops);
    if (n == 0)
        return -ENAMETOOLONG;
    struct libnfs_reply r;
    int rc = libnfs_compound(c, ops, n, &r);
    if (rc < 0)
        return rc;
    /* The leaf's LOOKUP came last: its NOENT says nothing of the directories. */
    if (r.st == NFS4_OK || (r.st == NFS4ERR_NOENT && r.ran == n))
        return 0;
    return -libnfs_status_errno(c, r.st, true);
}

int libnfs_dirs_limits4(struct libnfs_ctx *c, uint64_t *rmax, uint64_t *wmax)
{
    nfs_argop4 tail;
    libnfs_op_getattr_limits(&tail);
    struct libnfs_reply r;
    int rc = dir_walk4_send(c, "", &tail, 1, &r);
    if (rc < 0)
        return rc;
    *rmax = r.maxread;
    *wmax = r.maxwrite;
    return 0;
}

/* Every directory component of p (export-absolute) is a directory, not a
 * link: over NFSv3 by the parent's kept handle (its walk,
 * libnfs_dirs_check3), over NFSv4 by one COMPOUND of LOOKUPs
 * (libnfs_dirs_check4); where those cannot (EACCES: NFSv3 an export
 * root the user may not read), an lstat of each: libnfs would follow a
 * link there. */
int libnfs_dirs_ok(struct libnfs_ctx *c, const char *p)
{
    int rc = c->v4 ? libnfs_dirs_check4(c, p) : libnfs_dirs_check3(c, p);
    if (rc != -EACCES)
        return rc;
    char dir[LIBNFS_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", p);
    for (char *s = strchr(dir + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        struct nfs_stat_64 st;
        rc = libnfs_call_lstat(c, dir, &st);
        *s = '/';
        if (rc < 0)
            return rc;
        if (S_ISLNK(st.nfs_mode))
            return -ELOOP;
        if (!S_ISDIR(st.nfs_mode))
            return -ENOTDIR;
    }
    return 0;
}
