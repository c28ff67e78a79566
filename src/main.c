/* main.c — herd's commands: run, check, keys, tables, mix-from, help,
 * version (the options and help text are cli.c's). `run` needs MPI; the
 * rest do not start it. Before MPI starts, `run` makes glibc keep freed
 * memory (prefault_keep_freed): the client libraries allocate a buffer
 * per RPC, which glibc's defaults map and fault in anew each time. */
#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"
#include "clientfit.h"
#include "clock.h"
#include "job.h"
#include "job_mixfrom.h"
#include "jobtext.h"
#include "prefault.h"
#include "probe.h"
#include "results_tables.h"
#include "rundir.h"
#include "runner.h"
#include "summary.h"
#include "units.h"
#include "utf8.h"
#include "versions.h"
#include "workload.h"

static void print_keys(void)
{
    int wname = (int)strlen("key"), wdef = (int)strlen("default");
    for (size_t i = 0; i < job_key_count(); i++) {
        const struct job_key *k = job_key_at(i);
        int n = (int)strlen(k->name), d = k->fallback ? (int)strlen(k->fallback) : 0;
        wname = n > wname ? n : wname;
        wdef = d > wdef ? d : wdef;
    }
    wdef = wdef < (int)strlen("(required)") ? (int)strlen("(required)") : wdef;
    printf("%-*s %-*s %s\n", wname, "key", wdef, "default", "meaning");
    for (size_t i = 0; i < job_key_count(); i++) {
        const struct job_key *k = job_key_at(i);
        const char *fallback = "(required)";
        if (k->fallback)
            fallback = k->fallback[0] ? k->fallback : "(unset)";
        printf("%-*s %-*s %s\n", wname, k->name, wdef, fallback, k->help);
    }
}

/* The job of a command, taken before anything opens descriptors of its
 * own (MPI): a file's (path, text NULL: read later; a path naming a
 * descriptor is checked now, jobtext_check_given) or the text --phase
 * stands for. 0, or -1 with err. */
static int job_source(const struct cli_args *a, const char **path, char **text, char *err,
                      size_t errlen)
{
    *text = NULL;
    *path = a->phases ? JOBTEXT_PHASES_NAME : a->job;
    if (!a->phases)
        return jobtext_check_given(a->job, err, errlen) < 0 ? -1 : 0;
    return jobtext_from_kinds(a->phases, text, err, errlen) < 0 ? -1 : 0;
}

/* HERD_LABEL as the label of a job that gives none; a bad one is said
 * (when say: rank 0) and left out. */
static void label_from_env(struct job *job, bool say)
{
    char why[256];
    if (job_label_default(job, getenv("HERD_LABEL"), why, sizeof why) < 0 && say)
        fprintf(stderr, "herd: HERD_LABEL: %s: not used\n", why);
}

/* --label TEXT as one more --set, label=TEXT (after the others: it wins).
 * 0, or -1 with err. */
static int label_as_set(struct cli_args *a, char *err, size_t errlen)
{
    static char set[JOB_PATH_MAX + 8];
    if (!a->label)
        return 0;
    if (a->nsets == CLI_SETS_MAX) {
        snprintf(err, errlen, "too many --set options (at most %d with --label)", CLI_SETS_MAX - 1);
        return -1;
    }
    snprintf(set, sizeof set, "label=%s", a->label);
    a->sets[a->nsets++] = set;
    return 0;
}

/* check --print-job: the job --phase and --set make, as a job file:
 * [global] holds the KEY=VALUE sets, each phase its PHASE.KEY=VALUE ones.
 * A value a job file would read otherwise (a ';' comment, a '$'
 * variable, a newline) is refused. */
