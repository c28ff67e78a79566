/* workload.h — a phase kind (write, read, md5, ...) as seen by the runner:
 * prepare (untimed), then run one rank's share of the phase into records.
 * Workloads know backends only through backend.h and never call MPI. */
#ifndef HERD_WORKLOAD_H
#define HERD_WORKLOAD_H

#include <stdbool.h>
#include <sys/types.h>

#include "backend.h"
#include "clock.h"
#include "errtab.h"
#include "hist.h"
#include "holds.h"
#include "job.h"
#include "pace.h"
#include "progress_count.h"
#include "record.h"
#include "safepath.h"
#include "watchdog.h"

/* What this run created, so that the clean-up (keep = no) removes only
 * that: never what an earlier run kept, never what another user planted.
 * Bits per phase index; `mine` is set by the workload on the rank that
 * made the thing (the fileset directory when its mkdir succeeded, the
 * data or lock file when it did not exist before this run's phase, a
 * meta tree when its root's mkdir succeeded). Before the clean-up the
 * runner ORs every rank's `mine` into `any`. */
enum claim { CLAIM_FILESET_DIR = 1, CLAIM_FILE = 2, CLAIM_TREE = 4 };
struct claims {
    int nphases;
    unsigned char *mine;   /* [nphases] bits of enum claim, this rank */
    unsigned char *any;    /* [nphases] OR over the ranks (clean-up only) */
    unsigned char **files; /* [nphases]: a bit per file this rank created, for a
                              phase of many files per rank; NULL: none, or
                              the phase's CLAIM_FILE bit says it (one file) */
};

/* One client's share of a phase. A rank runs clients_per_rank = K of
 * them (core/runner_clients.c), each on a fiber of its own with K > 1;
 * to the workload each is a rank of its own: rank is the global client
 * id (MPI rank x K + client) and nranks every rank's clients (MPI ranks
 * x K), so that files, regions and lock tokens are per client. With
 * K = 1 both are the MPI rank and size. */
struct phase_ctx {
    const struct phase *ph;
    int index; /* the phase's index in the job */
    int rank, nranks;
    int client, clients; /* this client's index in its rank, and K */
    bool dirs_made;      /* the rank's first client made the phase's directories */
    int peer;            /* the rank (client id) whose file this one reads */
    int host;
    const struct backend_ops *be;
    void *be_ctx;
    const char *rundir; /* relative to the target: "herd-<run id>" */
    const struct clock *clock;
    double deadline_at;          /* common clock; 0 = none */
    bool prepare_late;           /* prepare outlasted the phase's deadline: not run */
    struct rank_record *records; /* ph->iterations rows, filled by run */
    struct errtab *errors;
    struct hist *hist;               /* OP_COUNT histograms */
    struct progress_count *progress; /* bytes done, or NULL */
    void *state;                     /* the workload's, between prepare/run/finish */
    struct inflight *inflight;       /* the backend call in flight, for the watchdog */
    struct holds holds;              /* lock phases: when this rank held the lock */
    uint64_t op_count[OP_COUNT];     /* calls per op, this rank */
    uint64_t op_errors[OP_COUNT];    /* of those, the failed ones (workload_done) */
    double op_seconds[OP_COUNT];     /* seconds in each op, this rank */
    /* meta phases: this rank's time and items in each step it ran */
    struct meta_step_record meta_steps[META_STEPS];
    size_t nmeta_steps;
    /* The runner's, on the rank's own context: every client's meta steps
     * after the phase, tagged with rank and client (runner_clients.c). */
    struct meta_step_record *meta_rows;
    size_t nmeta_rows;
    /* Wait until every rank gets here (the runner's barrier): lets a
     * workload run steps that all ranks finish before the next begins.
     * Every rank must call it the same number of times. */
    void (*sync)(struct phase_ctx *c);
    void *sync_data; /* the runner's, for sync */
    /* True when a stop came that this context must heed: a signal this
     * rank or another caught, by the runner's rules for its stage (the
     * clean-up heeds only a new stop: runner_stop.h); when this rank caught
     * one, tells the others. Polled by workload_should_stop, cheap to call
     * often, from any thread. NULL: no other ranks, this rank's signals
     * only. */
    bool (*peer_stopped)(struct phase_ctx *c);
    struct claims *claims; /* this run's, shared by all phases */
    /* rate > 0: this client's schedule (pace.h), anchored at its first
     * paced call (workload_pace) and again at each meta step. */
    struct pace pace;
    bool pace_started;
    uint64_t pace_due; /* the calls due counted in rows so far */
};

/* Bracket one backend call: mark it in flight and, when it returns, add
 * its latency to the op's histogram. op_end returns the seconds it took. */
static inline double op_begin(struct phase_ctx *c, enum op op, const char *path)
{
    double t = clock_mono();
    inflight_begin(c->inflight, op, path, t);
    return t;
}

