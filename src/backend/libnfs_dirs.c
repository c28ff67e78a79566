/* libnfs_dirs.c — NFSv3 calls on a name in a directory held by its file
 * handle (libnfs_ctx.h: libnfs_dir_*), as the POSIX backend's *at() calls
 * act on a directory descriptor. libnfs resolves every path from the
 * export's root and follows links; so the parent of a path is opened
 * once O_NOFOLLOW (libnfs 4.0 walks it then refusing a link at any
 * component), kept open in a small cache, and the call (LOOKUP, CREATE,
 * REMOVE, MKDIR, RMDIR) goes to its handle with the leaf's name: one RPC, as a
 * kernel client that has the directory cached sends, and no path is
 * resolved by name again, so a directory swapped for a link after the
 * walk is not followed (the handle names the directory itself). A cached
 * directory that is gone (NFS3ERR_STALE) is walked again once.
 *
 * NFSv4 (libnfs_dirs_check4): libnfs 4.0 resolves a path in one COMPOUND
 * but follows a link it meets (NFS4ERR_SYMLINK, READLINK, again); the
 * check sends PUTROOTFH and a LOOKUP of every component itself, so the
 * server refuses a link at any directory in one round trip. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "libnfs_ctx.h"

#include <nfsc/libnfs-raw.h>

#include <nfsc/libnfs-raw-nfs.h>
#include <nfsc/libnfs-raw-nfs4.h>

#include "rpcwait.h"

/* The errno of an NFSv3 status (RFC 1813's list; any other: EIO), and
 * its name noted on c (the status op's answer, as libnfs's messages give
 * it for the calls by path). */
#define STATUS_ERRNO(st, err)                                                                      \
    {                                                                                              \
        st, err, #st                                                                               \
    }
