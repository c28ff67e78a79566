/* libnfs_stream.c — READ and WRITE RPCs in flight on one open libnfs file
 * (libnfs_stream.h). Slots hold one RPC each; reads queue in file order,
 * so data is handed out in order whatever order the replies come in.
 *
 * A READ whose whole range lies in the buffer of the read waiting for it
 * is answered straight into that buffer (the slot's dest), one copy from
 * libnfs's reply as a plain program makes; only read-ahead beyond the
 * caller's range, or a reply that came before its read, goes through the
 * slot's own buffer. dest never outlives the stream_pread that set it.
 * A read's last pump only sends: the replies that come while the caller
 * works stay in the socket until the next read has pointed its READs at
 * its own buffer. */
#include "libnfs_stream.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h> /* before libnfs.h */

#include <nfsc/libnfs.h> /* before the raw header, which needs its types */

#include <nfsc/libnfs-raw.h>

#include "clock.h"
#include "rpcwait.h"

/* SLOT_FILLING: given to the caller to fill for its next write
 * (stream_write_buffer). */
enum slot_state { SLOT_FREE, SLOT_FILLING, SLOT_BUSY, SLOT_DONE };

struct rpc_slot {
    struct nfs_stream *s;
    enum slot_state state;
    bool write;
    bool queued;         /* a read in the file-order queue */
    uint64_t offset;     /* of the RPC */
    size_t len;          /* bytes asked */
    ssize_t got;         /* bytes answered, or libnfs's negative result */
    size_t consumed;     /* read: bytes handed out so far */
    unsigned char *dest; /* read: the reply goes here, the waiting caller's buffer */
    bool direct;         /* read: the reply went to dest, not buf */
    unsigned char *buf;
    size_t cap;    /* buf's size */
    uint64_t note; /* the caller's name for buf's bytes; 0 once the stream changed them */
    double sent;
    struct stream_window *win; /* its direction's, counting its reply */
};

struct nfs_stream {
    unsigned n; /* RPCs in flight at most */
    /* 2n + 1: answered READs wait in their slots, out of the window, for
     * the caller to take them (the READs before them still on the way,
     * or the one lent), while new READs keep the window full */
    unsigned nslots;
    struct rpc_slot *slot;
    unsigned *queue; /* read slots in file order: a ring of nslots */
    unsigned qhead, qcount;
    unsigned busy;               /* RPCs outstanding */
    volatile bool progress;      /* set by every reply: the wait's flag */
    uint64_t next;               /* read: offset of the next read-ahead RPC */
    uint64_t adv_start, adv_end; /* the advised range; adv_end 0: none */
    struct rpc_slot *filling;    /* SLOT_FILLING, or NULL */
    int werr;                    /* a failed WRITE not reported yet (-errno) */
    const struct rpc_observer *obs;
};

struct nfs_stream *stream_new(unsigned inflight)
{
    struct nfs_stream *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->n = inflight ? inflight : 1;
    s->nslots = 2 * s->n + 1;
    s->slot = calloc(s->nslots, sizeof *s->slot);
    s->queue = calloc(s->nslots, sizeof *s->queue);
    if (!s->slot || !s->queue) {
        stream_free(s);
        return NULL;
    }
    for (unsigned i = 0; i < s->nslots; i++)
        s->slot[i].s = s;
    return s;
}

void stream_free(struct nfs_stream *s)
{
    if (!s)
        return;
    for (unsigned i = 0; s->slot && i < s->nslots; i++)
        free(s->slot[i].buf);
    free(s->slot);
    free(s->queue);
    free(s);
}

void stream_advise(struct nfs_stream *s, uint64_t offset, uint64_t length)
{
    s->adv_start = offset;
    s->adv_end = offset + length;
}

/* libnfs's callback: data is the reply's bytes for a READ (valid only
 * now), the error message when err < 0. */
static void stream_replied(int err, struct nfs_context *nfs, void *data, void *priv)
{
    (void)nfs;
    struct rpc_slot *sl = priv;
    struct nfs_stream *s = sl->s;
    double t = clock_mono();
    rpc_observe(s->obs, sl->write, t - sl->sent);
    size_t n = rpc_reply_bytes(err, sl->len);
    if (n)
        stream_window_reply(sl->win, n, t);
    if (!sl->write && n) {
        memcpy(sl->dest ? sl->dest : sl->buf, data, n);
        sl->direct = sl->dest != NULL;
        if (!sl->direct)
            sl->note = 0; /* buf's bytes are the reply's now */
        err = (int)n;
    }
    sl->got = err;
    sl->state = SLOT_DONE;
    s->busy--;
    s->progress = true;
}

