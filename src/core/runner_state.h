/* runner_state.h — one run's state on one rank (struct run) and what the
 * runner's files share: runner.c (set-up, the phase loop, the stages),
 * runner_gather.c (records and monitor rows to rank 0), runner_cleanup.c,
 * runner_ladder.c (a ladder step's ranks) and runner_outputs.c (results
 * file, summary, exit code). Private to src/core/. */
#ifndef HERD_RUNNER_STATE_H
#define HERD_RUNNER_STATE_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "client_stats.h"
#include "clock.h"
#include "job.h"
#include "model.h"
#include "runner_monitor.h"
#include "runner_stop.h"
#include "safeout.h"
#include "summary.h"
#include "workload.h"

struct runner_opts;
struct results;

#define CLOCKSYNC_ROUNDS 10
/* The clean-up of a run (keep = no) stops after this long: a stalled
 * server cannot keep herd from ending; what is left is listed. */
#define CLEANUP_SECONDS 60.0
/* Exit code of a run whose results file is missing phases (docs). */
#define EXIT_RESULTS_LOST 4

/* HERD_SERVER_FS: a file system's name, at most this long less one. */
#define RUN_SERVER_FS_MAX 33

/* Rank 0's recording of the run (the other ranks leave it empty): where
 * the results go, what they hold so far, the phases missing there, and
 * what the run's header and summary say of the server and the start. */
struct run_recording {
    struct safeout out;         /* the results file's place (safeout.h) */
    struct safeout json;        /* the --json summary's place */
    struct results *results;    /* the results file, open */
    char lost[8][JOB_NAME_MAX]; /* phases not in the results file (first 8) */
    int nlost;
    struct summary_line *lines; /* the summary's line of each phase */
    int nlines;
    struct monitor_sample *samples; /* every server sample so far */
    size_t nsamples;
    struct monitor_process *procs; /* every named process's row so far */
    size_t nprocs;
    char server_fs[RUN_SERVER_FS_MAX]; /* HERD_SERVER_FS, "" = not given */
    char server_disk[96];              /* HERD_SERVER_DISK, "" = not given */
    struct summary_cpu_host cpu_host;  /* the host srv cpu is of, its client ranks */
    double startup_seconds;            /* MPI_Init to the first phase's start */
    char ladder_reason[STEP_NOTE_MAX]; /* why a stop_when ended a ladder, for its steps not run */
};

/* Everything one rank knows about the run as a whole: the phase engine
 * every rank runs, and (rec) rank 0's recording. */
struct run {
    const struct job *job;
    const struct runner_opts *opts;
    MPI_Comm comm;  /* the I/O ranks (monitor ranks are not in it) */
    int rank, size; /* in comm */
    char run_id[64];
    char rundir[HERD_PATH_MAX];
    struct clock clock;
    double start_margin;    /* seconds between announcing and starting a phase */
    double clock_error_max; /* largest offset error bound of any rank */
    int host;               /* this rank's host index */
    char hostname[RESULTS_HOST_MAX];
    int *rank_host; /* host index of every rank */
    int nhosts;
    const struct backend_ops *be;
    void *be_ctx;                   /* the first connected client's context: the run's own calls */
    int clients;                    /* clients_per_rank (K) */
    void **client_ctx;              /* [clients]: each client's context, NULL while not connected */
    char output[JOB_PATH_MAX + 96]; /* results file path */
    bool rundir_held;               /* rank 0 claimed the run directory: released at the end */
    bool rundir_locked;             /* ... and holds its lock file (RUNDIR_UNLOCKED: not) */
    bool rundir_ours;               /* this run made the run directory */
    struct claims claims;           /* what this run made, for the clean-up */
    struct runner_stop stop;
    struct run_recording rec; /* rank 0 only */
    uint64_t total_errors, total_verify;
    bool cleanup_unfinished; /* the clean-up was stopped or failed to remove something */
    struct monitor_link mon;
    double epoch_unix;
    bool client_stats;                  /* this rank reads its host's NFS client counters */
    char mount_point[RESULTS_HOST_MAX]; /* of the target, when on a kernel NFS mount */
    int *spread;        /* each rank's place in the host-spread order (ladder steps) */
    MPI_Comm step_comm; /* a ladder step's active ranks; MPI_COMM_NULL otherwise */
    /* The job as run (ladders expanded): a rate_curve step's rate is set
     * here before it runs, from the curve's first step. */
    struct job *steps;
    char ladder_stopped[JOB_NAME_MAX]; /* the ladder a stop_when ended ("" none) */
    double curve_max;                  /* a rate_curve's closed-loop units/s per client */
};

