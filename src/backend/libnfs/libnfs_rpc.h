/* libnfs_rpc.h — herd's own NFS calls on a libnfs context, for what
 * libnfs 4.0 has no call for (libnfs_dirs.c: calls on a name in a
 * directory held by handle; libnfs_open4.c: NFSv4 opens of herd's own
 * open owner; libnfs_data4.c: their READs, WRITEs and COMMITs). One
 * reply record serves an NFSv3 call and an NFSv4 COMPOUND; the callback
 * copies what the caller needs out of the reply (libnfs frees it when
 * the callback returns). A COMPOUND that carries data (a WRITE) is sent
 * with room for it (libnfs_compound_send). Also NFSv4 attributes
 * (fattr4) both ways. */
#ifndef HERD_LIBNFS_RPC_H
#define HERD_LIBNFS_RPC_H

#include "libnfs_ctx.h"

#include <nfsc/libnfs-raw.h>

#include <nfsc/libnfs-raw-nfs.h>
#include <nfsc/libnfs-raw-nfs4.h>

struct libnfs_reply {
    volatile bool done;
    int rpc_status;          /* RPC_STATUS_*: SUCCESS, the RPC was answered */
    bool lookup;             /* the reply is a LOOKUP3res */
    bool compound;           /* the reply is a COMPOUND4res */
    int st;                  /* nfsstat3 or nfsstat4 (a COMPOUND's: its last op's) */
    u_int ran;               /* COMPOUND: the ops it answered, the failed one last */
    bool has_attr;           /* attr: a LOOKUP's (NFSv3) or the last GETATTR's (NFSv4) */
    bool attr_bad;           /* a GETATTR's attributes could not be read */
    struct nfs_stat_64 attr; /* nfs_mode carries the type (S_IF*) */
    u_int fh_len;            /* the last GETFH's handle, or a LOOKUP's (NFSv3) */
    char fh[NFS4_FHSIZE];    /* (NFSv4 handles are the larger) */
    stateid4 stateid;        /* the last OPEN's, OPEN_CONFIRM's or CLOSE's */
    uint32_t rflags;         /* OPEN's */
    uint64_t clientid;       /* SETCLIENTID's */
    verifier4 confirm;       /* SETCLIENTID's */
    verifier4 commit_verf;   /* COMMIT's */
    uint64_t maxread;        /* a GETATTR of libnfs_op_getattr_limits: 0 when not sent */
    uint64_t maxwrite;
};

/* The rpc_cb of every call herd sends itself: priv is a libnfs_reply
 * whose lookup / compound flag says what the reply is. */
void libnfs_replied(struct rpc_context *rpc, int status, void *data, void *priv);

/* Wait for r; a failed wait or a failed RPC breaks c (its context is
 * never serviced again): -ETIMEDOUT for libnfs's own timeout as for
 * rpcwait's, -ECONNRESET for a failed RPC. 0: answered, r->st says how. */
int libnfs_reply_wait(struct libnfs_ctx *c, struct libnfs_reply *r);

/* Send a COMPOUND of n ops on c (r cleared first) and wait for it: 0
 * (answered: r->st, 0 or the failed op's status) or -errno of the RPC. */
int libnfs_compound(struct libnfs_ctx *c, nfs_argop4 *ops, u_int n, struct libnfs_reply *r);

/* Queue a COMPOUND of n ops on rpc whose encoded call carries payload
 * bytes of data besides its ops (a WRITE's; libnfs 4.0's own
 * rpc_nfs4_compound_async encodes 4 KiB at most, so its WRITEs fail
 * above ~3.9 KiB); cb gets the reply as rpc_nfs4_compound_async's does.
 * 0, or -errno when nothing was queued (no callback will come). */
int libnfs_compound_send(struct rpc_context *rpc, nfs_argop4 *ops, u_int n, size_t payload,
                         rpc_cb cb, void *priv);

/* Whether libnfs_compound_send works with this libnfs (libnfs 4.0: its
 * call's encoder found where libnfs 4.0 keeps it, checked once). */
bool libnfs_compound_payload_ok(void);

/* ops[0..]: a LOOKUP of each component of path (split in place, path
 * must live until the COMPOUND is sent); the count, or room + 1 when
 * there are more components than room. */
u_int libnfs_compound_lookups(nfs_argop4 *ops, u_int room, char *path);

/* op: num with no arguments (set them after); PUTFH of a handle. */
void libnfs_op(nfs_argop4 *op, enum nfs_opnum4 num);
void libnfs_op_putfh(nfs_argop4 *op, const char *fh, unsigned len);

/* op: a GETATTR of what an lstat tells (its reply: r->attr). */
void libnfs_op_getattr(nfs_argop4 *op);
/* op: a GETATTR of the largest READ and WRITE the server takes (its
 * reply: r->maxread, r->maxwrite). */
void libnfs_op_getattr_limits(nfs_argop4 *op);

/* One attribute as a fattr4 (mask and val are its storage): type, for
 * VERIFY; mode, for CREATE, OPEN and SETATTR. */
void libnfs_fattr4_type(fattr4 *fa, uint32_t mask[1], uint32_t val[1], nfs_ftype4 type);
void libnfs_fattr4_mode(fattr4 *fa, uint32_t mask[2], uint32_t val[1], uint32_t mode);
/* size, for SETATTR. */
void libnfs_fattr4_size(fattr4 *fa, uint32_t mask[2], uint32_t val[2], uint64_t size);

#endif
