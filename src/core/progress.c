/* progress.c — all ranks' progress on rank 0's stderr (see progress.h). */
#include "progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "clock.h"
#include "ops.h"
#include "units.h"

#define PROGRESS_TTY_EVERY 0.2
#define PROGRESS_LOG_EVERY 5.0
#define PROGRESS_SEND_EVERY 1.0
#define PROGRESS_POLL_EVERY 0.05
#define PROGRESS_TAG 7402

static uint64_t progress_calls(const struct progress *p)
{
    uint64_t n = 0;
    for (int op = 0; p->calls && op < OP_COUNT; op++)
        n += op_is_call((enum op)op) ? p->calls[op] : 0;
    return n;
}

static void progress_post_recv(struct progress *p)
{
    if (MPI_Irecv(p->recv_buf, 4, MPI_DOUBLE, MPI_ANY_SOURCE, PROGRESS_TAG, p->comm, &p->recv) !=
        MPI_SUCCESS)
        p->recv = MPI_REQUEST_NULL;
}

/* progress_count.add: bytes done, from any thread. */
static void progress_count_bytes(struct progress_count *count, uint64_t bytes)
{
    struct progress *p = progress_of(count);
    atomic_fetch_add(&p->done, bytes);
    progress_poll(p);
}

void progress_begin(struct progress *p, MPI_Comm comm, const char *phase, int index, int workers,
                    uint64_t total_per_rank, const uint64_t *calls)
{
    p->count.add = progress_count_bytes;
    p->phase = phase;
    p->index = index;
    p->comm = comm;
    MPI_Comm_rank(comm, &p->rank);
    MPI_Comm_size(comm, &p->size);
    p->workers = workers;
    p->total = total_per_rank * (uint64_t)workers;
    atomic_store(&p->done, 0);
    p->calls = calls;
    p->t_begin = p->t_last = p->t_poll = p->t_send = clock_mono();
    p->tty = p->rank == 0 && isatty(STDERR_FILENO);
    p->owner = pthread_self();
    p->send = p->recv = MPI_REQUEST_NULL;
    p->sent = p->received = 0;
    p->latest = NULL;
    if (p->rank == 0 && p->size > 1) {
        p->latest = calloc((size_t)p->size * 2, sizeof *p->latest);
        if (p->latest)
            progress_post_recv(p);
    }
}

/* Rank 0: bytes and calls of all ranks as last heard. */
static void progress_sum(const struct progress *p, double *bytes, double *calls)
{
    *bytes = (double)atomic_load(&p->done);
    *calls = (double)progress_calls(p);
    for (int i = 1; p->latest && i < p->size; i++) {
        *bytes += p->latest[2 * i];
        *calls += p->latest[2 * i + 1];
    }
}