static int print_job(const struct cli_args *a, const char *text)
{
    for (int i = 0; i < a->nsets; i++)
        if (strpbrk(a->sets[i], ";$#\n\r")) {
            char shown[256];
            utf8_escape(a->sets[i], shown, sizeof shown);
            fprintf(stderr,
                    "herd: --print-job: --set %s: a job file would read ';', '#', '$' or "
                    "a line break in it otherwise\n",
                    shown);
            return 2;
        }
    printf("; the job of: herd --phase %s with its --set values\n[global]\n", a->phases);
    struct job_set_arg set;
    for (int i = 0; i < a->nsets; i++)
        if (job_set_split(a->sets[i], &set) && !set.phase)
            printf("%.*s = %s\n", (int)set.key_len, set.key, set.value);
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        printf("%.*s\n", (int)(nl - p), p);
        if (*p == '[') { /* a section: its own sets after its header */
            size_t n = (size_t)(strchr(p, ']') - p - 1);
            for (int i = 0; i < a->nsets; i++)
                if (job_set_split(a->sets[i], &set) && set.phase && set.phase_len == n &&
                    strncmp(set.phase, p + 1, n) == 0)
                    printf("%.*s = %s\n", (int)set.key_len, set.key, set.value);
        }
        p = nl + 1;
    }
    return 0;
}

/* check --probe: each distinct target once, with what the job's write
 * phases write there (for ranks ranks, a ladder step's own); the number
 * of problems. */
static int probe_targets(const struct job *job, long ranks)
{
    int problems = 0;
    for (int i = 0; i < job->nphases; i++) {
        const struct phase *ph = &job->phases[i];
        bool seen = false;
        for (int k = 0; k < i && !seen; k++)
            seen = strcmp(job->phases[k].target, ph->target) == 0 &&
                   strcmp(job->phases[k].backend, ph->backend) == 0;
        if (seen)
            continue;
        uint64_t writes = 0;
        for (int k = i; k < job->nphases; k++) {
            const struct phase *w = &job->phases[k];
            long n = w->active_ranks > 0 ? (long)w->active_ranks : ranks;
            if ((job_kind_caps(w->kind) & JOB_KIND_WRITES) && strcmp(w->target, ph->target) == 0)
                writes += job_phase_bytes_per_rank(w) * (uint64_t)n;
        }
        problems += probe_target(ph, writes, stdout);
    }
    return problems;
}

/* With clients_per_rank: the clients, the memory they take (clientfit.h:
 * per client, rank, and the ranks on one host: --ranks-per-host, else
 * all of -n's) and the descriptors a rank needs against this shell's
 * limit. */
static void check_print_clients(const struct job *job, long ranks, long on_host)
{
    const struct run_settings *set = &job->settings;
    struct clientfit_client c;
    clientfit_client(job, &c);
    double k = (double)set->clients_per_rank;
    char each[32] = "?", rank[32] = "?", host[32] = "?", have[32];
    if (c.memory) {
        units_format_human((double)c.memory, each, sizeof each);
        units_format_human((double)c.memory * k, rank, sizeof rank);
        units_format_human((double)c.memory * k * (double)on_host, host, sizeof host);
    }
    units_format_human((double)job_host_memory(), have, sizeof have);
    printf("clients: %lld per rank, %lld in all, each a separate NFS client with its own "
           "connection, file or region and RPC window, on one event loop per rank\n",
           (long long)set->clients_per_rank, (long long)set->clients_per_rank * ranks);
    printf("memory: %s per client at most (phase %s: RPC window and block buffers, and its "
           "state), %s per rank, %s for the %ld rank%s on one host (%s); at most half of this "
           "host's %s\n",
           each, job->phases[c.phase].name, rank, host, on_host, units_plural(on_host),
           on_host == ranks ? "all of -n's: --ranks-per-host N counts fewer" : "--ranks-per-host",
           have);
    struct rlimit rl;
    long need = clientfit_fds_need(job, clientfit_fds_open() + CLIENTFIT_FDS_MPI);
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        printf("descriptors: %ld per rank (%u per client, and %ld of herd, MPI and HDF5); this "
               "shell's limit %llu (ulimit -n), hard limit %llu%s\n",
               need, c.fds, need - (long)k * (long)c.fds, (unsigned long long)rl.rlim_cur,
               (unsigned long long)rl.rlim_max,
               (rlim_t)need > rl.rlim_cur ? ": the run raises it" : "");
}

/* check's table: one line per phase (a ladder's steps each), then the
 * bytes of the whole job on `ranks` ranks. */
