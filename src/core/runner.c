/* runner.c — the phase engine. Sets up the run (id, common clock, hosts,
 * run directory, results file), then for each phase: prepare, barrier,
 * timed start at a common instant, the workload, closing barrier, gather
 * to rank 0, agree on how it ended, append it to results.h5 (or, when the
 * file cannot take it, to a fallback). Then the clean-up of what this run
 * made, and the final status. MPI is called here and in runner_monitor.c,
 * runner_stop.c and clocksync.c only; no I/O error ends the run. */
#include "runner.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "client_stats.h"
#include "clocksync.h"
#include "hosts.h"
#include "progress.h"
#include "results.h"
#include "results_fallback.h"
#include "rundir.h"
#include "runner_monitor.h"
#include "runner_stop.h"
#include "safeout.h"
#include "signals.h"
#include "summary.h"
#include "summary_json.h"
#include "utf8.h"
#include "watchdog.h"
#include "workload.h"

#define CLOCKSYNC_ROUNDS 10
/* The clean-up of a run (keep = no) stops after this long: a stalled
 * server cannot keep herd from ending; what is left is listed. */
#define CLEANUP_SECONDS 60.0
/* Exit code of a run whose results file is missing phases (docs). */
#define EXIT_RESULTS_LOST 4

/* Everything one rank knows about the run as a whole. */
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
    void *be_ctx;
    char output[JOB_PATH_MAX + 96]; /* results file path */
    struct safeout out;             /* rank 0: the results file's place (safeout.h) */
    struct safeout json;            /* rank 0: the --json summary's place */
    struct results *results;        /* rank 0 only */
    bool rundir_locked;             /* rank 0 holds the run directory's lock file */
    bool rundir_ours;               /* this run made the run directory */
    struct claims claims;           /* what this run made, for the clean-up */
    struct runner_stop stop;
    char lost[8][JOB_NAME_MAX]; /* rank 0: phases not in the results file (first 8) */
    int nlost;
    struct summary_line *lines;
    int nlines;
    uint64_t total_errors, total_verify;
    bool cleanup_unfinished; /* the clean-up was stopped or failed to remove something */
    struct monitor_link mon;
    double epoch_unix;
    bool client_stats;                  /* this rank reads its host's NFS client counters */
    char mount_point[RESULTS_HOST_MAX]; /* of the target, when on a kernel NFS mount */
    struct monitor_sample *samples;     /* rank 0: every server sample so far */
    size_t nsamples;
    struct monitor_process *procs; /* rank 0: every named process's row so far */
    size_t nprocs;
    double startup_seconds; /* rank 0: MPI_Init to the first phase's start */
    int *spread;            /* each rank's place in the host-spread order (ladder steps) */
    MPI_Comm step_comm;     /* a ladder step's active ranks; MPI_COMM_NULL otherwise */
};

static void utc_now(char *buf, size_t len)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, len - n, ".%03ldZ", (long)(tv.tv_usec / 1000));
}

/* Rank 0 names the run; everyone learns the name. */
static void run_make_id(struct run *r, int world_rank)
{
    if (r->job->run_id[0]) {
        snprintf(r->run_id, sizeof r->run_id, "%s", r->job->run_id);
    } else if (world_rank == 0) {
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        char stamp[32];
        strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", &tm);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        unsigned tag = (unsigned)(ts.tv_nsec ^ (getpid() << 8)) & 0xffffu;
        snprintf(r->run_id, sizeof r->run_id, "%s-%04x", stamp, tag);
    }
    MPI_Bcast(r->run_id, sizeof r->run_id, MPI_CHAR, 0, MPI_COMM_WORLD);
    r->run_id[sizeof r->run_id - 1] = '\0';
    snprintf(r->rundir, sizeof r->rundir, "herd-%s", r->run_id);
}

/* Whether every rank of comm says ok (a collective). */
static bool run_all_ok(const struct run *r, bool ok)
{
    int mine = ok ? 1 : 0, all = 0;
    if (MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, r->comm) != MPI_SUCCESS)
        return false;
    return all == 1;
}

/* An MPI call that failed: say which, once per call site's failure. */
static bool run_mpi_ok(int rc, const char *what)
{
    if (rc == MPI_SUCCESS)
        return true;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof text, "error %d", rc);
    fprintf(stderr, "herd: MPI %s failed: %s\n", what, text);
    return false;
}

/* Every rank learns every rank's host index (hosts numbered in order of
 * their lowest rank); rank 0 also gets the host and rank tables. */
static int run_map_hosts(struct run *r, struct host_info **hosts_out, struct rank_info **ranks_out)
{
    struct host_info me;
    hosts_describe(r->job->phases[0].target, &me);
    if (r->be->describe)
        r->be->describe(r->be_ctx, me.fstype, sizeof me.fstype, me.mount_options,
                        sizeof me.mount_options);
    char *names = calloc((size_t)r->size, RESULTS_HOST_MAX);
    r->rank_host = calloc((size_t)r->size, sizeof *r->rank_host);
    struct host_info *all = r->rank == 0 ? calloc((size_t)r->size, sizeof *all) : NULL;
    struct rank_info *ranks = r->rank == 0 ? calloc((size_t)r->size, sizeof *ranks) : NULL;
    int *first_rank = calloc((size_t)r->size, sizeof *first_rank);
    if (!run_all_ok(r, names && r->rank_host && first_rank && (r->rank != 0 || (all && ranks)))) {
        free(names);
        free(all);
        free(ranks);
        free(first_rank);
        return -ENOMEM;
    }
    MPI_Allgather(me.hostname, RESULTS_HOST_MAX, MPI_CHAR, names, RESULTS_HOST_MAX, MPI_CHAR,
                  r->comm);
    MPI_Gather(&me, sizeof me, MPI_BYTE, all, sizeof me, MPI_BYTE, 0, r->comm);
    r->nhosts = 0;
    for (int i = 0; i < r->size; i++) {
        int h;
        for (h = 0; h < r->nhosts; h++)
            if (strcmp(names + (size_t)first_rank[h] * RESULTS_HOST_MAX,
                       names + (size_t)i * RESULTS_HOST_MAX) == 0)
                break;
        if (h == r->nhosts)
            first_rank[r->nhosts++] = i;
        r->rank_host[i] = h;
    }
    r->host = r->rank_host[r->rank];
    snprintf(r->hostname, sizeof r->hostname, "%s", me.hostname);
    /* The host's lowest rank reads mountstats, when the target is on NFS. */
    r->client_stats = r->rank == first_rank[r->host] && strncmp(me.fstype, "nfs", 3) == 0;
    snprintf(r->mount_point, sizeof r->mount_point, "%s", me.mount_point);

    struct rank_info ri = {.rank = r->rank,
                           .host = r->host,
                           .pid = (int32_t)getpid(),
                           .clock_offset = r->clock.base,
                           .clock_error = r->clock.error};
    MPI_Gather(&ri, sizeof ri, MPI_BYTE, ranks, sizeof ri, MPI_BYTE, 0, r->comm);
    if (r->rank == 0) {
        /* Offsets relative to rank 0's clock: base_r - base_0. */
        for (int i = 0; i < r->size; i++)
            ranks[i].clock_offset -= r->clock.base;
        for (int h = 0; h < r->nhosts; h++)
            all[h] = all[first_rank[h]];
        *hosts_out = all;
        *ranks_out = ranks;
    }
    free(first_rank);
    free(names);
    return 0;
}

