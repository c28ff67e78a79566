/* runner.c — the phase engine. Sets up the run (id, common clock, hosts,
 * results file), then for each phase: prepare, barrier, timed start at a
 * common instant, the workload, closing barrier, gather to rank 0 and
 * append the phase to results.h5. Only the runner (and results) call MPI
 * collectives; no I/O error ends the run. */
#include "runner.h"

#include <errno.h>
#include <stdbool.h>
#include <mpi.h>
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
#include "runner_monitor.h"
#include "signals.h"
#include "watchdog.h"
#include "summary.h"
#include "workload.h"

#define CLOCKSYNC_ROUNDS 10

/* Everything one rank knows about the run as a whole. */
struct run {
    const struct job *job;
    const struct runner_opts *opts;
    MPI_Comm comm;         /* the I/O ranks (monitor ranks are not in it) */
    int rank, size;        /* in comm */
    char run_id[64];
    char rundir[96];
    struct clock clock;
    double start_margin;   /* seconds between announcing and starting a phase */
    double clock_error_max; /* largest offset error bound of any rank */
    int host;              /* this rank's host index */
    char hostname[RESULTS_HOST_MAX];
    int *rank_host;        /* host index of every rank */
    int nhosts;
    const struct backend_ops *be;
    void *be_ctx;
    char output[1100];       /* results file path */
    struct results *results; /* rank 0 only */
    struct summary_line *lines;
    int nlines;
    uint64_t total_errors, total_verify;
    struct monitor_link mon;
    double epoch_unix;
    bool client_stats;      /* this rank reads its host's NFS client counters */
    char mount_point[RESULTS_HOST_MAX]; /* of the target, when on a kernel NFS mount */
    struct monitor_sample *samples; /* rank 0: every server sample so far */
    size_t nsamples;
    double startup_seconds; /* rank 0: MPI_Init to the first phase's start */
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
    snprintf(r->rundir, sizeof r->rundir, "herd-%s", r->run_id);
}

/* Every rank learns every rank's host index (hosts numbered in order of
 * their lowest rank); rank 0 also gets the host and rank tables. */
static int run_map_hosts(struct run *r, struct host_info **hosts_out,
                         struct rank_info **ranks_out)
{
    struct host_info me;
    hosts_describe(r->job->phases[0].target, &me);
    char *names = calloc((size_t)r->size, RESULTS_HOST_MAX);
    r->rank_host = calloc((size_t)r->size, sizeof *r->rank_host);
    struct host_info *all = r->rank == 0 ? calloc((size_t)r->size, sizeof *all) : NULL;
    if (!names || !r->rank_host || (r->rank == 0 && !all))
        return -ENOMEM;
    MPI_Allgather(me.hostname, RESULTS_HOST_MAX, MPI_CHAR, names, RESULTS_HOST_MAX, MPI_CHAR,
                  r->comm);
    MPI_Gather(&me, sizeof me, MPI_BYTE, all, sizeof me, MPI_BYTE, 0, r->comm);
    r->nhosts = 0;
    int *first_rank = calloc((size_t)r->size, sizeof *first_rank);
    if (!first_rank)
        return -ENOMEM;
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

    struct rank_info ri = {.rank = r->rank, .host = r->host, .pid = (int32_t)getpid(),
                           .clock_offset = r->clock.base, .clock_error = r->clock.error};
    struct rank_info *ranks = r->rank == 0 ? calloc((size_t)r->size, sizeof *ranks) : NULL;
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

/* Gather what every rank measured and, on rank 0, write the phase. */
/* Gather every rank's array of n items of `size` bytes to rank 0, which
 * gets them concatenated in rank order (malloc'd, *total items). */
static void *run_gather(const struct run *r, const void *mine, size_t n, size_t size,
                        size_t *total)
{
    int bytes = (int)(n * size);
    int *counts = r->rank == 0 ? calloc((size_t)r->size, sizeof *counts) : NULL;
    int *displs = r->rank == 0 ? calloc((size_t)r->size, sizeof *displs) : NULL;
    MPI_Gather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, 0, r->comm);
    int sum = 0;
    for (int i = 0; r->rank == 0 && i < r->size; i++) {
        displs[i] = sum;
        sum += counts[i];
    }
    void *all = r->rank == 0 ? malloc(sum ? (size_t)sum : 1) : NULL;
    MPI_Gatherv(mine, bytes, MPI_BYTE, all, counts, displs, MPI_BYTE, 0, r->comm);
    free(counts);
    free(displs);
    *total = (size_t)sum / size;
    return all;
}