/* One phase of a rank's clients (runner_clients.c). */
enum client_run { CLIENT_IDLE, CLIENT_ACTIVE, CLIENT_FAILED };
struct client_phase {
    int n;                /* the rank's clients */
    int running;          /* of them, those that run the phase (its barrier's count) */
    int arrived;          /* at the barrier now */
    unsigned gen;         /* the barrier's rounds */
    int failed, prep_err; /* clients whose prepare failed; the first error */
    struct run *r;
    struct phase_ctx *base;    /* the rank's own: the tables the gather takes */
    struct phase_ctx *c;       /* [n] */
    struct errtab *errors;     /* [n] */
    struct inflight *inflight; /* [n], for the watchdog */
    struct hist *hist;         /* [n x OP_COUNT] */
    enum client_run *runs;     /* [n] */
    const struct workload_ops *wl;
    int (*prepare)(struct run *r, const struct workload_ops *wl, struct phase_ctx *c);
};

/* Rank 0's copy of everything the ranks measured in a phase. */
struct gathered {
    double *starts;           /* each rank's achieved start */
    struct rank_record *rows; /* nranks x iterations */
    size_t nrows;
    struct err_entry *errs;
    size_t nerrs;
    struct stuck_entry *stuck;
    size_t nstuck;
    struct hold *holds;
    size_t nholds;
    struct op_stats *ops;
    struct meta_step_record *meta_steps; /* meta phases: each rank's steps */
    size_t nmeta_steps;
    struct hist *merged; /* OP_COUNT histograms summed over ranks */
    bool ok;             /* everything arrived */
};

/* How a phase ended, as every rank agrees: the stop signal any rank saw
 * (a collective) and whether the deadline cut work short anywhere. */
struct phase_outcome {
    int signal;
    bool deadline;
};

/* runner_gather.c */
/* Whether every rank of comm says ok (a collective). */
bool run_all_ok(const struct run *r, bool ok);
/* An MPI call that failed: say which, once per call site's failure. */
bool run_mpi_ok(int rc, const char *what);
/* Every rank learns every rank's host index (hosts numbered in order of
 * their lowest rank); rank 0 also gets the host and rank tables. */
int run_map_hosts(struct run *r, struct host_info **hosts_out, struct rank_info **ranks_out);
/* The rank whose file this rank reads with read_from = neighbor: the rank
 * with the same position on the next host (IOR's -C with tasks per node),
 * or the next rank when every rank shares one host. */
int run_neighbor(const struct run *r);
/* Gather every rank's array of n items of `size` bytes to rank 0, which
 * gets them concatenated in rank order (malloc'd, *total items). Counts
 * are checked against MPI's int before anything is sent, and rank 0's
 * buffer is allocated before any rank sends: on failure every rank
 * returns NULL with *total 0 and *ok false (a collective). */
void *run_gather(const struct run *r, const void *mine, size_t n, size_t size, size_t *total,
                 bool *ok);
/* How the phase in c ended, agreed by every rank (a collective). */
struct phase_outcome run_agree_outcome(struct run *r, const struct phase_ctx *c);
/* After a phase: gather, agree, decide, record. Returns how it ended. */
struct phase_outcome run_collect(struct run *r, const struct phase *ph, struct phase_ctx *c,
                                 const struct stuck_entry *stuck_mine, size_t nstuck_mine,
                                 struct phase_summary *sum, double started);
/* This host's NFS client counters now (NULL when not on a kernel NFS
 * mount or unreadable). */
struct mountstats *run_client_snapshot(const struct run *r);
/* After a phase: every host's client counters to rank 0, then /monitor.
 * After the last phase (final) the sampling stops. */
void run_phase_monitor(struct run *r, int index, const struct phase_summary *sum,
                       struct mountstats *before, bool final);

/* Rank 0: the monitor's last readings, when the last phase that ran was
 * not the job's last (the ladder steps after it did not run). */
void run_monitor_final(struct run *r);

/* runner_cleanup.c */
/* Remove what this run made (keep = no), and only that: every rank ORs
 * its claims into everyone's, each workload removes its claimed files
 * (pass 0) and then directories (pass 1), and rank 0 the claimed fileset
 * directories. Bounded by CLEANUP_SECONDS and by a signal that comes
 * during the clean-up (one that ended the phases, or a rank's late copy
 * of it, does not skip it: runner_stop.h). What
 * could not be removed is gathered to rank 0 (*left, *nleft). */
void run_cleanup(struct run *r, struct err_entry **left, size_t *nleft);
/* Rank 0: say what the clean-up left, on stderr and in the results. */
void run_report_cleanup(struct run *r, const struct err_entry *left, size_t nleft);

/* runner_clients.c */
/* Connect the rank's clients (K: the run's clients_per_rank), on
 * fibers when K > 1, each under its own name. How many connected; the
 * first error into *first_err (0: none). be_ctx: the first connected. */
