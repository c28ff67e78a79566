/* libnfs_open4.c — NFSv4 files herd opens itself (libnfs_ctx.h:
 * libnfs_open4_*). An NFSv4 regular file is made by an OPEN, and
 * libnfs 4.0's OPEN resolves its path by name (following a link it
 * meets) and always creates EXCLUSIVE4 (no mode set); herd's own OPEN
 * goes to the parent's kept handle (libnfs_dirs.c) with the leaf's name,
 * GUARDED4 with mode 0644, in one COMPOUND (PUTFH, OPEN, GETFH), and its
 * CLOSE is one more (with a COMMIT before it, in the same COMPOUND, when
 * WRITEs are not stable yet): a create and close costs what a kernel
 * client's does. A file that exists and is opened to be written is
 * opened the same way without creating it (OPEN4_NOCREATE), and must be
 * the file its LOOKUP found. An OPEN needs a client and an open owner, and libnfs keeps its
 * own private, so each context has its own (struct libnfs_owner4): a
 * SETCLIENTID and SETCLIENTID_CONFIRM on the first create, one open
 * owner whose seqid advances with each OPEN, OPEN_CONFIRM and CLOSE (RFC
 * 7530 §9.1.7), an OPEN_CONFIRM when the server asks for one. A client
 * the server forgot (STALE_CLIENTID, EXPIRED: a lease that ran out
 * between phases, a restart) is set up again, a seqid it refuses
 * (BAD_SEQID) starts a new owner: each once per call. The calls renew
 * the lease; nothing holds an open across phases. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libnfs_rpc.h"

/* The statuses after which an open owner's seqid stays (RFC 7530 §9.1.7). */
static bool seqid_kept(int st)
{
    return st == NFS4ERR_STALE_CLIENTID || st == NFS4ERR_STALE_STATEID ||
           st == NFS4ERR_BAD_STATEID || st == NFS4ERR_BAD_SEQID || st == NFS4ERR_BADZDR ||
           st == NFS4ERR_RESOURCE || st == NFS4ERR_NOFILEHANDLE || st == NFS4ERR_MOVED;
}

/* After a COMPOUND whose op at index k carries the owner's seqid. */
static void seqid_advance(struct libnfs_owner4 *o, const struct libnfs_reply *r, u_int k)
{
    if (r->ran > k && (r->ran > k + 1 || r->st == NFS4_OK || !seqid_kept(r->st)))
        o->seqid++;
}

/* The server no longer knows the client: set it up again. */
static bool client_lost(int st)
{
    return st == NFS4ERR_STALE_CLIENTID || st == NFS4ERR_EXPIRED;
}

/* SETCLIENTID and its CONFIRM: c's own client, named apart from every
 * other context's of every rank (a known name with another verifier is
 * that client's restart: the server would drop its state). */
static int client_set(struct libnfs_ctx *c)
{
    static unsigned made;
    struct libnfs_owner4 *o = &c->own4;
    if (!o->id) {
        o->id = ++made;
        uint64_t v = (uint64_t)time(NULL) << 32 | (uint32_t)getpid();
        memcpy(o->verifier, &v, sizeof o->verifier);
    }
    char host[128] = "", name[200];
    if (c->client[0])
        snprintf(host, sizeof host, "%s", c->client);
    else
        gethostname(host, sizeof host - 1);
    snprintf(name, sizeof name, "herd %s pid:%d own:%u", host, (int)getpid(), o->id);
    nfs_argop4 op;
    libnfs_op(&op, OP_SETCLIENTID);
    SETCLIENTID4args *a = &op.nfs_argop4_u.opsetclientid;
    memcpy(a->client.verifier, o->verifier, sizeof a->client.verifier);
    a->client.id.id_len = (u_int)strlen(name);
    a->client.id.id_val = name;
    a->callback.cb_program = 0; /* no callback service: no delegations asked */
    a->callback.cb_location.r_netid = "tcp";
    a->callback.cb_location.r_addr = "0.0.0.0.0.0";
    a->callback_ident = 1;
    struct libnfs_reply r;
    int rc = libnfs_compound(c, &op, 1, &r);
    if (rc < 0)
        return rc;
    if (r.st != NFS4_OK)
        return -libnfs_status_errno(c, r.st, true);
    libnfs_op(&op, OP_SETCLIENTID_CONFIRM);
    op.nfs_argop4_u.opsetclientid_confirm.clientid = r.clientid;
    memcpy(op.nfs_argop4_u.opsetclientid_confirm.setclientid_confirm, r.confirm, sizeof r.confirm);
    uint64_t clientid = r.clientid;
    rc = libnfs_compound(c, &op, 1, &r);
    if (rc < 0)
        return rc;
    if (r.st != NFS4_OK)
        return -libnfs_status_errno(c, r.st, true);
    o->clientid = clientid;
    o->client_ok = true;
    return 0;
}

