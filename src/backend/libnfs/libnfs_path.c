/* libnfs_path.c — the libnfs backend's ops that name a path (backend.h):
 * stat, readdir, unlink, mkdir, rmdir and rename, and where every call
 * that names a path starts (libnfs_begin: the path rule, a live
 * connection). Each acts on its parent's handle, kept from a walk that
 * refuses a link at any component (libnfs_dirs.c); where the parent
 * cannot be kept, the directories are checked and the call goes by name
 * (libnfs_call.h). The leaf's lookup (libnfs_leaf_id) serves opens too
 * (libnfs_file.c). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h> /* before libnfs.h, which needs struct timeval */

#include <nfsc/libnfs.h>

#include "libnfs_call.h"
#include "libnfs_ctx.h"
#include "safepath.h"

/* The export-absolute form of a herd path, after the common check. */
static int libnfs_path(const char *path, char *buf, size_t len)
{
    int rc = safepath_check(path);
    if (rc < 0)
        return rc;
    return (size_t)snprintf(buf, len, "/%s", path) < len ? 0 : -ENAMETOOLONG;
}

/* A broken connection is retried once per call that names a path. */
static int libnfs_ready(struct libnfs_ctx *c)
{
    if (!c->broken && c->nfs)
        return 0;
    return libnfs_reconnect(c);
}

/* Every call that names a path starts here: the path rule, then a live
 * connection. 0 or -errno. */
int libnfs_begin(struct libnfs_ctx *c, const char *path, char *buf, size_t len)
{
    libnfs_call_begin(c, NULL);
    int rc = libnfs_path(path, buf, len);
    return rc < 0 ? rc : libnfs_ready(c);
}

/* The leaf's lstat, and its handle (h->len 0 where the server's LOOKUP
 * cannot be used: NFSv3 where the parent's walk cannot go by handle): a
 * LOOKUP in its parent's kept handle; else its directories checked
 * first, then by name. */
int libnfs_leaf_id(struct libnfs_ctx *c, const char *p, struct nfs_stat_64 *st,
                   struct libnfs_handle *h)
{
    int rc;
    h->len = 0;
    if ((rc = libnfs_dir_lstat(c, p, st, h)) != LIBNFS_DIR_BY_PATH)
        return rc;
    rc = libnfs_dirs_ok(c, p);
    if (rc < 0)
        return rc;
    return libnfs_call_lstat(c, p, st);
}

static int libnfs_leaf(struct libnfs_ctx *c, const char *p, struct nfs_stat_64 *st)
{
    struct libnfs_handle h;
    return libnfs_leaf_id(c, p, st, &h);
}

int libnfs_stat(void *ctx, const char *path, struct stat *st)
{
    struct libnfs_ctx *c = ctx;
    char p[LIBNFS_PATH_MAX];
    int rc = libnfs_begin(c, path, p, sizeof p);
    if (rc < 0)
        return rc;
    struct nfs_stat_64 s;
    rc = libnfs_leaf(c, p, &s);
    if (rc < 0)
        return rc;
    memset(st, 0, sizeof *st);
    st->st_dev = s.nfs_dev;
    st->st_ino = s.nfs_ino;
    st->st_mode = s.nfs_mode;
    st->st_nlink = s.nfs_nlink;
    st->st_uid = s.nfs_uid;
    st->st_gid = s.nfs_gid;
    st->st_size = (off_t)s.nfs_size;
    st->st_blocks = (blkcnt_t)s.nfs_blocks;
    st->st_mtim.tv_sec = (time_t)s.nfs_mtime;
    st->st_mtim.tv_nsec = (long)s.nfs_mtime_nsec;
    return 0;
}

/* The directory path itself kept by handle (the parent of a name in it,
 * walked without following a link), then listed. */
int libnfs_readdir(void *ctx, const char *path, uint64_t *entries)
{
    struct libnfs_ctx *c = ctx;
    char p[LIBNFS_PATH_MAX];
    int rc = libnfs_begin(c, path, p, sizeof p);
    if (rc < 0)
        return rc;
    size_t n = strlen(p);
    if (n + 3 > sizeof p)
        return -ENAMETOOLONG;
    memcpy(p + n, "/_", 3); /* a name in it: never looked up */
    struct libnfs_dir *d;
    const char *leaf;
    rc = libnfs_dir_get(c, p, &d, &leaf);
    if (rc == LIBNFS_DIR_BY_PATH)
        return -EACCES; /* an export root this user may not read: no handle to list */
    return rc < 0 ? rc : libnfs_attr_list(c, d, entries);
}