/* The rank whose file this rank reads with read_from = neighbor: the rank
 * with the same position on the next host (IOR's -C with tasks per node),
 * or the next rank when every rank shares one host. */
static int run_neighbor(const struct run *r)
{
    if (r->nhosts <= 1)
        return (r->rank + 1) % r->size;
    int pos = 0;
    for (int i = 0; i < r->rank; i++)
        pos += r->rank_host[i] == r->host;
    for (int step = 1; step < r->nhosts; step++) {
        int h = (r->host + step) % r->nhosts, seen = 0, last = -1;
        for (int i = 0; i < r->size; i++)
            if (r->rank_host[i] == h) {
                if (seen++ == pos)
                    return i;
                last = i;
            }
        if (last >= 0)
            return last; /* fewer ranks there: its last one */
    }
    return (r->rank + 1) % r->size;
}

/* Gather every rank's array of n items of `size` bytes to rank 0, which
 * gets them concatenated in rank order (malloc'd, *total items). Counts
 * are checked against MPI's int before anything is sent, and rank 0's
 * buffer is allocated before any rank sends: on failure every rank
 * returns NULL with *total 0 and *ok false (a collective). */
static void *run_gather(const struct run *r, const void *mine, size_t n, size_t size, size_t *total,
                        bool *ok)
{
    *total = 0;
    uint64_t bytes64 = (uint64_t)n * size;
    int bytes = bytes64 <= INT_MAX ? (int)bytes64 : -1;
    int *counts = r->rank == 0 ? calloc((size_t)r->size, sizeof *counts) : NULL;
    int *displs = r->rank == 0 ? calloc((size_t)r->size, sizeof *displs) : NULL;
    bool good = r->rank != 0 || (counts && displs);
    if (!run_all_ok(r, good)) {
        free(counts);
        free(displs);
        *ok = false;
        return NULL;
    }
    good = run_mpi_ok(MPI_Gather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, 0, r->comm), "gather");
    uint64_t sum = 0;
    for (int i = 0; r->rank == 0 && good && i < r->size; i++) {
        if (counts[i] < 0 || sum + (uint64_t)counts[i] > INT_MAX) {
            good = false;
            break;
        }
        displs[i] = (int)sum;
        sum += (uint64_t)counts[i];
    }
    void *all = r->rank == 0 && good ? malloc(sum ? (size_t)sum : 1) : NULL;
    if (r->rank == 0 && good && !all)
        good = false;
    if (!run_all_ok(r, good && bytes >= 0)) {
        free(all);
        free(counts);
        free(displs);
        *ok = false;
        return NULL;
    }
    if (!run_mpi_ok(MPI_Gatherv(mine, bytes, MPI_BYTE, all, counts, displs, MPI_BYTE, 0, r->comm),
                    "gatherv")) {
        free(all);
        all = NULL;
        *ok = false;
        sum = 0;
    }
    free(counts);
    free(displs);
    *total = (size_t)sum / size;
    return all;
}

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
    struct hist *merged; /* OP_COUNT histograms summed over ranks */
    bool ok;             /* everything arrived */
};

static void gathered_free(struct gathered *g)
{
    free(g->starts);
    free(g->rows);
    free(g->errs);
    free(g->stuck);
    free(g->holds);
    free(g->ops);
    free(g->merged);
}

/* Collective: bring the phase's records, tables and histograms to rank 0. */
static void run_gather_phase(struct run *r, const struct phase *ph, struct phase_ctx *c,
                             const struct stuck_entry *stuck_mine, size_t nstuck_mine,
                             double started, struct gathered *g)
{
    memset(g, 0, sizeof *g);
    g->ok = true;
    if (r->rank == 0) {
        g->starts = malloc((size_t)r->size * sizeof *g->starts);
        g->ops = calloc((size_t)r->size, sizeof *g->ops);
        g->merged = calloc(OP_COUNT, sizeof *g->merged);
    }
    bool fixed_ok = r->rank != 0 || (g->starts && g->ops && g->merged);
    if (!run_all_ok(r, fixed_ok)) {
        g->ok = false;
        return;
    }
    g->ok &= run_mpi_ok(MPI_Gather(&started, 1, MPI_DOUBLE, g->starts, 1, MPI_DOUBLE, 0, r->comm),
                        "gather");
    g->rows = run_gather(r, c->records, (size_t)ph->iterations, sizeof(struct rank_record),
                         &g->nrows, &g->ok);
    g->errs = run_gather(r, c->errors->entries, c->errors->n, sizeof(struct err_entry), &g->nerrs,
                         &g->ok);
    g->stuck =
        run_gather(r, stuck_mine, nstuck_mine, sizeof(struct stuck_entry), &g->nstuck, &g->ok);
    g->holds = run_gather(r, c->holds.v, c->holds.n, sizeof(struct hold), &g->nholds, &g->ok);
    struct op_stats mine_ops;
    memcpy(mine_ops.count, c->op_count, sizeof mine_ops.count);
    memcpy(mine_ops.seconds, c->op_seconds, sizeof mine_ops.seconds);
    g->ok &= run_mpi_ok(MPI_Gather(&mine_ops, sizeof mine_ops, MPI_BYTE, g->ops, sizeof mine_ops,
                                   MPI_BYTE, 0, r->comm),
                        "gather");
    g->ok &= run_mpi_ok(
        MPI_Reduce(c->hist, g->merged, OP_COUNT * HIST_BUCKETS, MPI_UINT64_T, MPI_SUM, 0, r->comm),
        "reduce");
}

/* How a phase ended, as every rank agrees: the stop signal any rank saw
 * (a collective) and whether the deadline cut work short anywhere. */
struct phase_outcome {
    int signal;
    bool deadline;
};

static struct phase_outcome run_agree_outcome(struct run *r, const struct phase_ctx *c)
{
    int mine[2] = {runner_stop_signal(&r->stop), c->prepare_late};
    for (int64_t i = 0; c->records && i < c->ph->iterations; i++)
        if (!c->records[i].completed && c->deadline_at > 0 && c->records[i].t_end >= c->deadline_at)
            mine[1] = 1;
    int all[2] = {mine[0], mine[1]};
    run_mpi_ok(MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MAX, r->comm), "allreduce");
    return (struct phase_outcome){.signal = all[0], .deadline = all[1] != 0};
}

static enum phase_status run_phase_status(struct phase_outcome o, uint64_t errors,
                                          uint64_t wrong_data)
{
    if (o.signal)
        return PHASE_INTERRUPTED;
    if (o.deadline)
        return PHASE_DEADLINE;
    return errors || wrong_data ? PHASE_ERRORS : PHASE_OK;
}

