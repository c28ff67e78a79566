/* progress.h — the phase's progress on rank 0's stderr, for all ranks
 * together: a bar on a terminal, a line every few seconds in a batch log,
 * and one closing line per phase (bytes or calls, rate, % done).
 *
 * Every I/O rank counts its own bytes (its progress_count, any thread) and, for
 * phases without bytes, its calls (read from the workload's op_count by
 * the main thread). From the main thread, between operations, each rank
 * other than 0 sends its counts to rank 0 at most once a second
 * (MPI_Isend, one in flight); rank 0 keeps one MPI_Irecv posted and tests
 * it at most every 50 ms. No call blocks an operation; helper threads
 * never call MPI (MPI_THREAD_FUNNELED). After the phase's closing
 * barrier, progress_finish (a collective) sums the exact counts, prints
 * the closing line and receives every message still on its way, so no
 * message outlives its phase. */
#ifndef HERD_PROGRESS_H
#define HERD_PROGRESS_H

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "progress_count.h"

struct progress {
    struct progress_count count; /* what the workloads see: progress_begin sets it */
    const char *phase;
    int index;             /* the phase's, in each message */
    uint64_t total;        /* all ranks' bytes; 0 = counted in calls */
    _Atomic uint64_t done; /* this rank's bytes */
    const uint64_t *calls; /* this rank's calls per op (OP_COUNT); NULL = bytes only */
    double t_begin, t_last, t_poll, t_send;
    bool tty;
    bool quiet; /* the caller's, before progress_begin: count and send, print nothing (-q) */
    MPI_Comm comm;
    int rank, size;
    int workers;     /* ranks doing the work, as printed */
    pthread_t owner; /* the only thread that calls MPI */
    MPI_Request send;
    double send_buf[4]; /* index, rank, bytes, calls */
    uint64_t sent;
    MPI_Request recv; /* rank 0 */
    double recv_buf[4];
    uint64_t received;
    double *latest; /* rank 0: [size][2] bytes, calls of each rank's last message */
};

/* The display whose counter the workloads were handed. */
static inline struct progress *progress_of(struct progress_count *count)
{
    return (struct progress *)((char *)count - offsetof(struct progress, count));
}

/* Every I/O rank, at the phase's start. workers: the ranks that do the
 * phase's work (a ladder step's active ranks; the others count nothing);
 * total_per_rank: bytes one of them moves (0: show calls/s); calls: the
 * rank's op_count array, read only by this thread, or NULL. */
void progress_begin(struct progress *p, MPI_Comm comm, const char *phase, int index, int workers,
                    uint64_t total_per_rank, const uint64_t *calls);
/* Send / receive / print as due; does nothing outside the owner thread. */
void progress_poll(struct progress *p);
/* This rank's work is done (nothing printed). */
void progress_end(struct progress *p);
/* Collective on comm after the phase's closing barrier: rank 0 prints the
 * phase's line with every rank's exact counts; all messages are received. */
void progress_finish(struct progress *p);

#endif
