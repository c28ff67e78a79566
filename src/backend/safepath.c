/* safepath.c — the path rule of every backend (safepath.h): the syntax
 * check, and for POSIX the resolution of a relative path beneath a root
 * directory descriptor that never follows a symbolic link, so that a link
 * planted on a shared export (before or during a run) cannot make herd
 * read, write or delete outside its run directory. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "safepath.h"

/* Set once openat2 answered ENOSYS (or a test forced the walk). */
static atomic_bool safepath_no_openat2;
static atomic_bool safepath_walk_forced;

void safepath_force_walk(bool on)
{
    atomic_store(&safepath_walk_forced, on);
}

int safepath_check(const char *path)
{
    if (!path || !path[0])
        return -EINVAL;
    size_t len = strnlen(path, HERD_PATH_MAX);
    if (len >= HERD_PATH_MAX)
        return -ENAMETOOLONG;
    if (path[0] == '/')
        return -EINVAL;
    const char *comp = path;
    for (size_t i = 0; i <= len; i++) {
        unsigned char ch = (unsigned char)path[i];
        if (ch != '/' && ch != '\0') {
            if (ch < 0x20)
                return -EINVAL;
            continue;
        }
        size_t n = (size_t)(path + i - comp);
        if (n == 0 || (n == 1 && comp[0] == '.') || (n == 2 && comp[0] == '.' && comp[1] == '.'))
            return -EINVAL; /* empty (a "//" or a trailing "/"), "." or ".." */
        comp = path + i + 1;
    }
    return 0;
}

/* openat2 beneath dirfd, no links anywhere (a trailing link too, unless
 * flags has O_PATH | O_NOFOLLOW, which would open the link itself: the
 * callers never pass both). -ENOSYS when the kernel (or a seccomp filter)
 * lacks it; the caller falls back to the walk. */
static int safepath_openat2(int dirfd, const char *path, int flags, mode_t mode)
{
    struct open_how how = {
        .flags = (unsigned long long)(flags | O_CLOEXEC),
        .mode = (flags & O_CREAT) ? mode : 0, /* openat2 refuses a mode otherwise */
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    for (int tries = 0;; tries++) {
        long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
        if (fd >= 0)
            return (int)fd;
        /* EAGAIN: a concurrent rename during resolution; try again. */
        if (errno != EAGAIN || tries >= 8)
            return -errno;
    }
}

static bool safepath_use_openat2(void)
{
    return !atomic_load(&safepath_walk_forced) && !atomic_load(&safepath_no_openat2);
}

/* One intermediate component beneath dirfd: an O_PATH descriptor of a
 * directory that is not a link. The check is made on the descriptor
 * opened, so a swap after the open cannot slip a link in. */
static int safepath_step(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) < 0)
        rc = -errno;
    else if (S_ISLNK(st.st_mode))
        rc = -ELOOP;
    else if (!S_ISDIR(st.st_mode))
        rc = -ENOTDIR;
    if (rc < 0) {
        close(fd);
        return rc;
    }
    return fd;
}

/* Walk the first n bytes of path (whole components) beneath rootfd.
 * Returns an O_PATH descriptor of the directory reached (a duplicate of
 * rootfd when n is 0) or a negative errno. */
static int safepath_walk(int rootfd, const char *path, size_t n)
{
    int cur = fcntl(rootfd, F_DUPFD_CLOEXEC, 0);
    if (cur < 0)
        return -errno;
    char name[HERD_PATH_MAX];
    size_t i = 0;
    while (i < n) {
        const char *slash = memchr(path + i, '/', n - i);
        size_t len = slash ? (size_t)(slash - (path + i)) : n - i;
        memcpy(name, path + i, len);
        name[len] = '\0';
        int next = safepath_step(cur, name);
        close(cur);
        if (next < 0)
            return next;
        cur = next;
        i += len + 1;
    }
    return cur;
}

int safepath_open(int rootfd, const char *path, int flags, mode_t mode)
{
    int rc = safepath_check(path);
    if (rc < 0)
        return rc;
    if (safepath_use_openat2()) {
        rc = safepath_openat2(rootfd, path, flags | O_NOFOLLOW, mode);
        if (rc != -ENOSYS)
            return rc;
        atomic_store(&safepath_no_openat2, true);
    }
    const char *leaf;
    int dirfd = safepath_parent(rootfd, path, &leaf);
    if (dirfd < 0)
        return dirfd;
    int fd = openat(dirfd, leaf, flags | O_NOFOLLOW | O_CLOEXEC, mode);
    rc = fd < 0 ? -errno : fd;
    close(dirfd);
    return rc;
}

int safepath_parent(int rootfd, const char *path, const char **leaf)
{
    int rc = safepath_check(path);
    if (rc < 0)
        return rc;
    const char *slash = strrchr(path, '/');
    *leaf = slash ? slash + 1 : path;
    if (!slash) {
        int fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 0);
        return fd < 0 ? -errno : fd;
    }
    size_t n = (size_t)(slash - path);
    if (safepath_use_openat2()) {
        char dir[HERD_PATH_MAX];
        memcpy(dir, path, n);
        dir[n] = '\0';
        rc = safepath_openat2(rootfd, dir, O_PATH | O_DIRECTORY, 0);
        if (rc != -ENOSYS)
            return rc;
        atomic_store(&safepath_no_openat2, true);
    }
    return safepath_walk(rootfd, path, n);
}