/* Rank 0: the phase into the results file, or, when the file cannot take
 * it, into the fallback; a phase that is not in the file is remembered
 * for the status, the exit code and the summary. */
static void run_record_phase(struct run *r, const struct phase *ph, const struct phase_summary *sum,
                             const struct phase_data *data, double t_gather)
{
    char err[512];
    double t_write = clock_mono();
    int rc = r->results ? results_write_phase(r->results, ph, sum, data, err, sizeof err) : -1;
    if (rc == 0) {
        if (results_phase_timing(r->results, ph->name, t_write - t_gather, clock_mono() - t_write,
                                 err, sizeof err) < 0)
            fprintf(stderr, "herd: results: %s\n", err);
        return;
    }
    if (r->results)
        fprintf(stderr, "herd: results: %s\n", err);
    char where[RESULTS_FALLBACK_PATH_MAX];
    int fb = results_fallback_phase(safeout_dirfd(&r->out), r->out.leaf, r->output, ph, sum, data,
                                    stderr, where, sizeof where);
    fprintf(stderr, "herd: phase %s is not in %s; its records are in %s\n", ph->name, r->output,
            fb < 0 ? "nothing (the fallback failed too)" : where);
    if (r->nlost < (int)(sizeof r->lost / sizeof r->lost[0]))
        snprintf(r->lost[r->nlost], sizeof r->lost[0], "%s", ph->name);
    r->nlost++;
}

/* After a phase: gather, agree, decide, record. Returns how it ended. */
static struct phase_outcome run_collect(struct run *r, const struct phase *ph, struct phase_ctx *c,
                                        const struct stuck_entry *stuck_mine, size_t nstuck_mine,
                                        struct phase_summary *sum, double started)
{
    double t_gather = clock_mono();
    struct gathered g;
    run_gather_phase(r, ph, c, stuck_mine, nstuck_mine, started, &g);
    struct phase_outcome o = run_agree_outcome(r, c);
    if (r->rank != 0) {
        gathered_free(&g);
        return o;
    }
    if (!g.ok) { /* nothing complete to write: the phase is lost, say so */
        fprintf(stderr, "herd: phase %s: the ranks' records could not be gathered on rank 0\n",
                ph->name);
        struct phase_data none = {
            .nranks = (size_t)r->size,
            .has_holds = workload_find(ph->kind)->flags & WORKLOAD_HOLDS,
        };
        sum->status = phase_status_name(run_phase_status(o, 0, 0));
        run_record_phase(r, ph, sum, &none, t_gather);
        gathered_free(&g);
        return o;
    }
    double lo = 1e300, hi = -1e300;
    for (int i = 0; i < r->size; i++) {
        lo = g.starts[i] < lo ? g.starts[i] : lo;
        hi = g.starts[i] > hi ? g.starts[i] : hi;
    }
    sum->start_skew = hi - lo;
    sum->stuck = g.nstuck;
    /* Holds closer than the clocks' error bound are not called overlapping. */
    holds_overlap(g.holds, g.nholds, 2 * r->clock_error_max, &sum->overlap);
    uint64_t errors = 0, verify = 0; /* the error table holds every failed call */
    for (size_t i = 0; i < g.nerrs; i++)
        errors += g.errs[i].count;
    for (size_t i = 0; i < g.nrows; i++)
        verify += g.rows[i].verify_failures + g.rows[i].violations; /* both: wrong data */
    r->total_errors += errors;
    r->total_verify += verify;
    sum->status = phase_status_name(run_phase_status(o, errors, verify));
    struct summary_line *line = &r->lines[r->nlines++];
    summary_compute(ph, sum, g.rows, g.nrows, errors, line);
    struct phase_data data = {
        .rows = g.rows,
        .nrows = g.nrows,
        .errors = g.errs,
        .nerrors = g.nerrs,
        .stuck = g.stuck,
        .nstuck = g.nstuck,
        .has_holds = workload_find(ph->kind)->flags & WORKLOAD_HOLDS,
        .holds = g.holds,
        .nholds = g.nholds,
        .ops = g.ops,
        .nranks = (size_t)r->size,
        .hists = g.merged,
        .stats = &line->stats,
    };
    summary_add_detail(line, ph, &data);
    run_record_phase(r, ph, sum, &data, t_gather);
    fprintf(stderr, "herd: phase %s: %s (%.3f s, start skew %.1f us)\n", ph->name, sum->status,
            sum->t_end - sum->t_start, sum->start_skew * 1e6);
    gathered_free(&g);
    return o;
}

/* Append n rows of size bytes to the array *all of *nall rows (kept for
 * the summary); without memory the rows are left out of it (they are in
 * the file all the same). */
static void run_keep(void **all, size_t *nall, const void *rows, size_t n, size_t size)
{
    if (n == 0)
        return;
    char *grown = realloc(*all, (*nall + n) * size);
    if (!grown)
        return;
    memcpy(grown + *nall * size, rows, n * size);
    *all = grown;
    *nall += n;
}

/* Rank 0, after a phase (or, with final, at the end): take the monitor's
 * rows and append them, the phase's mark and the hosts' NFS client
 * counters to /monitor. Server samples and process rows are kept for the
 * summary. */
static void run_write_monitor(struct run *r, const struct monitor_mark *mark,
                              const struct client_op_row *ops, size_t nops,
                              const struct client_row *clients, size_t nclients, bool final)
{
    struct monitor_append a = {.process_scope = r->job->phases[0].monitor_scope,
                               .marks = mark,
                               .nmarks = mark ? 1 : 0,
                               .client_ops = ops,
                               .nclient_ops = nops,
                               .clients = clients,
                               .nclients = nclients};
    runner_monitor_collect(&r->mon, final, &a.batch);
    const struct monitor_batch *b = &a.batch;
    run_keep((void **)&r->samples, &r->nsamples, b->samples, b->nsamples, sizeof *b->samples);
    run_keep((void **)&r->procs, &r->nprocs, b->processes, b->nprocesses, sizeof *b->processes);
    for (size_t i = 0; i < b->nnotes; i++)
        fprintf(stderr, "herd: monitor %s on %s: %s\n", b->notes[i].source, b->notes[i].host,
                b->notes[i].text);
    bool any = b->nsamples || b->nmetrics || b->nprocesses || b->ndisks || b->nnotes || a.nmarks ||
               nops || nclients;
    char err[512];
    if (r->results && any && results_write_monitor(r->results, &a, err, sizeof err) < 0)
        fprintf(stderr, "herd: results: %s\n", err);
    monitor_batch_free(&a.batch);
}

/* This host's NFS client counters now (NULL when not on a kernel NFS
 * mount or unreadable). */
static struct mountstats *run_client_snapshot(const struct run *r)
{
    if (!r->client_stats)
        return NULL;
    struct mountstats *ms = malloc(sizeof *ms);
    if (ms && client_stats_read(NULL, r->mount_point, ms) != 0) {
        free(ms);
        ms = NULL;
    }
    return ms;
}

/* After a phase: every host's client counters to rank 0, then /monitor.
 * After the last phase (final) the sampling stops. */
