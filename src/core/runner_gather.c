/* runner_gather.c — a phase's records to rank 0: the hosts map, the
 * gathers (every count checked against MPI's int first), how the ranks
 * agree a phase ended, recording it in the results file (or its
 * fallback), and the monitor's and the NFS clients' rows per phase. */
#include "runner_state.h"

#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "connections.h"
#include "hosts.h"
#include "monitor_scope.h"
#include "results.h"
#include "results_fallback.h"
#include "units.h"

bool run_all_ok(const struct run *r, bool ok)
{
    int mine = ok ? 1 : 0, all = 0;
    if (MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, r->comm) != MPI_SUCCESS)
        return false;
    return all == 1;
}

bool run_mpi_ok(int rc, const char *what)
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

int run_map_hosts(struct run *r, struct host_info **hosts_out, struct rank_info **ranks_out)
{
    struct host_info me;
    hosts_describe(r->job->settings.target, &me);
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

int run_neighbor(const struct run *r)
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

void *run_gather(const struct run *r, const void *mine, size_t n, size_t size, size_t *total,
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
    void *all = NULL;
    if (r->rank == 0 && good)
        all = malloc(sum ? (size_t)sum : 1);
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

static void gathered_free(struct gathered *g)
{
    free(g->starts);
    free(g->rows);
    free(g->errs);
    free(g->stuck);
    free(g->holds);
    free(g->ops);
    free(g->meta_steps);
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
    g->rows = run_gather(r, c->records, (size_t)ph->iterations * (size_t)c->clients,
                         sizeof(struct rank_record), &g->nrows, &g->ok);
    g->errs = run_gather(r, c->errors->entries, c->errors->n, sizeof(struct err_entry), &g->nerrs,
                         &g->ok);
    g->stuck =
        run_gather(r, stuck_mine, nstuck_mine, sizeof(struct stuck_entry), &g->nstuck, &g->ok);
    g->holds = run_gather(r, c->holds.v, c->holds.n, sizeof(struct hold), &g->nholds, &g->ok);
    g->meta_steps = run_gather(r, c->meta_rows, c->nmeta_rows, sizeof(struct meta_step_record),
                               &g->nmeta_steps, &g->ok);
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

struct phase_outcome run_agree_outcome(struct run *r, const struct phase_ctx *c)
{
    int mine[2] = {runner_stop_signal(&r->stop), c->prepare_late};
    for (int64_t i = 0; c->records && i < c->ph->iterations * c->clients; i++)
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
    if (errors)
        return PHASE_ERRORS;
    return wrong_data ? PHASE_VERIFY : PHASE_OK;
}

/* Rank 0: the phase into the results file, or, when the file cannot take
 * it, into the fallback; a phase that is not in the file is remembered
 * for the status, the exit code and the summary. */
static void run_record_phase(struct run *r, const struct phase *ph, const struct phase_summary *sum,
                             const struct phase_data *data, double t_gather)
{
    char err[512];
    double t_write = clock_mono();
    int rc =
        r->rec.results ? results_write_phase(r->rec.results, ph, sum, data, err, sizeof err) : -1;
    if (rc == 0) {
        if (results_phase_timing(r->rec.results, ph->name, t_write - t_gather,
                                 clock_mono() - t_write, err, sizeof err) < 0)
            fprintf(stderr, "herd: results: %s\n", err);
        return;
    }
    if (r->rec.results)
        fprintf(stderr, "herd: results: %s\n", err);
    char where[RESULTS_FALLBACK_PATH_MAX];
    int fb = results_fallback_phase(safeout_dirfd(&r->rec.out), r->rec.out.leaf, r->output, ph, sum,
                                    data, stderr, where, sizeof where);
    fprintf(stderr, "herd: phase %s is not in %s; its records are in %s\n", ph->name,
            r->rec.out.shown, fb < 0 ? "nothing (the fallback failed too)" : where);
    if (r->rec.nlost < (int)(sizeof r->rec.lost / sizeof r->rec.lost[0]))
        snprintf(r->rec.lost[r->rec.nlost], sizeof r->rec.lost[0], "%s", ph->name);
    r->rec.nlost++;
}

/* The phase's line on stderr: its status and its result, the figure the
 * table prints (MiB/s, or calls/s for a kind that moves no bytes, over the
 * common start to the last rank's end), then the wall time to the closing
 * barrier and the start skew. */
static void run_say_phase(const struct phase *ph, const struct phase_summary *sum,
                          const struct summary_line *line)
{
    const struct phase_stats *st = &line->stats;
    char result[96];
    if (isnan(st->last_done))
        snprintf(result, sizeof result, "no rank did any work");
    else if (line->all_failed)
        snprintf(result, sizeof result, "no rate: every call failed");
    else if (line->holds)
        snprintf(result, sizeof result, "%.0f grants/s, last rank done after %.3f s",
                 st->last_done > 0 ? (double)st->grants / st->last_done : 0.0, st->last_done);
    else if (workload_find(ph->kind)->flags & WORKLOAD_MOVES_BYTES)
        snprintf(result, sizeof result, "%.1f MiB/s, last rank done after %.3f s", st->mib_per_s,
                 st->last_done);
    else
        snprintf(result, sizeof result, "%.0f calls/s, last rank done after %.3f s", st->ops_per_s,
                 st->last_done);
    char skew[32];
    units_format_ms(sum->start_skew, skew, sizeof skew);
    fprintf(stderr, "herd: phase %s: %s: %s (%.3f s to the closing barrier, start skew %s)\n",
            ph->name, sum->status, result, sum->t_end - sum->t_start, skew);
    if (sum->notes[0])
        fprintf(stderr, "herd: phase %s: %s\n", ph->name, sum->notes);
    if (!isnan(st->offered_per_s))
        fprintf(stderr,
                "herd: phase %s: offered %.1f calls/s, achieved %.1f/s (%.1f%% of the calls "
                "due), %llu of %llu late\n",
                ph->name, st->offered_per_s, isnan(st->achieved_per_s) ? 0.0 : st->achieved_per_s,
                100 * summary_achieved_share(st), (unsigned long long)st->late,
                (unsigned long long)st->units);
    if (summary_herd_limited(line))
        fprintf(stderr,
                "herd: phase %s: warning: herd, not the server, limited this step: its own lag "
                "(p99 %.3f ms) is %.0f%% of the response time's p99 (%.3f ms): add ranks\n",
                ph->name, summary_op_p99(line, OP_LAG) * 1e3,
                100 * summary_op_p99(line, OP_LAG) / summary_op_p99(line, OP_RESPONSE),
                summary_op_p99(line, OP_RESPONSE) * 1e3);
}

/* Collective: the run's clients whose connection is open now (after the
 * phase's closing barrier), summed on rank 0; -1 where a backend cannot
 * tell. */
static int64_t run_count_open(const struct run *r)
{
    int mine = run_clients_open(r);
    int64_t v[2] = {mine < 0 ? 0 : mine, mine < 0}, all[2] = {0, 0};
    run_mpi_ok(MPI_Reduce(v, all, 2, MPI_INT64_T, MPI_SUM, 0, r->comm), "reduce");
    return all[1] ? -1 : all[0];
}

struct phase_outcome run_collect(struct run *r, const struct phase *ph, struct phase_ctx *c,
                                 const struct stuck_entry *stuck_mine, size_t nstuck_mine,
                                 struct phase_summary *sum, double started)
{
    double t_gather = clock_mono();
    int64_t open = run_count_open(r);
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
    int checked = holds_overlap(g.holds, g.nholds, 2 * r->clock_error_max, &sum->overlap);
    if (checked < 0)
        fprintf(stderr,
                "herd: phase %s: the holds' overlap figures are left out (%s); the holds table is "
                "whole\n",
                ph->name,
                checked == -EINTR ? "a stop came while rank 0 checked them" : strerror(-checked));
    uint64_t errors = 0, verify = 0; /* the error table holds every failed call */
    for (size_t i = 0; i < g.nerrs; i++)
        errors += g.errs[i].count;
    for (size_t i = 0; i < g.nrows; i++)
        verify += g.rows[i].verify_failures + g.rows[i].violations; /* both: wrong data */
    r->total_errors += errors;
    r->total_verify += verify;
    sum->status = phase_status_name(run_phase_status(o, errors, verify));
    sum->connections_open = open;
    connections_note(g.errs, g.nerrs, r->clients, (int64_t)r->size * r->clients, open, sum->notes,
                     sizeof sum->notes);
    struct summary_line *line = &r->rec.lines[r->rec.nlines++];
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
        .meta_steps = g.meta_steps,
        .nmeta_steps = g.nmeta_steps,
        .nranks = (size_t)r->size,
        .hists = g.merged,
        .stats = &line->stats,
    };
    summary_add_detail(line, ph, &data);
    run_record_phase(r, ph, sum, &data, t_gather);
    run_say_phase(ph, sum, line);
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
    struct monitor_append a = {.process_scope =
                                   monitor_scope_effective(r->job->settings.monitor_scope),
                               .marks = mark,
                               .nmarks = mark ? 1 : 0,
                               .client_ops = ops,
                               .nclient_ops = nops,
                               .clients = clients,
                               .nclients = nclients};
    runner_monitor_collect(&r->mon, final, &a.batch);
    const struct monitor_batch *b = &a.batch;
    run_keep((void **)&r->rec.samples, &r->rec.nsamples, b->samples, b->nsamples,
             sizeof *b->samples);
    run_keep((void **)&r->rec.procs, &r->rec.nprocs, b->processes, b->nprocesses,
             sizeof *b->processes);
    for (size_t i = 0; i < b->nnotes; i++)
        fprintf(stderr, "herd: monitor %s on %s: %s\n", b->notes[i].source, b->notes[i].host,
                b->notes[i].text);
    bool any = b->nsamples || b->nmetrics || b->nprocesses || b->ndisks || b->nnotes || a.nmarks ||
               nops || nclients;
    char err[512];
    if (r->rec.results && any && results_write_monitor(r->rec.results, &a, err, sizeof err) < 0)
        fprintf(stderr, "herd: results: %s\n", err);
    monitor_batch_free(&a.batch);
}

void run_monitor_final(struct run *r)
{
    run_write_monitor(r, NULL, NULL, 0, NULL, 0, true);
}

struct mountstats *run_client_snapshot(const struct run *r)
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

void run_phase_monitor(struct run *r, int index, const struct phase_summary *sum,
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
