/* rundir.c — making, locking and removing the run directory (rundir.h). */
#include "rundir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "safepath.h"

static void rundir_lock_path(const char *rundir, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s", rundir, RUNDIR_LOCK);
}

/* An existing run directory may be reused only when it is one this user
 * could have made: a directory (stat does not follow links) owned by us. */
static int rundir_check_existing(const struct backend_ops *be, void *ctx, const char *rundir,
                                 char *err, size_t errlen)
{
    struct stat st;
    int rc = be->stat(ctx, rundir, &st);
    if (rc < 0) {
        snprintf(err, errlen, "%s: %s", rundir, strerror(-rc));
        return rc;
    }
    if (S_ISLNK(st.st_mode)) {
        snprintf(err, errlen, "%s is a symbolic link, not a run directory: refused", rundir);
        return -ELOOP;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s exists and is not a directory: refused", rundir);
        return -ENOTDIR;
    }
    if (st.st_uid != geteuid()) {
        snprintf(err, errlen, "%s belongs to uid %u, not to this user (uid %u): refused", rundir,
                 (unsigned)st.st_uid, (unsigned)geteuid());
        return -EPERM;
    }
    return 0;
}

/* Tell who holds the lock: the first line of the lock file, if readable. */
static void rundir_lock_owner(const struct backend_ops *be, void *ctx, const char *lock, char *buf,
                              size_t len)
{
    snprintf(buf, len, "unknown");
    struct backend_file *f;
    if (be->open(ctx, lock, BACKEND_READ, &f) < 0)
        return;
    char text[160];
    ssize_t n = be->pread(ctx, f, text, sizeof text - 1, 0);
    be->close(ctx, f);
    if (n <= 0)
        return;
    text[n] = '\0';
    text[strcspn(text, "\n")] = '\0';
    for (char *p = text; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p == 0x7f)
            *p = '?';
    snprintf(buf, len, "%s", text);
}

int rundir_open(const struct backend_ops *be, void *ctx, const char *rundir, bool reuse,
                const char *owner, bool *created, char *err, size_t errlen)
{
    *created = false;
    int rc = be->mkdir(ctx, rundir);
    if (rc == 0) {
        *created = true;
    } else if (rc == -EEXIST) {
        if (!reuse) {
            snprintf(err, errlen,
                     "%s exists and this run did not make it: refused (a job with a fixed "
                     "run_id may reuse its own kept run directory)",
                     rundir);
            return RUNDIR_REFUSED;
        }
        if (rundir_check_existing(be, ctx, rundir, err, errlen) < 0)
            return RUNDIR_REFUSED;
    } else {
        snprintf(err, errlen, "cannot make %s: %s", rundir, strerror(-rc));
        return rc;
    }

    char lock[HERD_PATH_MAX];
    rundir_lock_path(rundir, lock, sizeof lock);
    struct backend_file *f;
    rc = be->open(ctx, lock, BACKEND_WRITE | BACKEND_CREATE | BACKEND_EXCL, &f);
    if (rc == -EEXIST) {
        char who[160];
        rundir_lock_owner(be, ctx, lock, who, sizeof who);
        snprintf(err, errlen, "%s is in use by another run (%s); if that run is gone, remove %s",
                 rundir, who, lock);
        return RUNDIR_REFUSED;
    }
    if (rc == -ENOLCK || rc == -EAGAIN || rc == -EBUSY) {
        snprintf(err, errlen,
                 "%s is not locked against another run: cannot create %s: %s (the server "
                 "refuses new files for now: a grace period after a restart?)",
                 rundir, RUNDIR_LOCK, strerror(-rc));
        return RUNDIR_UNLOCKED;
    }
    if (rc < 0) {
        snprintf(err, errlen, "cannot create %s: %s", lock, strerror(-rc));
        if (*created)
            be->rmdir(ctx, rundir);
        return rc;
    }
    ssize_t n = be->pwrite(ctx, f, owner, strlen(owner), 0);
    int crc = be->close(ctx, f);
    if (n < 0 || crc < 0) {
        rc = n < 0 ? (int)n : crc;
        snprintf(err, errlen, "cannot write %s: %s", lock, strerror(-rc));
        be->unlink(ctx, lock);
        if (*created)
            be->rmdir(ctx, rundir);
        return rc;
    }
    return 0;
}