static void run_phase_monitor(struct run *r, int index, const struct phase_summary *sum,
                              struct mountstats *before, bool final)
{
    struct client_op_row *ops = NULL;
    size_t nops = 0, nrow = 0;
    struct client_row row;
    struct mountstats *after = before ? run_client_snapshot(r) : NULL;
    if (after && client_stats_rows(before, after, r->job->phases[index].name, r->host, &ops, &nops,
                                   &row) == 0)
        nrow = 1;
    free(after);
    size_t nall_ops = 0, nall_rows = 0;
    bool ok = true;
    struct client_op_row *all_ops = run_gather(r, ops, nops, sizeof *ops, &nall_ops, &ok);
    struct client_row *all_rows = run_gather(r, &row, nrow, sizeof row, &nall_rows, &ok);
    if (r->rank == 0) {
        struct monitor_mark mark = {.index = index, .t_start = sum->t_start, .t_end = sum->t_end};
        snprintf(mark.phase, sizeof mark.phase, "%s", r->job->phases[index].name);
        run_write_monitor(r, &mark, all_ops, nall_ops, all_rows, nall_rows, final);
    }
    free(ops);
    free(all_ops);
    free(all_rows);
}

static void run_sync(struct phase_ctx *c)
{
    struct run *r = c->sync_data;
    if (r->step_comm != MPI_COMM_NULL) /* a ladder step: only its active ranks run */
        runner_stop_barrier_on(&r->stop, r->step_comm);
    else
        runner_stop_barrier(&r->stop);
}

/* Ladder steps take ranks spread over hosts: the first rank of every
 * host, then the second of every host, ... (4 active ranks on 4 hosts are
 * one per host). spread[rank] is the rank's place in that order. */
static int *run_spread_order(const struct run *r)
{
    int *spread = calloc((size_t)r->size, sizeof *spread);
    int *seen = calloc((size_t)r->nhosts + 1, sizeof *seen);
    int *nth = calloc((size_t)r->size, sizeof *nth);
    if (!spread || !seen || !nth) {
        free(seen);
        free(nth);
        free(spread);
        return NULL;
    }
    for (int i = 0; i < r->size; i++)
        nth[i] = seen[r->rank_host[i]]++;
    int place = 0;
    for (int k = 0; place < r->size; k++)
        for (int i = 0; i < r->size; i++)
            if (nth[i] == k)
                spread[i] = place++;
    free(seen);
    free(nth);
    return spread;
}

/* Whether rank i does I/O in a phase with active_ranks (0: every rank). */
static bool run_active(const struct run *r, int i, int64_t active_ranks)
{
    return active_ranks <= 0 || (r->spread ? r->spread[i] : i) < active_ranks;
}

/* Hosts with at least one active rank. */
static int run_active_hosts(const struct run *r, int64_t active_ranks)
{
    int n = 0;
    for (int h = 0; h < r->nhosts; h++)
        for (int i = 0; i < r->size; i++)
            if (r->rank_host[i] == h && run_active(r, i, active_ranks)) {
                n++;
                break;
            }
    return n;
}

static bool run_peer_stopped(struct phase_ctx *c)
{
    struct run *r = c->sync_data;
    if (c->progress) /* between operations, on the main thread: due sends */
        progress_poll(c->progress);
    return runner_stop_poll(&r->stop);
}

/* Run one phase on every rank. Returns how it ended (agreed). */
static struct phase_outcome run_phase(struct run *r, int index)
{
    const struct phase *ph = &r->job->phases[index];
    const struct workload_ops *wl = workload_find(ph->kind);
    struct errtab errors;
    errtab_init(&errors);
    struct phase_ctx c = {
        .ph = ph,
        .index = index,
        .rank = r->rank,
        .nranks = r->size,
        .host = r->host,
        .peer = ph->read_from == READ_NEIGHBOR ? run_neighbor(r) : r->rank,
        .be = r->be,
        .be_ctx = r->be_ctx,
        .rundir = r->rundir,
        .clock = &r->clock,
        .records = calloc((size_t)ph->iterations, sizeof(struct rank_record)),
        .errors = &errors,
        .hist = calloc(OP_COUNT, sizeof(struct hist)),
        .sync = run_sync,
        .sync_data = r,
        .peer_stopped = run_peer_stopped,
        .claims = &r->claims,
    };
    struct progress progress; /* every rank counts; rank 0 prints */
    c.progress = &progress;
    struct watchdog *dog =
        watchdog_start(&c.inflight, &r->clock, ph->stuck_after, r->rank, r->hostname);
    /* A ladder step: only its active ranks touch the target; the others
     * wait at the phase's barriers with empty rows. */
    bool active = run_active(r, r->rank, ph->active_ranks);
    r->step_comm = MPI_COMM_NULL;
    if (ph->active_ranks > 0)
        MPI_Comm_split(r->comm, active ? 0 : MPI_UNDEFINED, r->rank, &r->step_comm);
    if (active && r->be->configure && !(wl->flags & WORKLOAD_NO_BACKEND)) {
        int rc = r->be->configure(r->be_ctx, ph);
        if (rc < 0 && c.records)
            workload_fail(&c, NULL, OP_CONNECT, rc, ph->target);
    }
    /* Preparing (expected digests, directories) is untimed but bounded: by
     * a stop, and by the phase's deadline, as the phase itself is. */
    c.deadline_at = ph->deadline > 0 ? clock_now(&r->clock) + ph->deadline : 0;
    int prep = !(c.records && c.hist) ? -ENOMEM : active ? wl->prepare(&c) : 0;
    c.prepare_late = prep == -EINTR && !runner_stop_poll(&r->stop);
    if (c.prepare_late && r->rank == 0)
        fprintf(stderr, "herd: phase %s: preparing it outlasted its deadline (%gs): not run\n",
                ph->name, ph->deadline);
    for (int64_t i = 0; c.records && i < ph->iterations; i++) {
        c.records[i].rank = r->rank;
        c.records[i].iteration = (int32_t)i;
        c.records[i].host = r->host;
    }
    if (prep < 0 && prep != -EINTR) {
        fprintf(stderr, "herd: rank %d: phase %s: cannot prepare: %s\n", r->rank, ph->name,
                strerror(-prep));
        if (c.records)
            workload_fail(&c, NULL, OP_OPEN, prep, "(prepare)");
    }

    /* Workloads may sync inside run: either every rank runs, or none. A
     * stop caught while preparing (a long expected digest) is a reason
     * not to run too. */
    bool stopping = runner_stop_poll(&r->stop);
    bool run_it = run_all_ok(r, prep >= 0 && !stopping && c.records && c.hist);

