/* libnfs_rpc.c — herd's own NFS calls on a libnfs context: the reply
 * record, its wait, a COMPOUND sent with room for its data, and NFSv4
 * attributes (libnfs_rpc.h). */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "libnfs_call.h"
#include "libnfs_rpc.h"

/* The S_IF* of an NFSv3 or NFSv4 file type (ftype3 and nfs_ftype4 number
 * the seven alike); 0 for any other. */
_Static_assert(NF3REG == (int)NF4REG && NF3DIR == (int)NF4DIR && NF3BLK == (int)NF4BLK &&
                   NF3CHR == (int)NF4CHR && NF3LNK == (int)NF4LNK && NF3SOCK == (int)NF4SOCK &&
                   NF3FIFO == (int)NF4FIFO,
               "NFSv3 and NFSv4 file types differ");
static mode_t type_mode(unsigned t)
{
    static const mode_t mode[] = {
        [NF3REG] = S_IFREG, [NF3DIR] = S_IFDIR,   [NF3BLK] = S_IFBLK, [NF3CHR] = S_IFCHR,
        [NF3LNK] = S_IFLNK, [NF3SOCK] = S_IFSOCK, [NF3FIFO] = S_IFIFO};
    return t < sizeof mode / sizeof mode[0] ? mode[t] : 0;
}

/* An NFSv3 LOOKUP's attributes as an lstat's. */
static void attr_from_fattr3(struct nfs_stat_64 *st, const fattr3 *a)
{
    memset(st, 0, sizeof *st);
    st->nfs_dev = a->fsid;
    st->nfs_ino = a->fileid;
    st->nfs_mode = (a->mode & 07777) | type_mode((unsigned)a->type);
    st->nfs_nlink = a->nlink;
    st->nfs_uid = a->uid;
    st->nfs_gid = a->gid;
    st->nfs_size = a->size;
    st->nfs_used = a->used;
    st->nfs_blocks = (a->used + 511) / 512;
    st->nfs_mtime = a->mtime.seconds;
    st->nfs_mtime_nsec = a->mtime.nseconds;
}

/* XDR reading of a GETATTR's attr_vals: each false once the bytes ran out. */
struct xdr_in {
    const unsigned char *p;
    size_t left;
};

static bool xdr_u32(struct xdr_in *x, uint32_t *v)
{
    if (x->left < 4)
        return false;
    uint32_t be;
    memcpy(&be, x->p, 4);
    *v = ntohl(be);
    x->p += 4;
    x->left -= 4;
    return true;
}

static bool xdr_u64(struct xdr_in *x, uint64_t *v)
{
    uint32_t hi, lo;
    if (!xdr_u32(x, &hi) || !xdr_u32(x, &lo))
        return false;
    *v = (uint64_t)hi << 32 | lo;
    return true;
}

/* An owner or owner_group string: "1000" is 1000 (what servers send by
 * default under AUTH_SYS); "name@domain" the local name's id; else
 * 65534 (nobody), as RFC 7530 §5.9 has a client map one it cannot. */
static bool xdr_owner(struct xdr_in *x, bool user, uint32_t *id)
{
    uint32_t len;
    if (!xdr_u32(x, &len) || len > x->left || len > 255)
        return false;
    char s[256];
    memcpy(s, x->p, len);
    s[len] = '\0';
    size_t pad = (4 - (len & 3)) & 3;
    if (len + pad > x->left)
        return false;
    x->p += len + pad;
    x->left -= len + pad;
    size_t digits = strspn(s, "0123456789");
    if (len && digits == len && len < 11) {
        *id = (uint32_t)strtoul(s, NULL, 10);
        return true;
    }
    s[strcspn(s, "@")] = '\0';
    struct passwd *pw = user ? getpwnam(s) : NULL;
    struct group *gr = user ? NULL : getgrnam(s);
    *id = 65534; /* nobody */
    if (pw)
        *id = pw->pw_uid;
    else if (gr)
        *id = gr->gr_gid;
    return true;
}

