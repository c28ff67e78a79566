/* job_ladder.c — load ladders: a phase with ranks_active or ranks_step
 * becomes one phase per step (job_expand_ladders, job.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "job_parse.h"

int job_ladder_steps(const char *spec, int64_t *out, int max, int64_t nranks)
{
    int n = 0;
    int64_t last = 0;
    for (const char *p = spec; *p;) {
        size_t len = strcspn(p, ",");
        int64_t v;
        if (len == 3 && strncmp(p, "all", 3) == 0) {
            if (p[len]) /* "all" is the last step */
                return -EINVAL;
            v = nranks > 0 ? nranks : INT64_MAX;
            if (v == last) /* the step before already has all ranks: the same step */
                break;
        } else {
            char num[24];
            if (len == 0 || len >= sizeof num || strspn(p, "0123456789") < len)
                return -EINVAL;
            snprintf(num, sizeof num, "%.*s", (int)len, p);
            v = strtoll(num, NULL, 10);
            if (v < 1 || v > JOB_RANKS_MAX)
                return -EINVAL;
            if (nranks > 0 && v > nranks)
                return -ERANGE;
        }
        if (v <= last || n == (out ? max : JOB_STEPS_MAX))
            return -EINVAL;
        if (out)
            out[n] = v;
        n++;
        last = v;
        p += len;
        if (*p == ',' && !*++p)
            return -EINVAL; /* a trailing comma */
    }
    return n > 0 ? n : -EINVAL;
}

/* The steps of a ladder phase for nranks ranks into steps; how many. A
 * ladder in clients counts the clients of every rank. */
static int ladder_counts(const struct phase *ph, int64_t nranks, int64_t *steps, char *why,
                         size_t len)
{
    if (ph->clients_active[0]) {
        int64_t all = nranks * ph->clients_per_rank;
        int n = job_ladder_steps(ph->clients_active, steps, JOB_STEPS_MAX, all);
        if (n == -ERANGE)
            snprintf(why, len, "'%s' asks for more clients than the run's %lld (%lld ranks x %lld)",
                     ph->clients_active, (long long)all, (long long)nranks,
                     (long long)ph->clients_per_rank);
        else if (n < 0)
            snprintf(why, len, "'%s' is not a list of client counts", ph->clients_active);
        return n;
    }
    if (ph->ranks_active[0]) {
        int n = job_ladder_steps(ph->ranks_active, steps, JOB_STEPS_MAX, nranks);
        if (n == -ERANGE)
            snprintf(why, len, "'%s' asks for more ranks than the run's %lld I/O ranks",
                     ph->ranks_active, (long long)nranks);
        else if (n < 0)
            snprintf(why, len, "'%s' is not a list of rank counts", ph->ranks_active);
        return n;
    }
    int n = 0;
    for (int64_t v = 1; v < nranks && n < JOB_STEPS_MAX - 1; v *= ph->ranks_step)
        steps[n++] = v;
    steps[n++] = nranks;
    return n;
}

int job_expand_ladders(const struct job *job, int64_t nranks, struct job *out, char *err,
                       size_t len)
{
    *out = *job;
    out->text = job->text ? strdup(job->text) : NULL;
    int total = 0;
    int64_t steps[JOB_STEPS_MAX];
    char why[256];
    for (int i = 0; i < job->nphases; i++) {
        const struct phase *ph = &job->phases[i];
        int n = job_phase_is_ladder(ph) ? ladder_counts(ph, nranks, steps, why, sizeof why) : 1;
        if (n < 0) {
            const char *key = ph->clients_active[0] ? "clients_active" : "ranks_active";
            job_error_format(err, len, job, job->path, job_phase_key_loc(ph, key), key, why);
            free(out->text);
            out->text = NULL;
            return -1;
        }
        total += n;
    }
    out->phases = calloc((size_t)total, sizeof *out->phases);
    if (!out->phases || (job->text && !out->text)) {
        free(out->text);
        free(out->phases);
        snprintf(err, len, "%s: out of memory", job->path);
        return -1;
    }
    out->nphases = 0;
    for (int i = 0; i < job->nphases; i++) {
        const struct phase *ph = &job->phases[i];
        if (!job_phase_is_ladder(ph)) {
            out->phases[out->nphases++] = *ph;
            continue;
        }
        int n = ladder_counts(ph, nranks, steps, why, sizeof why);
        for (int k = 0; k < n; k++) {
            struct phase *st = &out->phases[out->nphases++];
            *st = *ph;
            char suffix[32];
            int sl = snprintf(suffix, sizeof suffix, ".%lld%c", (long long)steps[k],
                              ph->clients_active[0] ? 'c' : 'r');
            snprintf(st->name, sizeof st->name, "%.*s%s", (int)(JOB_NAME_MAX - 1 - sl), ph->name,
                     suffix);
            snprintf(st->ladder, sizeof st->ladder, "%s", ph->name);
            st->step = k + 1;
            if (ph->clients_active[0])
                st->active_clients = steps[k];
            else
                st->active_ranks = steps[k];
            if (ph->step_duration > 0 && (st->deadline <= 0 || ph->step_duration < st->deadline))
                st->deadline = ph->step_duration; /* a deadline set too stays a bound */
            st->ranks_active[0] = '\0';
            st->ranks_step = 0;
            st->clients_active[0] = '\0';
        }
    }
    for (int i = 0; i < out->nphases; i++) /* step names must not clash with other phases */
        for (int j = i + 1; j < out->nphases; j++)
            if (strcmp(out->phases[i].name, out->phases[j].name) == 0) {
                char msg[200];
                snprintf(msg, sizeof msg, "the ladder step [%s] has the name of another phase",
                         out->phases[i].name);
                job_error_format(err, len, job, job->path, out->phases[j].line, NULL, msg);
                job_free(out);
                return -1;
            }
    return 0;
}