    struct phase_summary sum = {.index = index,
                                .active_ranks =
                                    ph->active_ranks > 0 ? (int)ph->active_ranks : r->size,
                                .active_hosts = run_active_hosts(r, ph->active_ranks)};
    MPI_Barrier(r->comm);
    double t_start = 0;
    if (r->rank == 0)
        t_start = clock_now(&r->clock) + r->start_margin;
    MPI_Bcast(&t_start, 1, MPI_DOUBLE, 0, r->comm);
    sum.t_start = t_start;
    if (index == 0 && r->rank == 0) { /* sampling runs from the first phase's start */
        char err[512];
        if (runner_monitor_begin(&r->mon, ph, &r->clock, t_start, err, sizeof err) < 0)
            fprintf(stderr, "herd: monitor: %s\n", err);
    }
    struct mountstats *client_before = run_client_snapshot(r);
    c.deadline_at = ph->deadline > 0 ? t_start + ph->deadline : 0;
    clock_sleep_until(&r->clock, t_start);
    double started = clock_now(&r->clock);
    if (index == 0 && r->rank == 0)
        r->startup_seconds = clock_mono() - r->opts->t_init;
    bool io = wl->flags & WORKLOAD_MOVES_BYTES;
    progress_begin(c.progress, r->comm, ph->name, index, io ? job_phase_bytes_per_rank(ph) : 0,
                   io ? NULL : c.op_count);
    if (run_it && active) {
        if (r->be->observe) /* the backend's own RPCs go into this phase's tables */
            r->be->observe(r->be_ctx, c.hist, c.op_count, c.op_seconds);
        wl->run(&c);
        if (r->be->observe)
            r->be->observe(r->be_ctx, NULL, NULL, NULL);
    }
    progress_end(c.progress);
    wl->finish(&c);
    struct stuck_entry *stuck;
    size_t nstuck;
    watchdog_stop(dog, &stuck, &nstuck);
    runner_stop_barrier(&r->stop); /* hears a stop while the slowest finish */
    sum.t_end = clock_now(&r->clock);
    progress_finish(c.progress); /* all ranks: the phase's closing progress line */
    if (r->step_comm != MPI_COMM_NULL)
        MPI_Comm_free(&r->step_comm);

    struct phase_outcome o = {0};
    if (run_all_ok(r, c.records && c.hist))
        o = run_collect(r, ph, &c, stuck, nstuck, &sum, started);
    else
        o = run_agree_outcome(r, &c);
    run_phase_monitor(r, index, &sum, client_before, index == r->job->nphases - 1 || o.signal);
    free(client_before);
    free(stuck);
    free(c.records);
    free(c.hist);
    holds_free(&c.holds);
    errtab_free(&errors);
    return o;
}

/* The clean-up stops at its deadline or at a stop that came during it,
 * to this rank or to any other. */
static bool run_cleanup_stopped(struct run *r, double deadline)
{
    return runner_stop_in_stage(&r->stop) || clock_now(&r->clock) >= deadline;
}

/* The workloads' stop test during the clean-up (phase_ctx.peer_stopped). */
static bool run_cleanup_peer_stopped(struct phase_ctx *c)
{
    struct run *r = c->sync_data;
    return runner_stop_in_stage(&r->stop);
}

/* Remove what this run made (keep = no), and only that: every rank ORs
 * its claims into everyone's, each workload removes its claimed files
 * (pass 0) and then directories (pass 1), and rank 0 the claimed fileset
 * directories. Bounded by CLEANUP_SECONDS and by a signal that comes
 * during the clean-up (one that ended the phases does not skip it). What
 * could not be removed is gathered to rank 0 (*left, *nleft). */
static void run_cleanup(struct run *r, struct err_entry **left, size_t *nleft)
{
    const struct job *job = r->job;
    struct errtab errs;
    errtab_init(&errs);
    int n = r->claims.nphases;
    run_mpi_ok(MPI_Allreduce(r->claims.mine, r->claims.any, n, MPI_UNSIGNED_CHAR, MPI_BOR, r->comm),
               "allreduce");
    double deadline = clock_now(&r->clock) + CLEANUP_SECONDS;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < job->nphases; i++) {
            const struct workload_ops *wl = workload_find(job->phases[i].kind);
            if (!wl->remove || !(r->claims.any[i] & (CLAIM_FILE | CLAIM_TREE)))
                continue;
            if (run_cleanup_stopped(r, deadline))
                break;
            struct phase_ctx c = {.ph = &job->phases[i],
                                  .index = i,
                                  .rank = r->rank,
                                  .nranks = r->size,
                                  .rundir = r->rundir,
                                  .be = r->be,
                                  .be_ctx = r->be_ctx,
                                  .clock = &r->clock,
                                  .errors = &errs,
                                  .deadline_at = deadline,
                                  .claims = &r->claims,
                                  .sync_data = r,
                                  .peer_stopped = run_cleanup_peer_stopped,
                                  .signals_before = r->stop.stage_signals + r->stop.late_copies};
            wl->remove(&c, pass);
        }
        runner_stop_barrier(&r->stop);
    }
    for (int i = 0; r->rank == 0 && i < job->nphases; i++) {
        if (!(r->claims.any[i] & CLAIM_FILESET_DIR))
            continue;
        if (run_cleanup_stopped(r, deadline))
            break;
        char path[HERD_PATH_MAX];
        struct phase_ctx c = {.ph = &job->phases[i], .rundir = r->rundir};
        workload_fileset_dir(&c, path, sizeof path);
        int rc = r->be->rmdir(r->be_ctx, path);
        if (rc < 0 && rc != -ENOENT)
            errtab_add(&errs, r->rank, OP_RMDIR, rc, path, clock_now(&r->clock));
    }
    int stopped[2] = {runner_stop_in_stage(&r->stop), clock_now(&r->clock) >= deadline};
    MPI_Allreduce(MPI_IN_PLACE, stopped, 2, MPI_INT, MPI_MAX, r->comm);
    r->cleanup_unfinished = stopped[0] || stopped[1];
    if (r->cleanup_unfinished && r->rank == 0)
        fprintf(stderr, "herd: clean-up stopped (%s): what this run made in %s/%s is left\n",
                stopped[0] ? "signal" : "after its time limit", job->phases[0].target, r->rundir);
    bool ok = true;
    *left = run_gather(r, errs.entries, errs.n, sizeof(struct err_entry), nleft, &ok);
    errtab_free(&errs);
}

/* Rank 0: say what the clean-up left, on stderr and in the results. */
static void run_report_cleanup(struct run *r, const struct err_entry *left, size_t nleft)
{
    uint64_t total = 0;
    for (size_t i = 0; i < nleft; i++)
        total += left[i].count;
    if (total == 0)
        return;
    r->cleanup_unfinished = true; /* a leftover is an I/O error of the run: exit 3 */
    r->total_errors += total;
    fprintf(stderr, "herd: clean-up could not remove %llu entr%s:\n", (unsigned long long)total,
            total == 1 ? "y" : "ies");
    for (size_t i = 0; i < nleft && i < 10; i++)
        fprintf(stderr, "herd:   %s (%s by rank %d: %s%s)\n", left[i].first_path,
                op_name((enum op)left[i].op), left[i].rank, strerror(left[i].err),
                left[i].count > 1 ? ", and more like it" : "");
    char err[512];
    if (r->results && results_write_cleanup(r->results, left, nleft, err, sizeof err) < 0)
        fprintf(stderr, "herd: results: %s\n", err);
}

/* Time a barrier + broadcast so that phase starts are announced early
 * enough for the slowest rank to hear in time. */
