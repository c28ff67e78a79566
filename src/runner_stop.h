/* runner_stop.h — a stop that reaches every rank: a rank that catches
 * SIGINT/SIGTERM tells the others with a message, and every rank polls
 * for one between operations (rate limited), so the whole run ends its
 * phase within a poll interval, not when the slowest rank runs out of
 * work. Also the barrier that keeps polling while it waits. MPI is called
 * from the thread that made the stop only (MPI_THREAD_FUNNELED); other
 * threads see the last known answer. */
#ifndef HERD_RUNNER_STOP_H
#define HERD_RUNNER_STOP_H

#include <mpi.h>
#include <pthread.h>
#include <stdbool.h>

struct runner_stop {
    MPI_Comm comm;
    int rank, size;
    MPI_Request recv;   /* posted for the whole run */
    int inbox;          /* the signal number a peer sent */
    bool sent;          /* this rank told the others */
    volatile int heard; /* a peer's signal number, 0 = none */
    double next_poll;   /* clock_mono() of the next MPI_Test */
    pthread_t owner;    /* the thread allowed to call MPI */
};

void runner_stop_init(struct runner_stop *s, MPI_Comm comm);
/* True when any rank (this one included) caught a stop signal. */
bool runner_stop_poll(struct runner_stop *s);
/* The stop signal seen here: this rank's own, else a peer's, else 0. */
int runner_stop_signal(const struct runner_stop *s);
/* MPI_Barrier on s->comm that still sends and hears stops while waiting. */
void runner_stop_barrier(struct runner_stop *s);
/* The same barrier on another communicator (a subset of s's ranks: a
 * ladder step's active ranks), still hearing a stop on s. */
void runner_stop_barrier_on(struct runner_stop *s, MPI_Comm comm);
void runner_stop_free(struct runner_stop *s);

#endif