/* The lstat libnfs_op_getattr asks for: its attributes in bit order. */
static const uint32_t stat_mask[2] = {
    1u << FATTR4_TYPE | 1u << FATTR4_SIZE | 1u << FATTR4_FSID | 1u << FATTR4_FILEID,
    1u << (FATTR4_MODE - 32) | 1u << (FATTR4_NUMLINKS - 32) | 1u << (FATTR4_OWNER - 32) |
        1u << (FATTR4_OWNER_GROUP - 32) | 1u << (FATTR4_SPACE_USED - 32) |
        1u << (FATTR4_TIME_MODIFY - 32)};

static bool attr_one(struct xdr_in *x, int bit, struct nfs_stat_64 *st, uint32_t *type)
{
    uint64_t minor, sec;
    uint32_t v;
    switch (bit) {
    case FATTR4_TYPE:
        return xdr_u32(x, type);
    case FATTR4_SIZE:
        return xdr_u64(x, &st->nfs_size);
    case FATTR4_FSID: /* major, minor: the major names the file system */
        return xdr_u64(x, &st->nfs_dev) && xdr_u64(x, &minor);
    case FATTR4_FILEID:
        return xdr_u64(x, &st->nfs_ino);
    case FATTR4_MODE:
        if (!xdr_u32(x, &v))
            return false;
        st->nfs_mode |= v & 07777;
        return true;
    case FATTR4_NUMLINKS:
        return xdr_u32(x, &v) && ((st->nfs_nlink = v), true);
    case FATTR4_OWNER:
        return xdr_owner(x, true, &v) && ((st->nfs_uid = v), true);
    case FATTR4_OWNER_GROUP:
        return xdr_owner(x, false, &v) && ((st->nfs_gid = v), true);
    case FATTR4_SPACE_USED:
        if (!xdr_u64(x, &st->nfs_used))
            return false;
        st->nfs_blocks = (st->nfs_used + 511) / 512;
        return true;
    case FATTR4_TIME_MODIFY:
        if (!xdr_u64(x, &sec) || !xdr_u32(x, &v))
            return false;
        st->nfs_mtime = sec;
        st->nfs_mtime_nsec = v;
        return true;
    default: /* not asked for: its length is unknown */
        return false;
    }
}

/* A GETATTR's fattr4 as an lstat's; false when it cannot be read or has
 * no type. */
static bool attr_from_fattr4(struct nfs_stat_64 *st, const fattr4 *fa)
{
    memset(st, 0, sizeof *st);
    struct xdr_in x = {(const unsigned char *)fa->attr_vals.attrlist4_val,
                       fa->attr_vals.attrlist4_len};
    uint32_t type = 0;
    for (u_int w = 0; w < fa->attrmask.bitmap4_len; w++) {
        uint32_t word;
        memcpy(&word, (const char *)fa->attrmask.bitmap4_val + w * sizeof word, sizeof word);
        for (int b = 0; b < 32; b++)
            if ((word >> b & 1) && !attr_one(&x, (int)w * 32 + b, st, &type))
                return false;
    }
    if (!type_mode(type))
        return false;
    st->nfs_mode |= type_mode(type);
    return true;
}

/* The limits libnfs_op_getattr_limits asks for, in bit order. */
static const uint32_t limits_mask[1] = {1u << FATTR4_MAXREAD | 1u << FATTR4_MAXWRITE};

/* A GETATTR's fattr4: the limits' when it answers limits_mask, else an
 * lstat's. */
static void reply_getattr(struct libnfs_reply *r, const fattr4 *fa)
{
    uint32_t word = 0;
    if (fa->attrmask.bitmap4_len >= 1)
        memcpy(&word, fa->attrmask.bitmap4_val, sizeof word);
    if (word == limits_mask[0] && fa->attrmask.bitmap4_len == 1) {
        struct xdr_in x = {(const unsigned char *)fa->attr_vals.attrlist4_val,
                           fa->attr_vals.attrlist4_len};
        if (!xdr_u64(&x, &r->maxread) || !xdr_u64(&x, &r->maxwrite))
            r->maxread = r->maxwrite = 0;
        return;
    }
    r->has_attr = attr_from_fattr4(&r->attr, fa);
    r->attr_bad = !r->has_attr;
}

