/* runner_outputs.c — where the run writes and how it ends: the outputs'
 * checks (never inside the run directory), the run directory's claim and
 * release, the results file's creation, the ladders' steps tables, the
 * final status and exit code, the --json summary, /usage. */
#include "runner_state.h"

#include "runner.h"

#include <math.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>

#include "results.h"
#include "rundir.h"
#include "summary_json.h"
#include "units.h"
#include "utf8.h"
#include "versions.h"

void run_utc_now(char *buf, size_t len)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, len - n, ".%03ldZ", (long)(tv.tv_usec / 1000));
}

void run_release_rundir(struct run *r);

/* --json -: the summary goes to standard output, which then holds it alone. */
static bool run_json_to_stdout(const struct run *r)
{
    return r->opts->json && strcmp(r->opts->json, "-") == 0;
}

/* A --json path that names standard output by a link (refused, as every
 * link is): the refusal says how to ask for it. */
static const char *run_json_stdout_hint(const char *path)
{
    static const char *const names[] = {"/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(path, names[i]) == 0)
            return " (for standard output: --json -)";
    return "";
}

/* Rank 0: the outputs' places, checked by the safe-output rule
 * (safeout.h): -o, and --json (which may not name the results file;
 * "-" is standard output, no file). Returns 0, or 2 (refused, one line
 * on stderr). */
static int run_check_outputs(struct run *r)
{
    char err[JOB_ERR_MAX], shown[256];
    utf8_escape(r->output, shown, sizeof shown);
    if (safeout_prepare(&r->rec.out, shown, r->output, r->opts->force, results_file_check,
                        "a results file", err, sizeof err) < 0) {
        fprintf(stderr, "herd: %s\n", err);
        return 2;
    }
    if (!r->opts->json || run_json_to_stdout(r))
        return 0;
    utf8_escape(r->opts->json, shown, sizeof shown);
    if (safeout_names(&r->rec.out, r->opts->json)) {
        fprintf(stderr, "herd: --json %s: names the results file (-o): refused\n", shown);
        return 2;
    }
    if (safeout_prepare(&r->rec.json, shown, r->opts->json, r->opts->force, summary_json_file_check,
                        "an earlier herd JSON summary", err, sizeof err) < 0) {
        fprintf(stderr, "herd: --json %s%s\n", err, run_json_stdout_hint(r->opts->json));
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
    bool json_file = r->opts->json && !run_json_to_stdout(r);
    const char *which = NULL;
    if (safeout_beneath(&r->rec.out, fd))
        which = "-o";
    else if (json_file && safeout_beneath(&r->rec.json, fd))
        which = "--json";
    close(fd);
    return which;
}

int run_claim_places(struct run *r, char *owner, size_t len)
{
    owner[0] = '\0';
    if (run_check_outputs(r) != 0)
        return 2;
    char err[JOB_ERR_MAX];
    rundir_owner(owner, len, r->run_id, r->hostname);
    bool reuse =
        r->job->settings.run_id[0] != '\0'; /* a fixed run_id may take up its kept directory */
    int rc =
        rundir_open(r->be, r->be_ctx, r->rundir, reuse, owner, &r->rundir_ours, err, sizeof err);
    if (rc != 0) /* refused, not made (a read-only or full target), or not locked */
        fprintf(stderr, "herd: %s%s: %s\n", rc == RUNDIR_UNLOCKED ? "warning: target " : "target ",
                r->job->settings.target, err);
    if (rc != 0 && rc != RUNDIR_UNLOCKED) /* nothing runs */
        return 2;
    r->rundir_held = true;
    r->rundir_locked = rc == 0;
    if (!r->rundir_locked)
        owner[0] = '\0'; /* no lock file to read back */
    const char *inside = run_output_in_rundir(r);
    if (inside) {
        fprintf(stderr,
                "herd: %s %s: inside the run directory %s, which the run writes and removes: "
                "refused\n",
                inside, strcmp(inside, "-o") == 0 ? r->rec.out.shown : r->rec.json.shown,
                r->rundir);
        run_release_rundir(r);
        return 2;
    }
    if (reuse && !r->rundir_ours)
        fprintf(stderr,
                "herd: note: run directory %s taken over (run_id = %s): its data files "
                "are an earlier run's; " RUNDIR_REUSE_CAVEAT "\n",
                r->rundir, r->job->settings.run_id);
    return 0;
}

/* Rank 0: a word of the embedded server's that nfs-server.sh exec puts in
 * the environment (name: HERD_SERVER_FS, the export's file system;
 * HERD_SERVER_DISK, its disk's delays), into out (len bytes); a value of
 * other characters than `allowed`, or too long, is said and left out. */
static void run_server_word(const char *name, const char *allowed, const char *what, char *out,
                            size_t len)
{
    const char *v = getenv(name);
    size_t n = v ? strlen(v) : 0;
    if (n == 0)
        return;
    if (n < len && strspn(v, allowed) == n) {
        memcpy(out, v, n + 1);
        return;
    }
    char shown[128];
    utf8_escape(v, shown, sizeof shown);
    fprintf(stderr, "herd: %s: '%s' is not %s, at most %zu of them: not recorded\n", name, shown,
            what, len - 1);
}

#define RUN_WORD_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

int run_create_results(struct run *r, double sync_seconds, const char *start_utc,
                       const struct host_info *hosts, const struct rank_info *ranks)
{
    const struct run_settings *set = &r->job->settings;
    char mpi_version[MPI_MAX_LIBRARY_VERSION_STRING];
    versions_mpi(mpi_version, sizeof mpi_version);
    summary_cpu_host_find(set->monitor_url, r->mon.sampler >= 0 ? r->mon.sampler_host : "", hosts,
                          r->nhosts, ranks, r->size, &r->rec.cpu_host);
    run_server_word("HERD_SERVER_FS", RUN_WORD_CHARS "._+-",
                    "a file system's name (letters, digits, '.', '_', '+', '-')", r->rec.server_fs,
                    sizeof r->rec.server_fs);
    run_server_word("HERD_SERVER_DISK", RUN_WORD_CHARS "=,.",
                    "a disk's delays (letters, digits, '=', ',', '.')", r->rec.server_disk,
                    sizeof r->rec.server_disk);
    struct run_info info = {
        .version = HERD_VERSION,
        .run_id = r->run_id,
        .label = set->label,
        .server_fs = r->rec.server_fs,
        .server_disk = r->rec.server_disk,
        .command_line = r->opts->command_line,
        .job_path = r->job->path,
        .job_text = r->job->text,
        .start_utc = start_utc,
        .epoch_unix = r->epoch_unix,
        .mpi_version = mpi_version,
        .target = set->target,
        .nranks = r->size,
        .clients_per_rank = r->clients,
        .nhosts = r->nhosts,
        .clock_sync_seconds = sync_seconds,
        .monitor_host = r->mon.sampler >= 0 ? r->mon.sampler_host : "",
        .monitor_rank = r->mon.sampler,
        .monitor_interval = set->monitor_interval,
        .monitor_url = set->monitor_url,
        .monitor_client_ranks = r->rec.cpu_host.client_ranks,
    };
    char err[JOB_ERR_MAX];
    /* In place once its header is written; never over what is not ours. */
    r->rec.results = results_create(&r->rec.out, r->output, &info, hosts, r->nhosts, ranks, r->size,
                                    err, sizeof err);
    r->rec.lines = calloc((size_t)r->job->nphases, sizeof *r->rec.lines);
    if (!r->rec.results || !r->rec.lines) {
        fprintf(stderr, "herd: %s\n", r->rec.results ? "out of memory" : err);
        return 2;
    }
    char clients[48] = ""; /* "2 ranks x 1000 clients" */
    if (r->clients > 1)
        snprintf(clients, sizeof clients, " x %d clients", r->clients);
    fprintf(stderr, "herd: run %s: %d rank%s%s on %d host%s, target %s (%s), results %s%s%s\n",
            r->run_id, r->size, units_plural(r->size), clients, r->nhosts, units_plural(r->nhosts),
            set->target, r->rundir, r->rec.out.shown, set->label[0] ? ", label " : "", set->label);
    if (r->mon.sampler >= 0) {
        char host[sizeof r->mon.sampler_host * 6]; /* a host's name is not a job value */
        utf8_escape(r->mon.sampler_host, host, sizeof host);
        fprintf(stderr, "herd: monitor: rank %d samples %s every %gs\n", r->mon.sampler, host,
                set->monitor_interval);
    }
    return 0;
}

void run_release_rundir(struct run *r)
{
    if (!r->rundir_held)
        return;
    char err[JOB_ERR_MAX];
    if (rundir_close(r->be, r->be_ctx, r->rundir, r->rundir_locked,
                     !r->job->settings.keep && r->rundir_ours, !r->cleanup_unfinished, err,
                     sizeof err) < 0)
        fprintf(stderr, "herd: %s\n", err);
    r->rundir_held = r->rundir_locked = false;
}

/* Rank 0, once the server CPU is in the lines: one /phases/<ladder>/steps
 * table per load ladder, in job order. */
static void run_write_ladders(struct run *r)
{
    struct step_row *rows = r->rec.nlines ? malloc((size_t)r->rec.nlines * sizeof *rows) : NULL;
    for (int i = 0; rows && i < r->rec.nlines; i++) {
        const char *ladder = r->rec.lines[i].ladder;
        bool seen = false;
        for (int k = 0; k < i && !seen; k++)
            seen = strcmp(r->rec.lines[k].ladder, ladder) == 0;
        if (!ladder[0] || seen)
            continue;
        size_t n = summary_ladder_steps(r->rec.lines, r->rec.nlines, ladder, rows);
        char err[512];
        if (results_write_steps(r->rec.results, ladder, rows, n, err, sizeof err) < 0)
            fprintf(stderr, "herd: results: %s\n", err);
    }
    free(rows);
}

/* Rank 0: how the run ended as far as it is known (signal: the agreed
 * stop signal, 0 for none): its status and its exit code. */
static int run_outcome(const struct run *r, int signal, enum run_status *status)
{
    if (signal) {
        *status = RUN_INTERRUPTED;
        return 128 + signal;
    }
    if (r->rec.nlost) {
        *status = RUN_INCOMPLETE;
        return EXIT_RESULTS_LOST;
    }
    *status = RUN_COMPLETE;
    return r->total_errors || r->total_verify || r->cleanup_unfinished ? 3 : 0;
}

void run_record_outcome(struct run *r, int signal)
{
    enum run_status status;
    int exit_code = run_outcome(r, signal, &status);
    char end_utc[40], err[512];
    run_utc_now(end_utc, sizeof end_utc);
    if (r->rec.results && results_status(r->rec.results, run_status_name(status), end_utc,
                                         exit_code, r->rec.startup_seconds, err, sizeof err) < 0)
        fprintf(stderr, "herd: results: %s\n", err);
}

/* Rank 0: the --json summary, by the safe-output rule, or onto standard
 * output (--json -). When it cannot be written, an earlier summary that
 * --force was allowed to replace is removed too: a reader must never take
 * it for this run's. Where it went is said on `said` (standard output
 * but for --json -). 0 or -1. */
static int run_write_json(struct run *r, const char *status_name, int exit_code, FILE *said)
{
    struct summary_json_run jr = {.run_id = r->run_id,
                                  .label = r->job->settings.label,
                                  .server_fs = r->rec.server_fs,
                                  .server_disk = r->rec.server_disk,
                                  .status = status_name,
                                  .exit_code = exit_code,
                                  .results_file = r->output,
                                  .job_path = r->job->path,
                                  .nranks = r->size,
                                  .clients_per_rank = r->clients,
                                  .monitor_client_ranks = r->rec.cpu_host.client_ranks};
    char err[512];
    if (run_json_to_stdout(r)) {
        summary_json_print(stdout, &jr, r->rec.lines, r->rec.nlines);
        if (fflush(stdout) == 0 && !ferror(stdout))
            return 0;
        fprintf(stderr, "herd: --json -: the summary could not be written to standard output\n");
        return -1;
    }
    if (summary_json_write(&r->rec.json, &jr, r->rec.lines, r->rec.nlines, err, sizeof err) == 0) {
        fprintf(said, "summary: %s\n", r->rec.json.shown);
        return 0;
    }
    fprintf(stderr, "herd: --json %s\n", err);
    if (safeout_remove_old(&r->rec.json, err, sizeof err) < 0)
        fprintf(stderr, "herd: --json %s\n", err);
    fprintf(said, "summary: NOT written to %s (see the error above)\n", r->rec.json.shown);
    return -1;
}

int run_finish(struct run *r, int signal)
{
    const struct summary_sources sampled = {.proc = r->mon.sampler >= 0,
                                            .node_exporter = r->job->settings.monitor_url[0]};
    summary_add_monitor(r->rec.lines, r->rec.nlines, r->rec.samples, r->rec.nsamples, r->rec.procs,
                        r->rec.nprocs, &sampled);
    for (int i = 0; i < r->rec.nlines; i++) {
        const struct summary_line *l = &r->rec.lines[i];
        const struct phase_server s = l->server;
        char err[512];
        if ((!isnan(s.cpu_mean) || !isnan(s.nfsd_threads) || !isnan(s.proc_cpu) ||
             !isnan(s.proc_thread_max) || !isnan(s.nfsd_packets_per_s) || s.covered >= 0) &&
            results_phase_server(r->rec.results, l->name, &s, err, sizeof err) < 0)
            fprintf(stderr, "herd: results: %s\n", err);
    }
    run_write_ladders(r);
    enum run_status status;
    int exit_code = run_outcome(r, signal, &status);
    char end_utc[40], err[512];
    run_utc_now(end_utc, sizeof end_utc);
    const char *status_name = run_status_name(status);
    if (results_close(r->rec.results, status_name, end_utc, exit_code, r->rec.startup_seconds, err,
                      sizeof err) < 0) {
        fprintf(stderr, "herd: results: %s\n", err);
        status_name = "partial"; /* what the file still says */
        if (!signal)
            exit_code = EXIT_RESULTS_LOST;
    }
    r->rec.results = NULL;
    /* With --json -, standard output holds the JSON alone: the rest to
     * stderr, the table there only without -q. */
    bool json_out = run_json_to_stdout(r);
    FILE *said = json_out ? stderr : stdout;
    if (!(json_out && r->opts->quiet))
        summary_print(said, r->rec.lines, r->rec.nlines, !r->opts->quiet, &r->rec.cpu_host);
    fprintf(said, "\nresults: %s (status %s)\n", r->rec.out.shown, status_name);
    if (r->opts->json && run_write_json(r, status_name, exit_code, said) < 0 && !signal)
        exit_code = EXIT_RESULTS_LOST;
    if (r->rec.nlost) {
        fprintf(said, "not in the results file: %d phase%s:", r->rec.nlost,
                units_plural(r->rec.nlost));
        for (int i = 0; i < r->rec.nlost && i < (int)(sizeof r->rec.lost / sizeof r->rec.lost[0]);
             i++)
            fprintf(said, " %s", r->rec.lost[i]);
        fprintf(said, "%s (records in %s.<phase>.lost.csv or on stderr)\n",
                r->rec.nlost > (int)(sizeof r->rec.lost / sizeof r->rec.lost[0]) ? " ..." : "",
                r->rec.out.shown);
    }
    fflush(stdout);
    free(r->rec.lines);
    return exit_code;
}

void run_write_usage(struct run *r)
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
    if (r->rank == 0 && all && r->rec.results &&
        results_write_usage(r->rec.results, all, (size_t)r->size, err, sizeof err) < 0)
        fprintf(stderr, "herd: results: %s\n", err);
    free(all);
}
