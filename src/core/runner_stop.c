/* runner_stop.c — spreading a caught stop signal to every rank
 * (runner_stop.h). */
#include "runner_stop.h"

#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "signals.h"

#define STOP_TAG 7401
#define STOP_POLL_SECONDS 0.005
#define STOP_SLOTS 16 /* send buffers in turn: a send may still read its own */

static bool stop_check(void *arg)
{
    return runner_stop_in_stage(arg);
}

static void stop_listen(struct runner_stop *s)
{
    s->recv = MPI_REQUEST_NULL;
    if (s->size > 1)
        MPI_Irecv(&s->inbox, 1, MPI_INT, MPI_ANY_SOURCE, STOP_TAG, s->comm, &s->recv);
}

void runner_stop_init(struct runner_stop *s, MPI_Comm comm)
{
    s->comm = comm;
    MPI_Comm_rank(comm, &s->rank);
    MPI_Comm_size(comm, &s->size);
    s->owner = pthread_self();
    s->sent = 0;
    s->heard = 0;
    s->heard_stage = -1;
    s->stage = RUNNER_STAGE_START;
    s->stage_signals = signals_count();
    s->late_copies = 0;
    s->next_poll = 0;
    stop_listen(s);
    signals_stop_check(stop_check, s);
}

/* Tell every other rank of the signals caught since the last time; the
 * sends are small and complete eagerly, so their requests are released
 * at once. */
static void stop_send(struct runner_stop *s, int sig, enum runner_stage stage)
{
    static int payload[STOP_SLOTS];
    static unsigned next;
    int *slot = &payload[next++ % STOP_SLOTS];
    *slot = sig | (int)stage << 8;
    for (int i = 0; i < s->size; i++) {
        if (i == s->rank)
            continue;
        MPI_Request req;
        if (MPI_Isend(slot, 1, MPI_INT, i, STOP_TAG, s->comm, &req) == MPI_SUCCESS)
            MPI_Request_free(&req);
    }
}

/* Every peer's message that arrived, each one heard. */
static void stop_receive(struct runner_stop *s)
{
    while (s->recv != MPI_REQUEST_NULL) {
        int done = 0;
        MPI_Test(&s->recv, &done, MPI_STATUS_IGNORE);
        if (!done)
            return;
        int sig = s->inbox & 0xff, stage = s->inbox >> 8;
        if (!s->heard)
            s->heard = sig > 0 ? sig : 15;
        if (stage > s->heard_stage)
            s->heard_stage = stage;
        stop_listen(s);
    }
}

/* The signals this rank caught in the current stage, less its late copy
 * of a stop the stage before acted on. */
static unsigned stop_own_in_stage(const struct runner_stop *s)
{
    unsigned caught = signals_count() - s->stage_signals;
    return caught > s->late_copies ? caught - s->late_copies : 0;
}

bool runner_stop_poll(struct runner_stop *s)
{
    if (!pthread_equal(pthread_self(), s->owner))
        return s->heard != 0 || signals_caught() != 0;
    unsigned count = signals_count();
    if (count != s->sent && s->size > 1) {
        s->sent = count;
        enum runner_stage stage = s->stage;
        if (stop_own_in_stage(s) == 0 && stage > RUNNER_STAGE_START)
            stage--; /* a late copy: tell the peers it ends nothing new */
        stop_send(s, signals_caught(), stage);
    }
    double now = clock_mono();
    if (now >= s->next_poll) {
        s->next_poll = now + STOP_POLL_SECONDS;
        stop_receive(s);
    }
    return signals_caught() != 0 || s->heard != 0;
}

int runner_stop_signal(const struct runner_stop *s)
{
    int sig = signals_caught();
    return sig ? sig : s->heard;
}

void runner_stop_stage(struct runner_stop *s, enum runner_stage stage)
{
    runner_stop_poll(s); /* what came before belongs to the stage before */
    s->stage = stage;
    s->stage_signals = signals_count();
    s->late_copies = signals_count() == 0 && s->heard != 0;
}

bool runner_stop_in_stage(struct runner_stop *s)
{
    runner_stop_poll(s); /* other threads: the last known answer */
    return stop_own_in_stage(s) != 0 || s->heard_stage >= (int)s->stage;
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
    signals_stop_check(NULL, NULL);
    if (s->recv != MPI_REQUEST_NULL) {
        MPI_Cancel(&s->recv);
        MPI_Wait(&s->recv, MPI_STATUS_IGNORE);
    }
}