int run_clients_connect(struct run *r, int *first_err);
void run_clients_disconnect(struct run *r);
/* Before the run directory is made or looked for: the rank's first
 * client (be_ctx) gets a connection that answers (a URL's target; a
 * directory path has none to lose). A server past its
 * connection limit may have dropped it since it connected (the kernel
 * nfsd closes its oldest as each new one comes): a look at the run
 * directory that finds the connection lost is made again on a fresh one,
 * every RUN_REACH_PAUSE seconds, until op_timeout or a stop. The calls
 * that follow say what still fails. */
#define RUN_REACH_PAUSE 0.05
void run_client_reach(struct run *r);
/* How many of the rank's clients hold an open connection now (the
 * backend's connected: looked at without waiting), -1 when the backend
 * cannot tell. */
int run_clients_open(const struct run *r);
/* The clients' contexts of a phase from the rank's base (records:
 * K x iterations rows, filled in rank, client, iteration and host); the
 * first nactive clients do I/O. 0 or -ENOMEM (then run_clients_end). */
int run_clients_begin(struct run *r, struct phase_ctx *base, int nactive, struct client_phase *cp);
/* Every active client reconnects if it must and runs prepare (runner.c's:
 * backend options, the workload's prepare, prime). The rank's result:
 * 0 when the clients that are ready may run, else an error. */
int run_clients_prepare(struct client_phase *cp, const struct workload_ops *wl,
                        int (*prepare)(struct run *r, const struct workload_ops *wl,
                                       struct phase_ctx *c));
/* The ready clients run the phase (timed), each on its fiber. */
void run_clients_work(struct client_phase *cp);
/* finish on every client, their tables into the base's. */
void run_clients_end(struct client_phase *cp);
/* cp's memory (after run_clients_begin, whatever it returned). */
void run_clients_free(struct client_phase *cp);

/* runner_ladder.c */
/* Before phase index: true when it is a step of a ladder that a stop
 * rule ended (rank 0 records it as not run), or a rate_curve step whose
 * maximum did no work; else sets a rate_curve step's rate. Every rank
 * answers the same (run_ladder_after broadcast what decides it). */
bool run_ladder_skip(struct run *r, int index);
/* After a ladder step (a collective): rank 0 tests the ladder's
 * stop_when on the step's figures and takes a rate_curve's maximum from
 * its first step, and tells every rank. */
void run_ladder_after(struct run *r, int index);
/* Ladder steps take ranks spread over hosts: the first rank of every
 * host, then the second of every host, ... (4 active ranks on 4 hosts are
 * one per host). spread[rank] is the rank's place in that order. */
int *run_spread_order(const struct run *r);
/* Whether rank i does I/O in a phase with active_ranks (0: every rank). */
bool run_active(const struct run *r, int i, int64_t active_ranks);
/* Of rank i's clients, how many do I/O in phase ph: all (K) or none by
 * the ranks ladder, or its share of a clients ladder's step (the step's
 * clients spread evenly over the ranks in spread order). */
int run_active_clients(const struct run *r, int i, const struct phase *ph);
/* A ladder step's communicator of its active ranks (step_comm, for their
 * barriers); MPI_COMM_NULL for a phase that is not a step. Collective. */
void run_step_comm(struct run *r, const struct phase *ph, bool active);
/* A phase's summary as it begins: its index, and the ranks, clients and
 * hosts doing I/O in it. */
struct phase_summary run_step_summary(const struct run *r, const struct phase *ph, int index);
/* Hosts with at least one active rank. */
int run_active_hosts(const struct run *r, const struct phase *ph);

/* runner_outputs.c */
/* Now as ISO 8601 UTC with milliseconds ("2026-12-01T22:21:26.123Z"). */
void run_utc_now(char *buf, size_t len);
/* Rank 0, before anything is written: may the results go where the
 * options say, and may this run have the run directory? Returns 0, or 2
 * (refused, with one line on stderr; nothing was made). owner (len
 * bytes): the text of its lock file, for the other ranks to read back
 * (rundir_seen), "" when it holds none. */
int run_claim_places(struct run *r, char *owner, size_t len);
/* Rank 0: the results file with the run's header. 0, or 2 on failure. */
int run_create_results(struct run *r, double sync_seconds, const char *start_utc,
                       const struct host_info *hosts, const struct rank_info *ranks);
/* Rank 0: give the run directory back (lock file; the directory itself
 * when this run made it and keeps nothing). */
void run_release_rundir(struct run *r);
/* Rank 0, after the phases: the outcome so far into the results file,
 * before the clean-up. A launcher that SIGKILLs the ranks soon after
 * passing a stop on (Open MPI's mpirun: 1 s) then leaves a file that says
 * how the run ended; closing the file records it again with what the
 * clean-up changed. */
void run_record_outcome(struct run *r, int signal);
/* Rank 0: final status, exit code, results file closed, summary printed. */
int run_finish(struct run *r, int signal);
/* Every I/O rank's memory and CPU time over the run, to /usage. */
void run_write_usage(struct run *r);

#endif