/* f's open stateid as an op's argument. */
static stateid4 file_stateid(const struct backend_file *f)
{
    stateid4 s;
    s.seqid = f->own4_seqid;
    memcpy(s.other, f->own4_other, sizeof s.other);
    return s;
}

static void file_keep_stateid(struct backend_file *f, const stateid4 *s)
{
    f->own4_seqid = s->seqid;
    memcpy(f->own4_other, s->other, sizeof f->own4_other);
}

/* The OPEN_CONFIRM a new open owner's first OPEN asks for. */
static int open_confirm(struct libnfs_ctx *c, struct backend_file *f)
{
    nfs_argop4 ops[2];
    libnfs_op_putfh(&ops[0], f->id.val, f->id.len);
    libnfs_op(&ops[1], OP_OPEN_CONFIRM);
    ops[1].nfs_argop4_u.opopen_confirm.open_stateid = file_stateid(f);
    ops[1].nfs_argop4_u.opopen_confirm.seqid = c->own4.seqid;
    struct libnfs_reply r;
    int rc = libnfs_compound(c, ops, 2, &r);
    if (rc < 0)
        return rc;
    seqid_advance(&c->own4, &r, 1);
    if (r.st != NFS4_OK)
        return -libnfs_status_errno(c, r.st, true);
    file_keep_stateid(f, &r.stateid);
    return 0;
}

/* One OPEN of leaf in d (create: new, GUARDED4; else one that exists);
 * r: its reply. 0 or -errno of the RPC. */
static int open_send(struct libnfs_ctx *c, const struct libnfs_dir *d, const char *leaf, int oflags,
                     bool create, struct libnfs_reply *r)
{
    struct libnfs_owner4 *o = &c->own4;
    char owner[32];
    snprintf(owner, sizeof owner, "herd open %u", o->owner);
    uint32_t mask[2], val[1];
    nfs_argop4 ops[3];
    libnfs_op_putfh(&ops[0], d->fh, d->fh_len);
    libnfs_op(&ops[1], OP_OPEN);
    OPEN4args *a = &ops[1].nfs_argop4_u.opopen;
    a->seqid = o->seqid;
    int acc = oflags & O_ACCMODE;
    a->share_access = OPEN4_SHARE_ACCESS_READ;
    if (acc == O_RDWR)
        a->share_access = OPEN4_SHARE_ACCESS_BOTH;
    else if (acc == O_WRONLY)
        a->share_access = OPEN4_SHARE_ACCESS_WRITE;
    a->share_deny = OPEN4_SHARE_DENY_NONE;
    a->owner.clientid = o->clientid;
    a->owner.owner.owner_len = (u_int)strlen(owner);
    a->owner.owner.owner_val = owner;
    a->openhow.opentype = create ? OPEN4_CREATE : OPEN4_NOCREATE;
    if (create) {
        a->openhow.openflag4_u.how.mode = GUARDED4;
        libnfs_fattr4_mode(&a->openhow.openflag4_u.how.createhow4_u.createattrs, mask, val, 0644);
    }
    a->claim.claim = CLAIM_NULL;
    a->claim.open_claim4_u.file.utf8string_len = (u_int)strlen(leaf);
    a->claim.open_claim4_u.file.utf8string_val = (char *)leaf;
    libnfs_op(&ops[2], OP_GETFH);
    int rc = libnfs_compound(c, ops, 3, r);
    if (rc == 0)
        seqid_advance(o, r, 1);
    return rc;
}

/* f open by herd's own open owner: p opened (create: made new) in its
 * parent's kept handle, its handle and open stateid kept in f; the
 * client set up again, a new owner, the parent walked again, each once
 * when the server asks. 0, -errno or LIBNFS_DIR_BY_PATH. */