static double run_measure_margin(const struct run *r)
{
    double worst = 0, dummy = 0;
    for (int k = 0; k < 3; k++) {
        double t0 = clock_mono();
        MPI_Barrier(r->comm);
        MPI_Bcast(&dummy, 1, MPI_DOUBLE, 0, r->comm);
        double t = clock_mono() - t0;
        worst = t > worst ? t : worst;
    }
    MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, r->comm);
    return 0.02 + 3 * worst;
}

/* Every I/O rank's memory and CPU time over the run, to /usage. */
static void run_write_usage(struct run *r)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    struct usage_row mine = {
        .rank = r->rank,
        .host = r->host,
        .max_rss_bytes = (double)ru.ru_maxrss * 1024.0,
        .user_seconds = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6,
        .system_seconds = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6,
    };
    struct usage_row *all = r->rank == 0 ? calloc((size_t)r->size, sizeof *all) : NULL;
    MPI_Gather(&mine, sizeof mine, MPI_BYTE, all, sizeof mine, MPI_BYTE, 0, r->comm);
    char err[512];
    if (r->rank == 0 && all && r->results &&
        results_write_usage(r->results, all, (size_t)r->size, err, sizeof err) < 0)
        fprintf(stderr, "herd: results: %s\n", err);
    free(all);
}

static void run_release_rundir(struct run *r);

/* Rank 0: the outputs' places, checked by the safe-output rule
 * (safeout.h): -o, and --json (which may not name the results file).
 * Returns 0, or 2 (refused, one line on stderr). */
static int run_check_outputs(struct run *r)
{
    char err[JOB_ERR_MAX], shown[256];
    utf8_escape(r->output, shown, sizeof shown);
    if (safeout_prepare(&r->out, shown, r->output, r->opts->force, results_file_check,
                        "a results file", err, sizeof err) < 0) {
        fprintf(stderr, "herd: %s\n", err);
        return 2;
    }
    if (!r->opts->json)
        return 0;
    utf8_escape(r->opts->json, shown, sizeof shown);
    if (safeout_names(&r->out, r->opts->json)) {
        fprintf(stderr, "herd: --json %s: names the results file (-o): refused\n", shown);
        return 2;
    }
    if (safeout_prepare(&r->json, shown, r->opts->json, r->opts->force, summary_json_file_check,
                        "an earlier herd JSON summary", err, sizeof err) < 0) {
        fprintf(stderr, "herd: --json %s\n", err);
        return 2;
    }
    return 0;
}

/* Rank 0: the option (-o, --json) whose output would land in the run
 * directory, which the workloads write and the clean-up removes; NULL when
 * none does (or the target is not a local directory). */
static const char *run_output_in_rundir(const struct run *r)
{
    if (!r->be->local_dir)
        return NULL;
    int fd = r->be->local_dir(r->be_ctx, r->rundir);
    if (fd < 0)
        return NULL;
    const char *which = safeout_beneath(&r->out, fd)                     ? "-o"
                        : r->opts->json && safeout_beneath(&r->json, fd) ? "--json"
                                                                         : NULL;
    close(fd);
    return which;
}

/* Rank 0, before anything is written: may the results go where the
 * options say, and may this run have the run directory? Returns 0, or 2
 * (refused, with one line on stderr; nothing was made). */
static int run_claim_places(struct run *r)
{
    if (run_check_outputs(r) != 0)
        return 2;
    char err[JOB_ERR_MAX];
    char owner[512];
    snprintf(owner, sizeof owner, "run %s, host %s, pid %ld\n", r->run_id, r->hostname,
             (long)getpid());
    bool reuse = r->job->run_id[0] != '\0'; /* a fixed run_id may take up its kept directory */
    int rc =
        rundir_open(r->be, r->be_ctx, r->rundir, reuse, owner, &r->rundir_ours, err, sizeof err);
    if (rc == RUNDIR_REFUSED) {
        fprintf(stderr, "herd: target %s: %s\n", r->job->phases[0].target, err);
        return 2;
    }
    if (rc < 0) /* a read-only or full target: the phases count why */
        fprintf(stderr, "herd: target %s: %s\n", r->job->phases[0].target, err);
    r->rundir_locked = rc == 0;
    const char *inside = rc == 0 ? run_output_in_rundir(r) : NULL;
    if (inside) {
        fprintf(stderr,
                "herd: %s %s: inside the run directory %s, which the run writes and removes: "
                "refused\n",
                inside, strcmp(inside, "-o") == 0 ? r->out.shown : r->json.shown, r->rundir);
        run_release_rundir(r);
        return 2;
    }
    return 0;
}

/* Rank 0: the results file with the run's header. 0, or 2 on failure. */
static int run_create_results(struct run *r, double sync_seconds, const char *start_utc,
                              const struct host_info *hosts, const struct rank_info *ranks)
{
    const struct phase *first = &r->job->phases[0];
    char mpi_version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len;
    MPI_Get_library_version(mpi_version, &len);
    char *nl = strchr(mpi_version, '\n');
    if (nl)
        *nl = '\0';
    struct run_info info = {
        .version = HERD_VERSION,
        .run_id = r->run_id,
        .command_line = r->opts->command_line,
        .job_path = r->job->path,
        .job_text = r->job->text,
        .start_utc = start_utc,
        .epoch_unix = r->epoch_unix,
        .mpi_version = mpi_version,
        .target = first->target,
        .nranks = r->size,
        .nhosts = r->nhosts,
        .clock_sync_seconds = sync_seconds,
        .monitor_host = r->mon.sampler >= 0 ? r->mon.sampler_host : "",
        .monitor_rank = r->mon.sampler,
        .monitor_interval = first->monitor_interval,
        .monitor_url = first->monitor_url,
    };
    char err[JOB_ERR_MAX];
    int fd;
    r->results = NULL;
    if (safeout_create(&r->out, &fd, err, sizeof err) == 0) {
        r->results =
            results_create(fd, r->output, &info, hosts, r->nhosts, ranks, r->size, err, sizeof err);
        close(fd);
        /* In place once its header is written; never over what is not ours. */
        if (r->results && safeout_commit(&r->out, err, sizeof err) < 0) {
            char ignored[512];
            results_close(r->results, "partial", "", 2, -1, ignored, sizeof ignored);
            r->results = NULL;
        }
        safeout_abandon(&r->out); /* a file that did not make it */
    }
    r->lines = calloc((size_t)r->job->nphases, sizeof *r->lines);
    if (!r->results || !r->lines) {
        fprintf(stderr, "herd: %s\n", r->results ? "out of memory" : err);
        return 2;
    }
    fprintf(stderr, "herd: run %s: %d ranks on %d hosts, target %s (%s), results %s\n", r->run_id,
            r->size, r->nhosts, first->target, r->rundir, r->output);
    if (r->mon.sampler >= 0)
        fprintf(stderr, "herd: monitor: rank %d samples %s every %gs\n", r->mon.sampler,
                r->mon.sampler_host, first->monitor_interval);
    return 0;
}

