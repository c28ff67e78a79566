/* backend_posix.c — the POSIX backend: any mounted file system (kernel NFS,
 * CIFS, Lustre, xfs, tmpfs...). All paths resolve beneath a directory
 * descriptor of the target without following any symbolic link
 * (safepath.h): open through safepath_open, every other call on the leaf
 * name with an *at() call on its safely resolved parent, never following
 * the leaf either. So nothing outside the target can be named, and a link
 * planted under it (by another user, or during the run) gives -ELOOP.
 *
 * unlink and rename act on a leaf only after an lstat shows it is not a
 * link (nor, for unlink, anything but a regular file), except in a
 * directory this context made itself (mkdir returned 0) that is still
 * its user's and writable by nobody else: there only this user or root
 * can have put a name, so the leaf is the run's own and the call is one
 * system call, as in mdtest or fio. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend.h"
#include "dirset.h"
#include "job.h"
#include "safepath.h"

/* Parent directories resolved safely (safepath_parent), kept open: a meta
 * phase makes thousands of calls in the same few directories, and
 * resolving each parent again would cost two more system calls per call.
 * A cached parent is a directory that was beneath the target, reached
 * without links, when it was resolved; herd drops an entry when it removes
 * or renames that directory (or one above it). Its own directories are
 * 0755, so another user cannot move them in between. */
#define POSIX_PARENTS 4

struct posix_parent {
    char path[HERD_PATH_MAX];
    int fd;             /* -1: empty */
    unsigned long used; /* when last used: a miss replaces the oldest */
    signed char own;    /* posix_dir_own when first asked; -1: not yet */
};

struct posix_ctx {
    int dirfd;
    struct posix_parent parents[POSIX_PARENTS];
    unsigned long tick;
    struct dirset made; /* the directories this context's mkdir made */
};

struct backend_file {
    int fd;
};

