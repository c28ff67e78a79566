/* runner_monitor.h — the MPI side of monitoring: which ranks are monitor
 * ranks (monitor_host / monitor_rank), the loop those ranks run instead of
 * phases, and the messages I/O rank 0 sends them (start sampling before
 * the first phase's start and say when the baseline is in, hand over the
 * samples after each phase, exit). Waiting ranks poll with short sleeps
 * rather than MPI's busy wait, so the monitor host's CPU is not spent on
 * waiting for messages. */
#ifndef HERD_RUNNER_MONITOR_H
#define HERD_RUNNER_MONITOR_H

#include <mpi.h>
#include <stdbool.h>

#include "clock.h"
#include "job.h"
#include "monitor.h"
#include "runner_stop.h"

struct monitor_link {
    int nmonitors;   /* ranks doing no I/O */
    int sampler;     /* world rank that samples, -1 = none */
    int io_root;     /* world rank of I/O rank 0 */
    int *monitors;   /* world ranks of all monitor ranks */
    bool is_monitor; /* this rank is one */
    char sampler_host[MONITOR_HOST_MAX];
    struct monitor *scrape;     /* I/O rank 0: the monitor_url scraper, if any */
    struct monitor_batch early; /* I/O rank 0: notes from the start, for the first rows */
    bool ready_pending;         /* I/O rank 0: the sampler's baseline answer is still due */
};

/* Collective over MPI_COMM_WORLD: decide the roles from the run's
 * monitor keys in g. Returns 0, or -1 on every rank with err (for world
 * rank 0 to print) when the keys cannot be met. */
int runner_monitor_roles(const struct run_settings *g, const char *hostname, struct monitor_link *l,
                         char *err, size_t errlen);

/* A monitor rank's whole run: wait for messages from I/O rank 0 and
 * answer them; returns the exit code it sends at the end. */
int runner_monitor_serve(const struct monitor_link *l, const struct run_settings *g,
                         const struct clock *clock, const char *hostname);

/* Whether the run's monitor keys in g ask for any monitor (same on every rank). */
bool runner_monitor_wanted(const struct monitor_link *l, const struct run_settings *g);
/* I/O rank 0, before the first phase's start is announced (phase: its
 * name; g: the run's monitor keys): start the sampler rank's and the scraper's sampling now, on
 * one schedule of the common clock, and wait until each source has its
 * baseline reading, for a bounded time (runner_monitor.c:
 * BASELINE_WAIT_*) or until a stop. A source still without one is noted (once, in the rows
 * the first collect returns): the first phase then starts without it.
 * Returns 0 or -1 with err (a bad monitor_url). */
int runner_monitor_begin(struct monitor_link *l, const struct run_settings *g, const char *phase,
                         const struct clock *clock, struct runner_stop *stop, char *err,
                         size_t errlen);
/* I/O rank 0: move every row sampled so far into out; final stops the
 * sampling. */
void runner_monitor_collect(struct monitor_link *l, bool final, struct monitor_batch *out);
/* I/O rank 0: tell every monitor rank to return exit_code; frees l. */
void runner_monitor_release(struct monitor_link *l, int exit_code);

#endif
