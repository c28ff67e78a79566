/* safeout.c — making an output file without touching anything herd did
 * not make (safeout.h). */
#include "safeout.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

#define SAFEOUT_TRIES 64       /* private names tried before giving up */
#define SAFEOUT_DEPTH_MAX 4096 /* directories walked up by safeout_beneath */

static int safeout_fail(const struct safeout *o, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int safeout_fail(const struct safeout *o, char *err, size_t errlen, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    snprintf(err, errlen, "%s: %s", o->shown, text);
    return -1;
}

static void safeout_reset(struct safeout *o)
{
    memset(o, 0, sizeof *o);
    o->dirfd = -1;
}

static const char *safeout_type_name(mode_t mode)
{
    if (S_ISLNK(mode))
        return "a symbolic link";
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISCHR(mode) || S_ISBLK(mode))
        return "a device";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a regular file";
}

/* The entry at o->leaf, when force may replace it: remember which file it
 * is. Opened without following a link and without waiting on a FIFO. */
static int safeout_check_old(struct safeout *o, const struct stat *st, safeout_accept_fn accept,
                             const char *kind, char *err, size_t errlen)
{
    if (!S_ISREG(st->st_mode))
        return safeout_fail(o, err, errlen, "%s: --force replaces only %s",
                            safeout_type_name(st->st_mode), kind);
    if (st->st_uid != geteuid())
        return safeout_fail(o, err, errlen,
                            "belongs to uid %u, not to this user (uid %u): --force replaces only "
                            "%s of this user",
                            (unsigned)st->st_uid, (unsigned)geteuid(), kind);
    if (st->st_nlink != 1)
        return safeout_fail(o, err, errlen,
                            "has %lu hard links: --force replaces only %s with one link",
                            (unsigned long)st->st_nlink, kind);
    int fd = openat(o->dirfd, o->leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return safeout_fail(o, err, errlen, "%s", strerror(errno));
    struct stat now;
    bool same = fstat(fd, &now) == 0 && now.st_dev == st->st_dev && now.st_ino == st->st_ino &&
                S_ISREG(now.st_mode);
    const char *not_ok = same && now.st_size > 0 ? accept(fd, now.st_size) : NULL;
    close(fd);
    if (!same)
        return safeout_fail(o, err, errlen, "changed while it was checked: refused");
    if (not_ok)
        return safeout_fail(o, err, errlen, "%s: --force replaces only %s", not_ok, kind);
    o->replace = true;
    o->old_dev = st->st_dev;
    o->old_ino = st->st_ino;
    return 0;
}

/* Split path into directory and leaf; the leaf must be a plain name. */
static int safeout_split(struct safeout *o, const char *path, char *dir, size_t dirlen, char *err,
                         size_t errlen)
{
    const char *slash = strrchr(path, '/');
    const char *leaf = slash ? slash + 1 : path;
    if (!leaf[0] || strcmp(leaf, ".") == 0 || strcmp(leaf, "..") == 0)
        return safeout_fail(o, err, errlen, "names a directory, not a file");
    if (strlen(leaf) > NAME_MAX)
        return safeout_fail(o, err, errlen, "%s", strerror(ENAMETOOLONG));
    snprintf(o->leaf, sizeof o->leaf, "%s", leaf);
    size_t n = slash ? (size_t)(slash - path) : 0;
    if (slash && n == 0)
        n = 1; /* "/x" -> "/" */
    if (n + 1 > dirlen)
        return safeout_fail(o, err, errlen, "%s", strerror(ENAMETOOLONG));
    if (slash)
        memcpy(dir, path, n);
    else
        dir[n++] = '.';
    dir[n] = '\0';
    return 0;
}

int safeout_prepare(struct safeout *o, const char *shown, const char *path, bool force,
                    safeout_accept_fn accept, const char *kind, char *err, size_t errlen)
{
    safeout_reset(o);
    snprintf(o->shown, sizeof o->shown, "%s", shown);
    if (!path[0])
        return safeout_fail(o, err, errlen, "an empty path");
    char dir[PATH_MAX];
    if (safeout_split(o, path, dir, sizeof dir, err, errlen) < 0)
        return -1;
    o->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (o->dirfd < 0) {
        int e = errno;
        return safeout_fail(o, err, errlen, "no directory %s (%s)", dir, strerror(e));
    }
    if (faccessat(o->dirfd, ".", W_OK | X_OK, AT_EACCESS) != 0) {
        int e = errno;
        safeout_fail(o, err, errlen, "its directory is not writable (%s)", strerror(e));
        safeout_close(o);
        return -1;
    }
    struct stat st;
    int rc = 0;
    if (fstatat(o->dirfd, o->leaf, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (!force && !S_ISREG(st.st_mode))
            rc =
                safeout_fail(o, err, errlen, "exists (%s): refused", safeout_type_name(st.st_mode));
        else if (!force)
            rc = safeout_fail(o, err, errlen, "exists; choose another name or add --force");
        else
            rc = safeout_check_old(o, &st, accept, kind, err, errlen);
    } else if (errno != ENOENT) {
        rc = safeout_fail(o, err, errlen, "%s", strerror(errno));
    }
    if (rc < 0)
        safeout_close(o);
    return rc;
}

int safeout_prepare_at(struct safeout *o, int dirfd, const char *leaf, const char *shown, char *err,
                       size_t errlen)
{
    safeout_reset(o);
    snprintf(o->shown, sizeof o->shown, "%s", shown);
    if (!leaf[0] || strchr(leaf, '/') || strlen(leaf) > NAME_MAX)
        return safeout_fail(o, err, errlen, "not a plain file name");
    snprintf(o->leaf, sizeof o->leaf, "%s", leaf);
    o->dirfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
    if (o->dirfd < 0)
        return safeout_fail(o, err, errlen, "%s", strerror(errno));
    return 0;
}

int safeout_create(struct safeout *o, int *fd, char *err, size_t errlen)
{
    *fd = -1;
    for (int i = 0; i < SAFEOUT_TRIES; i++) {
        uint32_t r = 0;
        if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
            r = (uint32_t)getpid() * 2654435761u + (uint32_t)i;
        /* ".NAME.herd-XXXXXXXX": hidden, beside the output, never reused */
        snprintf(o->tmp, sizeof o->tmp, ".%.*s.herd-%08x", NAME_MAX - 20, o->leaf, r);
        int f =
            openat(o->dirfd, o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (f < 0 && errno == EEXIST)
            continue;
        if (f < 0) {
            int e = errno;
            o->tmp[0] = '\0';
            return safeout_fail(o, err, errlen, "cannot create a file beside it (%s)", strerror(e));
        }
        struct stat st;
        if (fstat(f, &st) != 0) {
            int e = errno;
            close(f);
            unlinkat(o->dirfd, o->tmp, 0); /* O_EXCL made it: ours */
            o->tmp[0] = '\0';
            return safeout_fail(o, err, errlen, "%s", strerror(e));
        }
        o->tmp_dev = st.st_dev;
        o->tmp_ino = st.st_ino;
        *fd = f;
        return 0;
    }
    o->tmp[0] = '\0';
    return safeout_fail(o, err, errlen, "no free private name beside it");
}

/* Whether the entry name in o's directory is the file (dev, ino). */
static bool safeout_entry_is(const struct safeout *o, const char *name, dev_t dev, ino_t ino)
{
    struct stat st;
    return fstatat(o->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
           st.st_dev == dev && st.st_ino == ino && st.st_uid == geteuid();
}

void safeout_abandon(struct safeout *o)
{
    if (o->dirfd >= 0 && o->tmp[0] && safeout_entry_is(o, o->tmp, o->tmp_dev, o->tmp_ino))
        unlinkat(o->dirfd, o->tmp, 0);
    o->tmp[0] = '\0';
}

/* The private file under the output's name where nothing is. */
static int safeout_place_new(struct safeout *o, char *err, size_t errlen)
{
    if (renameat2(o->dirfd, o->tmp, o->dirfd, o->leaf, RENAME_NOREPLACE) == 0)
        return 0;
    int e = errno;
    if (e == EINVAL || e == ENOSYS || e == ENOTSUP) { /* e.g. NFS: link fails on an entry too */
        if (linkat(o->dirfd, o->tmp, o->dirfd, o->leaf, 0) == 0) {
            safeout_abandon(o); /* the private name of the same file */
            return 0;
        }
        e = errno;
    }
    if (e == EEXIST)
        return safeout_fail(o, err, errlen,
                            "something else was put there meanwhile (not by herd): not replaced");
    return safeout_fail(o, err, errlen, "%s", strerror(e));
}

/* The private file over the checked earlier file, and only over it. */
static int safeout_place_over(struct safeout *o, char *err, size_t errlen)
{
    if (renameat2(o->dirfd, o->tmp, o->dirfd, o->leaf, RENAME_EXCHANGE) == 0) {
        /* The displaced entry now has the private name: remove it only if
         * it is the file that was checked; otherwise swap back. */
        if (safeout_entry_is(o, o->tmp, o->old_dev, o->old_ino)) {
            unlinkat(o->dirfd, o->tmp, 0);
            o->tmp[0] = '\0';
            return 0;
        }
        renameat2(o->dirfd, o->tmp, o->dirfd, o->leaf, RENAME_EXCHANGE);
        return safeout_fail(o, err, errlen,
                            "was replaced by something else since it was checked: not replaced");
    }
    int e = errno;
    if (e == ENOENT) /* gone meanwhile: nothing to replace */
        return safeout_place_new(o, err, errlen);
    if (e != EINVAL && e != ENOSYS && e != ENOTSUP)
        return safeout_fail(o, err, errlen, "%s", strerror(e));
    /* No exchange here (e.g. NFS): check, then rename over it. */
    if (!safeout_entry_is(o, o->leaf, o->old_dev, o->old_ino))
        return safeout_fail(o, err, errlen,
                            "was replaced by something else since it was checked: not replaced");
    if (renameat(o->dirfd, o->tmp, o->dirfd, o->leaf) != 0)
        return safeout_fail(o, err, errlen, "%s", strerror(errno));
    o->tmp[0] = '\0';
    return 0;
}

int safeout_commit(struct safeout *o, char *err, size_t errlen)
{
    if (o->dirfd < 0 || !o->tmp[0])
        return safeout_fail(o, err, errlen, "nothing to put in place");
    if (o->made_ino) { /* a new version of the file put in place before */
        o->replace = true;
        o->old_dev = o->made_dev;
        o->old_ino = o->made_ino;
    }
    int rc = o->replace ? safeout_place_over(o, err, errlen) : safeout_place_new(o, err, errlen);
    if (rc < 0) {
        safeout_abandon(o);
    } else {
        o->made_dev = o->tmp_dev;
        o->made_ino = o->tmp_ino;
    }
    o->tmp[0] = '\0';
    o->replace = false; /* the old file is gone, or stays as it was */
    return rc;
}

int safeout_write(struct safeout *o, void (*write)(FILE *f, const void *arg), const void *arg,
                  char *err, size_t errlen)
{
    int fd;
    if (safeout_create(o, &fd, err, errlen) < 0)
        return -1;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int e = errno;
        close(fd);
        safeout_abandon(o);
        return safeout_fail(o, err, errlen, "%s", strerror(e));
    }
    errno = 0;
    write(f, arg);
    int e = 0;
    if (fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0)
        e = errno ? errno : EIO;
    if (fclose(f) != 0 && !e)
        e = errno ? errno : EIO;
    if (e) {
        safeout_abandon(o);
        return safeout_fail(o, err, errlen, "not written: %s", strerror(e));
    }
    return safeout_commit(o, err, errlen);
}

int safeout_remove_old(struct safeout *o, char *err, size_t errlen)
{
    if (!o->replace)
        return 0;
    o->replace = false;
    if (!safeout_entry_is(o, o->leaf, o->old_dev, o->old_ino))
        return 0; /* not the checked file any more: not ours to remove */
    if (unlinkat(o->dirfd, o->leaf, 0) != 0)
        return safeout_fail(o, err, errlen, "cannot remove the earlier file: %s", strerror(errno));
    return 0;
}

void safeout_remove_made(struct safeout *o)
{
    if (o->dirfd >= 0 && o->made_ino && safeout_entry_is(o, o->leaf, o->made_dev, o->made_ino))
        unlinkat(o->dirfd, o->leaf, 0);
}

bool safeout_names(const struct safeout *o, const char *path)
{
    struct safeout other;
    safeout_reset(&other);
    char dir[PATH_MAX], err[64];
    struct stat sa, sb;
    bool same = o->dirfd >= 0 &&
                safeout_split(&other, path, dir, sizeof dir, err, sizeof err) == 0 &&
                strcmp(o->leaf, other.leaf) == 0 && stat(dir, &sb) == 0 &&
                fstat(o->dirfd, &sa) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    return same;
}

bool safeout_beneath(const struct safeout *o, int dirfd)
{
    struct stat top, st;
    if (o->dirfd < 0 || fstat(dirfd, &top) != 0)
        return false;
    int fd = fcntl(o->dirfd, F_DUPFD_CLOEXEC, 0);
    bool found = false;
    for (int depth = 0; fd >= 0 && depth < SAFEOUT_DEPTH_MAX; depth++) {
        if (fstat(fd, &st) != 0)
            break;
        if (st.st_dev == top.st_dev && st.st_ino == top.st_ino) {
            found = true;
            break;
        }
        int up = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
        struct stat ust;
        bool root =
            up < 0 || fstat(up, &ust) != 0 || (ust.st_dev == st.st_dev && ust.st_ino == st.st_ino);
        close(fd);
        fd = root ? -1 : up;
        if (root && up >= 0)
            close(up);
    }
    if (fd >= 0)
        close(fd);
    return found;
}

int safeout_dirfd(const struct safeout *o)
{
    return o->dirfd;
}

void safeout_close(struct safeout *o)
{
    safeout_abandon(o);
    if (o->dirfd >= 0)
        close(o->dirfd);
    o->dirfd = -1;
}
