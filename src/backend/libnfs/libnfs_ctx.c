/* libnfs_ctx.c — what every file of the libnfs backend uses on a
 * context (libnfs_ctx.h): the name of the last failure, the errno of a
 * failed call or status, one call's deadline, and the checks of a
 * handle and of a leaf's type. It calls no other file of the backend. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h> /* before libnfs.h, which needs struct timeval */

#include <nfsc/libnfs.h> /* before the raw headers, which need its types */

#include <nfsc/libnfs-raw.h> /* nfs_get_fh */

#include <nfsc/libnfs-raw-nfs.h>
#include <nfsc/libnfs-raw-nfs4.h>

#include "libnfs_ctx.h"
#include "localerr.h"
#include "rpcwait.h"
#include "signals.h"

/* A status's errno and name (the name as libnfs's messages give it). */
struct status_errno {
    int st;
    int err;
    const char *name;
};
#define STATUS_ERRNO(st, err)                                                                      \
    {                                                                                              \
        st, err, #st                                                                               \
    }

static const struct status_errno status3[] = {
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

/* RFC 7530's statuses a name call meets, the lease and lock ones
 * libnfs's own calls meet (libnfs_status_name_errno), and the state ones
 * herd's own READs and WRITEs meet (libnfs_data4.c): lost open state is
 * ESTALE, as lost lock state is (libnfs_lock.c). */
static const struct status_errno status4[] = {
    STATUS_ERRNO(NFS4ERR_PERM, EPERM),
    STATUS_ERRNO(NFS4ERR_NOENT, ENOENT),
    STATUS_ERRNO(NFS4ERR_IO, EIO),
    STATUS_ERRNO(NFS4ERR_NXIO, ENXIO),
    STATUS_ERRNO(NFS4ERR_ACCESS, EACCES),
    STATUS_ERRNO(NFS4ERR_EXIST, EEXIST),
    STATUS_ERRNO(NFS4ERR_XDEV, EXDEV),
    STATUS_ERRNO(NFS4ERR_NOTDIR, ENOTDIR),
    STATUS_ERRNO(NFS4ERR_ISDIR, EISDIR),
    STATUS_ERRNO(NFS4ERR_INVAL, EINVAL),
    STATUS_ERRNO(NFS4ERR_FBIG, EFBIG),
    STATUS_ERRNO(NFS4ERR_NOSPC, ENOSPC),
    STATUS_ERRNO(NFS4ERR_ROFS, EROFS),
    STATUS_ERRNO(NFS4ERR_MLINK, EMLINK),
    STATUS_ERRNO(NFS4ERR_NAMETOOLONG, ENAMETOOLONG),
    STATUS_ERRNO(NFS4ERR_NOTEMPTY, ENOTEMPTY),
    STATUS_ERRNO(NFS4ERR_DQUOT, EDQUOT),
    STATUS_ERRNO(NFS4ERR_STALE, ESTALE),
    STATUS_ERRNO(NFS4ERR_FHEXPIRED, ESTALE),
    STATUS_ERRNO(NFS4ERR_SYMLINK, ELOOP),
    STATUS_ERRNO(NFS4ERR_NOTSUPP, ENOTSUP),
    STATUS_ERRNO(NFS4ERR_ATTRNOTSUPP, ENOTSUP),
    STATUS_ERRNO(NFS4ERR_BADTYPE, EINVAL),
    STATUS_ERRNO(NFS4ERR_BADNAME, EINVAL),
    STATUS_ERRNO(NFS4ERR_SHARE_DENIED, EACCES),
    STATUS_ERRNO(NFS4ERR_WRONGSEC, EACCES),
    STATUS_ERRNO(NFS4ERR_DELAY, EBUSY),
    STATUS_ERRNO(NFS4ERR_GRACE, ENOLCK),
    STATUS_ERRNO(NFS4ERR_NO_GRACE, ENOLCK),
    STATUS_ERRNO(NFS4ERR_LOCKED, EAGAIN),
    STATUS_ERRNO(NFS4ERR_EXPIRED, ESTALE),
    STATUS_ERRNO(NFS4ERR_STALE_CLIENTID, ESTALE),
    STATUS_ERRNO(NFS4ERR_MOVED, ESTALE),
    STATUS_ERRNO(NFS4ERR_STALE_STATEID, ESTALE),
    STATUS_ERRNO(NFS4ERR_BAD_STATEID, ESTALE),
    STATUS_ERRNO(NFS4ERR_OLD_STATEID, ESTALE),
    STATUS_ERRNO(NFS4ERR_ADMIN_REVOKED, ESTALE),
    STATUS_ERRNO(NFS4ERR_BAD_SEQID, ESTALE),
    STATUS_ERRNO(NFS4ERR_OPENMODE, EBADF),
    STATUS_ERRNO(NFS4ERR_SERVERFAULT, EIO),
    STATUS_ERRNO(NFS4ERR_RESOURCE, EIO), /* a COMPOUND over the server's operations cap */
};

int libnfs_status_errno(struct libnfs_ctx *c, int st, bool v4)
{
    const struct status_errno *map = v4 ? status4 : status3;
    size_t n = v4 ? sizeof status4 / sizeof status4[0] : sizeof status3 / sizeof status3[0];
    for (size_t i = 0; i < n; i++)
        if (map[i].st == st) {
            libnfs_note(c, map[i].name);
            return map[i].err;
        }
    char name[32];
    snprintf(name, sizeof name, "NFS%dERR %d", v4 ? 4 : 3, st);
    libnfs_note(c, name);
    return EIO;
}

int libnfs_status_name_errno(const char *name)
{
    for (size_t i = 0; i < sizeof status3 / sizeof status3[0]; i++)
        if (strcmp(status3[i].name, name) == 0)
            return status3[i].err;
    for (size_t i = 0; i < sizeof status4 / sizeof status4[0]; i++)
        if (strcmp(status4[i].name, name) == 0)
            return status4[i].err;
    return 0;
}

void libnfs_note(struct libnfs_ctx *c, const char *status)
{
    snprintf(c->status, sizeof c->status, "%s", status ? status : "");
}

void libnfs_call_begin(struct libnfs_ctx *c, struct backend_file *f)
{
    /* The status op names this call's failure only: an earlier call's
     * (a CREATE that found its file, then opened it) is not this one's. */
    c->status[0] = '\0';
    c->deadline = rpcwait_deadline(c->timeout_ms);
    if (f && f->lk)
        f->lk->deadline = c->deadline;
}

/* The NFS4ERR_x / NFS3ERR_x name in a libnfs message (copied into c's
 * status), or "" when it names none. */
const char *libnfs_note_msg(struct libnfs_ctx *c, const char *msg)
{
    const char *p = msg ? strstr(msg, "NFS4ERR_") : NULL;
    if (!p && msg)
        p = strstr(msg, "NFS3ERR_");
    size_t n = p ? strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") : 0;
    snprintf(c->status, sizeof c->status, "%.*s", (int)n, p ? p : "");
    return c->status;
}

/* libnfs reports some failures as a generic error with a message; turn
 * the ones herd must tell apart into their errno, and notice when the
 * connection itself is gone. */
int libnfs_errno(struct libnfs_ctx *c, int rc)
{
    const char *msg = c->nfs ? nfs_get_error(c->nfs) : NULL;
    int err = rc < 0 ? -rc : EIO;
    libnfs_note_msg(c, msg);
    /* libnfs 4.0 turns the NFS4ERR it does not map into ERANGE, and a
     * READ's NFS3ERR into EFAULT (NFS3ERR_INVAL: a FIFO read, say); its
     * message names the status (NFS4ERR_GRACE: ENOLCK, as for a lock
     * refused in grace; NFS4ERR_DELAY: EBUSY ...) */
    int named = libnfs_status_name_errno(c->status);
    if ((err == ERANGE || err == EFAULT) && named)
        err = named;
    int local = localerr_of(msg); /* this host's: never the server's */
    if (local)
        err = -local;
    else if (msg && (strstr(msg, "timed out") || strstr(msg, "timeout") || strstr(msg, "Timeout")))
        err = ETIMEDOUT;
    else if (msg && (strstr(msg, "nfs_service failed") || strstr(msg, "socket")))
        err = ECONNRESET; /* the server closed or lost the connection */
    else if (msg && strstr(msg, "Poll failed"))
        err = EINTR; /* a signal cut the wait: libnfs 4.0 says EIO */
    else if (err == EINTR && !signals_stop_requested())
        err = ETIMEDOUT; /* libnfs 4.0 reports some RPC timeouts as EINTR */
    /* A call that gave up waiting (a timeout, or a signal: EINTR) leaves its
     * RPC queued in the context, with its reply buffer and callback data in
     * a caller that has returned; the next call on this context would let
     * that late reply write into them (seen: a READ reply after a SIGINT
     * during a read phase, copied over freed memory by the cleanup's stat).
     * Such a context is never used again. */
    if (err == ETIMEDOUT || err == EINTR || err == ENOTCONN || err == ECONNREFUSED ||
        err == ECONNRESET || err == EPIPE || err == ESHUTDOWN)
        c->broken = true;
    return -err;
}

bool libnfs_handle_is(struct nfsfh *fh, const struct libnfs_handle *want)
{
    if (!want->len)
        return true;
    const struct nfs_fh *got = nfs_get_fh(fh);
    return got->len >= 0 && (unsigned)got->len == want->len &&
           memcmp(got->val, want->val, want->len) == 0;
}

int libnfs_leaf_refused(const struct nfs_stat_64 *st, bool file_only)
{
    if (S_ISLNK(st->nfs_mode))
        return -ELOOP;
    if (file_only && S_ISDIR(st->nfs_mode))
        return -EISDIR;
    return file_only && !S_ISREG(st->nfs_mode) ? -EPERM : 0;
}