/* Rank 0: give the run directory back (lock file; the directory itself
 * when this run made it and keeps nothing). */
static void run_release_rundir(struct run *r)
{
    if (!r->rundir_locked)
        return;
    char err[JOB_ERR_MAX];
    if (rundir_close(r->be, r->be_ctx, r->rundir, !r->job->keep && r->rundir_ours,
                     !r->cleanup_unfinished, err, sizeof err) < 0)
        fprintf(stderr, "herd: %s\n", err);
    r->rundir_locked = false;
}

/* Rank 0, once the server CPU is in the lines: one /phases/<ladder>/steps
 * table per load ladder, in job order. */
static void run_write_ladders(struct run *r)
{
    struct step_row *rows = r->nlines ? malloc((size_t)r->nlines * sizeof *rows) : NULL;
    for (int i = 0; rows && i < r->nlines; i++) {
        const char *ladder = r->lines[i].ladder;
        bool seen = false;
        for (int k = 0; k < i && !seen; k++)
            seen = strcmp(r->lines[k].ladder, ladder) == 0;
        if (!ladder[0] || seen)
            continue;
        size_t n = summary_ladder_steps(r->lines, r->nlines, ladder, rows);
        char err[512];
        if (results_write_steps(r->results, ladder, rows, n, err, sizeof err) < 0)
            fprintf(stderr, "herd: results: %s\n", err);
    }
    free(rows);
}

/* Rank 0: how the run ended as far as it is known (signal: the agreed
 * stop signal, 0 for none): its status and its exit code. */
static int run_outcome(const struct run *r, int signal, enum run_status *status)
{
    *status = signal ? RUN_INTERRUPTED : r->nlost ? RUN_INCOMPLETE : RUN_COMPLETE;
    return signal                                                          ? 128 + signal
           : r->nlost                                                      ? EXIT_RESULTS_LOST
           : (r->total_errors || r->total_verify || r->cleanup_unfinished) ? 3
                                                                           : 0;
}

/* Rank 0, after the phases: the outcome so far into the results file,
 * before the clean-up. A launcher that SIGKILLs the ranks soon after
 * passing a stop on (Open MPI's mpirun: 1 s) then leaves a file that says
 * how the run ended; closing the file records it again with what the
 * clean-up changed. */
static void run_record_outcome(struct run *r, int signal)
{
    enum run_status status;
    int exit_code = run_outcome(r, signal, &status);
    char end_utc[40], err[512];
    utc_now(end_utc, sizeof end_utc);
    if (r->results && results_status(r->results, run_status_name(status), end_utc, exit_code,
                                     r->startup_seconds, err, sizeof err) < 0)
        fprintf(stderr, "herd: results: %s\n", err);
}

/* Rank 0: the --json summary, by the safe-output rule. When it cannot be
 * written, an earlier summary that --force was allowed to replace is
 * removed too: a reader must never take it for this run's. 0 or -1. */
static int run_write_json(struct run *r, const char *status_name, int exit_code)
{
    struct summary_json_run jr = {.run_id = r->run_id,
                                  .status = status_name,
                                  .exit_code = exit_code,
                                  .results_file = r->output,
                                  .job_path = r->job->path,
                                  .nranks = r->size};
    char err[512];
    if (summary_json_write(&r->json, &jr, r->lines, r->nlines, err, sizeof err) == 0) {
        printf("summary: %s\n", r->json.shown);
        return 0;
    }
    fprintf(stderr, "herd: --json %s\n", err);
    if (safeout_remove_old(&r->json, err, sizeof err) < 0)
        fprintf(stderr, "herd: --json %s\n", err);
    printf("summary: NOT written to %s (see the error above)\n", r->json.shown);
    return -1;
}

/* Rank 0: final status, exit code, results file closed, summary printed. */
static int run_finish(struct run *r, int signal)
{
    summary_add_monitor(r->lines, r->nlines, r->samples, r->nsamples, r->procs, r->nprocs);
    for (int i = 0; i < r->nlines; i++) {
        const struct summary_line *l = &r->lines[i];
        struct phase_server s = {l->cpu_mean, l->cpu_max, l->nfsd_threads, l->proc_cpu,
                                 l->proc_thread_max};
        char err[512];
        if ((!isnan(s.cpu_mean) || !isnan(s.nfsd_threads) || !isnan(s.proc_cpu) ||
             !isnan(s.proc_thread_max)) &&
            results_phase_server(r->results, l->name, &s, err, sizeof err) < 0)
            fprintf(stderr, "herd: results: %s\n", err);
    }
    run_write_ladders(r);
    enum run_status status;
    int exit_code = run_outcome(r, signal, &status);
    char end_utc[40], err[512];
    utc_now(end_utc, sizeof end_utc);
    const char *status_name = run_status_name(status);
    if (results_close(r->results, status_name, end_utc, exit_code, r->startup_seconds, err,
                      sizeof err) < 0) {
        fprintf(stderr, "herd: results: %s\n", err);
        status_name = "partial"; /* what the file still says */
        if (!signal)
            exit_code = EXIT_RESULTS_LOST;
    }
    r->results = NULL;
    summary_print(stdout, r->lines, r->nlines);
    printf("\nresults: %s (status %s)\n", r->output, status_name);
    if (r->opts->json && run_write_json(r, status_name, exit_code) < 0 && !signal)
        exit_code = EXIT_RESULTS_LOST;
    if (r->nlost) {
        printf("not in the results file: %d phase%s:", r->nlost, r->nlost == 1 ? "" : "s");
        for (int i = 0; i < r->nlost && i < (int)(sizeof r->lost / sizeof r->lost[0]); i++)
            printf(" %s", r->lost[i]);
        printf("%s (records in %s.<phase>.lost.csv or on stderr)\n",
               r->nlost > (int)(sizeof r->lost / sizeof r->lost[0]) ? " ..." : "", r->output);
    }
    fflush(stdout);
    free(r->lines);
    return exit_code;
}

/* The I/O ranks' run, after the common set-up: hosts, target, run
 * directory, results file, the phases, clean-up, final status. */
