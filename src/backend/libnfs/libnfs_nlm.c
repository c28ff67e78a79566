/* libnfs_nlm.c — the synchronous NLM v4 client of libnfs_nlm.h: async
 * libnfs RPCs awaited by rpcwait (rpcwait.h), so that the wait ends by
 * the backend call's deadline (op_timeout after the lock call began) and
 * at herd's signals, the way the NFSv4 lock calls do.
 *
 * Invariants: at most one RPC is in flight per client; a call that stops
 * waiting for its reply (timeout, stop signal, connection lost) marks the
 * client broken and abandoned, and an abandoned client is never serviced
 * again (its late reply would write into a caller that has returned) and
 * never destroyed (libnfs would run that callback while destroying it):
 * nlm_close closes its socket and leaks the context, some 17 KiB per
 * lost connection. A call whose reply came as an RPC error (a refused
 * connection: no server, or none registered yet) leaves nothing queued,
 * so that client is destroyed: a lock phase retrying against a server
 * that is down opens thousands of them. An
 * alarm (lock_timeout's SIGALRM) does not cut an RPC short: the reply is
 * awaited, so that a lock the server granted is never forgotten. */
#include "libnfs_nlm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h> /* before libnfs.h */
#include <unistd.h>

#include <nfsc/libnfs.h> /* before the raw headers, which need its types */

#include <nfsc/libnfs-raw.h>

#include <nfsc/libnfs-raw-nlm.h>

#include "localerr.h"
#include "rpcwait.h"

#define NLM_PROGRAM 100021
#define NLM_V4 4

struct nlm_client {
    struct rpc_context *rpc;
    double deadline;    /* the lock call's (rpcwait.h); 0: none */
    bool broken;        /* never used again: nlm_close it */
    bool abandoned;     /* a call of its own is still queued (see above) */
    const char *status; /* static string or NULL */
    char caller[256];   /* caller_name: this host */
    char owner[320];    /* owner handle: host and pid, unique per rank */
    uint32_t svid;
    uint32_t cookie;
};

/* The state of the one RPC in flight, filled by its callback. */
struct nlm_wait {
    bool done;
    int rpc_status; /* RPC_STATUS_* */
    int nlm_stat;   /* nlmstat4 of the reply */
};

/* Wait for the reply to the one call in flight (rpcwait.h). 0 or -errno
 * (the client is then broken: never serviced again). */
static int nlm_wait_reply(struct nlm_client *cl, struct nlm_wait *w)
{
    const char *why;
    int rc = rpcwait(cl->rpc, &w->done, cl->deadline, &why);
    if (rc < 0) {
        cl->broken = cl->abandoned = true;
        if (why)
            cl->status = why;
        return rc;
    }
    if (w->rpc_status == RPC_STATUS_TIMEOUT) {
        cl->status = "RPC_TIMEOUT";
        return -ETIMEDOUT;
    }
    if (w->rpc_status != RPC_STATUS_SUCCESS) {
        cl->broken = true;
        cl->status = "RPC_ERROR";
        return -ECONNRESET;
    }
    return 0;
}

static void nlm_connected(struct rpc_context *rpc, int status, void *data, void *priv)
{
    (void)rpc;
    (void)data;
    struct nlm_wait *w = priv;
    w->rpc_status = status;
    w->done = true;
}

int nlm_open(const char *server, const char *client, double deadline, struct nlm_client **out)
{
    struct nlm_client *cl = calloc(1, sizeof *cl);
    if (!cl)
        return -ENOMEM;
    cl->rpc = rpc_init_context();
    if (!cl->rpc) {
        free(cl);
        return -ENOMEM;
    }
    cl->deadline = deadline;
    /* A lock manager tells hosts apart by caller name: each of a
     * process's clients is a host of its own, the pid its svid there. */
    if (client && client[0])
        snprintf(cl->caller, sizeof cl->caller, "%s", client);
    else if (gethostname(cl->caller, sizeof cl->caller - 1) != 0 || !cl->caller[0])
        snprintf(cl->caller, sizeof cl->caller, "herd");
    cl->svid = (uint32_t)getpid();
    snprintf(cl->owner, sizeof cl->owner, "herd.%u@%s", cl->svid, cl->caller);
    struct nlm_wait w = {0};
    int rc = rpc_connect_program_async(cl->rpc, server, NLM_PROGRAM, NLM_V4, nlm_connected, &w);
    if (rc == 0)
        rc = nlm_wait_reply(cl, &w);
    else
        rc = -ECONNREFUSED;
    int local = rc < 0 ? localerr_of(rpc_get_error(cl->rpc)) : 0;
    if (local)
        rc = local; /* this host's, not the server's */
    else if (rc == -ECONNRESET)
        rc = -ECONNREFUSED; /* no NLM registered with the portmapper, or none answers */
    if (rc < 0) {
        if (!cl->status)
            cl->status = "NLM_UNREACHABLE";
        cl->broken = true;
        nlm_close(cl);
        return rc;
    }
    *out = cl;
    return 0;
}

void nlm_close(struct nlm_client *cl)
{
    if (!cl)
        return;
    if (cl->abandoned) {
        int fd = rpc_get_fd(cl->rpc);
        if (fd >= 0)
            close(fd);
    } else {
        rpc_destroy_context(cl->rpc);
    }
    free(cl);
}

