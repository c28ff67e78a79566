/* backend_posix.c — the POSIX backend: any mounted file system (kernel NFS,
 * CIFS, Lustre, xfs, tmpfs...). All paths resolve beneath a directory
 * descriptor of the target without following any symbolic link
 * (safepath.h): open through safepath_open, every other call on the leaf
 * name with an *at() call on its safely resolved parent, never following
 * the leaf either. So nothing outside the target can be named, and a link
 * planted under it (by another user, or during the run) gives -ELOOP. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "job.h"
#include "safepath.h"

struct posix_ctx {
    int dirfd;
};

struct backend_file {
    int fd;
};

static const char *posix_check(const struct phase *ph, char *why, size_t len)
{
    if (strncmp(ph->target, "nfs://", 6) == 0) {
        snprintf(why, len,
                 "target is an nfs:// URL: set backend = libnfs, or mount it "
                 "and give the mount point");
        return "target";
    }
    return NULL;
}

static int posix_connect(const char *target, const struct phase *ph, void **ctx)
{
    (void)ph;
    int fd = open(target, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct posix_ctx *c = malloc(sizeof *c);
    if (!c) {
        close(fd);
        return -ENOMEM;
    }
    c->dirfd = fd;
    *ctx = c;
    return 0;
}

static void posix_disconnect(void *ctx)
{
    struct posix_ctx *c = ctx;
    if (c) {
        close(c->dirfd);
        free(c);
    }
}

static int posix_open(void *ctx, const char *path, int flags, struct backend_file **f)
{
    struct posix_ctx *c = ctx;
    int oflags = 0;
    if ((flags & BACKEND_READ) && (flags & BACKEND_WRITE))
        oflags |= O_RDWR;
    else if (flags & BACKEND_WRITE)
        oflags |= O_WRONLY;
    else
        oflags |= O_RDONLY;
    if (flags & BACKEND_CREATE)
        oflags |= O_CREAT;
    if ((flags & BACKEND_CREATE) && (flags & BACKEND_EXCL))
        oflags |= O_EXCL;
    if (flags & BACKEND_DIRECT)
        oflags |= O_DIRECT;
    struct backend_file *bf = malloc(sizeof *bf);
    if (!bf)
        return -ENOMEM;
    bf->fd = safepath_open(c->dirfd, path, oflags, 0644);
    if (bf->fd < 0) {
        int err = bf->fd;
        free(bf);
        return err;
    }
    *f = bf;
    return 0;
}

static ssize_t posix_pread(void *ctx, struct backend_file *f, void *buf, size_t len,
                           uint64_t offset)
{
    (void)ctx;
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(f->fd, (char *)buf + done, len - done, (off_t)(offset + done));
        if (n < 0)
            return -errno;
        if (n == 0)
            break; /* end of file: the caller sees a short count */
        done += (size_t)n;
    }
    return (ssize_t)done;
}

static ssize_t posix_pwrite(void *ctx, struct backend_file *f, const void *buf, size_t len,
                            uint64_t offset)
{
    (void)ctx;
    size_t done = 0;
    while (done < len) {
        ssize_t n = pwrite(f->fd, (const char *)buf + done, len - done, (off_t)(offset + done));
        if (n < 0)
            return -errno;
        done += (size_t)n;
    }
    return (ssize_t)done;
}

static int posix_fsync(void *ctx, struct backend_file *f)
{
    (void)ctx;
    return fsync(f->fd) < 0 ? -errno : 0;
}

static int posix_close(void *ctx, struct backend_file *f)
{
    (void)ctx;
    int rc = close(f->fd) < 0 ? -errno : 0;
    free(f);
    return rc;
}

/* The leaf of path in its safely resolved parent: *dirfd (to close) and
 * *leaf, and the leaf's lstat when st is not NULL. */
static int posix_leaf(struct posix_ctx *c, const char *path, int *dirfd, const char **leaf,
                      struct stat *st)
{
    int fd = safepath_parent(c->dirfd, path, leaf);
    if (fd < 0)
        return fd;
    if (st && fstatat(fd, *leaf, st, AT_SYMLINK_NOFOLLOW) < 0) {
        int err = errno;
        close(fd);
        return -err;
    }
    *dirfd = fd;
    return 0;
}

