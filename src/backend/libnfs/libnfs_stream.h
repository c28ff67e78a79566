/* libnfs_stream.h — READ and WRITE RPCs in flight on one open libnfs
 * file, as a kernel NFS client keeps them: up to `inflight` calls of one
 * chunk (rsize / wsize) each, so that a rank's throughput is not capped at
 * chunk / round trip.
 *
 * Reads: a read is cut into chunks sent together; within a range the
 * caller announced (stream_advise: "I will read this in order") the stream
 * also reads ahead, never past the range, so that the next read finds its
 * data arrived or on the way. Data is handed out in file order; a READ
 * whose range lies inside the read waiting for it is answered straight
 * into the caller's buffer, and replies that come between two reads wait
 * in the socket for the next one, so that most bytes are copied once.
 * stream_pread_lend goes further: a read that one slot's reply holds
 * points at it and copies nothing.
 * Writes are copied into slots: libnfs 4.0 reads the caller's buffer
 * again after the call (it re-sends a short WRITE's remainder from it),
 * so the bytes must stay until the WRITE is answered. A caller that fills
 * a slot itself (stream_write_buffer) saves that copy.
 * Writes: a write is copied into chunks and sent; it returns once at most
 * inflight - 1 WRITEs are still outstanding (inflight 1: when its own are
 * answered, a synchronous write). A WRITE that fails after its write
 * returned is reported once, by the file's next read, write or
 * stream_drain (a close drains), as a kernel client reports write-back
 * errors. A read first lands the WRITEs on the way or answered but not
 * taken (their replies may come during any call on the context).
 *
 * How many RPCs a stream keeps on the way is its rank's window for that
 * direction (struct stream_window, libnfs_window.h): inflight, or, when
 * the window probes, as many as paid on this server and link. A READ answered
 * before the one the caller waits for leaves the window at once and
 * waits in its slot to be handed out, as a plain loop of libnfs calls
 * sends a new READ for every reply: a stream has 2 x inflight + 1 slots
 * of a chunk each, allocated as they are first needed.
 *
 * Every RPC's round trip (sent to answered) goes to the observer's
 * OP_RPC_READ / OP_RPC_WRITE histogram and counts.
 *
 * Memory: a callback of an outstanding RPC writes into the stream. So a
 * stream is freed only when idle (stream_drain succeeded) or when its
 * context will never be serviced again (after a failed wait, which sets
 * *broken: the caller must then never service or destroy the context,
 * only close its socket). Every wait of a call ends by the call's
 * deadline (-ETIMEDOUT: io->deadline, op_timeout after the backend call
 * began, however many replies it waits for) or at a stop signal
 * (-EINTR); a write sends nothing more once one of its WRITEs failed. */
#ifndef HERD_LIBNFS_STREAM_H
#define HERD_LIBNFS_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "libnfs_window.h"

struct nfs_context;
struct nfsfh;
struct nfs_stream;

/* What an RPC's sender calls back with: the bytes written or read (a
 * READ's at data, valid only during the call), or a negative result for
 * rpc_errno; libnfs's nfs_cb. */
typedef void stream_cb(int err, struct nfs_context *nfs, void *data, void *priv);

/* The context a call works on and how. rpc_errno turns a failed RPC's
 * result into -errno (write: the call was a WRITE of len bytes). send,
 * when set, sends each RPC instead of libnfs's nfs_pread_async /
 * nfs_pwrite_async on fh (herd's own NFSv4 READs and WRITEs: send_arg is
 * their file); 0, or -errno when nothing was sent. A wait that failed
 * sets *broken and *why (its status name). */
struct stream_io {
    struct nfs_context *nfs;
    struct nfsfh *fh;
    int (*send)(void *send_arg, struct nfs_context *nfs, bool write, uint64_t offset, size_t len,
                const void *buf, stream_cb *cb, void *priv);
    void *send_arg;
    size_t rchunk, wchunk; /* bytes per READ / WRITE RPC, > 0 */
    double deadline;       /* when the call must end (clock_mono, rpcwait.h); 0: never */
    const struct rpc_observer *obs;
    struct stream_window *rwin, *wwin; /* the rank's READ / WRITE windows */
    int (*rpc_errno)(void *arg, int rc, bool write, size_t len);
    void *arg;
    bool *broken;
    const char **why;
};

/* A stream of up to inflight (>= 1) RPCs, the windows' max; NULL on ENOMEM. Buffers are
 * allocated on first use. */
struct nfs_stream *stream_new(unsigned inflight);

/* Free s. Only when idle or its context is broken (see above). */
void stream_free(struct nfs_stream *s);

/* The caller will read [offset, offset + length) in order. */
void stream_advise(struct nfs_stream *s, uint64_t offset, uint64_t length);

/* Like pread: bytes read (short at the end of the file) or -errno. */
ssize_t stream_pread(struct nfs_stream *s, const struct stream_io *io, void *buf, size_t len,
                     uint64_t offset);

/* Like stream_pread, but when one READ's reply, already in its slot,
 * holds all len bytes, *data points at them there instead of copying
 * them into buf (the slot stays queued, unchanged, until the next call
 * on s); otherwise *data = buf, as stream_pread fills it. */
ssize_t stream_pread_lend(struct nfs_stream *s, const struct stream_io *io, void *buf, size_t len,
                          uint64_t offset, const void **data);

/* A free slot's buffer (len bytes, at most one WRITE's chunk) for the
 * caller to fill and pass to the next stream_pwrite, which sends it from
 * there without a copy; NULL when none is free within the window now,
 * reads are queued or an error waits to be reported (the caller then
 * writes from its own memory). *note points at the slot's word for the
 * caller: what the caller last stored there, or 0 once the stream changed
 * the buffer (a READ into it, a short WRITE's remainder moved down, a
 * larger buffer) or never had it. A free slot whose note is want is taken
 * first. The loan ends at the next call on s. */
void *stream_write_buffer(struct nfs_stream *s, const struct stream_io *io, size_t len,
                          uint64_t want, uint64_t **note);

/* Like pwrite: len or -errno (this write's, or an earlier one's that
 * failed after its write returned). */
ssize_t stream_pwrite(struct nfs_stream *s, const struct stream_io *io, const void *buf, size_t len,
                      uint64_t offset);

/* Wait until no RPC is outstanding: 0, the first deferred write error, or
 * -errno of a failed wait (then *io->broken). */
int stream_drain(struct nfs_stream *s, const struct stream_io *io);

#endif
