/* runner_stop.c — spreading a caught stop signal to every rank
 * (runner_stop.h). */
#include "runner_stop.h"

#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "signals.h"

#define STOP_TAG 7401
#define STOP_POLL_SECONDS 0.005

void runner_stop_init(struct runner_stop *s, MPI_Comm comm)
{
    s->comm = comm;
    MPI_Comm_rank(comm, &s->rank);
    MPI_Comm_size(comm, &s->size);
    s->owner = pthread_self();
    s->sent = false;
    s->heard = 0;
    s->next_poll = 0;
    s->recv = MPI_REQUEST_NULL;
    if (s->size > 1)
        MPI_Irecv(&s->inbox, 1, MPI_INT, MPI_ANY_SOURCE, STOP_TAG, comm, &s->recv);
}

/* Tell every other rank, once; the sends are small and complete eagerly,
 * so their requests are released at once. */
static void stop_send(struct runner_stop *s, int sig)
{
    static int payload[1];
    payload[0] = sig;
    for (int i = 0; i < s->size; i++) {
        if (i == s->rank)
            continue;
        MPI_Request req;
        if (MPI_Isend(payload, 1, MPI_INT, i, STOP_TAG, s->comm, &req) == MPI_SUCCESS)
            MPI_Request_free(&req);
    }
    s->sent = true;
}

bool runner_stop_poll(struct runner_stop *s)
{
    if (!pthread_equal(pthread_self(), s->owner))
        return s->heard != 0 || signals_caught() != 0;
    int sig = signals_caught();
    if (sig && !s->sent && s->size > 1)
        stop_send(s, sig);
    if (sig)
        return true;
    if (s->heard)
        return true;
    if (s->recv == MPI_REQUEST_NULL)
        return false;
    double now = clock_mono();
    if (now < s->next_poll)
        return false;
    s->next_poll = now + STOP_POLL_SECONDS;
    int done = 0;
    MPI_Test(&s->recv, &done, MPI_STATUS_IGNORE);
    if (done)
        s->heard = s->inbox > 0 ? s->inbox : 15;
    return done != 0;
}

int runner_stop_signal(const struct runner_stop *s)
{
    int sig = signals_caught();
    return sig ? sig : s->heard;
}

#define RUNNER_STOP_NAP_MIN_NS 50000L    /* 50 us */
#define RUNNER_STOP_NAP_MAX_NS 20000000L /* 20 ms */

void runner_stop_barrier(struct runner_stop *s)
{
    runner_stop_barrier_on(s, s->comm);
}

void runner_stop_barrier_on(struct runner_stop *s, MPI_Comm comm)
{
    MPI_Request req;
    if (MPI_Ibarrier(comm, &req) != MPI_SUCCESS) {
        MPI_Barrier(comm);
        return;
    }
    /* The pause grows from 50 us to 20 ms: a rank that waits long (one
     * that finished early, an inactive rank of a ladder step) must not
     * take the CPU from the ranks still working on an oversubscribed node
     * (measured: 19 ranks polling every 50 us made a 1-rank step of a
     * 20-rank ladder 5x slower); a short wait still ends within 50 us. */
    struct timespec nap = {0, RUNNER_STOP_NAP_MIN_NS};
    for (;;) {
        int done = 0;
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (done)
            return;
        s->next_poll = 0; /* waiting anyway: hear a stop at once */
        runner_stop_poll(s);
        nanosleep(&nap, NULL);
        if (nap.tv_nsec < RUNNER_STOP_NAP_MAX_NS)
            nap.tv_nsec =
                nap.tv_nsec * 2 < RUNNER_STOP_NAP_MAX_NS ? nap.tv_nsec * 2 : RUNNER_STOP_NAP_MAX_NS;
    }
}

void runner_stop_free(struct runner_stop *s)
{
    if (s->recv != MPI_REQUEST_NULL) {
        MPI_Cancel(&s->recv);
        MPI_Wait(&s->recv, MPI_STATUS_IGNORE);
    }
}