static void run_collect(struct run *r, const struct phase *ph, struct phase_ctx *c,
                        const struct stuck_entry *stuck_mine, size_t nstuck_mine,
                        struct phase_summary *sum, double started, int *status_flags)
{
    double t_gather = clock_mono();
    int n = (int)ph->iterations;
    double *starts = r->rank == 0 ? malloc((size_t)r->size * sizeof *starts) : NULL;
    MPI_Gather(&started, 1, MPI_DOUBLE, starts, 1, MPI_DOUBLE, 0, r->comm);

    size_t rowbytes = (size_t)n * sizeof(struct rank_record);
    struct rank_record *rows = r->rank == 0 ? malloc(rowbytes * (size_t)r->size) : NULL;
    MPI_Gather(c->records, (int)rowbytes, MPI_BYTE, rows, (int)rowbytes, MPI_BYTE, 0,
               r->comm);

    size_t nerrs = 0, nstuck = 0;
    struct err_entry *errs = run_gather(r, c->errors->entries, c->errors->n,
                                        sizeof(struct err_entry), &nerrs);
    struct stuck_entry *stuck = run_gather(r, stuck_mine, nstuck_mine,
                                           sizeof(struct stuck_entry), &nstuck);
    size_t nholds = 0;
    struct hold *holds = run_gather(r, c->holds.v, c->holds.n, sizeof(struct hold), &nholds);

    struct op_stats mine_ops;
    memcpy(mine_ops.count, c->op_count, sizeof mine_ops.count);
    memcpy(mine_ops.seconds, c->op_seconds, sizeof mine_ops.seconds);
    struct op_stats *ops = r->rank == 0 ? calloc((size_t)r->size, sizeof *ops) : NULL;
    MPI_Gather(&mine_ops, sizeof mine_ops, MPI_BYTE, ops, sizeof mine_ops, MPI_BYTE, 0,
               r->comm);

    struct hist *merged = r->rank == 0 ? calloc(OP_COUNT, sizeof *merged) : NULL;
    MPI_Reduce(c->hist, merged, OP_COUNT * HIST_BUCKETS, MPI_UINT64_T, MPI_SUM, 0,
               r->comm);

    /* Agree on how the phase ended: 1 = signal, 2 = deadline cut work short. */
    int mine = 0;
    if (signals_caught())
        mine |= 1;
    for (int i = 0; i < n; i++)
        if (!c->records[i].completed && c->deadline_at > 0 &&
            c->records[i].t_end >= c->deadline_at)
            mine |= 2;
    MPI_Allreduce(&mine, status_flags, 1, MPI_INT, MPI_BOR, r->comm);

    if (r->rank == 0) {
        double lo = 1e300, hi = -1e300;
        for (int i = 0; i < r->size; i++) {
            lo = starts[i] < lo ? starts[i] : lo;
            hi = starts[i] > hi ? starts[i] : hi;
        }
        sum->start_skew = hi - lo;
        size_t nrows = (size_t)n * (size_t)r->size;
        sum->stuck = nstuck;
        /* Holds closer than the clocks' error bound are not called overlapping. */
        holds_overlap(holds, nholds, 2 * r->clock_error_max, &sum->overlap);
        uint64_t errors = 0, verify = 0; /* the error table holds every failed call */
        for (size_t i = 0; i < nerrs; i++)
            errors += errs[i].count;
        for (size_t i = 0; i < nrows; i++)
            verify += rows[i].verify_failures + rows[i].violations; /* both: wrong data */
        r->total_errors += errors;
        r->total_verify += verify;
        sum->status = (*status_flags & 1) ? "interrupted"
                      : (*status_flags & 2) ? "deadline"
                      : (errors || verify) ? "errors"
                                           : "ok";
        char err[512];
        struct phase_data data = {
            .rows = rows, .nrows = nrows, .errors = errs, .nerrors = nerrs,
            .stuck = stuck, .nstuck = nstuck, .holds = holds, .nholds = nholds,
            .ops = ops, .nranks = (size_t)r->size,
            .hists = merged,
        };
        double t_write = clock_mono();
        if (r->results &&
            results_write_phase(r->results, ph, sum, &data, err, sizeof err) < 0)
            fprintf(stderr, "herd: results: %s\n", err);
        else if (r->results &&
                 results_phase_timing(r->results, ph->name, t_write - t_gather,
                                      clock_mono() - t_write, err, sizeof err) < 0)
            fprintf(stderr, "herd: results: %s\n", err);
        summary_compute(ph, sum, rows, nrows, errors, &r->lines[r->nlines++]);
        fprintf(stderr, "herd: phase %s: %s (%.3f s, start skew %.1f us)\n", ph->name,
                sum->status, sum->t_end - sum->t_start, sum->start_skew * 1e6);
    }
    free(starts);
    free(rows);
    free(errs);
    free(stuck);
    free(holds);
    free(ops);
    free(merged);
}

