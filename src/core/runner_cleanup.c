/* runner_cleanup.c — the end of a run with keep = no: remove what this
 * run made, and only that, bounded in time and by a new stop; rank 0 says
 * what was left. */
#include "runner_state.h"

#include <errno.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "results.h"

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

void run_cleanup(struct run *r, struct err_entry **left, size_t *nleft)
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
            /* Each client's (its own name for a rank: workload.h), through
             * one connection. */
            for (int k = 0; k < r->clients && !run_cleanup_stopped(r, deadline); k++) {
                struct phase_ctx c = {.ph = &job->phases[i],
                                      .index = i,
                                      .rank = r->rank * r->clients + k,
                                      .nranks = r->size * r->clients,
                                      .client = k,
                                      .clients = r->clients,
                                      .rundir = r->rundir,
                                      .be = r->be,
                                      .be_ctx = r->be_ctx,
                                      .clock = &r->clock,
                                      .errors = &errs,
                                      .deadline_at = deadline,
                                      .claims = &r->claims,
                                      .sync_data = r,
                                      .peer_stopped = run_cleanup_peer_stopped};
                wl->remove(&c, pass);
            }
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
                stopped[0] ? "signal" : "after its time limit", job->settings.target, r->rundir);
    bool ok = true;
    *left = run_gather(r, errs.entries, errs.n, sizeof(struct err_entry), nleft, &ok);
    errtab_free(&errs);
}

void run_report_cleanup(struct run *r, const struct err_entry *left, size_t nleft)
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
    if (r->rec.results && results_write_cleanup(r->rec.results, left, nleft, err, sizeof err) < 0)
        fprintf(stderr, "herd: results: %s\n", err);
}
