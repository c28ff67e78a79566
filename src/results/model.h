/* model.h — what a run knows of itself, apart from where it is stored:
 * the run, its hosts and ranks, a phase's summary, its gathered data and
 * statistics, the server during it, a ladder's steps, resource use. The
 * runner fills these records; summary.c computes the statistics from
 * them; results.c writes them to HDF5 and summary_json.c to JSON; none of
 * these types knows a file format. */
#ifndef HERD_MODEL_H
#define HERD_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client_stats.h"
#include "errtab.h"
#include "hist.h"
#include "holds.h"
#include "joblimits.h"
#include "monitor_batch.h"
#include "ops.h"
#include "record.h"
#include "watchdog.h"

#define RESULTS_HOST_MAX 256

struct run_info {
    const char *version;
    const char *run_id;
    const char *label;       /* the job's label ("" = none) */
    const char *server_fs;   /* HERD_SERVER_FS: the export's file system ("" = not given) */
    const char *server_disk; /* HERD_SERVER_DISK: its disk's delays ("" = not given) */
    const char *command_line;
    const char *job_path;
    const char *job_text;
    const char *start_utc; /* ISO 8601 */
    double epoch_unix;     /* wall-clock time (s since 1970) of common t=0 */
    const char *mpi_version;
    const char *target;
    int nranks;
    int clients_per_rank; /* NFS clients each rank ran (1: the rank itself) */
    int nhosts;
    double clock_sync_seconds; /* time spent estimating offsets */
    /* The monitor, for /monitor's attributes. */
    const char *monitor_host; /* host whose ranks sample ("" = none) */
    int monitor_rank;         /* the rank that samples it, -1 = none */
    double monitor_interval;
    const char *monitor_url; /* scraped by rank 0 ("" = none) */
    /* I/O ranks on the host the server's CPU was sampled on; -1: not
     * known to be one of the run's hosts (summary_cpu_host_find). */
    int monitor_client_ranks;
};

struct host_info {
    char hostname[RESULTS_HOST_MAX];
    char mount_source[RESULTS_HOST_MAX];
    char mount_point[RESULTS_HOST_MAX];
    char fstype[32];
    char mount_options[512];
    int32_t read_ahead_kb; /* the mount's read-ahead window (its bdi's), -1 unknown */
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
/* verify: no call failed but data was wrong (verify failures, or a lock's
 * exclusion broken); errors: calls failed (and data may be wrong too). */
enum phase_status { PHASE_OK, PHASE_ERRORS, PHASE_DEADLINE, PHASE_INTERRUPTED, PHASE_VERIFY };
/* How the run ended: complete (every phase in the file), incomplete (it
 * ran to its end but some phase could not be written), interrupted (a
 * signal). "partial" is what the file says until one of these is set. */
enum run_status { RUN_COMPLETE, RUN_INCOMPLETE, RUN_INTERRUPTED };
const char *phase_status_name(enum phase_status s);
const char *run_status_name(enum run_status s);

#define PHASE_NOTES_MAX 256 /* a phase's notes: what it found beside its figures */

/* What the runner knows of a phase as a whole. */
struct phase_summary {
    int index;          /* 0-based order in the job */
    double t_start;     /* the common instant all ranks were told */
    double t_end;       /* after the closing barrier */
    double start_skew;  /* max - min of the ranks' achieved starts */
    const char *status; /* phase_status_name(): ok | errors | verify | deadline | interrupted;
                           a ladder step not run: not-run */
    size_t stuck;       /* operations the watchdogs saw hanging */
    struct holds_overlap overlap;   /* lock phases: holds of all ranks together */
    int active_ranks, active_hosts; /* a ladder step: ranks doing I/O and their hosts */
    int active_clients;             /* clients doing I/O, of every rank */
    /* A phase in which the server dropped or refused connections
     * (connections_note): the run's clients' connections open at its end,
     * and the note; notes "" otherwise (then neither is written). */
    int64_t connections_open;
    char notes[PHASE_NOTES_MAX];
};

#define OP_NAME_LEN 16    /* an op's name in a table: "rpc_write" and its NUL fit */
#define STEP_NOTE_MAX 192 /* a ladder step's note: why it did not run */

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
    int main_op; /* the call whose p50/p99 the summary shows (enum op); -1 = none */
    /* The kind's units of work (record.h) per second, each client's over
     * its own time summed over the clients (achieved), how many, and
     * under rate > 0 (an open loop) the calls every client offered per
     * second together (rate x the clients doing I/O; NaN in a closed
     * loop) and the late ones. */
    double offered_per_s, achieved_per_s;
    uint64_t units, late;
    uint64_t due; /* rate > 0: the calls the clients' schedules made due (record.h) */
};