/* Rank 0, after a phase (or, with final, at the end): take the monitor's
 * rows and append them, the phase's mark and the hosts' NFS client
 * counters to /monitor. Server samples are kept for the summary. */
static void run_write_monitor(struct run *r, const struct monitor_mark *mark,
                              const struct client_op_row *ops, size_t nops,
                              const struct client_row *clients, size_t nclients, bool final)
{
    struct monitor_append a = {.marks = mark, .nmarks = mark ? 1 : 0, .client_ops = ops,
                               .nclient_ops = nops, .clients = clients, .nclients = nclients};
    runner_monitor_collect(&r->mon, final, &a.batch);
    const struct monitor_batch *b = &a.batch;
    if (b->nsamples) {
        struct monitor_sample *all =
            realloc(r->samples, (r->nsamples + b->nsamples) * sizeof *all);
        if (all) {
            memcpy(all + r->nsamples, b->samples, b->nsamples * sizeof *all);
            r->samples = all;
            r->nsamples += b->nsamples;
        }
    }
    for (size_t i = 0; i < b->nnotes; i++)
        fprintf(stderr, "herd: monitor %s on %s: %s\n", b->notes[i].source, b->notes[i].host,
                b->notes[i].text);
    bool any = b->nsamples || b->nmetrics || b->nprocesses || b->ndisks || b->nnotes ||
               a.nmarks || nops || nclients;
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
    if (after && client_stats_rows(before, after, r->job->phases[index].name, r->host, &ops,
                                   &nops, &row) == 0)
        nrow = 1;
    free(after);
    size_t nall_ops = 0, nall_rows = 0;
    struct client_op_row *all_ops = run_gather(r, ops, nops, sizeof *ops, &nall_ops);
    struct client_row *all_rows = run_gather(r, &row, nrow, sizeof row, &nall_rows);
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
    const struct run *r = c->sync_data;
    MPI_Barrier(r->comm);
}

/* Run one phase on every rank. Returns the agreed status flags. */
static int run_phase(struct run *r, int index)
{
    const struct phase *ph = &r->job->phases[index];
    const struct workload_ops *wl = workload_find(ph->kind);
    struct errtab errors;
    errtab_init(&errors);
    struct phase_ctx c = {
        .ph = ph, .rank = r->rank, .nranks = r->size, .host = r->host,
        .peer = ph->read_from == READ_NEIGHBOR ? run_neighbor(r) : r->rank,
        .be = r->be, .be_ctx = r->be_ctx, .rundir = r->rundir, .clock = &r->clock,
        .records = calloc((size_t)ph->iterations, sizeof(struct rank_record)),
        .errors = &errors, .hist = calloc(OP_COUNT, sizeof(struct hist)),
        .sync = run_sync, .sync_data = r,
    };
    struct progress progress;
    if (r->rank == 0)
        c.progress = &progress;
    struct watchdog *dog = watchdog_start(&c.inflight, &r->clock, ph->stuck_after, r->rank,
                                          r->hostname);
    if (r->be->configure && ph->kind != KIND_IDLE) { /* idle never touches the target */
        int rc = r->be->configure(r->be_ctx, ph);
        if (rc < 0)
            errtab_add(&errors, r->rank, OP_CONNECT, rc, ph->target, clock_now(&r->clock));
    }
    int prep = (c.records && c.hist) ? wl->prepare(&c) : -ENOMEM;
    for (int64_t i = 0; c.records && i < ph->iterations; i++) {
        c.records[i].rank = r->rank;
        c.records[i].iteration = (int32_t)i;
        c.records[i].host = r->host;
    }
    if (prep < 0) {
        fprintf(stderr, "herd: rank %d: phase %s: cannot prepare: %s\n", r->rank, ph->name,
                strerror(-prep));
        errtab_add(&errors, r->rank, OP_OPEN, prep, "(prepare)", clock_now(&r->clock));
    }

    /* Workloads may sync inside run: either every rank runs, or none. */
    int prep_failed = prep < 0, any_failed = 0;
    MPI_Allreduce(&prep_failed, &any_failed, 1, MPI_INT, MPI_MAX, r->comm);

    struct phase_summary sum = {.index = index};
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
    if (c.progress)
        progress_begin(c.progress, ph->name, job_phase_bytes_per_rank(ph));
    if (!any_failed)
        wl->run(&c);
    if (c.progress)
        progress_end(c.progress);
    wl->finish(&c);
    struct stuck_entry *stuck;
    size_t nstuck;
    watchdog_stop(dog, &stuck, &nstuck);
    MPI_Barrier(r->comm);
    sum.t_end = clock_now(&r->clock);

    int flags = 0;
    if (c.records && c.hist)
        run_collect(r, ph, &c, stuck, nstuck, &sum, started, &flags);
    run_phase_monitor(r, index, &sum, client_before,
                      index == r->job->nphases - 1 || (flags & 1));
    free(client_before);
    free(stuck);
    free(c.records);
    free(c.hist);
    holds_free(&c.holds);
    errtab_free(&errors);
    return flags;
}