void nlm_set_deadline(struct nlm_client *cl, double deadline)
{
    cl->deadline = deadline;
}

bool nlm_broken(const struct nlm_client *cl)
{
    return cl->broken;
}

const char *nlm_status(const struct nlm_client *cl)
{
    return cl->status;
}

static void nlm_replied_lock(struct rpc_context *rpc, int status, void *data, void *priv)
{
    (void)rpc;
    struct nlm_wait *w = priv;
    w->rpc_status = status;
    if (status == RPC_STATUS_SUCCESS)
        w->nlm_stat = (int)((NLM4_LOCKres *)data)->status;
    w->done = true;
}

static void nlm_replied_unlock(struct rpc_context *rpc, int status, void *data, void *priv)
{
    (void)rpc;
    struct nlm_wait *w = priv;
    w->rpc_status = status;
    if (status == RPC_STATUS_SUCCESS)
        w->nlm_stat = (int)((NLM4_UNLOCKres *)data)->status;
    w->done = true;
}

/* An NLM status: its name (kept as the client's status) and its errno.
 * DENIED is contention (-EAGAIN, the caller's "held by another"); a
 * grace-period refusal is -ENOLCK, an error to count, not contention: the
 * server is refusing every new lock for a while, nobody holds this one. */
static int nlm_errno(struct nlm_client *cl, int stat)
{
    static const struct {
        const char *name;
        int err;
    } map[] = {
        [NLM4_GRANTED] = {NULL, 0},
        [NLM4_DENIED] = {"NLM4_DENIED", EAGAIN},
        [NLM4_DENIED_NOLOCKS] = {"NLM4_DENIED_NOLOCKS", ENOLCK},
        [NLM4_BLOCKED] = {"NLM4_BLOCKED", EAGAIN},
        [NLM4_DENIED_GRACE_PERIOD] = {"NLM4_DENIED_GRACE_PERIOD", ENOLCK},
        [NLM4_DEADLCK] = {"NLM4_DEADLCK", EDEADLK},
        [NLM4_ROFS] = {"NLM4_ROFS", EROFS},
        [NLM4_STALE_FH] = {"NLM4_STALE_FH", ESTALE},
        [NLM4_FBIG] = {"NLM4_FBIG", EFBIG},
        [NLM4_FAILED] = {"NLM4_FAILED", EIO},
    };
    if (stat < 0 || (size_t)stat >= sizeof map / sizeof map[0]) {
        cl->status = "NLM4_UNKNOWN_STATUS";
        return -EIO;
    }
    cl->status = map[stat].name;
    return -map[stat].err;
}

static void nlm_fill(struct nlm_client *cl, nlm4_lock *lk, const void *fh, unsigned fhlen,
                     uint64_t start, uint64_t len)
{
    lk->caller_name = cl->caller;
    lk->fh.data.data_len = fhlen;
    lk->fh.data.data_val = (char *)fh;
    lk->oh = cl->owner; /* nlm4_oh is a string in libnfs's XDR: sent as opaque */
    lk->svid = cl->svid;
    lk->l_offset = start;
    lk->l_len = len;
}

int nlm_lock(struct nlm_client *cl, const void *fh, unsigned fhlen, bool exclusive, uint64_t start,
             uint64_t len)
{
    if (cl->broken)
        return -ENOTCONN;
    cl->status = NULL;
    uint32_t cookie = ++cl->cookie;
    NLM4_LOCKargs args;
    memset(&args, 0, sizeof args);
    args.cookie.data.data_len = sizeof cookie;
    args.cookie.data.data_val = (char *)&cookie;
    args.block = 0;
    args.exclusive = exclusive;
    nlm_fill(cl, &args.lock, fh, fhlen, start, len);
    args.reclaim = 0;
    args.state = 0;
    struct nlm_wait w = {0};
    if (rpc_nlm4_lock_async(cl->rpc, nlm_replied_lock, &args, &w) != 0) {
        cl->status = "RPC_SEND_FAILED";
        return -ENOMEM;
    }
    int rc = nlm_wait_reply(cl, &w);
    return rc < 0 ? rc : nlm_errno(cl, w.nlm_stat);
}

int nlm_unlock(struct nlm_client *cl, const void *fh, unsigned fhlen, uint64_t start, uint64_t len)
{
    if (cl->broken)
        return -ENOTCONN;
    cl->status = NULL;
    uint32_t cookie = ++cl->cookie;
    NLM4_UNLOCKargs args;
    memset(&args, 0, sizeof args);
    args.cookie.data.data_len = sizeof cookie;
    args.cookie.data.data_val = (char *)&cookie;
    nlm_fill(cl, &args.lock, fh, fhlen, start, len);
    struct nlm_wait w = {0};
    if (rpc_nlm4_unlock_async(cl->rpc, nlm_replied_unlock, &args, &w) != 0) {
        cl->status = "RPC_SEND_FAILED";
        return -ENOMEM;
    }
    int rc = nlm_wait_reply(cl, &w);
    return rc < 0 ? rc : nlm_errno(cl, w.nlm_stat);
}