/* Everything gathered from the ranks for one phase (rank 0's view). */
struct phase_data {
    const struct rank_record *rows; /* nranks x iterations */
    size_t nrows;
    const struct err_entry *errors;
    size_t nerrors;
    const struct stuck_entry *stuck; /* calls the watchdogs saw hanging */
    size_t nstuck;
    bool has_holds;           /* the kind records holds: the holds table, even empty */
    const struct hold *holds; /* every granted lock */
    size_t nholds;
    const struct op_stats *ops;                /* one per rank */
    const struct meta_step_record *meta_steps; /* meta: every rank's steps (record.h) */
    size_t nmeta_steps;
    size_t nranks;
    const struct hist *hists;        /* OP_COUNT histograms merged over ranks */
    const struct phase_stats *stats; /* NULL: no summary_* attributes, no op_summary */
};

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

/* The server during a phase, known only when the run's samples are in:
 * set at the end. NaN = not sampled. */
struct phase_server {
    double cpu_mean, cpu_max, nfsd_threads; /* summary_cpu_mean, _max, summary_nfsd_threads */
    double proc_cpu, proc_thread_max;       /* summary_proc_cpu, summary_proc_thread_max */
    /* kernel nfsd's thread pool (pool_stats): packets arrived per second,
     * and the share of them that woke an idle thread (summary_nfsd_...) */
    double nfsd_packets_per_s, nfsd_woken_share;
    /* monitor_covered: 1 when the readings of every source the run
     * sampled span the phase whole (summary_add_monitor), 0 when not,
     * -1 when the run sampled nothing */
    int covered;
};
/* One step of a load ladder: a row of /phases/<ladder>/steps, gathered
 * from the step's summary when the run closes (summary_ladder_steps). */
struct step_row {
    int32_t step; /* 1-based */
    char phase[JOB_NAME_MAX];
    char kind[8];
    char status[16];
    int32_t active_ranks, active_hosts;
    int32_t active_clients, pad; /* every rank's clients doing I/O */
    double mib_per_s, ops_per_s; /* the step's summary_mib/ops_per_s */
    char main_op[OP_NAME_LEN];   /* "" : none (a meta step without calls) */
    double p50_s, p99_s, max_s;  /* of main_op; NaN = no samples */
    uint64_t bytes, ops;         /* of the active ranks: the inactive ones did none */
    uint64_t errors;
    char top_errno[24]; /* the most frequent errno's name, "" : none */
    uint64_t stuck, verify_failures;
    struct phase_server server; /* the step's summary_cpu_mean ... (NaN = not sampled) */
    double t_start, elapsed, start_skew;
    /* Offered load (rate: the step's own, or its curve's share of the
     * maximum; 0: a closed loop) and its figures: summary_offered_per_s,
     * summary_achieved_per_s, summary_units, summary_late, and the
     * response, service and lag percentiles (NaN without a rate). */
    double rate, offered_per_s, achieved_per_s;
    uint64_t units, late, due;
    double response_p50_s, response_p99_s, service_p99_s, lag_p99_s;
    /* Why a step did not run (status not-run: the stop rule a step before
     * it broke), "" otherwise. */
    char note[STEP_NOTE_MAX];
};

/* One I/O rank's resource use over the whole run: /usage. */
struct usage_row {
    int32_t rank;
    int32_t host;
    double max_rss_bytes; /* getrusage ru_maxrss */
    double user_seconds, system_seconds;
};

#endif