/* The path-only calls share their shape: check, (re)connect; over NFSv3
 * the call on the parent's kept handle (by_handle, libnfs_dirs.c) unless
 * it says LIBNFS_DIR_BY_PATH; else check the directories (and the leaf's
 * type), call by name (libnfs_call.h). */
#define LIBNFS_PATH_CALL(by_handle, leaf_check, call)                                              \
    struct libnfs_ctx *c = ctx;                                                                    \
    char p[LIBNFS_PATH_MAX];                                                                       \
    int rc = libnfs_begin(c, path, p, sizeof p);                                                   \
    if (rc < 0)                                                                                    \
        return rc;                                                                                 \
    if ((rc = (by_handle)) != LIBNFS_DIR_BY_PATH)                                                  \
        return rc;                                                                                 \
    rc = (leaf_check);                                                                             \
    if (rc < 0)                                                                                    \
        return rc;                                                                                 \
    rc = (call);                                                                                   \
    return rc < 0 ? rc : 0;

/* The leaf's lstat and libnfs_leaf_refused. */
static int libnfs_leaf_ok(struct libnfs_ctx *c, const char *p, bool file_only)
{
    struct nfs_stat_64 st;
    int rc = libnfs_leaf(c, p, &st);
    return rc < 0 ? rc : libnfs_leaf_refused(&st, file_only);
}

/* rename's destination: checked directories, and no link to replace. */
static int libnfs_dest_leaf(struct libnfs_ctx *c, const char *p)
{
    struct nfs_stat_64 st;
    int rc = libnfs_leaf(c, p, &st);
    if (rc == -ENOENT)
        return 0; /* no leaf; libnfs_leaf checked the directories either way */
    if (rc < 0)
        return rc;
    return S_ISLNK(st.nfs_mode) ? -ELOOP : 0;
}

static int libnfs_rename_check(struct libnfs_ctx *c, const char *from, const char *to)
{
    int rc = libnfs_leaf_ok(c, from, false);
    return rc < 0 ? rc : libnfs_dest_leaf(c, to);
}

/* A directory removed by name: its kept handle (if any) goes too. */
static int libnfs_rmdir_forget(struct libnfs_ctx *c, const char *p, int rc)
{
    if (rc == 0)
        libnfs_dirs_forget(c, p);
    return rc;
}

/* rename on the parents' kept handles: neither name may be a link (a
 * LOOKUP of each in its parent), then one RENAME from handle to handle,
 * and the kept handles at or below both names go (a renamed directory
 * is walked again under its new name). LIBNFS_DIR_BY_PATH: a parent
 * that cannot be kept; the call goes by name, checked, its handles
 * dropped first. */
static int libnfs_rename_by_handle(struct libnfs_ctx *c, const char *from, const char *to)
{
    int rc = libnfs_rename_check(c, from, to);
    if (rc == 0)
        rc = libnfs_dir_rename(c, from, to);
    if (rc == 0 || rc == LIBNFS_DIR_BY_PATH) {
        libnfs_dirs_forget(c, from);
        libnfs_dirs_forget(c, to);
    }
    return rc;
}

int libnfs_unlink(void *ctx, const char *path)
{
    LIBNFS_PATH_CALL(libnfs_dir_unlink(c, p), libnfs_leaf_ok(c, p, true), libnfs_call_unlink(c, p))
}

int libnfs_mkdir(void *ctx, const char *path)
{
    LIBNFS_PATH_CALL(libnfs_dir_mkdir(c, p), libnfs_dirs_ok(c, p), libnfs_call_mkdir(c, p, 0755))
}

int libnfs_rmdir(void *ctx, const char *path)
{
    LIBNFS_PATH_CALL(libnfs_dir_rmdir(c, p), libnfs_leaf_ok(c, p, false),
                     libnfs_rmdir_forget(c, p, libnfs_call_rmdir(c, p)))
}

int libnfs_rename(void *ctx, const char *from, const char *to)
{
    char q[LIBNFS_PATH_MAX];
    int qrc = libnfs_path(to, q, sizeof q);
    if (qrc < 0)
        return qrc;
    const char *path = from;
    LIBNFS_PATH_CALL(libnfs_rename_by_handle(c, p, q), libnfs_rename_check(c, p, q),
                     libnfs_call_rename(c, p, q))
}