/* Serve the socket without blocking: send what is queued and, if
 * receive, take replies that arrived. A lost connection breaks the context. */
static int stream_pump(const struct stream_io *io, bool receive)
{
    struct rpc_context *rpc = nfs_get_rpc_context(io->nfs);
    short events = (short)rpc_which_events(rpc);
    if (!receive)
        events &= POLLOUT;
    if (!events)
        return 0;
    struct pollfd pfd = {.fd = rpc_get_fd(rpc), .events = events};
    int n = poll(&pfd, 1, 0);
    if (n <= 0)
        return 0;
    if (rpc_service(rpc, pfd.revents) < 0) {
        *io->broken = true;
        *io->why = "RPC_CONNECTION_LOST";
        return -ECONNRESET;
    }
    return 0;
}

/* Wait until at least one more reply has come (rpcwait.h). */
static int stream_wait(struct nfs_stream *s, const struct stream_io *io)
{
    s->progress = false;
    const char *why = NULL;
    int rc = rpcwait(nfs_get_rpc_context(io->nfs), &s->progress, io->deadline, &why);
    if (rc < 0) {
        *io->broken = true;
        *io->why = why;
    }
    return rc;
}

static struct rpc_slot *stream_head(struct nfs_stream *s)
{
    return s->qcount ? &s->slot[s->queue[s->qhead]] : NULL;
}

/* The head READ, answered and all handed out, still queued: only
 * stream_pread_lend leaves one, whose bytes the caller holds until its
 * next call (stream_pread pops a READ once it is handed out). */
static bool stream_head_lent(struct nfs_stream *s)
{
    struct rpc_slot *head = stream_head(s);
    return head && head->state == SLOT_DONE && head->got > 0 && head->consumed == (size_t)head->got;
}

/* The RPCs s may keep in flight now: window w's, at most its slots'. */
static unsigned stream_window_now(const struct nfs_stream *s, const struct stream_window *w)
{
    return w->now < s->n ? w->now : s->n;
}

/* A free slot while fewer than the window w's are taken: RPCs on the
 * way, answered WRITEs not taken yet and a slot being filled count; an
 * answered READ waiting in the queue does not (its reply is off the
 * wire: a server that answers out of order keeps the window full). */
static struct rpc_slot *stream_free_slot(struct nfs_stream *s, const struct stream_window *w)
{
    struct rpc_slot *free_slot = NULL;
    unsigned taken = 0;
    for (unsigned i = 0; i < s->nslots; i++) {
        const struct rpc_slot *sl = &s->slot[i];
        if (sl->state == SLOT_FREE) {
            if (!free_slot)
                free_slot = &s->slot[i];
        } else if (sl->state != SLOT_DONE || sl->write) {
            taken++;
        }
    }
    return taken < stream_window_now(s, w) ? free_slot : NULL;
}

static int stream_slot_room(struct rpc_slot *sl, size_t len)
{
    if (sl->cap >= len)
        return 0;
    unsigned char *b = realloc(sl->buf, len);
    if (!b)
        return -ENOMEM;
    sl->buf = b;
    sl->cap = len;
    sl->note = 0;
    return 0;
}

/* The slot given out by stream_write_buffer goes back: every call but the
 * write of its buffer ends the loan (its bytes and note stay). */
static void stream_unfill(struct nfs_stream *s)
{
    if (s->filling)
        s->filling->state = SLOT_FREE;
    s->filling = NULL;
}

/* Send one RPC from slot sl (its offset, len and, for a write, buf set). */
static int stream_send(struct nfs_stream *s, const struct stream_io *io, struct rpc_slot *sl)
{
    s->obs = io->obs;
    sl->win = sl->write ? io->wwin : io->rwin;
    sl->sent = clock_mono();
    sl->got = 0;
    sl->dest = NULL;
    sl->direct = false;
    sl->state = SLOT_BUSY;
    int rc;
    if (io->send)
        rc = io->send(io->send_arg, io->nfs, sl->write, sl->offset, sl->len,
                      sl->write ? sl->buf : NULL, stream_replied, sl);
    else if (sl->write)
        rc = nfs_pwrite_async(io->nfs, io->fh, sl->offset, sl->len, sl->buf, stream_replied, sl);
    else
        rc = nfs_pread_async(io->nfs, io->fh, sl->offset, sl->len, stream_replied, sl);
    if (rc < 0) { /* not queued: no callback will come */
        sl->state = SLOT_FREE;
        return io->rpc_errno(io->arg, rc, sl->write, sl->len);
    }
    s->busy++;
    return 0;
}