static void check_print_phases(const struct job *job, long ranks, long on_host)
{
    const struct run_settings *set = &job->settings;
    char path[JOB_ERR_MAX]; /* the job's values passed utf8_check; its path did not */
    utf8_escape(job->path, path, sizeof path);
    printf("job %s: %d phase%s, target %s (backend %s)%s%s%s\n", path, job->nphases,
           units_plural(job->nphases), set->target, set->backend,
           set->keep ? ", run directory kept" : "", set->label[0] ? ", label " : "", set->label);
    printf("%-3s %-20s %-5s %-7s %-12s %-16s %7s %7s %5s %11s %11s\n", "#", "phase", "kind",
           "sharing", "shared_mode", "fileset", "file", "block", "iter", "per rank", "all ranks");
    double grand = 0; /* the sum of phases may pass 2^64; each phase does not */
    for (int i = 0; i < job->nphases; i++) {
        const struct phase *ph = &job->phases[i];
        char file[32], block[32], per[32], all[32];
        units_format_size(ph->file_size, file, sizeof file);
        units_format_size(ph->block_size, block, sizeof block);
        /* Each of a rank's clients moves a rank's share (clients_per_rank). */
        double client = (double)job_phase_bytes_per_rank(ph);
        long n = ph->active_ranks > 0 ? (long)ph->active_ranks : ranks; /* a ladder step's */
        double clients = ph->active_clients > 0 ? (double)ph->active_clients
                                                : (double)n * (double)set->clients_per_rank;
        grand += client * clients; /* job_check_scale: no overflow */
        units_format_human(client * clients / (double)(ranks > 0 ? ranks : 1), per, sizeof per);
        units_format_human(client * clients, all, sizeof all);
        /* A kind that holds locks locks the fileset's one shared file. */
        bool holds = workload_find(ph->kind)->flags & WORKLOAD_HOLDS;
        bool shared = ph->sharing == SHARING_SHARED || holds;
        const char *mode = "-";
        if (shared && !holds)
            mode = ph->shared_mode == SHARED_SEGMENTED ? "segmented" : "same-content";
        printf("%-3d %-20s %-5s %-7s %-12s %-16s %7s %7s %5lld %11s %11s\n", i + 1, ph->name,
               job_kind_name(ph->kind), shared ? "shared" : "unique", mode, ph->fileset, file,
               block, (long long)ph->iterations, per, all);
    }
    char total[32];
    units_format_human(grand, total, sizeof total);
    printf("total for %ld rank%s: %s\n", ranks, units_plural(ranks), total);
    if (set->clients_per_rank > 1)
        check_print_clients(job, ranks, on_host);
}

static int command_check(const struct cli_args *a)
{
    struct job job;
    char err[JOB_ERR_MAX];
    const char *path;
    char *text;
    if (job_source(a, &path, &text, err, sizeof err) < 0 ||
        job_load(path, text, a->sets, a->nsets, &job, err, sizeof err) < 0) {
        fprintf(stderr, "herd: %s\n", err);
        free(text);
        return 2;
    }
    if (a->print_job) {
        int rc = print_job(a, text);
        free(text);
        job_free(&job);
        return rc;
    }
    free(text);
    label_from_env(&job, true);
    long on_host = a->host_ranks ? a->host_ranks : a->ranks;
    if (job_check_scale(&job, a->ranks, err, sizeof err) < 0 ||
        clientfit_memory(&job, on_host, job_host_memory(), "this host", err, sizeof err) < 0 ||
        clientfit_fds(&job, clientfit_fds_open() + CLIENTFIT_FDS_MPI, false, "this shell", err,
                      sizeof err) < 0) {
        fprintf(stderr, "herd: %s\n", err);
        job_free(&job);
        return 2;
    }
    /* Load ladders as they will run on these ranks: one phase per step. */
    struct job steps;
    if (job_expand_ladders(&job, a->ranks, &steps, err, sizeof err) < 0) {
        fprintf(stderr, "herd: %s\n", err);
        job_free(&job);
        return 2;
    }
    job_free(&job);
    job = steps;
    check_print_phases(&job, a->ranks, on_host);
    if (job.settings.run_id[0])
        printf("note: run_id = %s: a run takes over the run directory an earlier run kept "
               "(keep = yes), if there is one, and reuses its data files; " RUNDIR_REUSE_CAVEAT
               "\n",
               job.settings.run_id);
    if (job.settings.monitor_rank[0])
        printf("monitor_rank = %s: run it with %ld ranks (%ld doing I/O, 1 monitoring)\n",
               job.settings.monitor_rank, a->ranks + 1, a->ranks);
    /* Legal but almost surely a mistake: warned, or refused with --strict. */
    int nwarn = job_lint_print(&job, a->ranks, stderr);
    int problems = a->probe ? probe_targets(&job, a->ranks) : 0;
    job_free(&job);
    if (problems > 0) {
        fprintf(stderr, "herd: --probe: %d problem%s with the target%s\n", problems,
                units_plural(problems), units_plural(problems));
        return 2;
    }
    if (nwarn > 0 && a->strict) {
        fprintf(stderr, "herd: %d warning%s: refused (--strict)\n", nwarn, units_plural(nwarn));
        return 2;
    }
    return 0;
}