static int run_io_stages(struct run *r, double sync_seconds, const char *start_utc)
{
    const struct job *job = r->job;
    const struct phase *first = &job->phases[0];
    r->start_margin = run_measure_margin(r);
    r->clock_error_max = r->clock.error;
    MPI_Allreduce(MPI_IN_PLACE, &r->clock_error_max, 1, MPI_DOUBLE, MPI_MAX, r->comm);

    /* Every rank must reach the target; otherwise nothing can run. A stop
     * that comes meanwhile (a connect that waits on a frozen server hears
     * another rank's too) ends the run here with its signal's exit code. */
    r->be = backend_find(first->backend);
    int rc = r->be->connect(first->target, first, &r->be_ctx);
    int failed_rank = rc < 0 ? r->rank : r->size;
    int sig = runner_stop_poll(&r->stop) ? runner_stop_signal(&r->stop) : 0;
    MPI_Allreduce(MPI_IN_PLACE, &failed_rank, 1, MPI_INT, MPI_MIN, r->comm);
    MPI_Allreduce(MPI_IN_PLACE, &sig, 1, MPI_INT, MPI_MAX, r->comm);
    if (sig) {
        if (r->rank == 0)
            fprintf(stderr, "herd: stopped by signal %d while connecting to '%s': nothing ran\n",
                    sig, first->target);
        if (rc == 0)
            r->be->disconnect(r->be_ctx);
        return 128 + sig;
    }
    if (failed_rank < r->size) {
        if (r->rank == failed_rank)
            fprintf(stderr, "herd: target '%s': %s (rank %d)\n", first->target, strerror(-rc),
                    r->rank);
        if (rc == 0)
            r->be->disconnect(r->be_ctx);
        return 2;
    }
    /* After connect: a backend describes what its connection negotiated. */
    struct host_info *hosts = NULL;
    struct rank_info *ranks = NULL;
    if (run_map_hosts(r, &hosts, &ranks) < 0) {
        if (r->rank == 0)
            fprintf(stderr, "herd: out of memory mapping %d ranks to hosts\n", r->size);
        r->be->disconnect(r->be_ctx);
        return 1;
    }
    r->spread = run_spread_order(r); /* NULL (no memory): ladder steps take ranks 0..N-1 */

    int refused = 0;
    if (r->rank == 0) {
        refused = run_claim_places(r);
        if (!refused && run_create_results(r, sync_seconds, start_utc, hosts, ranks) != 0) {
            run_release_rundir(r);
            refused = 2;
        }
    }
    free(hosts);
    free(ranks);
    MPI_Bcast(&refused, 1, MPI_INT, 0, r->comm);
    r->claims.nphases = job->nphases;
    r->claims.mine = calloc((size_t)job->nphases, 1);
    r->claims.any = calloc((size_t)job->nphases, 1);
    if (!refused && !run_all_ok(r, r->claims.mine && r->claims.any))
        refused = 1;
    if (refused) {
        if (r->rank == 0 && r->results) {
            char err[512];
            results_close(r->results, "partial", "", refused, -1, err, sizeof err);
            r->results = NULL;
            run_release_rundir(r);
            free(r->lines);
        }
        workload_claims_free(&r->claims);
        r->be->disconnect(r->be_ctx);
        return refused;
    }
    runner_stop_stage(&r->stop, RUNNER_STAGE_PHASES);
    struct phase_outcome o = {0};
    for (int i = 0; i < job->nphases && !o.signal; i++)
        o = run_phase(r, i);
    if (r->rank == 0)
        run_record_outcome(r, o.signal);
    if (!job->keep) {
        runner_stop_stage(&r->stop, RUNNER_STAGE_CLEANUP); /* later stops end the clean-up */
        if (r->be->configure)
            r->be->configure(r->be_ctx, NULL); /* no phase's faults or sizes */
        struct err_entry *left = NULL;
        size_t nleft = 0;
        run_cleanup(r, &left, &nleft);
        if (r->rank == 0)
            run_report_cleanup(r, left, nleft);
        free(left);
    }
    if (r->rank == 0)
        run_release_rundir(r); /* even after a stop: one call, bounded by op_timeout */
    r->be->disconnect(r->be_ctx);
    workload_claims_free(&r->claims);

    /* A signal during the clean-up ends the run as interrupted too. */
    sig = o.signal ? o.signal : runner_stop_signal(&r->stop);
    MPI_Allreduce(MPI_IN_PLACE, &sig, 1, MPI_INT, MPI_MAX, r->comm);

    run_write_usage(r);
    int exit_code = r->rank == 0 ? run_finish(r, sig) : 0;
    MPI_Bcast(&exit_code, 1, MPI_INT, 0, r->comm);
    return exit_code;
}

/* The I/O ranks' run, with a stop heard by every rank from start-up to
 * the end. */
static int run_io(struct run *r, double sync_seconds, const char *start_utc)
{
    runner_stop_init(&r->stop, r->comm);
    int exit_code = run_io_stages(r, sync_seconds, start_utc);
    runner_stop_free(&r->stop);
    return exit_code;
}

int runner_run(const struct job *job, const struct runner_opts *opts)
{
    struct run r = {.job = job,
                    .opts = opts,
                    .comm = MPI_COMM_WORLD,
                    .startup_seconds = -1,
                    .out = SAFEOUT_NONE,
                    .json = SAFEOUT_NONE};
    int world_rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    signals_install();
    signals_follow_parent();
    const struct phase *first = &job->phases[0];

    char start_utc[40];
    utc_now(start_utc, sizeof start_utc);
    run_make_id(&r, world_rank);
    if (opts->output)
        snprintf(r.output, sizeof r.output, "%s", opts->output);
    else
        snprintf(r.output, sizeof r.output, "herd-%s.h5", r.run_id);
    /* Every rank, monitor ranks too, runs on the common clock. */
    double t0 = clock_mono();
    clocksync_run(MPI_COMM_WORLD, CLOCKSYNC_ROUNDS, &r.clock);
    double sync_seconds = clock_mono() - t0;
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    r.epoch_unix = (double)wall.tv_sec + wall.tv_nsec * 1e-9 - clock_now(&r.clock);
    MPI_Bcast(&r.epoch_unix, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);

    char hostname[RESULTS_HOST_MAX] = "";
    if (gethostname(hostname, sizeof hostname - 1) != 0)
        snprintf(hostname, sizeof hostname, "unknown");
    char err[512];
    if (runner_monitor_roles(first, hostname, &r.mon, err, sizeof err) < 0) {
        if (world_rank == 0)
            fprintf(stderr, "herd: %s\n", err);
        free(r.mon.monitors);
        return 2;
    }
    MPI_Comm_split(MPI_COMM_WORLD, r.mon.is_monitor, world_rank, &r.comm);
    /* A failing collective on the I/O ranks is reported and costs the
     * phase, not the run (run_mpi_ok). */
    MPI_Comm_set_errhandler(r.comm, MPI_ERRORS_RETURN);
    int exit_code;
    if (r.mon.is_monitor) {
        exit_code = runner_monitor_serve(&r.mon, first, &r.clock, hostname);
        free(r.mon.monitors);
    } else {
        MPI_Comm_rank(r.comm, &r.rank);
        MPI_Comm_size(r.comm, &r.size);
        /* Load ladders become one phase per step, for this many I/O ranks;
         * every I/O rank expands the same job the same way. */
        struct job steps;
        if (job_expand_ladders(job, r.size, &steps, err, sizeof err) < 0) {
            if (r.rank == 0)
                fprintf(stderr, "herd: %s\n", err);
            exit_code = 2;
        } else {
            r.job = &steps;
            exit_code = run_io(&r, sync_seconds, start_utc);
            job_free(&steps);
        }
        free(r.spread);
        if (r.rank == 0)
            runner_monitor_release(&r.mon, exit_code);
        else
            free(r.mon.monitors);
        free(r.rank_host);
        free(r.samples);
        free(r.procs);
        safeout_close(&r.out);
        safeout_close(&r.json);
    }
    MPI_Comm_free(&r.comm);
    return exit_code;
}