/* What the caller needs of a COMPOUND's results, copied out of them. */
static void reply_copy4(struct libnfs_reply *r, const COMPOUND4res *res)
{
    r->ran = res->resarray.resarray_len;
    for (u_int i = 0; i < r->ran; i++) {
        /* libnfs 4.0 decodes the results 4-byte aligned: read a copy */
        nfs_resop4 copy;
        memcpy(&copy, (const char *)res->resarray.resarray_val + i * sizeof copy, sizeof copy);
        const nfs_resop4 *op = &copy;
        nfsstat4 st;
        memcpy(&st, &op->nfs_resop4_u, sizeof st); /* every result begins with it */
        if (st != NFS4_OK)
            continue;
        switch (op->resop) {
        case OP_GETFH: {
            const nfs_fh4 *fh = &op->nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object;
            r->fh_len = fh->nfs_fh4_len <= sizeof r->fh ? fh->nfs_fh4_len : 0;
            memcpy(r->fh, fh->nfs_fh4_val, r->fh_len);
            break;
        }
        case OP_GETATTR:
            reply_getattr(r, &op->nfs_resop4_u.opgetattr.GETATTR4res_u.resok4.obj_attributes);
            break;
        case OP_OPEN:
            r->stateid = op->nfs_resop4_u.opopen.OPEN4res_u.resok4.stateid;
            r->rflags = op->nfs_resop4_u.opopen.OPEN4res_u.resok4.rflags;
            break;
        case OP_OPEN_CONFIRM:
            r->stateid = op->nfs_resop4_u.opopen_confirm.OPEN_CONFIRM4res_u.resok4.open_stateid;
            break;
        case OP_CLOSE:
            r->stateid = op->nfs_resop4_u.opclose.CLOSE4res_u.open_stateid;
            break;
        case OP_COMMIT:
            memcpy(r->commit_verf, op->nfs_resop4_u.opcommit.COMMIT4res_u.resok4.writeverf,
                   sizeof r->commit_verf);
            break;
        case OP_SETCLIENTID: {
            const SETCLIENTID4resok *s = &op->nfs_resop4_u.opsetclientid.SETCLIENTID4res_u.resok4;
            r->clientid = s->clientid;
            memcpy(r->confirm, s->setclientid_confirm, sizeof r->confirm);
            break;
        }
        default:
            break;
        }
    }
}

void libnfs_replied(struct rpc_context *rpc, int status, void *data, void *priv)
{
    (void)rpc;
    struct libnfs_reply *r = priv;
    r->rpc_status = status == RPC_STATUS_SUCCESS && !data ? RPC_STATUS_ERROR : status;
    if (r->rpc_status == RPC_STATUS_SUCCESS) {
        r->st = (int)*(nfsstat3 *)data; /* every result begins with it */
        if (r->compound) {
            reply_copy4(r, data);
        } else if (r->lookup && r->st == NFS3_OK) {
            const LOOKUP3resok *ok = &((LOOKUP3res *)data)->LOOKUP3res_u.resok;
            const nfs_fh3 *fh = &ok->object;
            r->fh_len = fh->data.data_len <= sizeof r->fh ? fh->data.data_len : 0;
            memcpy(r->fh, fh->data.data_val, r->fh_len);
            r->has_attr = ok->obj_attributes.attributes_follow;
            if (r->has_attr)
                attr_from_fattr3(&r->attr, &ok->obj_attributes.post_op_attr_u.attributes);
        }
    }
    r->done = true;
}

int libnfs_reply_wait(struct libnfs_ctx *c, struct libnfs_reply *r)
{
    int rc = libnfs_call_await(c, &r->done);
    if (rc < 0 || r->rpc_status == RPC_STATUS_SUCCESS)
        return rc;
    c->broken = true;
    bool timeout = r->rpc_status == RPC_STATUS_TIMEOUT;
    libnfs_note(c, timeout ? "RPC_TIMEOUT" : "RPC_ERROR");
    return timeout ? -ETIMEDOUT : -ECONNRESET;
}

