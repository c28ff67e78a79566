/* summary.h — the end-of-run table rank 0 prints, two lines per phase, in
 * the shape of the seed's hand-made tables: per-rank time min / median /
 * max, first and last rank done, aggregate MiB/s, calls/s, the main
 * call's calls/s (main/s: IOR's IOPS for write and read) and per-op
 * items/s (meta, as mdtest counts them), p50/p99 of the phase's main call,
 * errors with their top errno, verify failures, the phase's effective
 * parameters, IOR-style mean/stddev of per-iteration bandwidth, and the
 * server's CPU while the phase ran when a monitor sampled it. The same
 * numbers go to --json (summary_json.h) and into results.h5. */
#ifndef HERD_SUMMARY_H
#define HERD_SUMMARY_H

#include <stdint.h>
#include <stdio.h>

#include "errtab.h"
#include "job.h"
#include "model.h"
#include "monitor_batch.h"
#include "record.h"

/* One op of a phase over all ranks (the op_summary table's row). */
struct summary_op {
    int op; /* enum op */
    uint64_t calls, errors;
    double seconds;            /* summed over ranks */
    double per_s;              /* calls / last_done */
    double p50, p90, p99, max; /* seconds, from the merged histogram; NaN = no samples */
    /* The meta step whose items this op's calls are (create: open), as
     * mdtest times a step: its items (calls that succeeded, all ranks),
     * its seconds (the first rank's start to the last rank's end of it, on
     * the common clock) and items / seconds. 0 and NaN for other ops. */
    uint64_t items;
    double step_s, items_per_s;
};

/* Failed calls of one (op, errno, protocol status) over all ranks. */
#define SUMMARY_ERRS_MAX 16
struct summary_err {
    int op;  /* enum op */
    int err; /* positive errno */
    char status[ERRTAB_STATUS_MAX];
    uint64_t count;
};

struct summary_line {
    char name[JOB_NAME_MAX];
    char kind[8];
    char layout[64]; /* "unique 16M", "shared 32M segmented" */
    char status[16];
    /* What the phase found beside its figures (phase_summary's notes: the
     * server dropped connections at about connections_open), "" if none. */
    char notes[PHASE_NOTES_MAX];
    int64_t connections_open;
    double t_start, t_end; /* the phase on the common clock */
    /* The server during the phase (summary_add_monitor); NaN = no samples:
     * cpu busy fraction mean and max, nfsd threads, and the monitored
     * processes (monitor_processes): cores they used (per name, the mean
     * over its readings, summed over names) and the busiest single
     * thread's share of a core (max). */
    struct phase_server server;
    /* The phase's numbers (rows, times, rates, counts): computed once, by
     * summary_compute, and stored, printed and written to JSON as they are. */
    struct phase_stats stats;
    /* Filled by summary_add_detail (all zero / NaN before). */
    struct summary_op ops[OP_COUNT]; /* ops with calls, in enum op order */
    int nops;
    /* Error kinds, most frequent first (the first SUMMARY_ERRS_MAX);
     * errs_other counts the failures of the kinds left out. */
    struct summary_err errs[SUMMARY_ERRS_MAX];
    int nerrs;
    uint64_t errs_other;
    bool all_failed; /* calls were made and every one failed: no rate */
    /* A kind that holds locks (WORKLOAD_HOLDS): its rate is grants/s, its
     * bytes are tokens (no MiB/s); overlap: its holds together, waits;
     * client_seconds: the clients' time in the phase, what the waits are a
     * share of (summary_wait_share). */
    bool holds;
    struct holds_overlap overlap;
    double client_seconds;
    /* iterations > 1: per-iteration MiB/s (bytes of the iteration's rows
     * over its last end - first start), mean and population stddev as
     * IOR prints them; NaN otherwise. */
    int64_t iterations;
    double iter_mean, iter_stddev, iter_min, iter_max;
    /* The job's phase (lives as long as the job): the keys the table and
     * the JSON echo, those that apply to its kind (summary_key_applies). */
    const struct phase *ph;
    int64_t step, active_ranks; /* a load ladder's step (0: not a ladder) and its ranks */
    int64_t active_clients;     /* clients doing I/O (every rank's) */
    bool client_ladder;         /* the step is a ladder's in clients (clients_active) */
    int64_t active_hosts;       /* the hosts those ranks ran on */
    char ladder[JOB_NAME_MAX];  /* the ladder's name ("" : not a ladder) */
    double start_skew;          /* latest minus earliest of the ranks' achieved starts */
    /* The backend's RPCs in flight (the rows' rpc_window_read / _write),
     * lowest and highest over the rows that have one; 0: none. */
    int32_t window_lo[2], window_hi[2];
    char note[STEP_NOTE_MAX]; /* a ladder step not run: why ("" otherwise) */
};

/* Whether key k is one of phase ph's own parameters: not run-wide
 * ([global] only) except backend, and applying to ph's kind and backend
 * (the key table's kinds and backend). */
bool summary_key_applies(const struct job_key *k, const struct phase *ph);

/* d's ops that made calls, in enum op order: calls, errors and seconds
 * summed over ranks, calls over last_done, quantiles of the merged
 * histogram; returns how many. The one computation behind the printed
 * table, the JSON and the op_summary table of results.h5. */
