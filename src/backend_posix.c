/* backend_posix.c — the POSIX backend: any mounted file system (kernel NFS,
 * CIFS, Lustre, xfs, tmpfs...). All paths resolve relative to a directory
 * descriptor of the target (openat and friends), so nothing outside the
 * target can be named. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "job.h"

struct posix_ctx {
    int dirfd;
};

struct backend_file {
    int fd;
};

/* herd only builds relative paths inside its run directory; refuse
 * anything that could climb out. */
static bool posix_path_ok(const char *path)
{
    if (path[0] == '/' || strcmp(path, "..") == 0 || strncmp(path, "../", 3) == 0)
        return false;
    return strstr(path, "/../") == NULL;
}

static const char *posix_check(const struct phase *ph, char *why, size_t len)
{
    if (strncmp(ph->target, "nfs://", 6) == 0) {
        snprintf(why, len, "target is an nfs:// URL: set backend = libnfs, or mount it "
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
    if (!posix_path_ok(path))
        return -EINVAL;
    int oflags = O_CLOEXEC;
    if ((flags & BACKEND_READ) && (flags & BACKEND_WRITE))
        oflags |= O_RDWR;
    else if (flags & BACKEND_WRITE)
        oflags |= O_WRONLY;
    else
        oflags |= O_RDONLY;
    if (flags & BACKEND_CREATE)
        oflags |= O_CREAT;
    if (flags & BACKEND_DIRECT)
        oflags |= O_DIRECT;
    struct backend_file *bf = malloc(sizeof *bf);
    if (!bf)
        return -ENOMEM;
    bf->fd = openat(c->dirfd, path, oflags, 0644);
    if (bf->fd < 0) {
        int err = errno;
        free(bf);
        return -err;
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

static int posix_stat(void *ctx, const char *path, struct stat *st)
{
    struct posix_ctx *c = ctx;
    if (!posix_path_ok(path))
        return -EINVAL;
    return fstatat(c->dirfd, path, st, 0) < 0 ? -errno : 0;
}

static int posix_unlink(void *ctx, const char *path)
{
    struct posix_ctx *c = ctx;
    if (!posix_path_ok(path))
        return -EINVAL;
    return unlinkat(c->dirfd, path, 0) < 0 ? -errno : 0;
}

static int posix_mkdir(void *ctx, const char *path)
{
    struct posix_ctx *c = ctx;
    if (!posix_path_ok(path))
        return -EINVAL;
    return mkdirat(c->dirfd, path, 0755) < 0 ? -errno : 0;
}

static int posix_rmdir(void *ctx, const char *path)
{
    struct posix_ctx *c = ctx;
    if (!posix_path_ok(path))
        return -EINVAL;
    return unlinkat(c->dirfd, path, AT_REMOVEDIR) < 0 ? -errno : 0;
}

static int posix_rename(void *ctx, const char *from, const char *to)
{
    struct posix_ctx *c = ctx;
    if (!posix_path_ok(from) || !posix_path_ok(to))
        return -EINVAL;
    return renameat(c->dirfd, from, c->dirfd, to) < 0 ? -errno : 0;
}

static int posix_lock(void *ctx, struct backend_file *f, enum backend_lock kind, bool wait,
                      uint64_t start, uint64_t len)
{
    (void)ctx;
    struct flock fl = {
        .l_type = kind == BACKEND_UNLOCK ? F_UNLCK
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