/* ---------------------------------------------------------------- reads */

static void stream_pop(struct nfs_stream *s)
{
    struct rpc_slot *sl = stream_head(s);
    sl->state = SLOT_FREE;
    sl->queued = false;
    s->qhead = (s->qhead + 1) % s->nslots;
    s->qcount--;
}

/* Wait for every outstanding RPC; forget the queued reads. */
static int stream_settle(struct nfs_stream *s, const struct stream_io *io)
{
    while (s->busy) {
        int rc = stream_wait(s, io);
        if (rc < 0)
            return rc;
    }
    while (s->qcount)
        stream_pop(s);
    return 0;
}

/* Queue reads from s->next up to end while slots are free; send them
 * and, if receive, take the replies that came. */
static int stream_fill(struct nfs_stream *s, const struct stream_io *io, uint64_t end, bool receive)
{
    struct rpc_slot *sl;
    while (s->next < end && (sl = stream_free_slot(s, io->rwin)) != NULL) {
        size_t len = end - s->next < io->rchunk ? (size_t)(end - s->next) : io->rchunk;
        if (stream_slot_room(sl, len) < 0)
            return s->qcount ? 0 : -ENOMEM; /* fewer in flight, or none at all */
        sl->write = false;
        sl->offset = s->next;
        sl->len = len;
        sl->consumed = 0;
        int rc = stream_send(s, io, sl);
        if (rc < 0)
            return rc;
        sl->queued = true;
        s->queue[(s->qhead + s->qcount) % s->nslots] = (unsigned)(sl - s->slot);
        s->qcount++;
        s->next += len;
    }
    return stream_pump(io, receive);
}

/* Where read-ahead may go for a read of [offset, offset + len). */
static uint64_t stream_read_end(const struct nfs_stream *s, uint64_t offset, size_t len)
{
    uint64_t end = offset + len;
    if (s->adv_end && offset >= s->adv_start && offset < s->adv_end && s->adv_end > end)
        end = s->adv_end;
    return end;
}

/* Point the queued READs still on the way whose whole range lies in the
 * caller's [offset, offset + len) at their place in buf. */
static void stream_direct(struct nfs_stream *s, unsigned char *buf, size_t len, uint64_t offset)
{
    for (unsigned i = 0; i < s->qcount; i++) {
        struct rpc_slot *sl = &s->slot[s->queue[(s->qhead + i) % s->nslots]];
        if (sl->offset < offset || sl->offset + sl->len > offset + len)
            break; /* queued in file order: the rest lie further on */
        if (sl->state == SLOT_BUSY && !sl->dest && sl->consumed == 0)
            sl->dest = buf + (sl->offset - offset);
    }
}

/* Wait until the head READ is answered. A later READ answered first
 * leaves the wire, so a new one is sent at once, as a plain loop of
 * libnfs calls sends one for each reply (ganesha answers a fifth of
 * 1 MiB READs out of order; waiting for the head kept 3.4 of 4 READs on
 * the wire, docs/performance.md); buf: the caller's (or NULL), which the
 * new READs that lie in it answer into. */