/* rmdir that explains itself; a directory still holding files that are
 * not this run's (a reused run_id) is left alone quietly. */
static void run_remove_dir(struct run *r, const char *path)
{
    int rc = r->be->rmdir(r->be_ctx, path);
    if (rc < 0 && rc != -ENOENT && rc != -ENOTEMPTY && rc != -EEXIST && rc != -EROFS)
        fprintf(stderr, "herd: cannot remove %s: %s\n", path, strerror(-rc));
}

/* Remove what this run made, unless asked to keep it: each rank its own
 * unique files, rank 0 the shared files and the directories. Only names
 * herd made are removed; a directory someone else filled stays. */
static void run_cleanup(struct run *r)
{
    const struct job *job = r->job;
    char path[1200];
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < job->nphases; i++) {
            const struct workload_ops *wl = workload_find(job->phases[i].kind);
            struct phase_ctx c = {.ph = &job->phases[i], .rank = r->rank, .nranks = r->size,
                                  .rundir = r->rundir, .be = r->be, .be_ctx = r->be_ctx};
            if (wl->remove)
                wl->remove(&c, pass);
        }
        MPI_Barrier(r->comm);
    }
    if (r->rank != 0)
        return;
    for (int i = 0; i < job->nphases; i++) {
        bool seen = false; /* one rmdir per fileset, however many phases use it */
        for (int j = 0; j < i && !seen; j++)
            seen = strcmp(job->phases[j].fileset, job->phases[i].fileset) == 0;
        if (seen)
            continue;
        struct phase_ctx c = {.ph = &job->phases[i], .rundir = r->rundir};
        workload_fileset_dir(&c, path, sizeof path);
        run_remove_dir(r, path);
    }
    run_remove_dir(r, r->rundir);
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
        .rank = r->rank, .host = r->host, .max_rss_bytes = (double)ru.ru_maxrss * 1024.0,
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

/* The I/O ranks' run, after the common set-up: hosts, target, results
 * file, the phases, clean-up, final status. */
