/* results.h — the results file (HDF5, chunked + deflate). Only this module
 * knows HDF5. Rank 0 creates the file at start, appends each phase as soon
 * as it ends and flushes, so a crash loses at most the running phase.
 * Layout: docs/results-format.md. */
#ifndef HERD_RESULTS_H
#define HERD_RESULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "client_stats.h"
#include "errtab.h"
#include "hist.h"
#include "holds.h"
#include "job.h"
#include "monitor.h"
#include "record.h"
#include "watchdog.h"

#define RESULTS_HOST_MAX 256

struct run_info {
    const char *version;
    const char *run_id;
    const char *command_line;
    const char *job_path;
    const char *job_text;
    const char *start_utc; /* ISO 8601 */
    double epoch_unix;     /* wall-clock time (s since 1970) of common t=0 */
    const char *mpi_version;
    const char *target;
    int nranks;
    int nhosts;
    double clock_sync_seconds; /* time spent estimating offsets */
    /* The monitor, for /monitor's attributes. */
    const char *monitor_host; /* host whose ranks sample ("" = none) */
    int monitor_rank;         /* the rank that samples it, -1 = none */
    double monitor_interval;
    const char *monitor_url; /* scraped by rank 0 ("" = none) */
};

struct host_info {
    char hostname[RESULTS_HOST_MAX];
    char mount_source[RESULTS_HOST_MAX];
    char mount_point[RESULTS_HOST_MAX];
    char fstype[32];
    char mount_options[512];
};

struct rank_info {
    int32_t rank;
    int32_t host; /* index into hosts */
    int32_t pid;
    int32_t pad;
    double clock_offset; /* local monotonic minus common clock, s */
    double clock_error;  /* bound on the offset's error, s */
};

/* How a phase ended, as agreed by all ranks (worst first wins). */
enum phase_status { PHASE_OK, PHASE_ERRORS, PHASE_DEADLINE, PHASE_INTERRUPTED };
/* How the run ended: complete (every phase in the file), incomplete (it
 * ran to its end but some phase could not be written), interrupted (a
 * signal). "partial" is what the file says until one of these is set. */
enum run_status { RUN_COMPLETE, RUN_INCOMPLETE, RUN_INTERRUPTED };
const char *phase_status_name(enum phase_status s);
const char *run_status_name(enum run_status s);

/* What the runner knows of a phase as a whole. */
struct phase_summary {
    int index;                      /* 0-based order in the job */
    double t_start;                 /* the common instant all ranks were told */
    double t_end;                   /* after the closing barrier */
    double start_skew;              /* max - min of the ranks' achieved starts */
    const char *status;             /* phase_status_name(): ok | errors | deadline | interrupted */
    size_t stuck;                   /* operations the watchdogs saw hanging */
    struct holds_overlap overlap;   /* lock phases: holds of all ranks together */
    int active_ranks, active_hosts; /* a ladder step: ranks doing I/O and their hosts */
};

struct results;

#define OP_NAME_LEN 16 /* an op's name in a table: "rpc_write" and its NUL fit */

/* What --force may replace with a results file (a safeout_accept_fn):
 * NULL for an HDF5 file (its signature where HDF5 puts it), else "not an
 * HDF5 file". Reads fd from the start. */
const char *results_file_check(int fd, off_t size);

/* Write a new results file into the empty regular file open on fd (made
 * by safeout_create; results keeps its own descriptor of it), named path
 * in messages: root attributes with status "partial", /hosts and /ranks.
 * Returns NULL and writes one line into err on failure. */
struct results *results_create(int fd, const char *path, const struct run_info *run,
                               const struct host_info *hosts, int nhosts,
                               const struct rank_info *ranks, int nranks, char *err, size_t errlen);

/* One rank's calls per op in a phase: the /phases/<name>/ops table. */
struct op_stats {
    uint64_t count[OP_COUNT];
    double seconds[OP_COUNT];
};

/* The statistics herd prints for a phase (summary.c), stored with it as
 * the group's summary_* attributes: the one definition every reader uses.
 * Times are seconds; first/last_done since the phase's start; rates over
 * last_done. Only rows that did work (ops > 0) count for the times. */
struct phase_stats {
    int64_t rows, ranks;
    double t_min, t_median, t_max, first_done, last_done;
    double mib_per_s, ops_per_s;
    uint64_t bytes, ops, errors, verify_failures, grants, contended, violations, stuck;
};

/* Everything gathered from the ranks for one phase (rank 0's view). */
struct phase_data {
    const struct rank_record *rows; /* nranks x iterations */
    size_t nrows;
    const struct err_entry *errors;
    size_t nerrors;
    const struct stuck_entry *stuck; /* calls the watchdogs saw hanging */
    size_t nstuck;
    const struct hold *holds; /* lock phases: every granted lock */
    size_t nholds;
    const struct op_stats *ops; /* one per rank */
    size_t nranks;
    const struct hist *hists;        /* OP_COUNT histograms merged over ranks */
    const struct phase_stats *stats; /* NULL: no summary_* attributes, no op_summary */
};

