/* libnfs_call.h — libnfs's own calls (open, lstat, create, close, fsync,
 * statvfs, unlink, mkdir, rmdir, rename) as the libnfs backend makes
 * them: sent with libnfs's asynchronous form and awaited by rpcwait
 * within the backend call's deadline (c->deadline, libnfs_call_begin).
 * libnfs 4.0's synchronous forms wait with no bound of their own: only
 * each RPC's timeout, counted from when that RPC was queued, so a call
 * of several RPCs, or one made late in a backend call, could outlive
 * op_timeout; and they hear no stop.
 *
 * Each returns 0 (or libnfs's result >= 0) or -errno: libnfs's failure
 * as libnfs_errno maps it, or the wait's (-ETIMEDOUT past the deadline,
 * -EINTR at a stop, -ECONNRESET for a lost connection), which breaks c:
 * the call is still queued there with this stack's data, so c is never
 * serviced again (libnfs_drop only closes its socket). */
#ifndef HERD_LIBNFS_CALL_H
#define HERD_LIBNFS_CALL_H

#include "libnfs_ctx.h"

int libnfs_call_lstat(struct libnfs_ctx *c, const char *p, struct nfs_stat_64 *st);
int libnfs_call_statvfs(struct libnfs_ctx *c, const char *p, struct nfs_statvfs_64 *st);
/* open2 / create: *fh the file opened (untouched on failure). */
int libnfs_call_open(struct libnfs_ctx *c, const char *p, int flags, int mode, struct nfsfh **fh);
int libnfs_call_create(struct libnfs_ctx *c, const char *p, int flags, int mode, struct nfsfh **fh);
/* close: libnfs frees fh when the call ends, answered or failed (a dirty
 * file's after its COMMIT). */
int libnfs_call_close(struct libnfs_ctx *c, struct nfsfh *fh);
int libnfs_call_fsync(struct libnfs_ctx *c, struct nfsfh *fh);
int libnfs_call_unlink(struct libnfs_ctx *c, const char *p);
int libnfs_call_mkdir(struct libnfs_ctx *c, const char *p, int mode);
int libnfs_call_rmdir(struct libnfs_ctx *c, const char *p);
int libnfs_call_rename(struct libnfs_ctx *c, const char *from, const char *to);

/* rpcwait for *done on c's connection within c's deadline; a wait that
 * gave up breaks c and notes why (libnfs_note). 0 or -errno. */
int libnfs_call_await(struct libnfs_ctx *c, volatile bool *done);

#endif
