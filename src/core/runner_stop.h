/* runner_stop.h — a stop that reaches every rank: a rank that catches
 * SIGINT/SIGTERM tells the others with a message, and every rank polls
 * for one between operations (rate limited), so the whole run ends what it
 * is doing within a poll interval, not when the slowest rank runs out of
 * work. It works in every stage of a run: start-up (a connect that waits
 * on a frozen server listens too, through signals_stop_requested), the
 * phases, and the clean-up, which a stop that ended the phases does not
 * skip but one that comes during the clean-up ends. Also the barrier that
 * keeps polling while it waits. MPI is called from the thread that made
 * the stop only (MPI_THREAD_FUNNELED); other threads see the last known
 * answer. */
#ifndef HERD_RUNNER_STOP_H
#define HERD_RUNNER_STOP_H

#include <mpi.h>
#include <pthread.h>
#include <stdbool.h>

/* The stages a stop is told apart by (a message says in which it came). */
enum runner_stage { RUNNER_STAGE_START, RUNNER_STAGE_PHASES, RUNNER_STAGE_CLEANUP };

struct runner_stop {
    MPI_Comm comm;
    int rank, size;
    MPI_Request recv;        /* re-posted after every message */
    int inbox;               /* a peer's message: signal | stage << 8 */
    unsigned sent;           /* signals_count() when this rank last told the others */
    volatile int heard;      /* the first signal number a peer sent, 0 = none */
    int heard_stage;         /* the latest stage a peer's stop came in, -1 = none */
    enum runner_stage stage; /* this rank's */
    unsigned stage_signals;  /* signals_count() when the stage began */
    unsigned late_copies;    /* this rank's signals that belong to the stage before (0 or 1) */
    double next_poll;        /* clock_mono() of the next MPI_Test */
    pthread_t owner;         /* the thread allowed to call MPI */
};

/* Start listening on comm, in stage RUNNER_STAGE_START; also makes rpcwait
 * and other waits outside MPI hear a peer's stop (signals_stop_check). */
void runner_stop_init(struct runner_stop *s, MPI_Comm comm);
/* True when any rank (this one included) caught a stop signal. */
bool runner_stop_poll(struct runner_stop *s);
/* The stop signal seen here: this rank's own, else a peer's, else 0. */
int runner_stop_signal(const struct runner_stop *s);
/* Enter a stage: stops from now on count for runner_stop_in_stage. If a
 * peer's stop is known here and this rank has caught none, this rank's
 * first signal of the new stage is taken as its late copy of that stop (a
 * launcher or scheduler signals every rank, not all at one instant) and
 * counts for the stage before: only a further signal ends this one. */
void runner_stop_stage(struct runner_stop *s, enum runner_stage stage);
/* True when a stop came, here or at any rank, during the current stage
 * (from a thread other than the owner: as far as known, no MPI call). */
bool runner_stop_in_stage(struct runner_stop *s);
/* MPI_Barrier on s->comm that still sends and hears stops while waiting. */
void runner_stop_barrier(struct runner_stop *s);
/* The same barrier on another communicator (a subset of s's ranks: a
 * ladder step's active ranks), still hearing a stop on s. */
void runner_stop_barrier_on(struct runner_stop *s, MPI_Comm comm);
void runner_stop_free(struct runner_stop *s);

#endif