static int posix_connect(const char *target, const struct phase *ph, const char *client, void **ctx)
{
    (void)ph, (void)client; /* a kernel mount: the host is the client */
    int fd = open(target, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct posix_ctx *c = malloc(sizeof *c);
    if (!c) {
        close(fd);
        return -ENOMEM;
    }
    c->dirfd = fd;
    for (int i = 0; i < POSIX_PARENTS; i++)
        c->parents[i] = (struct posix_parent){.fd = -1};
    c->tick = 0;
    c->made = (struct dirset){0};
    *ctx = c;
    return 0;
}

/* Forget cached parents at or below dir (a directory removed or moved). */
static void posix_forget(struct posix_ctx *c, const char *dir)
{
    size_t n = strlen(dir);
    for (int i = 0; i < POSIX_PARENTS; i++) {
        struct posix_parent *p = &c->parents[i];
        if (p->fd >= 0 && strncmp(p->path, dir, n) == 0 &&
            (p->path[n] == '\0' || p->path[n] == '/')) {
            close(p->fd);
            p->fd = -1;
        }
    }
}

static void posix_disconnect(void *ctx)
{
    struct posix_ctx *c = ctx;
    if (c) {
        for (int i = 0; i < POSIX_PARENTS; i++)
            if (c->parents[i].fd >= 0)
                close(c->parents[i].fd);
        close(c->dirfd);
        dirset_free(&c->made);
        free(c);
    }
}

/* Whether only this user (or root) can add a name in directory fd: this
 * context made it, and it is still its user's with no write bit for
 * group or others (the mode shows an ACL's mask there). */
static bool posix_dir_own(const struct posix_ctx *c, int fd)
{
    struct stat st;
    return c->made.count && fstat(fd, &st) == 0 && dirset_has(&c->made, st.st_dev, st.st_ino) &&
           st.st_uid == geteuid() && !(st.st_mode & (S_IWGRP | S_IWOTH));
}

/* The leaf of path and a descriptor of its safely resolved parent (owned
 * by the context: never closed by the caller), and the leaf's lstat when
 * st is not NULL. *own (when not NULL): posix_dir_own of the parent, as
 * it was when first asked after the parent was resolved. */
static int posix_leaf(struct posix_ctx *c, const char *path, int *dirfd, const char **leaf,
                      struct stat *st, bool *own)
{
    int rc = safepath_check(path);
    if (rc < 0)
        return rc;
    const char *slash = strrchr(path, '/');
    *leaf = slash ? slash + 1 : path;
    int fd = c->dirfd;
    if (slash) {
        size_t n = (size_t)(slash - path);
        struct posix_parent *hit = NULL, *oldest = &c->parents[0];
        for (int i = 0; i < POSIX_PARENTS && !hit; i++) {
            struct posix_parent *p = &c->parents[i];
            if (p->fd >= 0 && strncmp(p->path, path, n) == 0 && p->path[n] == '\0')
                hit = p;
            else if (p->fd < 0 || (oldest->fd >= 0 && p->used < oldest->used))
                oldest = p;
        }
        if (!hit) { /* the oldest is never the one a rename just looked up */
            const char *ignored;
            fd = safepath_parent(c->dirfd, path, &ignored);
            if (fd < 0)
                return fd;
            hit = oldest;
            if (hit->fd >= 0)
                close(hit->fd);
            memcpy(hit->path, path, n);
            hit->path[n] = '\0';
            hit->fd = fd;
            hit->own = -1;
        }
        hit->used = ++c->tick;
        fd = hit->fd;
        if (own && hit->own < 0) /* only unlink and rename ask: no fstat on the others */
            hit->own = posix_dir_own(c, fd);
        if (own)
            *own = hit->own > 0;
    } else if (own) {
        *own = false; /* the target itself is never the run's own */
    }
    if (st && fstatat(fd, *leaf, st, AT_SYMLINK_NOFOLLOW) < 0)
        return -errno;
    *dirfd = fd;
    return 0;
}

/* The check of a file opened without O_CREAT (fd, or -1 with errno set):
 * 0 when it is a regular file fit for oflags, its O_NONBLOCK cleared;
 * else the errno to fail with. */
static int posix_open_check(int fd, int oflags)
{
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0)
        return errno;
    if (!S_ISREG(st.st_mode))
        return ENOTSUP;
    if ((oflags & O_ACCMODE) != O_RDONLY && st.st_nlink > 1)
        return EMLINK;
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0)
        return errno;
    return 0;
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
    int dirfd;
    const char *leaf;
    int rc = posix_leaf(c, path, &dirfd, &leaf, NULL, NULL);
    if (rc < 0)
        return rc;
    struct backend_file *bf = malloc(sizeof *bf);
    if (!bf)
        return -ENOMEM;
    /* A file to create is first created new (O_EXCL, which fails on any
     * name that exists, a link included): then it is a regular file of
     * ours and needs no check, one system call as a plain open(O_CREAT).
     * Only a name that exists goes the guarded way below. */
    if (oflags & O_CREAT) {
        bf->fd = openat(dirfd, leaf, oflags | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (bf->fd >= 0 || errno != EEXIST || (oflags & O_EXCL)) {
            int err = bf->fd < 0 ? errno : 0;
            if (err)
                free(bf);
            else
                *f = bf;
            return -err;
        }
    }
    /* The parent was resolved without links; the leaf is not followed.
     * O_NONBLOCK: a FIFO or a device planted at the name must not make
     * the open wait; anything but a regular file is refused, and so is a
     * file with another name (a hard link) when it would be written:
     * herd makes no hard links, so that other name is not the run's. */
    bf->fd = openat(dirfd, leaf, oflags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);
    int err = posix_open_check(bf->fd, oflags);
    if (err) {
        if (bf->fd >= 0)
            close(bf->fd);
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
    int dirfd = -1;
    const char *leaf;
    return posix_leaf(ctx, path, &dirfd, &leaf, st, NULL);
}

/* One entry as getdents64 fills it in (the kernel's linux_dirent64). */
struct posix_dirent {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

static int posix_fstat(void *ctx, struct backend_file *f, struct stat *st)
{
    (void)ctx;
    return fstat(f->fd, st) < 0 ? -errno : 0;
}

static int posix_fsetattr(void *ctx, struct backend_file *f, int mode, int64_t size)
{
    (void)ctx;
    int rc = mode >= 0 ? fchmod(f->fd, (mode_t)mode) : ftruncate(f->fd, (off_t)size);
    return rc < 0 ? -errno : 0;
}

/* The open file itself (AT_EMPTY_PATH: faccessat2), asked with the
 * effective ids as the server asks an NFS ACCESS. */
static int posix_faccess(void *ctx, struct backend_file *f)
{
    (void)ctx;
    return faccessat(f->fd, "", R_OK | W_OK, AT_EMPTY_PATH | AT_EACCESS) < 0 ? -errno : 0;
}

/* Opened beneath the target without following a link at any component,
 * the leaf included (O_NOFOLLOW | O_DIRECTORY: a link is -ELOOP, a file
 * -ENOTDIR), and read whole with getdents64. */
static int posix_readdir(void *ctx, const char *path, uint64_t *entries)
{
    int dirfd = -1;
    const char *leaf;
    int rc = posix_leaf(ctx, path, &dirfd, &leaf, NULL, NULL);
    if (rc < 0)
        return rc;
    int fd = openat(dirfd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    char buf[32768];
    uint64_t n = 0;
    long got;
    while ((got = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0)
        for (long at = 0; at < got;) {
            const struct posix_dirent *d = (const void *)(buf + at);
            n += strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0;
            at += d->d_reclen;
        }
    rc = got < 0 ? -errno : 0;
    close(fd);
    *entries = n;
    return rc;
}

/* The lstat of leaf in dirfd for a call that acts on the leaf itself: a
 * symbolic link there (somebody planted it) is -ELOOP, never moved or
 * removed. */
static int posix_nolink(int dirfd, const char *leaf, struct stat *st)
{
    if (fstatat(dirfd, leaf, st, AT_SYMLINK_NOFOLLOW) < 0)
        return -errno;
    return S_ISLNK(st->st_mode) ? -ELOOP : 0;
}

/* Only a regular file is removed: never a link somebody planted (-ELOOP),
 * never a directory (-EISDIR). A swap of the leaf between the lstat and
 * the unlink can at worst remove that link itself, never its target. In
 * a directory of the run's own (posix_dir_own) the leaf is the run's and
 * is removed with no lstat; a directory there is still -EISDIR. */
static int posix_unlink(void *ctx, const char *path)
{
    int dirfd = -1;
    const char *leaf;
    bool own = false;
    int rc = posix_leaf(ctx, path, &dirfd, &leaf, NULL, &own);
    if (rc < 0)
        return rc;
    if (!own) {
        struct stat st;
        rc = posix_nolink(dirfd, leaf, &st);
        if (rc < 0)
            return rc;
        if (S_ISDIR(st.st_mode))
            return -EISDIR;
        if (!S_ISREG(st.st_mode))
            return -EPERM;
    }
    return unlinkat(dirfd, leaf, 0) < 0 ? -errno : 0;
}

/* A directory made here is noted (dirset) for posix_dir_own. */
static int posix_mkdir(void *ctx, const char *path)
{
    struct posix_ctx *c = ctx;
    int dirfd = -1;
    const char *leaf;
    int rc = posix_leaf(c, path, &dirfd, &leaf, NULL, NULL);
    if (rc < 0)
        return rc;
    if (mkdirat(dirfd, leaf, 0755) < 0)
        return -errno;
    struct stat st;
    if (fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
        (void)dirset_add(&c->made, st.st_dev, st.st_ino); /* unnoted: checked as any */
    return 0;
}

/* A link where a directory is expected is -ELOOP (not rmdir's ENOTDIR). */
static int posix_rmdir(void *ctx, const char *path)
{
    struct posix_ctx *c = ctx;
    int dirfd = -1;
    const char *leaf;
    struct stat st;
    int rc = posix_leaf(c, path, &dirfd, &leaf, NULL, NULL);
    if (rc == 0)
        rc = posix_nolink(dirfd, leaf, &st);
    if (rc < 0)
        return rc;
    if (unlinkat(dirfd, leaf, AT_REMOVEDIR) < 0)
        return -errno;
    posix_forget(c, path);
    dirset_remove(&c->made, st.st_dev, st.st_ino);
    return 0;
}

/* Neither a link as the source nor one as the destination is moved or
 * replaced (-ELOOP): herd renames only what it made. Between two
 * directories of the run's own (posix_dir_own) both names are the run's
 * and the rename is one call, with no lstat of either. */
static int posix_rename(void *ctx, const char *from, const char *to)
{
    int fromfd = -1, tofd = -1;
    const char *fleaf, *tleaf;
    bool from_own = false, to_own = false;
    int rc = posix_leaf(ctx, from, &fromfd, &fleaf, NULL, &from_own);
    if (rc < 0)
        return rc;
    rc = posix_leaf(ctx, to, &tofd, &tleaf, NULL, &to_own);
    if (rc < 0)
        return rc;
    bool moved_dir = true; /* unchecked: maybe a directory, forget both */
    if (!(from_own && to_own)) {
        struct stat st;
        rc = posix_nolink(fromfd, fleaf, &st);
        if (rc < 0)
            return rc;
        moved_dir = S_ISDIR(st.st_mode);
        if (fstatat(tofd, tleaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
            return -ELOOP;
    }
    if (renameat(fromfd, fleaf, tofd, tleaf) < 0)
        return -errno;
    if (moved_dir) {
        posix_forget(ctx, from);
        posix_forget(ctx, to);
    }
    return 0;
}

static int posix_lock(void *ctx, struct backend_file *f, enum backend_lock kind, bool wait,
                      uint64_t start, uint64_t len)
{
    (void)ctx;
    struct flock fl = {
        .l_type = F_WRLCK,
        .l_whence = SEEK_SET,
        .l_start = (off_t)start,
        .l_len = (off_t)len,
    };
    if (kind == BACKEND_UNLOCK)
        fl.l_type = F_UNLCK;
    else if (kind == BACKEND_LOCK_SHARED)
        fl.l_type = F_RDLCK;
    int cmd = wait ? F_SETLKW : F_SETLK;
    return fcntl(f->fd, cmd, &fl) < 0 ? -errno : 0;
}

static int posix_local_dir(void *ctx, const char *path)
{
    struct posix_ctx *c = ctx;
    int fd = path[0] ? safepath_open(c->dirfd, path, O_PATH | O_DIRECTORY, 0)
                     : fcntl(c->dirfd, F_DUPFD_CLOEXEC, 0);
    return fd < 0 && !path[0] ? -errno : fd;
}

const struct backend_ops backend_posix = {
    .name = "posix",
    .check = NULL, /* its target is a path: backend_for_target */
    .connect = posix_connect,
    .configure = NULL,
    .disconnect = posix_disconnect,
    .open = posix_open,
    .pread = posix_pread,
    .pwrite = posix_pwrite,
    .fsync = posix_fsync,
    .close = posix_close,
    .stat = posix_stat,
    .fstat = posix_fstat,
    .fsetattr = posix_fsetattr,
    .faccess = posix_faccess,
    .readdir = posix_readdir,
    .unlink = posix_unlink,
    .mkdir = posix_mkdir,
    .rmdir = posix_rmdir,
    .rename = posix_rename,
    .lock = posix_lock,
    .local_dir = posix_local_dir,
};