static void progress_show(const struct progress *p, double bytes, double calls, double elapsed,
                          bool final)
{
    if (p->quiet)
        return;
    double frac = final ? 1.0 : 0.0;
    if (p->total)
        frac = bytes / (double)p->total;
    frac = frac > 1.0 ? 1.0 : frac;
    /* A live rate while it runs; the closing line gives the amount only:
     * the phase's rate is the phase line's (and the table's), over its
     * own time (summary.h), not this wall clock. */
    char what[64], done[32];
    bool in_bytes = p->total || !p->calls;
    if (in_bytes)
        units_format_human(bytes, done, sizeof done);
    else
        snprintf(done, sizeof done, "%.0f calls", calls);
    if (final)
        snprintf(what, sizeof what, "%s", done);
    else if (in_bytes)
        snprintf(what, sizeof what, "%s, %.1f MiB/s", done,
                 elapsed > 0 ? bytes / elapsed / 1048576.0 : 0.0);
    else
        snprintf(what, sizeof what, "%s, %.0f calls/s", done, elapsed > 0 ? calls / elapsed : 0.0);
    if (p->tty) {
        char bar[31];
        int fill = (int)(frac * 30);
        for (int i = 0; i < 30; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[30] = '\0';
        fprintf(stderr, "\r%-16s [%s] %3.0f%% %d rank%s: %s %.1fs%s", p->phase, bar, frac * 100,
                p->workers, units_plural(p->workers), what, elapsed, final ? "\n" : "");
    } else if (p->total) {
        fprintf(stderr, "herd: %s: %d rank%s %s%.0f%% (%s) %s %.2fs%s\n", p->phase, p->workers,
                units_plural(p->workers), final ? "done, " : "", frac * 100, what,
                final ? "in" : "after", elapsed, final ? " wall" : "");
    } else {
        fprintf(stderr, "herd: %s: %d rank%s %s(%s) %s %.2fs%s\n", p->phase, p->workers,
                units_plural(p->workers), final ? "done " : "", what, final ? "in" : "after",
                elapsed, final ? " wall" : "");
    }
    fflush(stderr);
}

/* Rank 0: take every message that has arrived. */
static void progress_receive(struct progress *p)
{
    for (;;) {
        int done = 0;
        if (p->recv == MPI_REQUEST_NULL ||
            MPI_Test(&p->recv, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || !done)
            return;
        p->received++;
        int from = (int)p->recv_buf[1];
        if ((int)p->recv_buf[0] == p->index && from > 0 && from < p->size) {
            p->latest[2 * from] = p->recv_buf[2];
            p->latest[2 * from + 1] = p->recv_buf[3];
        }
        progress_post_recv(p);
    }
}

/* Other ranks: send the counts when the last message has gone. */
static void progress_send(struct progress *p)
{
    int done = 1;
    if (p->send != MPI_REQUEST_NULL && MPI_Test(&p->send, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        return;
    if (!done)
        return;
    p->send_buf[0] = p->index;
    p->send_buf[1] = p->rank;
    p->send_buf[2] = (double)atomic_load(&p->done);
    p->send_buf[3] = (double)progress_calls(p);
    if (MPI_Isend(p->send_buf, 4, MPI_DOUBLE, 0, PROGRESS_TAG, p->comm, &p->send) == MPI_SUCCESS)
        p->sent++;
    else
        p->send = MPI_REQUEST_NULL;
}

void progress_poll(struct progress *p)
{
    if (!pthread_equal(pthread_self(), p->owner))
        return;
    double now = clock_mono();
    if (now - p->t_poll < PROGRESS_POLL_EVERY)
        return;
    p->t_poll = now;
    if (p->rank != 0) {
        if (now - p->t_send >= PROGRESS_SEND_EVERY) {
            p->t_send = now;
            progress_send(p);
        }
        return;
    }
    progress_receive(p);
    if (now - p->t_last >= (p->tty ? PROGRESS_TTY_EVERY : PROGRESS_LOG_EVERY)) {
        p->t_last = now;
        double bytes, calls;
        progress_sum(p, &bytes, &calls);
        progress_show(p, bytes, calls, now - p->t_begin, false);
    }
}

void progress_end(struct progress *p)
{
    (void)p;
}

void progress_finish(struct progress *p)
{
    uint64_t mine[3] = {atomic_load(&p->done), progress_calls(p), p->sent}, all[3] = {0, 0, 0};
    double took = clock_mono() - p->t_begin, slowest = took;
    bool ok = MPI_Reduce(mine, all, 3, MPI_UINT64_T, MPI_SUM, 0, p->comm) == MPI_SUCCESS &&
              MPI_Reduce(&took, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, p->comm) == MPI_SUCCESS;
    if (p->rank == 0) {
        /* Every message was sent before the closing barrier: wait for it. */
        while (ok && p->recv != MPI_REQUEST_NULL && p->received < all[2]) {
            if (MPI_Wait(&p->recv, MPI_STATUS_IGNORE) != MPI_SUCCESS)
                break;
            p->received++;
            if (p->received < all[2])
                progress_post_recv(p);
        }
        if (p->recv != MPI_REQUEST_NULL) {
            MPI_Cancel(&p->recv);
            MPI_Wait(&p->recv, MPI_STATUS_IGNORE);
        }
        free(p->latest);
        p->latest = NULL;
        if (ok)
            progress_show(p, (double)all[0], (double)all[1], slowest, true);
    } else if (p->send != MPI_REQUEST_NULL) {
        if (ok)
            MPI_Wait(&p->send, MPI_STATUS_IGNORE);
        else
            MPI_Request_free(&p->send);
    }
}