static int dir_errno(struct libnfs_ctx *c, nfsstat3 st)
{
    static const struct {
        int st;
        int err;
        const char *name;
    } map[] = {
        STATUS_ERRNO(NFS3ERR_PERM, EPERM),
        STATUS_ERRNO(NFS3ERR_NOENT, ENOENT),
        STATUS_ERRNO(NFS3ERR_IO, EIO),
        STATUS_ERRNO(NFS3ERR_NXIO, ENXIO),
        STATUS_ERRNO(NFS3ERR_ACCES, EACCES),
        STATUS_ERRNO(NFS3ERR_EXIST, EEXIST),
        STATUS_ERRNO(NFS3ERR_XDEV, EXDEV),
        STATUS_ERRNO(NFS3ERR_NODEV, ENODEV),
        STATUS_ERRNO(NFS3ERR_NOTDIR, ENOTDIR),
        STATUS_ERRNO(NFS3ERR_ISDIR, EISDIR),
        STATUS_ERRNO(NFS3ERR_INVAL, EINVAL),
        STATUS_ERRNO(NFS3ERR_FBIG, EFBIG),
        STATUS_ERRNO(NFS3ERR_NOSPC, ENOSPC),
        STATUS_ERRNO(NFS3ERR_ROFS, EROFS),
        STATUS_ERRNO(NFS3ERR_MLINK, EMLINK),
        STATUS_ERRNO(NFS3ERR_NAMETOOLONG, ENAMETOOLONG),
        STATUS_ERRNO(NFS3ERR_NOTEMPTY, ENOTEMPTY),
        STATUS_ERRNO(NFS3ERR_DQUOT, EDQUOT),
        STATUS_ERRNO(NFS3ERR_STALE, ESTALE),
        STATUS_ERRNO(NFS3ERR_JUKEBOX, EAGAIN),
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (map[i].st == (int)st) {
            libnfs_note(c, map[i].name);
            return map[i].err;
        }
    char name[32];
    snprintf(name, sizeof name, "NFS3ERR %d", (int)st);
    libnfs_note(c, name);
    return EIO;
}

/* One call's reply: its status, a LOOKUP's attributes, a COMPOUND's
 * count of the ops that ran. */
struct dir_reply {
    volatile bool done;
    int rpc_status; /* RPC_STATUS_*: SUCCESS, the RPC was answered */
    bool lookup;    /* the reply is a LOOKUP3res */
    bool compound;  /* the reply is a COMPOUND4res */
    int st;         /* nfsstat3 or nfsstat4: every result begins with it */
    bool has_attr;
    fattr3 attr;
    u_int ran;
};

static void dir_replied(struct rpc_context *rpc, int status, void *data, void *priv)
{
    (void)rpc;
    struct dir_reply *r = priv;
    r->rpc_status = status == RPC_STATUS_SUCCESS && !data ? RPC_STATUS_ERROR : status;
    if (r->rpc_status == RPC_STATUS_SUCCESS) {
        r->st = (int)*(nfsstat3 *)data;
        if (r->compound) {
            r->ran = ((COMPOUND4res *)data)->resarray.resarray_len;
        } else if (r->lookup && r->st == NFS3_OK) {
            const LOOKUP3resok *ok = &((LOOKUP3res *)data)->LOOKUP3res_u.resok;
            r->has_attr = ok->obj_attributes.attributes_follow;
            if (r->has_attr)
                r->attr = ok->obj_attributes.post_op_attr_u.attributes;
        }
    }
    r->done = true;
}

/* Wait for done; a failed wait or a failed RPC (rpc_status: RPC_STATUS_*)
 * breaks c (its context is never serviced again): -ETIMEDOUT for
 * libnfs's own timeout, as for rpcwait's. 0 or -errno. */
static int dir_rpc_wait(struct libnfs_ctx *c, volatile bool *done, const int *rpc_status)
{
    const char *why = NULL;
    int rc = rpcwait(nfs_get_rpc_context(c->nfs), done, c->timeout_ms, &why);
    if (rc == 0 && *rpc_status == RPC_STATUS_TIMEOUT)
        rc = -ETIMEDOUT, why = "RPC_TIMEOUT";
    else if (rc == 0 && *rpc_status != RPC_STATUS_SUCCESS)
        rc = -ECONNRESET, why = "RPC_ERROR";
    if (rc < 0) {
        c->broken = true;
        if (why)
            libnfs_note(c, why);
    }
    return rc;
}

/* Wait for r (dir_rpc_wait); then its NFSv3 status. 0 or -errno. */
static int dir_wait(struct libnfs_ctx *c, struct dir_reply *r)
{
    int rc = dir_rpc_wait(c, &r->done, &r->rpc_status);
    if (rc < 0)
        return rc;
    return r->st == NFS3_OK ? 0 : -dir_errno(c, (nfsstat3)r->st);
}

void libnfs_dirs_forget(struct libnfs_ctx *c, const char *dir)
{
    size_t n = dir ? strlen(dir) : 0;
    for (int i = 0; i < LIBNFS_DIRS; i++) {
        struct libnfs_dir *d = &c->dirs[i];
        if (!d->fh ||
            (dir && (strncmp(d->path, dir, n) != 0 || (d->path[n] != '\0' && d->path[n] != '/'))))
            continue;
        if (c->nfs)
            nfs_close(c->nfs, d->fh); /* read-only: frees, sends nothing */
        d->fh = NULL;
    }
}

/* The cached handle of p's parent, opened O_NOFOLLOW when missing; *leaf:
 * p's last component. 0, -errno, or LIBNFS_DIR_BY_PATH (EACCES from the
 * open: a directory the user may search but not read). */
static int dir_get(struct libnfs_ctx *c, const char *p, struct libnfs_dir **out, const char **leaf)
{
    const char *slash = strrchr(p, '/');
    size_t n = slash ? (size_t)(slash - p) : 0;
    *leaf = slash ? slash + 1 : p;
    if (!slash || n >= sizeof c->dirs[0].path)
        return -EINVAL; /* libnfs_begin's paths are export-absolute */
    struct libnfs_dir *hit = NULL, *oldest = &c->dirs[0];
    for (int i = 0; i < LIBNFS_DIRS && !hit; i++) {
        struct libnfs_dir *d = &c->dirs[i];
        if (d->fh && strncmp(d->path, p, n) == 0 && d->path[n] == '\0')
            hit = d;
        else if (!d->fh || (oldest->fh && d->used < oldest->used))
            oldest = d;
    }
    if (!hit) {
        char dir[LIBNFS_PATH_MAX];
        memcpy(dir, p, n);
        dir[n] = '\0';
        struct nfsfh *fh = NULL;
        int rc = nfs_open2(c->nfs, n ? dir : "/", O_RDONLY | O_NOFOLLOW, 0, &fh);
        rc = rc < 0 ? libnfs_errno(c, rc) : 0;
        if (rc < 0)
            return rc == -EACCES ? LIBNFS_DIR_BY_PATH : rc;
        hit = oldest;
        if (hit->fh)
            nfs_close(c->nfs, hit->fh);
        memcpy(hit->path, dir, n + 1);
        hit->fh = fh;
    }
    hit->used = ++c->dir_tick;
    *out = hit;
    return 0;
}

enum dir_op { DIR_LOOKUP, DIR_CREATE, DIR_REMOVE, DIR_MKDIR, DIR_RMDIR };

/* Send op on (dir, leaf); 0 or -1 when libnfs could not queue it. */
static int dir_send(struct libnfs_ctx *c, enum dir_op op, struct libnfs_dir *d, const char *leaf,
                    struct dir_reply *r)
{
    struct nfs_fh *fh = nfs_get_fh(d->fh);
    diropargs3 where = {.dir = {.data = {.data_len = (u_int)fh->len, .data_val = fh->val}},
                        .name = (char *)leaf};
    struct rpc_context *rpc = nfs_get_rpc_context(c->nfs);
    switch (op) {
    case DIR_LOOKUP: {
        LOOKUP3args a = {.what = where};
        r->lookup = true;
        return rpc_nfs3_lookup_async(rpc, dir_replied, &a, r);
    }
    case DIR_CREATE: { /* GUARDED: never an existing name, a link included */
        CREATE3args a = {.where = where};
        a.how.mode = GUARDED;
        a.how.createhow3_u.g_obj_attributes.mode.set_it = 1;
        a.how.createhow3_u.g_obj_attributes.mode.set_mode3_u.mode = 0644;
        return rpc_nfs3_create_async(rpc, dir_replied, &a, r);
    }
    case DIR_REMOVE: {
        REMOVE3args a = {.object = where};
        return rpc_nfs3_remove_async(rpc, dir_replied, &a, r);
    }
    case DIR_MKDIR: {
        MKDIR3args a = {.where = where};
        a.attributes.mode.set_it = 1;
        a.attributes.mode.set_mode3_u.mode = 0755;
        return rpc_nfs3_mkdir_async(rpc, dir_replied, &a, r);
    }
    case DIR_RMDIR: {
        RMDIR3args a = {.object = where};
        return rpc_nfs3_rmdir_async(rpc, dir_replied, &a, r);
    }
    }
    return -1;
}

/* op on p's leaf in its parent's handle; a stale parent is walked again
 * once. 0 or -errno; r holds the reply. */
static int dir_call(struct libnfs_ctx *c, enum dir_op op, const char *p, struct dir_reply *r)
{
    for (int attempt = 0;; attempt++) {
        struct libnfs_dir *d;
        const char *leaf;
        int rc = dir_get(c, p, &d, &leaf);
        if (rc != 0)
            return rc;
        memset(r, 0, sizeof *r);
        if (dir_send(c, op, d, leaf, r) != 0)
            return -ENOMEM;
        rc = dir_wait(c, r);
        if (rc != -ESTALE || attempt > 0)
            return rc;
        libnfs_dirs_forget(c, d->path);
    }
}

int libnfs_dir_lstat(struct libnfs_ctx *c, const char *p, struct nfs_stat_64 *st)
{
    struct dir_reply r;
    int rc = dir_call(c, DIR_LOOKUP, p, &r);
    if (rc != 0)
        return rc;
    if (!r.has_attr)
        return LIBNFS_DIR_BY_PATH; /* a server that sent none: the checked lstat by path */
    static const mode_t type[] = {
        [NF3REG] = S_IFREG, [NF3DIR] = S_IFDIR,   [NF3BLK] = S_IFBLK, [NF3CHR] = S_IFCHR,
        [NF3LNK] = S_IFLNK, [NF3SOCK] = S_IFSOCK, [NF3FIFO] = S_IFIFO};
    const fattr3 *a = &r.attr;
    memset(st, 0, sizeof *st);
    st->nfs_dev = a->fsid;
    st->nfs_ino = a->fileid;
    st->nfs_mode =
        (a->mode & 07777) | ((unsigned)a->type < sizeof type / sizeof type[0] ? type[a->type] : 0);
    st->nfs_nlink = a->nlink;
    st->nfs_uid = a->uid;
    st->nfs_gid = a->gid;
    st->nfs_size = a->size;
    st->nfs_blocks = (a->used + 511) / 512;
    st->nfs_mtime = a->mtime.seconds;
    st->nfs_mtime_nsec = a->mtime.nseconds;
    return 0;
}

int libnfs_dirs_check3(struct libnfs_ctx *c, const char *p)
{
    struct libnfs_dir *d;
    const char *leaf;
    int rc = dir_get(c, p, &d, &leaf);
    return rc == LIBNFS_DIR_BY_PATH ? -EACCES : rc;
}

/* op on p's leaf once a LOOKUP shows it may be (libnfs_leaf_refused). */
static int dir_checked_call(struct libnfs_ctx *c, enum dir_op op, const char *p, bool file_only)
{
    struct nfs_stat_64 st;
    int rc = libnfs_dir_lstat(c, p, &st);
    if (rc == 0)
        rc = libnfs_leaf_refused(&st, file_only);
    if (rc != 0)
        return rc;
    struct dir_reply r;
    return dir_call(c, op, p, &r);
}

int libnfs_dir_unlink(struct libnfs_ctx *c, const char *p)
{
    return dir_checked_call(c, DIR_REMOVE, p, true);
}

int libnfs_dir_create(struct libnfs_ctx *c, const char *p)
{
    struct dir_reply r;
    return dir_call(c, DIR_CREATE, p, &r);
}

int libnfs_dir_mkdir(struct libnfs_ctx *c, const char *p)
{
    struct dir_reply r;
    return dir_call(c, DIR_MKDIR, p, &r);
}

int libnfs_dir_rmdir(struct libnfs_ctx *c, const char *p)
{
    int rc = dir_checked_call(c, DIR_RMDIR, p, false);
    if (rc == 0)
        libnfs_dirs_forget(c, p);
    return rc;
}

#define DIRS_CHECK4_OPS 128 /* PUTROOTFH and the LOOKUPs of a path's components */

int libnfs_dirs_check4(struct libnfs_ctx *c, const char *p)
{
    /* The export's path (the URL's, as libnfs mounted it), then p. */
    const char *host = strstr(c->target, "://");
    const char *exp = host ? strchr(host + 3, '/') : NULL;
    char path[JOB_PATH_MAX + LIBNFS_PATH_MAX];
    int len =
        snprintf(path, sizeof path, "%.*s%s", exp ? (int)strcspn(exp, "?") : 0, exp ? exp : "", p);
    if (len < 0 || (size_t)len >= sizeof path)
        return -ENAMETOOLONG;
    nfs_argop4 ops[DIRS_CHECK4_OPS];
    memset(ops, 0, sizeof ops);
    ops[0].argop = OP_PUTROOTFH;
    u_int n = 1;
    char *save = NULL;
    for (char *s = strtok_r(path, "/", &save); s; s = strtok_r(NULL, "/", &save)) {
        if (n == DIRS_CHECK4_OPS)
            return -ENAMETOOLONG;
        ops[n].argop = OP_LOOKUP;
        ops[n].nfs_argop4_u.oplookup.objname.utf8string_len = (u_int)strlen(s);
        ops[n].nfs_argop4_u.oplookup.objname.utf8string_val = s;
        n++;
    }
    COMPOUND4args args;
    memset(&args, 0, sizeof args);
    args.argarray.argarray_len = n;
    args.argarray.argarray_val = ops;
    struct dir_reply r = {.compound = true};
    if (rpc_nfs4_compound_async(nfs_get_rpc_context(c->nfs), dir_replied, &args, &r) != 0)
        return -ENOMEM;
    int rc = dir_rpc_wait(c, &r.done, &r.rpc_status);
    if (rc < 0)
        return rc;
    /* The leaf's LOOKUP came last: its NOENT says nothing of the directories. */
    if (r.st == NFS4_OK || (r.st == NFS4ERR_NOENT && r.ran == n))
        return 0;
    static const struct {
        int st;
        int err;
        const char *name;
    } map[] = {
        STATUS_ERRNO(NFS4ERR_SYMLINK, ELOOP), STATUS_ERRNO(NFS4ERR_NOTDIR, ENOTDIR),
        STATUS_ERRNO(NFS4ERR_NOENT, ENOENT),  STATUS_ERRNO(NFS4ERR_ACCESS, EACCES),
        STATUS_ERRNO(NFS4ERR_STALE, ESTALE),  STATUS_ERRNO(NFS4ERR_NAMETOOLONG, ENAMETOOLONG),
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (map[i].st == r.st) {
            libnfs_note(c, map[i].name);
            return -map[i].err;
        }
    char name[32];
    snprintf(name, sizeof name, "NFS4ERR %d", (int)r.st);
    libnfs_note(c, name);
    return -EIO;
}