static int run_io(struct run *r, double sync_seconds, const char *start_utc)
{
    const struct job *job = r->job;
    const struct runner_opts *opts = r->opts;
    const struct phase *first = &job->phases[0];
    r->start_margin = run_measure_margin(r);
    r->clock_error_max = r->clock.error;
    MPI_Allreduce(MPI_IN_PLACE, &r->clock_error_max, 1, MPI_DOUBLE, MPI_MAX, r->comm);

    struct host_info *hosts = NULL;
    struct rank_info *ranks = NULL;
    int bad = run_map_hosts(r, &hosts, &ranks) < 0;

    /* Every rank must reach the target; otherwise nothing can run. */
    r->be = backend_find(first->backend);
    int rc = r->be->connect(first->target, first, &r->be_ctx);
    int failed_rank = rc < 0 ? r->rank : r->size;
    MPI_Allreduce(MPI_IN_PLACE, &failed_rank, 1, MPI_INT, MPI_MIN, r->comm);
    if (failed_rank < r->size) {
        if (r->rank == failed_rank)
            fprintf(stderr, "herd: target '%s': %s (rank %d)\n", first->target, strerror(-rc),
                    r->rank);
        if (rc == 0)
            r->be->disconnect(r->be_ctx);
        free(hosts);
        free(ranks);
        return 2;
    }

    int create_failed = 0;
    if (r->rank == 0) {
        char mpi_version[MPI_MAX_LIBRARY_VERSION_STRING];
        int len;
        MPI_Get_library_version(mpi_version, &len);
        char *nl = strchr(mpi_version, '\n');
        if (nl)
            *nl = '\0';
        struct run_info info = {
            .version = HERD_VERSION, .run_id = r->run_id, .command_line = opts->command_line,
            .job_path = job->path, .job_text = job->text, .start_utc = start_utc,
            .epoch_unix = r->epoch_unix, .mpi_version = mpi_version, .target = first->target,
            .nranks = r->size, .nhosts = r->nhosts, .clock_sync_seconds = sync_seconds,
            .monitor_host = r->mon.sampler >= 0 ? r->mon.sampler_host : "",
            .monitor_rank = r->mon.sampler, .monitor_interval = first->monitor_interval,
            .monitor_url = first->monitor_url,
        };
        char err[1600];
        if (bad)
            snprintf(err, sizeof err, "%s: out of memory", r->output);
        else if (!opts->force && access(r->output, F_OK) == 0)
            snprintf(err, sizeof err, "%s: exists; choose another -o or add --force", r->output);
        else
            r->results = results_create(r->output, &info, hosts, r->nhosts, ranks, r->size, err,
                                        sizeof err);
        if (!r->results) {
            fprintf(stderr, "herd: %s\n", err);
            create_failed = 1;
        } else {
            fprintf(stderr, "herd: run %s: %d ranks on %d hosts, target %s (%s), results %s\n",
                    r->run_id, r->size, r->nhosts, first->target, r->rundir, r->output);
            if (r->mon.sampler >= 0)
                fprintf(stderr, "herd: monitor: rank %d samples %s every %gs\n", r->mon.sampler,
                        r->mon.sampler_host, first->monitor_interval);
        }
        r->lines = calloc((size_t)job->nphases, sizeof *r->lines);
    }
    free(hosts);
    free(ranks);
    MPI_Bcast(&create_failed, 1, MPI_INT, 0, r->comm);
    if (create_failed) {
        r->be->disconnect(r->be_ctx);
        return 2;
    }

    int flags = 0;
    for (int i = 0; i < job->nphases && !(flags & 1); i++)
        flags |= run_phase(r, i);
    if (!job->keep) {
        if (r->be->configure)
            r->be->configure(r->be_ctx, NULL); /* no phase's faults or sizes */
        run_cleanup(r);
    }
    r->be->disconnect(r->be_ctx);

    run_write_usage(r);
    int exit_code = 0;
    if (r->rank == 0) {
        summary_add_monitor(r->lines, r->nlines, r->samples, r->nsamples);
        int sig = signals_caught();
        exit_code = (flags & 1) ? 128 + (sig ? sig : 15)
                    : (r->total_errors || r->total_verify) ? 3 : 0;
        char end_utc[40], err[512];
        utc_now(end_utc, sizeof end_utc);
        const char *status = (flags & 1) ? "interrupted" : "complete";
        if (results_close(r->results, status, end_utc, exit_code, r->startup_seconds, err,
                          sizeof err) < 0) {
            fprintf(stderr, "herd: results: %s\n", err);
            exit_code = 1;
        }
        summary_print(stdout, r->lines, r->nlines);
        printf("\nresults: %s (status %s)\n", r->output, status);
        fflush(stdout);
        free(r->lines);
    }
    MPI_Bcast(&exit_code, 1, MPI_INT, 0, r->comm);
    return exit_code;
}

int runner_run(const struct job *job, const struct runner_opts *opts)
{
    struct run r = {.job = job, .opts = opts, .comm = MPI_COMM_WORLD, .startup_seconds = -1};
    int world_rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    signals_install();
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
    int exit_code;
    if (r.mon.is_monitor) {
        exit_code = runner_monitor_serve(&r.mon, first, &r.clock, hostname);
        free(r.mon.monitors);
    } else {
        MPI_Comm_rank(r.comm, &r.rank);
        MPI_Comm_size(r.comm, &r.size);
        exit_code = run_io(&r, sync_seconds, start_utc);
        if (r.rank == 0)
            runner_monitor_release(&r.mon, exit_code);
        else
            free(r.mon.monitors);
        free(r.rank_host);
        free(r.samples);
    }
    MPI_Comm_free(&r.comm);
    return exit_code;
}