int summary_op_totals(const struct phase_data *d, double last_done,
                      struct summary_op out[OP_COUNT]);
void summary_compute(const struct phase *ph, const struct phase_summary *sum,
                     const struct rank_record *rows, size_t nrows, uint64_t errors,
                     struct summary_line *out);
/* Per-op calls, rates and latency quantiles, error kinds, per-iteration
 * bandwidth and the effective parameters, from what was gathered for the
 * phase (d->stats is not used). Call after summary_compute. */
void summary_add_detail(struct summary_line *l, const struct phase *ph, const struct phase_data *d);
/* The monitor's sources a run sampled. */
struct summary_sources {
    bool proc;          /* a monitor rank's /proc */
    bool node_exporter; /* monitor_url */
};
/* Server CPU (cpu_busy) mean and max, and the nfsd thread count, of the
 * monitor samples whose interval (t - dt, t] meets each phase; samples of
 * a node_exporter (monitor_url) are preferred over the local /proc
 * source's. The same for the named processes' rows: proc_cpu and
 * proc_thread_max. And whether the readings of every source in want span
 * each phase whole (server.covered; -1 when want has none): a reading at
 * or before its start, one at or after its end, none missing between. */
void summary_add_monitor(struct summary_line *lines, int n, const struct monitor_sample *s,
                         size_t ns, const struct monitor_process *p, size_t np,
                         const struct summary_sources *want);
/* The rows of ladder's /phases/<ladder>/steps table, one per line that is
 * one of its steps, in line order (job_expand_ladders makes the steps
 * consecutive phases in step order): at most n; returns how many. */
size_t summary_ladder_steps(const struct summary_line *lines, int n, const char *ladder,
                            struct step_row *rows);
/* The host whose CPU the server table's srv cpu is (the monitor's
 * sampled host), and the run's I/O ranks on it, the clients that share
 * its CPU with the server. */
struct summary_cpu_host {
    char name[RESULTS_HOST_MAX]; /* "" : not known */
    int client_ranks;            /* I/O ranks on it; -1: not known to be one of the run's hosts */
};
/* Find it. With monitor_url (its node_exporter's CPU is preferred):
 * the URL's host when it is a loopback address (localhost, 127.0.0.0/8,
 * ::1: the host of I/O rank 0, which scrapes it, hosts[0]) or the name
 * of one of the run's hosts (exactly or by short name, as monitor_host
 * matches); any other URL is not known. Without: sampler_host, the
 * monitor rank's host ("" = no monitor rank: not known), 0 client ranks
 * when no I/O rank runs there. ranks[i].host indexes hosts. */
void summary_cpu_host_find(const char *monitor_url, const char *sampler_host,
                           const struct host_info *hosts, int nhosts, const struct rank_info *ranks,
                           int nranks, struct summary_cpu_host *out);
/* The table, its legend (units, each column once; unless !legend: herd
 * run -q) and, when sampled, the server's CPU per phase; its legend says
 * what srv cpu covers when client ranks ran on cpu_host (NULL: not
 * known). */
void summary_print(FILE *out, const struct summary_line *lines, int n, bool legend,
                   const struct summary_cpu_host *cpu_host);
/* The legend alone (also shown by herd run --help). */
void summary_print_legend(FILE *out);
/* The main call's rate (main/s): its calls over all ranks / last_done,
 * as its op_summary row's; NaN without a main call, or when every call
 * failed. */
double summary_main_per_s(const struct summary_line *l);
/* "write" or "create"/"stat"/...: the name an op's rate is shown under
 * (meta phases count items as mdtest does: open = create). */
const char *summary_op_label(const struct summary_line *l, int op);

/* A ladder step that did not run (the stop rule of a step before it):
 * its line, status not-run, no figures, and why in note. */
void summary_not_run(const struct phase *ph, const struct phase_summary *sum, const char *note,
                     struct summary_line *out);

/* herd's own lag (OP_LAG) limited an open-loop phase: its p99 is at
 * least SUMMARY_LAG_SHARE of the response p99 and at least
 * SUMMARY_LAG_FLOOR seconds, the schedule's own jitter target (a
 * machine's timer wake-ups of a few hundred microseconds, next to calls
 * served from a page cache in microseconds, are no limit of herd's to
 * add ranks for). The summary and --json say so. */
#define SUMMARY_LAG_SHARE 0.10
#define SUMMARY_LAG_FLOOR 1e-3
bool summary_herd_limited(const struct summary_line *l);
/* An open-loop phase's calls sent over its calls due (the share of the
 * calls the schedules offered in the clients' time that were sent, free
 * of the arrivals' randomness that achieved/s carries); NaN without. */
double summary_achieved_share(const struct phase_stats *st);

/* A lock phase's waits (overlap.wait_seconds, every client's) over the
 * clients' time in the phase: each row's t_end - t_start summed over the
 * rows that did work (a row is one client's iteration; a wait lies inside
 * its client's row), so at most 1 with any number of clients per rank;
 * NaN when no row did work. */
double summary_wait_share(const struct summary_line *l);

/* The p99 of op's calls in the phase, seconds; NaN when none; and its
 * p50 (q 0.5) or max (q 1.0). */
double summary_op_p99(const struct summary_line *l, int op);
double summary_op_quantile(const struct summary_line *l, int op, double q);

#endif
