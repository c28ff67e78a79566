/* libnfs_lock.c — byte-range locks of the libnfs backend (the lock
 * phase; the backend's lock op).
 *
 * NFSv3: NLM v4 through libnfs_nlm.h,
 * one NLM client per rank, opened on the first lock. NFSv4: LOCK/LOCKU
 * through libnfs 4.0, whose lock state has these limits (measured): one
 * locked file per context, a context whose first LOCK is denied keeps
 * answering DENIED, OPEN/CLOSE after a LOCK may fail NFS4ERR_BAD_SEQID,
 * nfs_fcntl(F_UNLCK) loses the lock stateid. So a file opened during a
 * lock phase over NFSv4 gets a context of its own (its reads and writes go
 * there too), whose lock owner is established by its first lock call:
 * a shared lock and unlock of one private byte far past the end of the
 * file (lk_establish); unlocks are
 * nfs_lseek + nfs_lockf(NFS4_F_ULOCK), which keeps the stateid. A context
 * that lost its state (server restarted, lease expired) is rebuilt on the
 * next lock call. Neither protocol's blocking request is used (NLM's needs
 * a GRANTED callback server, libnfs's NFS4_F_SETLKW does not wait): a
 * blocking lock is non-blocking tries with back-off until granted, a
 * stop signal or lock_timeout's alarm (-EINTR, as fcntl says). Statuses:
 * DENIED -> EAGAIN (contention); a grace-period refusal (NLM4_DENIED_
 * GRACE_PERIOD, NFS4ERR_GRACE) and NLM4_DENIED_NOLOCKS -> ENOLCK (an error:
 * the server refuses every lock, nobody holds this one); lost NFSv4 lock
 * state (NFS4ERR_EXPIRED, *_STATEID, BAD_SEQID, ADMIN_REVOKED) -> ESTALE.
 * The protocol's name of the last failure is the `status` op's answer. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libnfs_ctx.h" /* libnfs.h first: the raw headers need its types */

#include <nfsc/libnfs-raw.h> /* nfs_get_fh */

#include <nfsc/libnfs-raw-nfs4.h>

#include "fiber.h"
#include "libnfs_call.h"
#include "libnfs_rpc.h"
#include "signals.h"

#define LOCK_BACKOFF_MIN_NS 100000L   /* first pause between tries: 0.1 ms */
#define LOCK_BACKOFF_MAX_NS 10000000L /* longest pause: 10 ms */
#define LK_PRIVATE_BASE (1ull << 62)  /* private bytes: far past any file's end */

/* One async libnfs call on a lock context, awaited by lk_wait. */
struct lk_wait {
    bool done;
    int err;
};

static void lk_replied(int err, struct nfs_context *nfs, void *data, void *priv)
{
    (void)nfs;
    (void)data;
    struct lk_wait *w = priv;
    w->err = err;
    w->done = true;
}

/* Wait for the reply to a call on lk within the lock call's deadline
 * (libnfs_call_await); a failed wait breaks lk: it is never serviced
 * again. The call's own result or -errno. */
static int lk_wait(struct libnfs_ctx *lk, struct lk_wait *w)
{
    int rc = libnfs_call_await(lk, &w->done);
    return rc < 0 ? rc : w->err;
}

/* An NFSv4 lock call's failure: libnfs 4.0 returns every NFS4ERR as
 * -ERANGE and names it only in its message. */
static int lk_errno(struct libnfs_ctx *lk, int rc)
{
    static const struct {
        const char *name;
        int err;
        bool lost; /* this context's lock state is gone: rebuild it */
    } map[] = {
        /* the lock's own; the others as every call's (libnfs_status_name_errno) */
        {"NFS4ERR_DENIED", EAGAIN, false},       {"NFS4ERR_DEADLOCK", EDEADLK, false},
        {"NFS4ERR_LOCK_RANGE", EINVAL, false},   {"NFS4ERR_LOCK_NOTSUPP", EOPNOTSUPP, false},
        {"NFS4ERR_STALE", ESTALE, true},         {"NFS4ERR_EXPIRED", ESTALE, true},
        {"NFS4ERR_STALE_STATEID", ESTALE, true}, {"NFS4ERR_STALE_CLIENTID", ESTALE, true},
        {"NFS4ERR_BAD_STATEID", ESTALE, true},   {"NFS4ERR_OLD_STATEID", ESTALE, true},
        {"NFS4ERR_BAD_SEQID", ESTALE, true},     {"NFS4ERR_ADMIN_REVOKED", ESTALE, true},
    };
    if (rc == -EINTR || rc == -ETIMEDOUT || rc == -ECONNRESET || lk->broken)
        return rc; /* lk_wait said why */
    const char *name = libnfs_note_msg(lk, nfs_get_error(lk->nfs));
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(name, map[i].name) == 0) {
            lk->broken |= map[i].lost;
            return -map[i].err;
        }
    int named = libnfs_status_name_errno(name);
    if (named)
        return -named;
    rc = libnfs_errno(lk, rc);
    if (rc == -ERANGE || rc == -EFAULT) {
        lk->broken = true; /* an NFS4ERR we do not know, or a failed RPC */
        return -EIO;
    }
    return rc;
}