/* The arguments of a COMPOUND of n ops. */
static COMPOUND4args compound_args(nfs_argop4 *ops, u_int n)
{
    COMPOUND4args args;
    memset(&args, 0, sizeof args);
    args.argarray.argarray_len = n;
    args.argarray.argarray_val = ops;
    return args;
}

int libnfs_compound(struct libnfs_ctx *c, nfs_argop4 *ops, u_int n, struct libnfs_reply *r)
{
    memset(r, 0, sizeof *r);
    r->compound = true;
    COMPOUND4args args = compound_args(ops, n);
    if (rpc_nfs4_compound_async(nfs_get_rpc_context(c->nfs), libnfs_replied, &args, r) != 0)
        return -ENOMEM;
    return libnfs_reply_wait(c, r);
}

#ifdef HERD_LIBNFS_COMPOUND_NO_ROOM
/* libnfs 4.0 (before 5.0: rpc_nfs4_compound_async2) gives a COMPOUND
 * 4 KiB to encode into. Its call buffer is made by rpc_allocate_pdu2,
 * which takes the room wanted and which libnfs 4.0 exports without
 * declaring it (libnfs-private.h), as rpc_queue_pdu and rpc_free_pdu;
 * the encoder sits at the head of its struct rpc_pdu. */
struct rpc_pdu;
struct rpc_pdu *rpc_allocate_pdu2(struct rpc_context *rpc, int program, int version, int procedure,
                                  rpc_cb cb, void *private_data, zdrproc_t zdr_decode_fn,
                                  int zdr_decode_bufsize, size_t alloc_hint);
int rpc_queue_pdu(struct rpc_context *rpc, struct rpc_pdu *pdu);
void rpc_free_pdu(struct rpc_context *rpc, struct rpc_pdu *pdu);

struct pdu_head { /* libnfs 4.0's struct rpc_pdu up to its encoder */
    struct rpc_pdu *next;
    uint32_t xid;
    ZDR zdr;
};
#define PDU_ENCODE_MIN 4096 /* libnfs 4.0's ZDR_ENCODEBUF_MINSIZE */
#define PDU_HEADER_MAX 1024 /* record mark and call header: AUTH_SYS's 400 bytes at most */

/* pdu's encoder, once it is what libnfs 4.0 made (room bytes beyond its
 * 4 KiB, the call header encoded behind the record mark, this call's
 * xid first); NULL for another layout. */
static ZDR *pdu_encoder(struct rpc_pdu *pdu, size_t room)
{
    struct pdu_head *h = (struct pdu_head *)pdu;
    ZDR *z = &h->zdr;
    if (z->x_op != ZDR_ENCODE || !z->buf || (size_t)z->size != PDU_ENCODE_MIN + room ||
        z->pos < 12 || z->pos > PDU_HEADER_MAX)
        return NULL;
    uint32_t xid;
    memcpy(&xid, z->buf + 4, sizeof xid);
    return ntohl(xid) == h->xid ? z : NULL;
}

/* A COMPOUND's call buffer with room bytes beyond libnfs's 4 KiB. */
static struct rpc_pdu *pdu_new(struct rpc_context *rpc, rpc_cb cb, void *priv, size_t room)
{
    return rpc_allocate_pdu2(rpc, NFS4_PROGRAM, NFS_V4, NFSPROC4_COMPOUND, cb, priv,
                             (zdrproc_t)zdr_COMPOUND4res, sizeof(COMPOUND4res), room);
}

int libnfs_compound_send(struct rpc_context *rpc, nfs_argop4 *ops, u_int n, size_t payload,
                         rpc_cb cb, void *priv)
{
    COMPOUND4args args = compound_args(ops, n);
    struct rpc_pdu *pdu = pdu_new(rpc, cb, priv, payload);
    if (!pdu)
        return -ENOMEM;
    ZDR *z = pdu_encoder(pdu, payload);
    if (!z || !zdr_COMPOUND4args(z, &args)) {
        rpc_free_pdu(rpc, pdu);
        return z ? -EMSGSIZE : -ENOTSUP;
    }
    return rpc_queue_pdu(rpc, pdu) == 0 ? 0 : -ENOMEM;
}