static char *join_argv(int argc, char **argv)
{
    size_t len = 1;
    for (int i = 0; i < argc; i++)
        len += strlen(argv[i]) + 1;
    char *s = calloc(1, len);
    for (int i = 0; s && i < argc; i++) {
        if (i)
            strcat(s, " ");
        strcat(s, argv[i]);
    }
    return s;
}

/* Rank 0 reads the job file and sends its text to everyone, so that only
 * rank 0's node needs to see the file; refused (rank 0's why, from
 * job_source before MPI started) or unreadable, rank 0 says why and every
 * rank gets NULL. */
static char *broadcast_job_text(int rank, const char *path, const char *refused)
{
    char *text = NULL, err[JOB_ERR_MAX];
    long len = 0;
    if (rank == 0) {
        int rc = refused ? -EBADF : jobtext_read(path, &text, err, sizeof err);
        if (rc < 0) /* the words of job_load's own read, so run and check say the same */
            fprintf(stderr, "herd: %s\n", refused ? refused : err);
        len = rc < 0 ? rc : (long)strlen(text);
    }
    MPI_Bcast(&len, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    if (len < 0)
        return NULL;
    if (rank != 0)
        text = calloc(1, (size_t)len + 1);
    MPI_Bcast(text, (int)len, MPI_CHAR, 0, MPI_COMM_WORLD);
    return text;
}

/* Rank 0 applies the scale rule for the ranks of MPI_COMM_WORLD (an upper
 * bound of the I/O ranks) and prints why it refuses; every rank gets the
 * same verdict, so all exit together. Returns 0 or -EOVERFLOW. */
static int run_check_scale(int rank, const struct job *job)
{
    int verdict = 0, size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) {
        char err[JOB_ERR_MAX];
        verdict = job_check_scale(job, size, err, sizeof err);
        if (verdict < 0)
            fprintf(stderr, "herd: %s\n", err);
    }
    MPI_Bcast(&verdict, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return verdict;
}

/* Whether the job's clients fit where MPI placed the ranks (clientfit.h):
 * on each host, the clients of all its ranks (a monitor rank counted as
 * one with clients) in half of its memory, by the host's first rank; on
 * each rank, its descriptors within its limit (raised to the hard one
 * where that is enough). The first rank that refuses says why; every
 * rank gets the verdict. 0, or -1. */
static int run_check_clients(int rank, const struct job *job)
{
    MPI_Comm host;
    int local = 0, on_host = 1;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host) ==
        MPI_SUCCESS) {
        MPI_Comm_rank(host, &local);
        MPI_Comm_size(host, &on_host);
        MPI_Comm_free(&host);
    }
    char name[64] = "", where[96], err[JOB_ERR_MAX];
    if (gethostname(name, sizeof name - 1) != 0)
        snprintf(name, sizeof name, "unknown");
    snprintf(where, sizeof where, "host %s", name);
    int bad =
        local == 0 && clientfit_memory(job, on_host, job_host_memory(), where, err, sizeof err) < 0;
    snprintf(where, sizeof where, "rank %d on %s", rank, name);
    if (!bad)
        bad = clientfit_fds(job, clientfit_fds_open(), true, where, err, sizeof err) < 0;
    int first = bad ? rank : INT_MAX;
    MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rank == first)
        fprintf(stderr, "herd: %s\n", err);
    return first == INT_MAX ? 0 : -1;
}