static int open4(struct libnfs_ctx *c, const char *p, int oflags, bool create,
                 struct backend_file *f)
{
    struct libnfs_owner4 *o = &c->own4;
    bool client_retried = false, owner_retried = false, dir_retried = false;
    for (;;) {
        int rc = o->client_ok ? 0 : client_set(c);
        if (rc < 0)
            return rc;
        struct libnfs_dir *d;
        const char *leaf;
        rc = libnfs_dir_get(c, p, &d, &leaf);
        if (rc != 0)
            return rc;
        struct libnfs_reply r;
        rc = open_send(c, d, leaf, oflags, create, &r);
        if (rc < 0)
            return rc;
        if (client_lost(r.st) && !client_retried) {
            client_retried = true;
            o->client_ok = false;
            continue;
        }
        if (r.st == NFS4ERR_BAD_SEQID && !owner_retried) {
            owner_retried = true;
            o->owner++, o->seqid = 0;
            continue;
        }
        if ((r.st == NFS4ERR_STALE || r.st == NFS4ERR_FHEXPIRED) && !dir_retried) {
            dir_retried = true;
            libnfs_dirs_forget(c, d->path);
            continue;
        }
        if (r.st != NFS4_OK)
            return -libnfs_status_errno(c, r.st, true);
        if (!r.fh_len)
            return -EIO;
        f->own4 = true;
        f->own4_dirty = f->own4_verf_changed = false;
        f->id.len = r.fh_len;
        memcpy(f->id.val, r.fh, r.fh_len);
        file_keep_stateid(f, &r.stateid);
        return (r.rflags & OPEN4_RESULT_CONFIRM) ? open_confirm(c, f) : 0;
    }
}

int libnfs_open4_create(struct libnfs_ctx *c, const char *p, int oflags, struct backend_file *f)
{
    return open4(c, p, oflags, true, f);
}

int libnfs_open4_existing(struct libnfs_ctx *c, const char *p, int oflags, struct backend_file *f)
{
    struct libnfs_handle found = f->id;
    int rc = open4(c, p, oflags, false, f);
    if (rc != 0 || !found.len ||
        (found.len == f->id.len && memcmp(found.val, f->id.val, found.len) == 0))
        return rc;
    libnfs_open4_close(c, f); /* not the file looked up: the name was swapped since */
    return -ELOOP;
}

/* One COMPOUND: PUTFH, a COMMIT when commit, and the CLOSE of f's open;
 * r: its reply (a COMMIT's verifier). 0 or -errno of the RPC. */
static int close_send(struct libnfs_ctx *c, struct backend_file *f, bool commit,
                      struct libnfs_reply *r)
{
    nfs_argop4 ops[3];
    u_int n = 0;
    libnfs_op_putfh(&ops[n++], f->id.val, f->id.len);
    if (commit)
        libnfs_op(&ops[n++], OP_COMMIT); /* offset 0, count 0: the whole file */
    libnfs_op(&ops[n], OP_CLOSE);
    ops[n].nfs_argop4_u.opclose.seqid = c->own4.seqid;
    ops[n].nfs_argop4_u.opclose.open_stateid = file_stateid(f);
    int rc = libnfs_compound(c, ops, n + 1, r);
    if (rc < 0)
        return rc;
    seqid_advance(&c->own4, r, n);
    if (r->st == NFS4ERR_BAD_SEQID)
        c->own4.owner++, c->own4.seqid = 0; /* the next OPEN starts a new owner */
    return 0;
}

int libnfs_open4_close(struct libnfs_ctx *c, struct backend_file *f)
{
    if (!f->own4)
        return 0;
    f->own4 = false;
    if (c->broken || !c->nfs)
        return 0; /* the server drops the open when the lease ends */
    bool commit = f->own4_dirty;
    struct libnfs_reply r;
    int rc = close_send(c, f, commit, &r);
    if (rc < 0)
        return rc;
    if (commit && r.ran == 2 && r.st != NFS4_OK) {
        /* The COMMIT failed, so the CLOSE was not run: its own COMPOUND. */
        rc = -libnfs_status_errno(c, r.st, true);
        close_send(c, f, false, &r);
        return rc;
    }
    if (r.st != NFS4_OK)
        return -libnfs_status_errno(c, r.st, true);
    return commit ? libnfs_data4_verified(c, f, r.commit_verf) : 0;
}