/* Append /phases/<ph->name>: attributes (kind, index, status, t_start,
 * t_end, start_skew and every job key's resolved value), the ranks,
 * errors, stuck and ops tables, for lock phases the holds table and its
 * overlap, and the latency histograms (ops with no samples skipped). Flushes the file. Returns 0 or
 * -1 (with err). */
int results_write_phase(struct results *r, const struct phase *ph, const struct phase_summary *sum,
                        const struct phase_data *d, char *err, size_t errlen);

/* A phase's place on the monitor's timeline: /monitor/marks. */
struct monitor_mark {
    char phase[JOB_NAME_MAX];
    int32_t index;
    double t_start, t_end;
};

/* Rows to append under /monitor after a phase. */
struct monitor_append {
    struct monitor_batch batch; /* server samples taken so far */
    const char *process_scope;  /* monitor_scope: /monitor/processes' attribute scope */
    const struct monitor_mark *marks;
    size_t nmarks;
    const struct client_op_row *client_ops;
    size_t nclient_ops;
    const struct client_row *clients;
    size_t nclients;
};

/* Append to the /monitor tables and flush. Returns 0 or -1 (with err). */
int results_write_monitor(struct results *r, const struct monitor_append *a, char *err,
                          size_t errlen);

/* Where herd's own time went in a phase (rank 0): gathering the ranks'
 * data, and writing the phase. Set as the phase's attributes
 * gather_seconds and write_seconds; flushed with the next write. */
int results_phase_timing(struct results *r, const char *phase, double gather_seconds,
                         double write_seconds, char *err, size_t errlen);

/* The server during a phase, known only when the run's samples are in:
 * set at the end. NaN = not sampled. */
struct phase_server {
    double cpu_mean, cpu_max, nfsd_threads; /* summary_cpu_mean, _max, summary_nfsd_threads */
    double proc_cpu, proc_thread_max;       /* summary_proc_cpu, summary_proc_thread_max */
};
/* Set the phase's summary_* attributes of s. 0 or -1 (with err). */
int results_phase_server(struct results *r, const char *phase, const struct phase_server *s,
                         char *err, size_t errlen);

/* One step of a load ladder: a row of /phases/<ladder>/steps, gathered
 * from the step's summary when the run closes (summary_ladder_steps). */
struct step_row {
    int32_t step; /* 1-based */
    char phase[JOB_NAME_MAX];
    char kind[8];
    char status[16];
    int32_t active_ranks, active_hosts;
    double mib_per_s, ops_per_s; /* the step's summary_mib/ops_per_s */
    char main_op[OP_NAME_LEN];   /* "" : none (a meta step without calls) */
    double p50_s, p99_s, max_s;  /* of main_op; NaN = no samples */
    uint64_t bytes, ops;         /* of the active ranks: the inactive ones did none */
    uint64_t errors;
    char top_errno[24]; /* the most frequent errno's name, "" : none */
    uint64_t stuck, verify_failures;
    double cpu_mean, cpu_max, nfsd_threads; /* NaN = not sampled */
    double proc_cpu, proc_thread_max;       /* the monitored processes; NaN = none */
    double t_start, elapsed, start_skew;
};

/* Write /phases/<ladder>/steps (a group of kind "ladder" holding the
 * table; attributes ladder and steps) and flush. Rows whose phase is not in
 * the file (lost) are left out. 0 or -1 (with err). */
int results_write_steps(struct results *r, const char *ladder, const struct step_row *rows,
                        size_t n, char *err, size_t errlen);

/* One I/O rank's resource use over the whole run: /usage. */
struct usage_row {
    int32_t rank;
    int32_t host;
    double max_rss_bytes; /* getrusage ru_maxrss */
    double user_seconds, system_seconds;
};
int results_write_usage(struct results *r, const struct usage_row *rows, size_t n, char *err,
                        size_t errlen);

/* What the clean-up could not remove (keep = no): /cleanup/errors, the
 * phases' error-table layout. Flushed. Returns 0 or -1. */
int results_write_cleanup(struct results *r, const struct err_entry *left, size_t n, char *err,
                          size_t errlen);

/* Set root attributes status (complete | incomplete | interrupted |
 * partial; docs/results-format.md), end_utc, exit_code and
 * startup_seconds (MPI_Init to the first phase's start, -1 when no phase
 * started) and flush: what the file says if the run dies before
 * results_close. Returns 0 or -1 with one line in err. */
int results_status(struct results *r, const char *status, const char *end_utc, int exit_code,
                   double startup_seconds, char *err, size_t errlen);
/* The same, then close the file. Returns 0 or -1. */
int results_close(struct results *r, const char *status, const char *end_utc, int exit_code,
                  double startup_seconds, char *err, size_t errlen);

#endif