/* LOCK (type F_RDLCK or F_WRLCK, never waiting) of [start, start+len);
 * len 0: to the end of the file (NFSv4's all-ones length). */
static int lk_lock(struct libnfs_ctx *lk, struct nfsfh *fh, int type, uint64_t start, uint64_t len)
{
    struct nfs4_flock fl = {
        .l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len ? len : UINT64_MAX};
    struct lk_wait w = {0};
    if (nfs_fcntl_async(lk->nfs, fh, NFS4_F_SETLK, &fl, lk_replied, &w) != 0)
        return lk_errno(lk, -EIO);
    int rc = lk_wait(lk, &w);
    return rc < 0 ? lk_errno(lk, rc) : 0;
}

/* LOCKU through nfs_lockf, which keeps the lock stateid (nfs_fcntl's
 * F_UNLCK drops it: the next LOCK would fail NFS4ERR_OLD_STATEID). */
static int lk_unlock(struct libnfs_ctx *lk, struct nfsfh *fh, uint64_t start, uint64_t len)
{
    uint64_t at;
    int rc = nfs_lseek(lk->nfs, fh, (int64_t)start, SEEK_SET, &at);
    if (rc < 0)
        return lk_errno(lk, rc);
    struct lk_wait w = {0};
    if (nfs_lockf_async(lk->nfs, fh, NFS4_F_ULOCK, len ? len : UINT64_MAX, lk_replied, &w) != 0)
        return lk_errno(lk, -EIO);
    rc = lk_wait(lk, &w);
    return rc < 0 ? lk_errno(lk, rc) : 0;
}

void libnfs_lock_ctx_free(struct libnfs_ctx *lk)
{
    if (!lk)
        return;
    libnfs_drop(lk);
    free(lk);
}

/* A context of its own for f, and the file opened on it. Its lock owner
 * is established later, by the first lock (lk_establish). 0 or -errno; on
 * failure f->lk is NULL. */
int libnfs_lock_ctx_make(struct libnfs_ctx *c, struct backend_file *f)
{
    f->lk = NULL;
    f->fh = NULL;
    f->lk_owner = false;
    struct libnfs_ctx *lk = calloc(1, sizeof *lk);
    if (!lk)
        return -ENOMEM;
    snprintf(lk->target, sizeof lk->target, "%s", c->target);
    snprintf(lk->client, sizeof lk->client, "%s", c->client);
    lk->version = 4;
    lk->v4 = true;
    lk->timeout_ms = c->timeout_ms;
    lk->deadline = c->deadline; /* made inside the caller's call */
    int rc = libnfs_mount(lk);
    lk->rchunk = c->rchunk < lk->server_rmax ? c->rchunk : lk->server_rmax;
    lk->wchunk = c->wchunk < lk->server_wmax ? c->wchunk : lk->server_wmax;
    if (rc < 0) {
        libnfs_note(c, lk->status[0] ? lk->status : NULL);
        free(lk);
        return rc;
    }
    struct nfsfh *fh = NULL;
    rc = libnfs_dirs_ok(lk, f->path);
    if (rc == 0) {
        rc = libnfs_call_open(lk, f->path, O_RDWR | O_NOFOLLOW, 0644, &fh);
        rc = rc < 0 ? lk_errno(lk, rc) : 0;
    }
    if (rc == 0 && !libnfs_handle_is(fh, &f->id)) {
        libnfs_call_close(lk, fh); /* the name leads elsewhere now: herd's file is not there */
        rc = -ELOOP;
    }
    if (rc < 0) {
        libnfs_note(c, lk->status);
        libnfs_lock_ctx_free(lk);
        return rc;
    }
    f->lk = lk;
    f->fh = fh;
    return 0;
}

/* The lock owner of f's context, by a lock and unlock of a private byte
 * (libnfs 4.0: a context whose first LOCK is denied keeps answering
 * DENIED). A shared lock: other ranks' whole-file shared locks cover
 * that byte too and must not conflict with it (an exclusive one made
 * each rank's first shared lock wait until no other rank held one).
 * Another client's whole-file exclusive lock still does: then the
 * context is spoilt, a fresh one replaces it, and -EAGAIN tells the
 * caller to wait like for any held lock (lock_timeout bounds it). */