/* Close the parent's descriptor, pass rc on. */
static int posix_done(int dirfd, int rc)
{
    close(dirfd);
    return rc;
}

static int posix_stat(void *ctx, const char *path, struct stat *st)
{
    int dirfd = -1;
    const char *leaf;
    int rc = posix_leaf(ctx, path, &dirfd, &leaf, st);
    return rc < 0 ? rc : posix_done(dirfd, 0);
}

/* Only a regular file is removed: never a link somebody planted (-ELOOP),
 * never a directory (-EISDIR). A swap of the leaf between the lstat and
 * the unlink can at worst remove that link itself, never its target. */
static int posix_unlink(void *ctx, const char *path)
{
    int dirfd = -1;
    const char *leaf;
    struct stat st;
    int rc = posix_leaf(ctx, path, &dirfd, &leaf, &st);
    if (rc < 0)
        return rc;
    if (S_ISLNK(st.st_mode))
        return posix_done(dirfd, -ELOOP);
    if (S_ISDIR(st.st_mode))
        return posix_done(dirfd, -EISDIR);
    if (!S_ISREG(st.st_mode))
        return posix_done(dirfd, -EPERM);
    return posix_done(dirfd, unlinkat(dirfd, leaf, 0) < 0 ? -errno : 0);
}

static int posix_mkdir(void *ctx, const char *path)
{
    int dirfd = -1;
    const char *leaf;
    int rc = posix_leaf(ctx, path, &dirfd, &leaf, NULL);
    if (rc < 0)
        return rc;
    return posix_done(dirfd, mkdirat(dirfd, leaf, 0755) < 0 ? -errno : 0);
}

/* A link where a directory is expected is -ELOOP (not rmdir's ENOTDIR). */
static int posix_rmdir(void *ctx, const char *path)
{
    int dirfd = -1;
    const char *leaf;
    struct stat st;
    int rc = posix_leaf(ctx, path, &dirfd, &leaf, &st);
    if (rc < 0)
        return rc;
    if (S_ISLNK(st.st_mode))
        return posix_done(dirfd, -ELOOP);
    return posix_done(dirfd, unlinkat(dirfd, leaf, AT_REMOVEDIR) < 0 ? -errno : 0);
}

/* Neither a link as the source nor one as the destination is moved or
 * replaced (-ELOOP): herd renames only what it made. */
static int posix_rename(void *ctx, const char *from, const char *to)
{
    int fromfd = -1, tofd = -1;
    const char *fleaf, *tleaf;
    struct stat st;
    int rc = posix_leaf(ctx, from, &fromfd, &fleaf, &st);
    if (rc < 0)
        return rc;
    if (S_ISLNK(st.st_mode))
        return posix_done(fromfd, -ELOOP);
    rc = posix_leaf(ctx, to, &tofd, &tleaf, NULL);
    if (rc < 0)
        return posix_done(fromfd, rc);
    if (fstatat(tofd, tleaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
        rc = -ELOOP;
    else
        rc = renameat(fromfd, fleaf, tofd, tleaf) < 0 ? -errno : 0;
    close(tofd);
    return posix_done(fromfd, rc);
}

static int posix_lock(void *ctx, struct backend_file *f, enum backend_lock kind, bool wait,
                      uint64_t start, uint64_t len)
{
    (void)ctx;
    struct flock fl = {
        .l_type = kind == BACKEND_UNLOCK        ? F_UNLCK
                  : kind == BACKEND_LOCK_SHARED ? F_RDLCK
                                                : F_WRLCK,
        .l_whence = SEEK_SET,
        .l_start = (off_t)start,
        .l_len = (off_t)len,
    };
    return fcntl(f->fd, wait ? F_SETLKW : F_SETLK, &fl) < 0 ? -errno : 0;
}

const struct backend_ops backend_posix = {
    .name = "posix",
    .check = posix_check,
    .connect = posix_connect,
    .configure = NULL,
    .disconnect = posix_disconnect,
    .open = posix_open,
    .pread = posix_pread,
    .pwrite = posix_pwrite,
    .fsync = posix_fsync,
    .close = posix_close,
    .stat = posix_stat,
    .unlink = posix_unlink,
    .mkdir = posix_mkdir,
    .rmdir = posix_rmdir,
    .rename = posix_rename,
    .lock = posix_lock,
};
