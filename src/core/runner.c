/* runner.c — the phase engine. Sets up the run (id, common clock, hosts,
 * run directory, results file), then for each phase: prepare, barrier,
 * timed start at a common instant, the workload, closing barrier, gather
 * to rank 0, agree on how it ended, append it to results.h5 (or, when the
 * file cannot take it, to a fallback). Then the clean-up of what this run
 * made, and the final status (the parts: runner_state.h). MPI is called
 * in src/core/ only; no I/O error ends the run. */
#include "runner.h"
#include "runner_state.h"

#include <errno.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "clocksync.h"
#include "probe.h"
#include "progress.h"
#include "results.h"
#include "rundir.h"
#include "signals.h"
#include "units.h"

/* Rank 0 names the run; everyone learns the name. */
static void run_make_id(struct run *r, int world_rank)
{
    if (r->job->settings.run_id[0]) {
        snprintf(r->run_id, sizeof r->run_id, "%s", r->job->settings.run_id);
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

static void run_sync(struct phase_ctx *c)
{
    struct run *r = c->sync_data;
    if (r->step_comm != MPI_COMM_NULL) /* a ladder step: only its active ranks run */
        runner_stop_barrier_on(&r->stop, r->step_comm);
    else
        runner_stop_barrier(&r->stop);
}

static bool run_peer_stopped(struct phase_ctx *c)
{
    struct run *r = c->sync_data;
    if (c->progress) /* between operations, on the main thread: due sends */
        progress_poll(progress_of(c->progress));
    return runner_stop_poll(&r->stop);
}

/* Before a phase's start barrier, on one active client: the backend's
 * per-phase options, the workload's prepare, then the backend's prime
 * (after prepare: the workload's buffers are placed). Preparing (expected
 * digests, directories) is untimed but bounded: by a stop, and by the
 * phase's deadline, as the phase itself is. Returns prepare's result. */
static int run_prepare(struct run *r, const struct workload_ops *wl, struct phase_ctx *c)
{
    const struct phase *ph = c->ph;
    bool backend = !(wl->flags & WORKLOAD_NO_BACKEND);
    if (backend && r->be->configure) {
        int rc = r->be->configure(c->be_ctx, ph);
        if (rc < 0)
            workload_fail(c, NULL, OP_CONNECT, rc, r->job->settings.target);
    }
    c->deadline_at = ph->deadline > 0 ? clock_now(&r->clock) + ph->deadline : 0;
    int prep = wl->prepare(c);
    c->prepare_late = prep == -EINTR && !runner_stop_poll(&r->stop);
    if (prep >= 0 && backend && r->be->prime)
        r->be->prime(c->be_ctx, ph);
    return prep;
}

/* Before the first phase's start is announced: rank 0 starts the
 * monitor's sampling and waits (bounded) for its baselines, so that the
 * server's figures cover the phase from its first second; the other I/O
 * ranks wait in a barrier that hears a stop and leaves the CPU. */
static void run_monitor_begin(struct run *r, const struct phase *ph)
{
    const struct run_settings *set = &r->job->settings;
    if (!runner_monitor_wanted(&r->mon, set))
        return;
    char err[512];
    if (r->rank == 0 &&
        runner_monitor_begin(&r->mon, set, ph->name, &r->clock, &r->stop, err, sizeof err) < 0)
        fprintf(stderr, "herd: monitor: %s\n", err);
    runner_stop_barrier(&r->stop);
}

/* Prepare the phase on this rank's clients: 0 or -errno, said on stderr
 * (and counted as an open error) unless a stop or the deadline cut it
 * (-EINTR; c->prepare_late for the deadline). */
static int run_phase_prepare(struct run *r, const struct workload_ops *wl, struct client_phase *cp,
                             bool ok, bool active)
{
    struct phase_ctx *c = cp->base;
    const struct phase *ph = c->ph;
    int prep = -ENOMEM;
    if (ok)
        prep = active ? run_clients_prepare(cp, wl, run_prepare) : 0;
    for (int k = 0; ok && k < cp->n; k++)
        c->prepare_late |= cp->c[k].prepare_late;
    if (c->prepare_late && r->rank == 0)
        fprintf(stderr, "herd: phase %s: preparing it outlasted its deadline (%gs): not run\n",
                ph->name, ph->deadline);
    if (cp->failed > 0 && cp->prep_err != -EINTR)
        fprintf(stderr, "herd: rank %d: phase %s: %d of %d client%s cannot prepare: %s\n", r->rank,
                ph->name, cp->failed, cp->n, units_plural(cp->n), strerror(-cp->prep_err));
    if (prep < 0 && prep != -EINTR && c->records)
        workload_fail(ok ? &cp->c[0] : c, NULL, OP_OPEN, prep, "(prepare)");
    return prep;
}

/* The phase's common start: rank 0 announces an instant every rank can
 * reach (start_margin ahead), each takes its client counters and sleeps
 * until then. The instant the rank started, by the common clock. */
static double run_phase_start(struct run *r, struct phase_ctx *c, struct phase_summary *sum,
                              struct mountstats **client_before)
{
    const struct phase *ph = c->ph;
    MPI_Barrier(r->comm);
    double t_start = 0;
    if (r->rank == 0)
        t_start = clock_now(&r->clock) + r->start_margin;
    MPI_Bcast(&t_start, 1, MPI_DOUBLE, 0, r->comm);
    sum->t_start = t_start;
    *client_before = run_client_snapshot(r);
    c->deadline_at = ph->deadline > 0 ? t_start + ph->deadline : 0;
    clock_sleep_until(&r->clock, t_start);
    double started = clock_now(&r->clock);
    if (c->index == 0 && r->rank == 0)
        r->rec.startup_seconds = clock_mono() - r->opts->t_init;
    return started;
}

/* The phase's work on this rank's clients (go: they run, else the rank
 * only counts along), its progress shown for `workers` ranks. */
static void run_phase_work(struct run *r, const struct workload_ops *wl, struct client_phase *cp,
                           struct progress *progress, int workers, int nactive, bool go)
{
    struct phase_ctx *c = cp->base;
    bool io = wl->flags & WORKLOAD_MOVES_BYTES;
    /* calls: one client's live; many clients' at the end */
    const uint64_t *calls = NULL;
    if (!io)
        calls = cp->n == 1 && cp->c ? cp->c[0].op_count : c->op_count;
    progress_begin(progress, r->comm, c->ph->name, c->index, workers,
                   io ? job_phase_bytes_per_rank(c->ph) * (uint64_t)nactive : 0, calls);
    if (go)
        run_clients_work(cp);
    progress_end(progress);
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
        .clients = r->clients,
        .host = r->host,
        .peer = ph->read_from == READ_NEIGHBOR ? run_neighbor(r) : r->rank,
        .be = r->be,
        .be_ctx = r->be_ctx,
        .rundir = r->rundir,
        .clock = &r->clock,
        .records = calloc((size_t)ph->iterations * (size_t)r->clients, sizeof(struct rank_record)),
        .errors = &errors,
        .hist = calloc(OP_COUNT, sizeof(struct hist)),
        .sync = run_sync,
        .sync_data = r,
        .peer_stopped = run_peer_stopped,
        .claims = &r->claims,
    };
    struct progress progress = {.quiet = r->opts->quiet}; /* every rank counts; rank 0 prints */
    c.progress = &progress.count;
    /* A ladder step: only its active ranks (and of them, in a ladder in
     * clients, their share of the step's clients) touch the target; the
     * others wait at the phase's barriers with empty rows. */
    int nactive = run_active_clients(r, r->rank, ph);
    bool active = nactive > 0;
    struct client_phase cp;
    bool ok = run_clients_begin(r, &c, nactive, &cp) == 0 && c.hist;
    struct watchdog *dog =
        ok ? watchdog_start(cp.inflight, cp.n, &r->clock, ph->stuck_after, r->rank, r->hostname)
           : NULL;
    run_step_comm(r, ph, active);
    int prep = run_phase_prepare(r, wl, &cp, ok, active);
    if (index == 0)
        run_monitor_begin(r, ph);
    /* Workloads may sync inside run: either every rank runs, or none. A
     * stop caught while preparing (a long expected digest) is a reason
     * not to run too. */
    bool stopping = runner_stop_poll(&r->stop);
    bool run_it = run_all_ok(r, prep >= 0 && !stopping && ok);

    struct phase_summary sum = run_step_summary(r, ph, index);
    struct mountstats *client_before = NULL;
    double started = run_phase_start(r, &c, &sum, &client_before);
    run_phase_work(r, wl, &cp, &progress, sum.active_ranks, nactive, run_it && active);
    struct stuck_entry *stuck;
    size_t nstuck;
    watchdog_stop(dog, &stuck, &nstuck);
    if (ok)
        run_clients_end(&cp);      /* many clients: their calls join c's for the closing line */
    runner_stop_barrier(&r->stop); /* hears a stop while the slowest finish */
    sum.t_end = clock_now(&r->clock);
    progress_finish(&progress); /* all ranks: the phase's closing progress line */
    if (r->step_comm != MPI_COMM_NULL)
        MPI_Comm_free(&r->step_comm);

    struct phase_outcome o = {0};
    if (run_all_ok(r, ok))
        o = run_collect(r, ph, &c, stuck, nstuck, &sum, started);
    else
        o = run_agree_outcome(r, &c);
    run_phase_monitor(r, index, &sum, client_before, index == r->job->nphases - 1 || o.signal);
    free(client_before);
    free(stuck);
    run_clients_free(&cp);
    free(c.records);
    free(c.hist);
    free(c.meta_rows);
    holds_free(&c.holds);
    errtab_free(&errors);
    return o;
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

/* Why a connect failed, into buf: for a cause on this host (no
 * descriptor, no memory: localerr.h) words that say so, never the
 * server's; else its errno's. Returns buf. */
static const char *run_connect_cause(int rc, char *buf, size_t len)
{
    struct rlimit rl = {0};
    if (rc == -EMFILE && getrlimit(RLIMIT_NOFILE, &rl) == 0)
        snprintf(buf, len,
                 "this rank ran out of file descriptors: %s, its limit is %llu (ulimit -n)",
                 strerror(EMFILE), (unsigned long long)rl.rlim_cur);
    else if (rc == -ENFILE)
        snprintf(buf, len, "this host ran out of file descriptors: %s (fs.file-max)",
                 strerror(ENFILE));
    else if (rc == -ENOMEM || rc == -ENOBUFS)
        snprintf(buf, len, "this rank ran out of memory: %s", strerror(-rc));
    else
        snprintf(buf, len, "%s", strerror(-rc));
    return buf;
}

/* Every rank connects to the target; a stop heard meanwhile (a connect
 * that waits on a frozen server hears another rank's too) ends the run
 * with its signal's exit code, a rank that cannot connect with 2. 0 when
 * every rank is connected. */
static int run_connect(struct run *r)
{
    const struct run_settings *set = &r->job->settings;
    r->be = backend_find(set->backend);
    int rc = 0;
    int connected = run_clients_connect(r, &rc);
    /* One client: it must connect. Many: a client the server refused
     * counts its refusal in each phase; the rank needs one. */
    int failed_rank = connected == 0 || (r->clients == 1 && rc < 0) ? r->rank : r->size;
    int sig = runner_stop_poll(&r->stop) ? runner_stop_signal(&r->stop) : 0;
    MPI_Allreduce(MPI_IN_PLACE, &failed_rank, 1, MPI_INT, MPI_MIN, r->comm);
    MPI_Allreduce(MPI_IN_PLACE, &sig, 1, MPI_INT, MPI_MAX, r->comm);
    if (sig) {
        if (r->rank == 0)
            fprintf(stderr, "herd: stopped by signal %d while connecting to '%s': nothing ran\n",
                    sig, set->target);
        run_clients_disconnect(r);
        return 128 + sig;
    }
    if (failed_rank < r->size) {
        char why[400];
        if (r->rank == failed_rank) {
            /* the backend's options: in the phase, alike in each (run_settings) */
            const struct phase *opts = &r->job->phases[0];
            if (!(rc == -EHOSTUNREACH && probe_name_unresolved(set->target, why, sizeof why)) &&
                !probe_port_refused(opts, rc, why, sizeof why))
                run_connect_cause(rc, why, sizeof why);
            fprintf(stderr, "herd: target '%s': %s (rank %d)\n", set->target, why, r->rank);
        }
        run_clients_disconnect(r);
        return 2;
    }
    if (connected < r->clients) {
        char why[200];
        fprintf(stderr,
                "herd: rank %d: %d of %d clients could not connect (%s); each counts it in "
                "every phase it tries again\n",
                r->rank, r->clients - connected, r->clients,
                run_connect_cause(rc, why, sizeof why));
    }
    return 0;
}

/* Every I/O rank, once rank 0 has claimed the run directory: each other
 * rank looks for it through its own view of the target and reads back
 * its lock file's random token (owner: rank 0's text, "" when it holds
 * no lock file), so that a rank whose target is another directory (a
 * node without the export mounted) stops the run before its first phase
 * instead of writing there; a kernel client's cached view is refreshed
 * first (rundir_seen). 0, or 2 with one line (the first rank that does
 * not see it) and rank 0's claim given back; the same on every rank.
 * A backend whose store is each rank's own (rank_private) is not looked
 * through. */
static int run_rundir_seen(struct run *r, char *owner, size_t len)
{
    MPI_Bcast(owner, (int)len, MPI_CHAR, 0, r->comm);
    owner[len - 1] = '\0';
    char err[512] = "";
    int rc = r->rank == 0 || r->be->rank_private
                 ? 0
                 : rundir_seen(r->be, r->be_ctx, r->rundir, owner, err, sizeof err);
    int first = rc < 0 ? r->rank : r->size;
    int count = rc < 0;
    MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, r->comm);
    MPI_Allreduce(MPI_IN_PLACE, &count, 1, MPI_INT, MPI_SUM, r->comm);
    if (first == r->size)
        return 0;
    char others[48] = "";
    if (count > 1)
        snprintf(others, sizeof others, "; %d ranks in all do not", count);
    if (r->rank == first)
        fprintf(stderr,
                "herd: target %s: rank %d (host %s) does not see the run directory rank 0 made "
                "(%s)%s: is the target the same directory on every host?\n",
                r->job->settings.target, r->rank, r->hostname, err, others);
    if (r->rank == 0)
        run_release_rundir(r);
    return 2;
}

/* After connect (a backend describes what its connection negotiated):
 * the hosts map, the run directory claimed and seen by every rank, the
 * results file made, the claims' tables. 0, or the exit code of a
 * refusal, everything of it released and the target disconnected. */
static int run_open_outputs(struct run *r, double sync_seconds, const char *start_utc)
{
    const struct job *job = r->job;
    struct host_info *hosts = NULL;
    struct rank_info *ranks = NULL;
    if (run_map_hosts(r, &hosts, &ranks) < 0) {
        if (r->rank == 0)
            fprintf(stderr, "herd: out of memory mapping %d ranks to hosts\n", r->size);
        run_clients_disconnect(r);
        return 1;
    }
    r->spread = run_spread_order(r); /* NULL (no memory): ladder steps take ranks 0..N-1 */
    char owner[RUNDIR_OWNER_MAX] = "";
    if (r->rank == 0)
        run_client_reach(r); /* each rank's just before its own look */
    int refused = r->rank == 0 ? run_claim_places(r, owner, sizeof owner) : 0;
    MPI_Bcast(&refused, 1, MPI_INT, 0, r->comm);
    if (!refused && r->rank != 0)
        run_client_reach(r);
    if (!refused)
        refused = run_rundir_seen(r, owner, sizeof owner);
    if (!refused && r->rank == 0 &&
        run_create_results(r, sync_seconds, start_utc, hosts, ranks) != 0) {
        run_release_rundir(r);
        refused = 2;
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
        if (r->rank == 0 && r->rec.results) {
            char err[512];
            results_close(r->rec.results, "partial", "", refused, -1, err, sizeof err);
            r->rec.results = NULL;
            run_release_rundir(r);
            free(r->rec.lines);
        }
        workload_claims_free(&r->claims);
        run_clients_disconnect(r);
    }
    return refused;
}

/* Rank 0, before the first phase: read_from = neighbor reads the file of
 * a rank on the next host, so that the client's page cache cannot serve
 * it; with every rank on one host there is none, and over a kernel mount
 * (the target a local directory) without direct = yes each rank reads
 * what its own host wrote, perhaps from that cache. Said once. */
static void run_warn_neighbor(const struct run *r)
{
    if (r->rank != 0 || r->nhosts > 1 || !r->be->local_dir)
        return;
    const struct phase *first = NULL;
    int more = 0;
    for (int i = 0; i < r->job->nphases; i++) {
        const struct phase *ph = &r->job->phases[i];
        if (ph->read_from != READ_NEIGHBOR || ph->direct ||
            !(job_kind_caps(ph->kind) & JOB_KIND_READS))
            continue;
        if (ph->ladder[0] && i > 0 && strcmp(ph->ladder, r->job->phases[i - 1].ladder) == 0)
            continue; /* a ladder's later steps: one phase of the job */
        more += first != NULL;
        first = first ? first : ph;
    }
    if (!first)
        return;
    char others[32] = "";
    if (more)
        snprintf(others, sizeof others, " and %d more", more);
    fprintf(stderr,
            "herd: warning: read_from = neighbor (phase %s%s) with all %d rank%s on one host: no "
            "other host's file to read, so each rank reads a file this host wrote, which its page "
            "cache may serve; run on two hosts or more, or set direct = yes\n",
            first->ladder[0] ? first->ladder : first->name, others, r->size, units_plural(r->size));
}

/* The phases until one is stopped, then (keep = no) the clean-up, the run
 * directory released and the target disconnected. How the last phase
 * ended. */
static struct phase_outcome run_phases(struct run *r)
{
    const struct job *job = r->job;
    runner_stop_stage(&r->stop, RUNNER_STAGE_PHASES);
    struct phase_outcome o = {0};
    int last = -1; /* the last phase run */
    for (int i = 0; i < job->nphases && !o.signal; i++) {
        if (run_ladder_skip(r, i))
            continue;
        o = run_phase(r, i);
        last = i;
        if (!o.signal)
            run_ladder_after(r, i);
    }
    if (last != job->nphases - 1 && !o.signal && r->rank == 0)
        run_monitor_final(r); /* the steps after it did not run: its readings end here */
    if (r->rank == 0)
        run_record_outcome(r, o.signal);
    if (!job->settings.keep) {
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
    run_clients_disconnect(r);
    workload_claims_free(&r->claims);
    return o;
}

/* The I/O ranks' run, after the common set-up: hosts, target, run
 * directory, results file, the phases, clean-up, final status. */
static int run_io_stages(struct run *r, double sync_seconds, const char *start_utc)
{
    r->start_margin = run_measure_margin(r);
    r->clock_error_max = r->clock.error;
    MPI_Allreduce(MPI_IN_PLACE, &r->clock_error_max, 1, MPI_DOUBLE, MPI_MAX, r->comm);
    /* Every rank must reach the target; otherwise nothing can run. */
    int rc = run_connect(r);
    if (rc == 0)
        rc = run_open_outputs(r, sync_seconds, start_utc);
    if (rc != 0)
        return rc;
    run_warn_neighbor(r);
    struct phase_outcome o = run_phases(r);
    /* A signal during the clean-up ends the run as interrupted too. */
    int sig = o.signal ? o.signal : runner_stop_signal(&r->stop);
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
                    .rec = {.out = SAFEOUT_NONE, .json = SAFEOUT_NONE, .startup_seconds = -1}};
    int world_rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    signals_install();
    signals_follow_parent();

    char start_utc[40];
    run_utc_now(start_utc, sizeof start_utc);
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
    if (runner_monitor_roles(&job->settings, hostname, &r.mon, err, sizeof err) < 0) {
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
        exit_code = runner_monitor_serve(&r.mon, &job->settings, &r.clock, hostname);
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
            r.job = r.steps = &steps;
            if (r.rank == 0) /* what herd check -n <I/O ranks> warns of */
                job_lint_print(&steps, r.size, stderr);
            exit_code = run_io(&r, sync_seconds, start_utc);
            job_free(&steps);
        }
        free(r.spread);
        if (r.rank == 0)
            runner_monitor_release(&r.mon, exit_code);
        else
            free(r.mon.monitors);
        free(r.rank_host);
        free(r.rec.samples);
        free(r.rec.procs);
        safeout_close(&r.rec.out);
        safeout_close(&r.rec.json);
    }
    MPI_Comm_free(&r.comm);
    return exit_code;
}
