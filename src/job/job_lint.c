/* job_lint.c — herd check's warnings: what runs but is probably not
 * what was meant (job_lint, job.h); printed after the job's notes, by
 * herd run too (rank 0, before the first phase). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "job.h"
#include "job_parse.h"
#include "units.h"

/* Append one warning line for key of phase ph. */
static void lint_add(const struct job *job, const struct phase *ph, const char *key, char *out,
                     size_t len, const char *fmt, ...)
{
    char msg[512], line[JOB_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int loc = job_phase_key_loc(ph, key);
    char warn[600];
    snprintf(warn, sizeof warn, "warning: %s", msg);
    job_error_format(line, sizeof line, job, job->path, loc, key, warn);
    size_t used = strlen(out);
    if (used < len)
        snprintf(out + used, len - used, "%s\n", line);
}

/* The last phase before index that writes fileset, or NULL. */
static const struct phase *lint_writer(const struct job *job, int index, const char *fileset)
{
    const struct phase *w = NULL;
    for (int i = 0; i < index; i++)
        if ((job_kind_caps(job->phases[i].kind) & JOB_KIND_WRITES) &&
            strcmp(job->phases[i].fileset, fileset) == 0)
            w = &job->phases[i];
    return w;
}

/* Each line of text (each ending in a newline) on out as "herd: LINE". */
static void lines_print(const char *text, FILE *out)
{
    for (const char *line = text, *nl; (nl = strchr(line, '\n')); line = nl + 1)
        fprintf(out, "herd: %.*s\n", (int)(nl - line), line);
}

int job_lint_print(const struct job *job, int64_t nranks, FILE *out)
{
    lines_print(job->notes, out);
    char warnings[8192];
    int n = job_lint(job, nranks, warnings, sizeof warnings);
    lines_print(warnings, out);
    return n;
}

int job_lint(const struct job *job, int64_t nranks, char *out, size_t len)
{
    int n = 0;
    if (len)
        out[0] = '\0';
    for (int i = 0; i < job->nphases; i++) {
        const struct phase *ph = &job->phases[i];
        uint64_t bytes = job_phase_bytes_per_rank(ph);
        double all = (double)bytes * (double)nranks;
        if ((job_kind_caps(ph->kind) & JOB_KIND_TREE) && all > (double)JOB_LINT_META_BYTES &&
            job_phase_key_loc(ph, "file_size") == LINE_SET) {
            char size[32], total[32];
            units_format_size(ph->file_size, size, sizeof size);
            units_format_human(all, total, sizeof total);
            lint_add(job, ph, "file_size", out, len,
                     "meta phase [%s] writes %s: %lld files x %lld ranks of file_size %s from "
                     "the command line (--set file_size reaches every phase; --set "
                     "%s.file_size=0: empty files)",
                     ph->name, total, (long long)ph->files, (long long)nranks, size, ph->name);
            n++;
        }
        unsigned caps = job_kind_caps(ph->kind);
        bool reads = caps & JOB_KIND_READS;
        const struct phase *writer = lint_writer(job, i, ph->fileset);
        /* (verify applies to the kinds that read and may check: job_check) */
        bool checks = (caps & JOB_KIND_CHECKS) || (reads && ph->verify);
        if (checks && writer && writer->seed != ph->seed) {
            lint_add(job, ph, "seed", out, len,
                     "%s phase [%s] checks fileset '%s' against seed %lld, but [%s] writes it "
                     "with seed %lld: every block will fail verify",
                     job_kind_name(ph->kind), ph->name, ph->fileset, (long long)ph->seed,
                     writer->name, (long long)writer->seed);
            n++;
        }
        if (reads && !job->settings.run_id[0] && !writer) {
            lint_add(job, ph, "fileset", out, len,
                     "%s phase [%s] reads fileset '%s', which no earlier phase writes (and no "
                     "fixed run_id names an earlier run's files): every open will fail",
                     job_kind_name(ph->kind), ph->name, ph->fileset);
            n++;
        }
    }
    return n;
}