static int stream_await_head(struct nfs_stream *s, const struct stream_io *io, uint64_t end,
                             unsigned char *buf, size_t len, uint64_t offset)
{
    struct rpc_slot *head = stream_head(s);
    while (head->state == SLOT_BUSY) {
        int rc = stream_fill(s, io, end, false);
        if (buf)
            stream_direct(s, buf, len, offset);
        if (rc == 0)
            rc = stream_wait(s, io);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* The caller's buffer is about to go: a READ still on the way answers into
 * its slot, and one answered into the buffer but not handed out yet (an
 * error or end of file came first) keeps its bytes in the slot. */
static void stream_undirect(struct nfs_stream *s)
{
    for (unsigned i = 0; i < s->nslots; i++) {
        struct rpc_slot *sl = &s->slot[i];
        if (sl->direct && sl->state == SLOT_DONE && sl->got > 0) {
            memcpy(sl->buf, sl->dest, (size_t)sl->got);
            sl->note = 0;
        }
        sl->dest = NULL;
        sl->direct = false;
    }
}

/* Hand out the head READ's bytes at buf (its place in the caller's
 * buffer); returns how many. */
static size_t stream_take(struct rpc_slot *head, unsigned char *buf, size_t room)
{
    size_t avail = (size_t)head->got - head->consumed;
    size_t n = avail < room ? avail : room;
    if (!head->direct) /* else the reply is there already */
        memcpy(buf, head->buf + head->consumed, n);
    head->consumed += n;
    return n;
}

static ssize_t stream_pread_direct(struct nfs_stream *s, const struct stream_io *io,
                                   unsigned char *buf, size_t len, uint64_t offset)
{
    if (s->busy && !s->qcount) { /* writes outstanding: they land first */
        int rc = stream_drain(s, io);
        if (rc < 0)
            return rc;
    }
    uint64_t end = stream_read_end(s, offset, len);
    size_t done = 0;
    while (done < len) {
        uint64_t pos = offset + done;
        struct rpc_slot *head = stream_head(s);
        if (head && head->offset + head->consumed != pos) { /* not where we read: restart */
            int rc = stream_settle(s, io);
            if (rc < 0)
                return rc;
            head = NULL;
        }
        if (!head)
            s->next = pos;
        stream_direct(s, buf, len, offset); /* before the replies waiting are taken */
        int rc = stream_fill(s, io, end, true);
        if (rc < 0)
            return rc;
        stream_direct(s, buf, len, offset);
        head = stream_head(s);
        if (!head) {
            /* No READ queued: WRITEs hold the slots the window allows,
             * answered but not taken yet (their replies came during
             * another call on the context) or still on the way. They
             * land first, as above; then every slot is free. */
            if ((rc = stream_drain(s, io)) < 0)
                return rc;
            continue;
        }
        if ((rc = stream_await_head(s, io, end, buf, len, offset)) < 0)
            return rc;
        if (head->got < 0) {
            rc = io->rpc_errno(io->arg, (int)head->got, false, head->len);
            stream_pop(s);
            int st = *io->broken ? 0 : stream_settle(s, io);
            return st < 0 ? st : rc;
        }
        done += stream_take(head, buf + done, len - done);
        if (head->consumed == (size_t)head->got) {
            bool eof = head->got == 0;
            stream_pop(s); /* a short reply: the next slot no longer fits and restarts */
            if (eof) {
                rc = stream_settle(s, io);
                return rc < 0 ? rc : (ssize_t)done;
            }
        }
    }
    /* Keep the pipe full while the caller works; the replies wait in the
     * socket for the next read, which may take them into its buffer. */
    int rc = stream_fill(s, io, end, false);
    return rc < 0 && *io->broken ? rc : (ssize_t)done;
}

ssize_t stream_pread(struct nfs_stream *s, const struct stream_io *io, void *buf, size_t len,
                     uint64_t offset)
{
    stream_unfill(s);
    ssize_t got = stream_pread_direct(s, io, buf, len, offset);
    stream_undirect(s);
    return got;
}

ssize_t stream_pread_lend(struct nfs_stream *s, const struct stream_io *io, void *buf, size_t len,
                          uint64_t offset, const void **data)
{
    *data = buf;
    stream_unfill(s);
    if (stream_head_lent(s))
        stream_pop(s); /* the last lend's READ: its bytes are the caller's no more */
    struct rpc_slot *head = stream_head(s);
    if (!head || head->offset + head->consumed != offset || head->len - head->consumed < len)
        return stream_pread(s, io, buf, len, offset); /* not one READ's bytes: copy */
    uint64_t end = stream_read_end(s, offset, len);
    int rc = stream_fill(s, io, end, true);
    if (rc < 0)
        return rc;
    if ((rc = stream_await_head(s, io, end, NULL, 0, 0)) < 0)
        return rc;
    if (head->got < 0 || (size_t)head->got - head->consumed < len)
        return stream_pread(s, io, buf, len, offset); /* an error, a short reply */
    *data = head->buf + head->consumed;
    head->consumed += len; /* all of it: kept queued until the next call on s */
    rc = stream_fill(s, io, end, false);
    return rc < 0 && *io->broken ? rc : (ssize_t)len;
}

/* --------------------------------------------------------------- writes */

/* Take the answered WRITEs: a failure becomes the stream's pending error,
 * a short one sends its remainder. */
static int stream_reap(struct nfs_stream *s, const struct stream_io *io)
{
    for (unsigned i = 0; i < s->nslots; i++) {
        struct rpc_slot *sl = &s->slot[i];
        if (sl->state != SLOT_DONE || !sl->write)
            continue;
        if (sl->got < 0 || sl->got == 0) {
            if (!s->werr)
                s->werr = sl->got < 0 ? io->rpc_errno(io->arg, (int)sl->got, true, sl->len) : -EIO;
            sl->state = SLOT_FREE;
        } else if ((size_t)sl->got < sl->len) {
            size_t got = (size_t)sl->got;
            memmove(sl->buf, sl->buf + got, sl->len - got);
            sl->note = 0;
            sl->offset += got;
            sl->len -= got;
            int rc = stream_send(s, io, sl);
            if (rc < 0 && !s->werr)
                s->werr = rc;
        } else {
            sl->state = SLOT_FREE;
        }
    }
    return 0;
}

static int stream_take_werr(struct nfs_stream *s)
{
    int e = s->werr;
    s->werr = 0;
    return e;
}

void *stream_write_buffer(struct nfs_stream *s, const struct stream_io *io, size_t len,
                          uint64_t want, uint64_t **note)
{
    stream_unfill(s);
    if (s->qcount || s->werr || len == 0 || len > io->wchunk)
        return NULL; /* reads to settle first, an error to report, several RPCs */
    stream_reap(s, io);
    struct rpc_slot *sl = stream_free_slot(s, io->wwin);
    if (!sl)
        return NULL;
    for (unsigned i = 0; want && i < s->nslots; i++)
        if (s->slot[i].state == SLOT_FREE && s->slot[i].note == want) {
            sl = &s->slot[i];
            break;
        }
    if (stream_slot_room(sl, len) < 0)
        return NULL;
    sl->state = SLOT_FILLING;
    s->filling = sl;
    *note = &sl->note;
    return sl->buf;
}

/* A slot for a write's next WRITE: the replies taken (also while
 * sending: stream_pump) free theirs; while the window is full, wait for
 * one. NULL with *rc: the wait's -errno, or the error of a WRITE that
 * failed: then the write sends nothing more (on a server that is gone
 * each new WRITE would wait for its own timeout). */
static struct rpc_slot *stream_write_slot(struct nfs_stream *s, const struct stream_io *io, int *rc)
{
    for (;;) {
        stream_reap(s, io);
        if (s->werr) {
            *rc = stream_take_werr(s);
            return NULL;
        }
        struct rpc_slot *sl = stream_free_slot(s, io->wwin);
        if (sl)
            return sl;
        if ((*rc = stream_wait(s, io)) < 0)
            return NULL;
    }
}

/* Send a WRITE of len bytes at offset from slot sl's buffer. */
static int stream_send_write(struct nfs_stream *s, const struct stream_io *io, struct rpc_slot *sl,
                             uint64_t offset, size_t len)
{
    sl->write = true;
    sl->offset = offset;
    sl->len = len;
    int rc = stream_send(s, io, sl);
    return rc < 0 ? rc : stream_pump(io, true);
}

ssize_t stream_pwrite(struct nfs_stream *s, const struct stream_io *io, const void *buf, size_t len,
                      uint64_t offset)
{
    struct rpc_slot *lent =
        s->filling && s->filling->buf == buf && len <= s->filling->cap && len <= io->wchunk
            ? s->filling
            : NULL;
    stream_unfill(s);
    int rc;
    if (s->qcount && (rc = stream_settle(s, io)) < 0) /* read-ahead of this file: drop it */
        return rc;
    stream_reap(s, io);
    if (s->werr)
        return stream_take_werr(s);
    size_t done = 0;
    if (lent) { /* filled in place: sent from there, no copy */
        if ((rc = stream_send_write(s, io, lent, offset, len)) < 0)
            return rc;
        done = len;
    }
    while (done < len) {
        struct rpc_slot *sl = stream_write_slot(s, io, &rc);
        if (!sl)
            return rc;
        size_t n = len - done < io->wchunk ? len - done : io->wchunk;
        if (stream_slot_room(sl, n) < 0)
            return -ENOMEM;
        memcpy(sl->buf, (const char *)buf + done, n);
        sl->note = 0;
        if ((rc = stream_send_write(s, io, sl, offset + done, n)) < 0)
            return rc;
        done += n;
    }
    while (s->busy >= stream_window_now(s, io->wwin)) {
        if ((rc = stream_wait(s, io)) < 0)
            return rc;
        stream_reap(s, io);
    }
    stream_reap(s, io);
    return s->werr ? stream_take_werr(s) : (ssize_t)len;
}

int stream_drain(struct nfs_stream *s, const struct stream_io *io)
{
    stream_unfill(s);
    int rc;
    while (s->busy) {
        if ((rc = stream_wait(s, io)) < 0)
            return rc;
        stream_reap(s, io);
    }
    stream_reap(s, io);
    while (s->qcount)
        stream_pop(s);
    return stream_take_werr(s);
}