static int lk_establish(struct libnfs_ctx *c, struct backend_file *f)
{
    uint64_t mine = LK_PRIVATE_BASE + ((uint64_t)getpid() << 8) + c->lock_ctxs++ % 256;
    int rc = lk_lock(f->lk, f->fh, F_RDLCK, mine, 1);
    if (rc == 0)
        rc = lk_unlock(f->lk, f->fh, mine, 1);
    if (rc == 0) {
        f->lk_owner = true;
        return 0;
    }
    libnfs_note(c, f->lk->status);
    if (rc != -EAGAIN)
        return rc;
    char status[sizeof c->status];
    snprintf(status, sizeof status, "%s", c->status);
    libnfs_lock_ctx_free(f->lk);
    int again = libnfs_lock_ctx_make(c, f);
    libnfs_note(c, status);
    return again < 0 ? again : -EAGAIN;
}

/* One try, never waiting: 0 granted (or released), -EAGAIN held by
 * another owner, other -errno. c->status names any refusal. */
static int libnfs_lock_try(struct libnfs_ctx *c, struct backend_file *f, enum backend_lock kind,
                           uint64_t start, uint64_t len)
{
    int rc;
    if (f->own_ctx) {
        if (!f->lk || f->lk->broken) {
            /* The state died with the server or the lease: a new owner.
             * An unlock has nothing left to release. */
            if (kind == BACKEND_UNLOCK)
                return 0;
            libnfs_lock_ctx_free(f->lk);
            rc = libnfs_lock_ctx_make(c, f);
            if (rc < 0)
                return rc;
        }
        if (!f->lk_owner && kind != BACKEND_UNLOCK && (rc = lk_establish(c, f)) < 0)
            return rc;
        int type = kind == BACKEND_LOCK_SHARED ? F_RDLCK : F_WRLCK;
        if (kind == BACKEND_UNLOCK)
            rc = lk_unlock(f->lk, f->fh, start, len);
        else
            rc = lk_lock(f->lk, f->fh, type, start, len);
        libnfs_note(c, rc < 0 ? f->lk->status : NULL);
        return rc;
    }
    if (c->v4) {
        libnfs_note(c, "NO_LOCK_CONTEXT");
        return -ENOLCK; /* opened outside a lock phase: no lock owner of its own */
    }
    if (c->nlm && nlm_broken(c->nlm)) {
        nlm_close(c->nlm);
        c->nlm = NULL;
    }
    if (!c->nlm) {
        /* The target's host: nfs://HOST[:port]/export (checked by connect). */
        char host[256];
        const char *h0 = c->target + 6;
        snprintf(host, sizeof host, "%.*s", (int)strcspn(h0, ":/?"), h0);
        rc = nlm_open(host, c->client, c->deadline, &c->nlm);
        if (rc < 0) {
            libnfs_note(c, "NLM_UNREACHABLE");
            return rc == -ECONNREFUSED ? -ENOLCK : rc; /* no lock manager there */
        }
    }
    struct nfs_fh *h = nfs_get_fh(f->fh);
    nlm_set_deadline(c->nlm, c->deadline);
    rc = kind == BACKEND_UNLOCK ? nlm_unlock(c->nlm, h->val, (unsigned)h->len, start, len)
                                : nlm_lock(c->nlm, h->val, (unsigned)h->len,
                                           kind == BACKEND_LOCK_EXCLUSIVE, start, len);
    libnfs_note(c, rc < 0 ? nlm_status(c->nlm) : NULL);
    return rc;
}

int libnfs_lock(void *ctx, struct backend_file *f, enum backend_lock kind, bool wait,
                uint64_t start, uint64_t len)
{
    struct libnfs_ctx *c = ctx;
    libnfs_call_begin(c, f);
    /* A lock or unlock first lands the file's WRITEs in flight and drops
     * its read-ahead, as a kernel client flushes and revalidates around
     * locks: the next holder must read what this one wrote. */
    int drained = libnfs_drain(c, f);
    if (drained < 0)
        return drained;
    /* NFSv4 locks live on the file's own context; NLM on its own client,
     * needing only the handle's bytes (an NFSv3 handle outlives the
     * connection it came from). A lost main connection is remade here for
     * the token's reads and writes, which use it with the same handle. */
    if (!f->own_ctx && (c->broken || !c->nfs) && libnfs_reconnect(c) < 0)
        libnfs_note(c, "RPC_CONNECTION_LOST");
    long pause = LOCK_BACKOFF_MIN_NS;
    for (;;) {
        int rc = libnfs_lock_try(c, f, kind, start, len);
        if (rc != -EAGAIN || !wait || kind == BACKEND_UNLOCK)
            return rc;
        /* Blocking: try again after a pause (doubling), until granted, a
         * stop signal, or lock_timeout's alarm: -EINTR, as fcntl says. */
        if (signals_caught() || signals_alarm_fired())
            return -EINTR;
        fiber_sleep((double)pause * 1e-9); /* a fiber's siblings run meanwhile */
        if (signals_caught() || signals_alarm_fired())
            return -EINTR;
        pause = pause * 2 < LOCK_BACKOFF_MAX_NS ? pause * 2 : LOCK_BACKOFF_MAX_NS;
        libnfs_call_begin(c, f); /* each try of a blocking lock: op_timeout of its own */
    }
}
