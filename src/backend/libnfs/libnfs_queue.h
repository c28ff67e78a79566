/* libnfs_queue.h — a paced client's READ and WRITE calls in flight on
 * one open libnfs file: up to `depth` calls at once, each sent at the
 * moment its caller asks (never ahead of it, unlike the stream's
 * read-ahead) and ended when its last RPC is answered, in any order.
 * What lets an open-loop client (rate) with nfs_inflight = N keep N
 * calls outstanding, as N processes on one kernel mount would, instead
 * of sending each call only once the one before it was answered.
 *
 * A call of len bytes is ceil(len / chunk) RPCs (rsize / wsize), sent
 * together. A READ's bytes land in the caller's buffer; a WRITE is sent
 * from it (libnfs 4.0 reads it again for a short WRITE's remainder): the
 * buffer must stay untouched until its call has ended. Every RPC's round
 * trip goes to the observer (OP_RPC_READ / OP_RPC_WRITE), as the
 * stream's do.
 *
 * Waits: a call must end by its deadline (io->deadline when it was
 * sent); a wait that fails (deadline, stop signal, lost connection) sets
 * *io->broken, after which the context must never be serviced again and
 * the queue is freed without waiting (its callbacks will never run).
 * Otherwise a queue is freed only once idle. */
#ifndef HERD_LIBNFS_QUEUE_H
#define HERD_LIBNFS_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "libnfs_stream.h" /* struct stream_io: how a file's RPCs are sent */

struct nfs_queue;

/* A queue of up to depth (>= 1) calls; NULL on ENOMEM. */
struct nfs_queue *queue_new(unsigned depth);
void queue_free(struct nfs_queue *q);

/* Calls sent and not yet reaped. */
unsigned queue_busy(const struct nfs_queue *q);

/* Send a read of len bytes at offset into buf (write: of buf), named tag.
 * 0, or -errno when it could not be sent (nothing is outstanding for
 * it); -EBUSY when depth calls are outstanding already. */
int queue_submit(struct nfs_queue *q, const struct stream_io *io, bool write, void *buf, size_t len,
                 uint64_t offset, uint64_t tag);

/* A call that ended: its tag, its result (bytes read, short at the end
 * of the file, or written; or -errno) and when its last reply came
 * (clock_mono). */
struct queue_done {
    uint64_t tag;
    ssize_t result;
    double at;
};

/* Wait until a call ends (1, *done filled; the oldest ended first), or
 * until clock_mono() reads until (> 0; 0: no limit but the calls'
 * deadlines): 0. Nothing outstanding: 0 at once. -errno when the wait
 * failed (*io->broken set; every outstanding call is lost). */
int queue_reap(struct nfs_queue *q, const struct stream_io *io, double until,
               struct queue_done *done);

#endif