static int command_run(int argc, char **argv, const struct cli_args *a)
{
    prefault_keep_freed(); /* before MPI starts: its allocations too */
    /* The job's source while the descriptors and environment are still
     * the shell's; every rank makes the same --phase text. */
    struct job job;
    char err[JOB_ERR_MAX];
    const char *path;
    char *text;
    int source = job_source(a, &path, &text, err, sizeof err);
    /* Helper threads (watchdog, md5 read-ahead) never call MPI. */
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    double t_init = clock_mono(); /* herd's own start-up cost is measured from here */
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int code;
    if (!a->phases)
        text = broadcast_job_text(rank, path, source < 0 ? err : NULL);
    else if (source < 0 && rank == 0)
        fprintf(stderr, "herd: %s\n", err);
    if (!text) {
        code = 2;
    } else if (job_load(path, text, a->sets, a->nsets, &job, err, sizeof err) < 0) {
        if (rank == 0)
            fprintf(stderr, "herd: %s\n", err);
        code = 2;
    } else if (run_check_scale(rank, &job) < 0 || run_check_clients(rank, &job) < 0) {
        job_free(&job);
        code = 2;
    } else {
        label_from_env(&job, rank == 0);
        char *cmd = join_argv(argc, argv);
        struct runner_opts opts = {.output = a->output,
                                   .force = a->force,
                                   .t_init = t_init,
                                   .json = a->json,
                                   .quiet = a->quiet,
                                   .command_line = cmd ? cmd : ""};
        code = runner_run(&job, &opts);
        free(cmd);
        job_free(&job);
    }
    free(text);
    MPI_Finalize();
    return code;
}

/* herd mix-from BEFORE AFTER: the job lines of a mix like that client. */
static int command_mix_from(const struct cli_args *a)
{
    double seconds = 0;
    char err[1024];
    if (a->seconds && (units_parse_duration(a->seconds, &seconds) != 0 || seconds <= 0)) {
        fprintf(stderr, "herd: mix-from: --seconds '%s' is not a duration above 0 (60, 1m)\n",
                a->seconds);
        return 2;
    }
    if (a->section && !job_name_ok(a->section)) {
        fprintf(stderr,
                "herd: mix-from: --section '%s' is not a phase name (letters, digits, "
                "'_', '.', '-')\n",
                a->section);
        return 2;
    }
    struct job_mixfrom m;
    if (a->replay_mix && !a->replay) {
        fprintf(stderr, "herd: mix-from: --replay-mix needs --replay BEFORE,AFTER\n");
        return 2;
    }
    if (job_mixfrom_load(a->before, a->after, a->mount, seconds, &m, err, sizeof err) < 0 ||
        (a->replay && job_mixfrom_correct(&m, a->replay, a->replay_mix, a->mount, seconds, err,
                                          sizeof err) < 0)) {
        fprintf(stderr, "herd: mix-from: %s\n", err);
        return 2;
    }
    job_mixfrom_print(stdout, &m, a->section);
    return fflush(stdout) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    struct cli_args a;
    char err[512];
    if (cli_parse(argc, argv, JOB_RANKS_MAX, &a, err, sizeof err) < 0 ||
        label_as_set(&a, err, sizeof err) < 0) {
        fprintf(stderr, "herd: %s\n", err);
        return 2;
    }
    if (a.help) {
        if (a.help_on == CLI_UNITS) /* the summary's legend: the results layer's */
            summary_print_legend(stdout);
        else
            cli_help(stdout, a.help_on);
        return 0;
    }
    switch (a.command) {
    case CLI_VERSION:
        versions_print(stdout);
        return 0;
    case CLI_KEYS:
        print_keys();
        return 0;
    case CLI_TABLES:
        results_tables_print(stdout);
        return 0;
    case CLI_CHECK:
        return command_check(&a);
    case CLI_MIX_FROM:
        return command_mix_from(&a);
    case CLI_RUN:
        return command_run(argc, argv, &a);
    default:
        return 2; /* (cli_parse gives no other command without help) */
    }
}