/* op_end for a call that ended at t1 (clock_mono), not now. */
static inline double op_end_at(struct phase_ctx *c, enum op op, double t0, double t1)
{
    inflight_end(c->inflight);
    hist_add(&c->hist[op], t1 > t0 ? (uint64_t)((t1 - t0) * 1e9) : 0);
    c->op_count[op]++;
    c->op_seconds[op] += t1 - t0;
    return t1 - t0;
}

static inline double op_end(struct phase_ctx *c, enum op op, double t0)
{
    return op_end_at(c, op, t0, clock_mono());
}

/* End a timed backend call begun with op_begin and account for it in one
 * place: add its seconds to *t (NULL: only the histogram and op tables),
 * count the op in row r, and when rc < 0 count an error both in r and in
 * the error table, so that the two never disagree. A caller that treats
 * some errno as expected (EEXIST of a mkdir, EAGAIN of a try-lock) passes
 * 0 for it. Returns rc. */
ssize_t workload_done(struct phase_ctx *c, struct rank_record *r, enum op op, double t0, ssize_t rc,
                      const char *path, double *t);
/* workload_done for a call that ended at t1 (a queued call reaped after
 * its reply came: backend.h's reap). */
ssize_t workload_done_at(struct phase_ctx *c, struct rank_record *r, enum op op, double t0,
                         double t1, ssize_t rc, const char *path, double *t);

/* Count a failure that is not a call's return (a short read, a failed
 * allocation, an error in prepare or finish) in row r and the error table.
 * r NULL: outside any iteration, counted in iteration 0's row. */
void workload_fail(struct phase_ctx *c, struct rank_record *r, enum op op, int err,
                   const char *path);

/* One unit of the kind's work: a write or read block, an md5 read, a
 * meta item, a lock or storm attempt; under rate > 0 a call on the
 * client's schedule. Before its first backend call, workload_pace waits
 * until the call's intended instant (at once when the client is late;
 * no wait in a closed loop) and returns true, or false when a stop or
 * the deadline came while it waited (then no call is made); after its
 * last, workload_paced counts it in row r (units; under a rate late too)
 * and adds its response, service and lag to the histograms. */
bool workload_pace(struct phase_ctx *c, struct pace_call *call);
void workload_paced(struct phase_ctx *c, struct rank_record *r, const struct pace_call *call);
/* For a client with calls in flight together (backend.h's submit): the
 * next call's instants for a client free now, without waiting
 * (workload_pace waits); and workload_paced for a call that ended at
 * end. */
void workload_pace_next(struct phase_ctx *c, struct pace_call *call);
void workload_paced_at(struct phase_ctx *c, struct rank_record *r, const struct pace_call *call,
                       double end);
/* A meta step begins: the schedule starts again from now. */
void workload_pace_restart(struct phase_ctx *c);
/* Row r (an iteration) ends now: its t_end, and under rate its calls due. */
void workload_row_end(struct phase_ctx *c, struct rank_record *r);

/* What a kind does, for the runner, the summary and the results file,
 * which ask these instead of testing the kind. */
enum workload_flag {
    WORKLOAD_MOVES_BYTES = 1, /* its progress and rates count bytes (else calls) */
    WORKLOAD_NO_BACKEND = 2,  /* never calls the backend (idle): no per-phase configure */
    WORKLOAD_HOLDS = 4,       /* records lock holds: the holds table and its overlap */
};

#define WORKLOAD_MAIN_OPS 6

/* A phase kind: its name, keys and rules for job/ (through the
 * registry), its steps for the runner. Its kind number (enum phase_kind,
 * ph->kind) is its place in workload_kinds.c's table. */