void rundir_owner(char *buf, size_t len, const char *run_id, const char *host)
{
    uint64_t token = 0;
    if (getrandom(&token, sizeof token, GRND_NONBLOCK) != (ssize_t)sizeof token) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        token = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ULL ^ (uint64_t)ts.tv_sec ^
                (uint64_t)getpid() << 32;
    }
    snprintf(buf, len, "run %s, host %s, pid %ld\ntoken %016llx\n", run_id, host, (long)getpid(),
             (unsigned long long)token);
}

/* Make a kernel NFS client ask the server for directory path's
 * attributes (statx AT_STATX_FORCE_SYNC, a GETATTR): when they changed
 * (another host made a name in it), it drops what it cached of the names
 * in it, a name it had found missing included. Nothing to do where the
 * target is not a local directory (libnfs, smb: every look is a call). */
static void rundir_refresh(const struct backend_ops *be, void *ctx, const char *path)
{
    if (!be->local_dir)
        return;
    int fd = be->local_dir(ctx, path);
    if (fd < 0)
        return; /* the look that follows says why */
    struct statx sx;
    (void)statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_STATX_FORCE_SYNC, STATX_CTIME,
                &sx);
    close(fd);
}

/* Whether lock holds exactly owner: 0, -ESTALE when it holds other
 * text, or the -errno of the open or the read. */
static int rundir_lock_holds(const struct backend_ops *be, void *ctx, const char *lock,
                             const char *owner)
{
    struct backend_file *f;
    int rc = be->open(ctx, lock, BACKEND_READ, &f);
    if (rc < 0)
        return rc;
    char text[RUNDIR_OWNER_MAX + 1];
    size_t want = strlen(owner);
    ssize_t n = be->pread(ctx, f, text, want < RUNDIR_OWNER_MAX ? want + 1 : RUNDIR_OWNER_MAX, 0);
    be->close(ctx, f);
    if (n < 0)
        return (int)n;
    return (size_t)n == want && memcmp(text, owner, want) == 0 ? 0 : -ESTALE;
}

int rundir_seen(const struct backend_ops *be, void *ctx, const char *rundir, const char *owner,
                char *err, size_t errlen)
{
    rundir_refresh(be, ctx, "");     /* the target: its entry rundir */
    rundir_refresh(be, ctx, rundir); /* rundir: its entry of the lock file */
    struct stat st;
    int rc = be->stat(ctx, rundir, &st);
    if (rc == 0 && !S_ISDIR(st.st_mode))
        rc = -ENOTDIR;
    if (rc < 0) {
        snprintf(err, errlen, "%s: %s", rundir, strerror(-rc));
        return rc;
    }
    if (!owner[0])
        return 0;
    char lock[HERD_PATH_MAX];
    rundir_lock_path(rundir, lock, sizeof lock);
    rc = rundir_lock_holds(be, ctx, lock, owner);
    if (rc == -ESTALE)
        snprintf(err, errlen, "%s is another directory of that name (its %s is not this run's)",
                 rundir, RUNDIR_LOCK);
    else if (rc < 0)
        snprintf(err, errlen, "%s: %s", lock, strerror(-rc));
    return rc;
}

int rundir_close(const struct backend_ops *be, void *ctx, const char *rundir, bool locked,
                 bool remove_dir, bool cleaned, char *err, size_t errlen)
{
    char lock[HERD_PATH_MAX];
    rundir_lock_path(rundir, lock, sizeof lock);
    int rc = locked ? be->unlink(ctx, lock) : 0;
    if (rc < 0 && rc != -ENOENT) {
        snprintf(err, errlen, "cannot remove %s: %s", lock, strerror(-rc));
        return rc;
    }
    if (!remove_dir)
        return 0;
    rc = be->rmdir(ctx, rundir);
    if (rc == -ENOTEMPTY || rc == -EEXIST) {
        snprintf(err, errlen, "left %s: %s", rundir,
                 cleaned ? "it holds entries this run did not make"
                         : "the clean-up did not remove all this run made (see above)");
        return -ENOTEMPTY;
    }
    if (rc < 0 && rc != -ENOENT) {
        snprintf(err, errlen, "cannot remove %s: %s", rundir, strerror(-rc));
        return rc;
    }
    return 0;
}