bool libnfs_compound_payload_ok(void)
{
    static int ok = -1;
    if (ok >= 0)
        return ok;
    struct rpc_context *rpc = rpc_init_context();
    struct rpc_pdu *pdu = rpc ? pdu_new(rpc, NULL, NULL, 8192) : NULL;
    ok = pdu && pdu_encoder(pdu, 8192);
    if (pdu)
        rpc_free_pdu(rpc, pdu);
    if (rpc)
        rpc_destroy_context(rpc);
    return ok;
}
#else
int libnfs_compound_send(struct rpc_context *rpc, nfs_argop4 *ops, u_int n, size_t payload,
                         rpc_cb cb, void *priv)
{
    COMPOUND4args args = compound_args(ops, n);
    return rpc_nfs4_compound_async2(rpc, cb, &args, priv, payload) == 0 ? 0 : -ENOMEM;
}

bool libnfs_compound_payload_ok(void)
{
    return true;
}
#endif

u_int libnfs_compound_lookups(nfs_argop4 *ops, u_int room, char *path)
{
    u_int n = 0;
    char *save = NULL;
    for (char *s = strtok_r(path, "/", &save); s; s = strtok_r(NULL, "/", &save)) {
        if (n == room)
            return room + 1;
        libnfs_op(&ops[n], OP_LOOKUP);
        ops[n].nfs_argop4_u.oplookup.objname.utf8string_len = (u_int)strlen(s);
        ops[n].nfs_argop4_u.oplookup.objname.utf8string_val = s;
        n++;
    }
    return n;
}

void libnfs_op(nfs_argop4 *op, enum nfs_opnum4 num)
{
    memset(op, 0, sizeof *op);
    op->argop = num;
}

void libnfs_op_putfh(nfs_argop4 *op, const char *fh, unsigned len)
{
    libnfs_op(op, OP_PUTFH);
    op->nfs_argop4_u.opputfh.object.nfs_fh4_len = len;
    op->nfs_argop4_u.opputfh.object.nfs_fh4_val = (char *)fh;
}

void libnfs_op_getattr(nfs_argop4 *op)
{
    libnfs_op(op, OP_GETATTR);
    op->nfs_argop4_u.opgetattr.attr_request.bitmap4_len = 2;
    op->nfs_argop4_u.opgetattr.attr_request.bitmap4_val = (uint32_t *)stat_mask;
}

void libnfs_op_getattr_limits(nfs_argop4 *op)
{
    libnfs_op(op, OP_GETATTR);
    op->nfs_argop4_u.opgetattr.attr_request.bitmap4_len = 1;
    op->nfs_argop4_u.opgetattr.attr_request.bitmap4_val = (uint32_t *)limits_mask;
}

void libnfs_fattr4_type(fattr4 *fa, uint32_t mask[1], uint32_t val[1], nfs_ftype4 type)
{
    mask[0] = 1u << FATTR4_TYPE;
    val[0] = htonl((uint32_t)type);
    fa->attrmask.bitmap4_len = 1;
    fa->attrmask.bitmap4_val = mask;
    fa->attr_vals.attrlist4_len = 4;
    fa->attr_vals.attrlist4_val = (char *)val;
}

void libnfs_fattr4_mode(fattr4 *fa, uint32_t mask[2], uint32_t val[1], uint32_t mode)
{
    mask[0] = 0;
    mask[1] = 1u << (FATTR4_MODE - 32);
    val[0] = htonl(mode);
    fa->attrmask.bitmap4_len = 2;
    fa->attrmask.bitmap4_val = mask;
    fa->attr_vals.attrlist4_len = 4;
    fa->attr_vals.attrlist4_val = (char *)val;
}

void libnfs_fattr4_size(fattr4 *fa, uint32_t mask[2], uint32_t val[2], uint64_t size)
{
    mask[0] = 1u << FATTR4_SIZE;
    val[0] = htonl((uint32_t)(size >> 32));
    val[1] = htonl((uint32_t)size);
    fa->attrmask.bitmap4_len = 1;
    fa->attrmask.bitmap4_val = mask;
    fa->attr_vals.attrlist4_len = 8;
    fa->attr_vals.attrlist4_val = (char *)val;
}