struct workload_ops {
    const char *name; /* the job file's `kind = NAME` */
    const char *help; /* what a phase of it does, in a few words (herd keys kind) */
    /* The job keys that apply to this kind and not to every kind,
     * NULL-ended (job.h's core keys, by name): elsewhere they are refused. */
    const char *const *keys;
    /* Keys whose default in a phase of this kind is the kind's own,
     * "KEY=VALUE", NULL-ended (NULL: none): the phase takes VALUE unless
     * its own section or the command line (--set KEY, --set PHASE.KEY)
     * gives the key; neither [global]'s value nor the key's default
     * reaches it. */
    const char *const *own_defaults;
    /* Its own keys, as a backend's (backend_ops.keys): rows with
     * JOB_OPTS_MEMBER offsets into a struct NAME_opts of opts_size bytes
     * (JOB_KIND_OPTS_FIT after it), read with job_kind_opts(ph); they
     * apply to this kind only. NULL, 0, 0: none. */
    const struct job_key *own_keys;
    size_t nown_keys;
    size_t opts_size;
    unsigned job_caps; /* what it does with its fileset's files: enum job_kind_cap bits */
    /* What one rank of ph moves (job.h's job_volume, zeroed before);
     * NULL: nothing. */
    void (*volume)(const struct phase *ph, struct job_volume *v);
    unsigned flags; /* enum workload_flag bits */
    /* The call whose p50/p99 the summary shows: the first of main_ops that
     * made calls in the phase (nmain_ops 1: that one, calls or not; 0: none). */
    int main_ops[WORKLOAD_MAIN_OPS];
    int nmain_ops;
    /* How far below the run directory the deepest directory its calls
     * name lies (a backend may cap a path's depth: backend.h's
     * check_depth): 1 the fileset's directory (its files), 3 mix's trees
     * (FILESET/NAME-rNNNNNN/n), 4 meta's (FILESET/rNNNNNN/a/dNNNN); 0 the
     * run directory alone. */
    int dir_depth;
    /* The first rule of this kind's that ph breaks (after job/'s own: keys
     * in bounds and of this kind): the key at fault, with why written;
     * NULL when none. NULL: no rule of its own. */
    const char *(*check)(const struct phase *ph, char *why, size_t len);
    /* The phase's layout in a few words for the summary's table
     * ("unique 16M", "excl block wait"). */
    void (*describe)(const struct phase *ph, char *buf, size_t len);
    int (*prepare)(struct phase_ctx *c); /* untimed; errors go to c->errors */
    void (*run)(struct phase_ctx *c);    /* timed; never aborts */
    void (*finish)(struct phase_ctx *c); /* frees state */
    /* At the end of the run (keep = no): quietly remove what this rank made
     * in such a phase; pass 0 files, then after a barrier pass 1
     * directories. NULL when the kind leaves nothing. Only ph, rank,
     * nranks, rundir, be and be_ctx are set. */
    void (*remove)(struct phase_ctx *c, int pass);
};

/* The kind numbered kind; NULL when there is none. */
const struct workload_ops *workload_find(enum phase_kind kind);
/* The kinds in number order, i from 0; NULL past the last. */
const struct workload_ops *workload_at(size_t i);

/* True when the rank must stop issuing operations: a signal (caught here
 * or by another rank), or the phase (or clean-up) deadline. */
bool workload_should_stop(const struct phase_ctx *c);

/* A kind of `count` attempts per iteration, or attempts for `duration`
 * (lock, storm): whether the rank makes another, `made` made so far in
 * iteration r (r->t_start set): no stop, and fewer than count, or before
 * r->t_start + duration when the phase has one. */
bool workload_attempt_due(const struct phase_ctx *c, const struct rank_record *r, int64_t made);
/* Such a kind's layout on one shared file: "shared x100", "shared for 5s". */
void workload_describe_attempts(const struct phase *ph, char *buf, size_t len);

/* Count a failed call (err < 0) in the error table only: for the
 * clean-up, which has no rows. Inside a phase use workload_done or
 * workload_fail, which keep the row's errors in step. */
void workload_error(struct phase_ctx *c, enum op op, int err, const char *path);
/* The same for a clean-up's call, unless it failed because the thing is
 * gone already (ENOENT: removed by its phase or an earlier clean-up). */
void workload_cleanup_error(struct phase_ctx *c, enum op op, int err, const char *path);

struct pattern;
/* The phase's data pattern (its pattern, zero_percent and seed) for blocks
 * of at most max_block bytes; one table for all of a rank's clients
 * (pattern_init_shared) when it has many. 0 or -errno. */
int workload_pattern_init(const struct phase_ctx *c, struct pattern *p, size_t max_block);

/* Format a path herd names below the target into buf (HERD_PATH_MAX). A
 * path that does not fit becomes "" , which every backend refuses
 * (safepath_check), so a too-long name is an error counted, never a
 * truncated name that could mean another file. */
void workload_path(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Path of a data file: "<rundir>/<fileset>/<name>" for file index `index`
 * (a rank, or -1 for the shared file). */
void workload_file_path(const struct phase_ctx *c, int index, char *buf, size_t len);
void workload_fileset_dir(const struct phase_ctx *c, char *buf, size_t len);

/* Make the run and fileset directories (untimed; an existing one is fine).
 * Every rank that will create files calls it, so a read-only or full
 * target shows up in every rank's errors. */
void workload_make_dirs(struct phase_ctx *c);

/* Mark what this rank created in this phase (enum claim bits). */
void workload_claim(struct phase_ctx *c, unsigned bits);
/* A phase of nfiles files per rank: room for a bit per file (prepare);
 * 0 or -ENOMEM. Then file f created by this rank: claimed (CLAIM_FILE for
 * the phase, and f's bit). workload_claimed_file: whether it was. */
int workload_claim_files(struct phase_ctx *c, int64_t nfiles);
void workload_claim_file(struct phase_ctx *c, int64_t f);
bool workload_claimed_file(const struct phase_ctx *c, int64_t f);
/* The per-file bits, at the end of the run. */
void workload_claims_free(struct claims *claims);
/* Whether this run created it: this rank (mine) or any rank. */
bool workload_claimed(const struct phase_ctx *c, unsigned bits, bool any);

#endif
