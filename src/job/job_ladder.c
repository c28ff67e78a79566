/* job_ladder.c — load ladders: a phase with a ladder in ranks
 * (ranks_active, ranks_step), clients (clients_active) or rate
 * (rate_steps, rate_curve) becomes one phase per step
 * (job_expand_ladders, job.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "job_parse.h"
#include "units.h"

/* The next item of a comma list at p into item (size bytes): where the
 * rest starts (past the comma), or NULL for an empty or too long item or
 * a trailing comma. */
static const char *ladder_item(const char *p, char *item, size_t size)
{
    size_t len = strcspn(p, ",");
    if (len == 0 || len >= size)
        return NULL;
    snprintf(item, size, "%.*s", (int)len, p);
    p += len;
    if (*p == ',' && !*++p)
        return NULL; /* a trailing comma */
    return p;
}

int job_ladder_steps(const char *spec, int64_t *out, int max, int64_t nranks)
{
    int n = 0;
    int64_t last = 0;
    char item[24];
    for (const char *p = spec; *p;) {
        if (!(p = ladder_item(p, item, sizeof item)))
            return -EINVAL;
        int64_t v;
        if (strcmp(item, "all") == 0) {
            if (*p) /* "all" is the last step */
                return -EINVAL;
            v = nranks > 0 ? nranks : INT64_MAX;
            if (v == last) /* the step before already has all ranks: the same step */
                break;
        } else {
            if (strspn(item, "0123456789") < strlen(item))
                return -EINVAL;
            v = strtoll(item, NULL, 10);
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

int job_ladder_rates(const char *spec, double *out, int max, double most)
{
    int n = 0;
    double last = 0;
    char item[32];
    for (const char *p = spec; *p;) {
        double v;
        if (!(p = ladder_item(p, item, sizeof item)) || units_parse_rate(item, &v) != 0 ||
            v <= last || v > most || n == max)
            return -EINVAL;
        if (out)
            out[n] = v;
        n++;
        last = v;
    }
    return n > 0 ? n : -EINVAL;
}

/* A ladder in rate's steps: rate_steps' rates, or rate_curve's closed-loop
 * first step (percent 0) and its percents. How many (< 0: not a list). */
static int ladder_rate_steps(const struct phase *ph, double *values, bool *curve)
{
    *curve = ph->rate_curve[0] != '\0';
    if (!*curve)
        return job_ladder_rates(ph->rate_steps, values, JOB_STEPS_MAX, JOB_RATE_MAX);
    values[0] = 0;
    int n = job_ladder_rates(ph->rate_curve, values + 1, JOB_STEPS_MAX - 1, 100);
    return n < 0 ? n : n + 1;
}

/* Step k of a ladder in rate: its name's suffix, its rate or percent. */
static void ladder_rate_step(const struct phase *ph, struct phase *st, double v, bool curve,
                             char *suffix, size_t len)
{
    if (curve && v == 0)
        snprintf(suffix, len, ".max"); /* the closed loop: rate 0 */
    else if (curve)
        snprintf(suffix, len, ".%gpct", v);
    else
        snprintf(suffix, len, ".%gps", v);
    st->rate = curve ? 0 : v;
    st->curve_percent = 0;
    if (curve)
        st->curve_percent = v == 0 ? -1 : v;
    (void)ph;
}

/* Step k of ladder ph into st: name, ladder, the step's own count. */
static void ladder_step(const struct phase *ph, struct phase *st, int k, int64_t count,
                        double rate_value, bool curve)
{
    *st = *ph;
    char suffix[40];
    if (ph->rate_steps[0] || ph->rate_curve[0])
        ladder_rate_step(ph, st, rate_value, curve, suffix, sizeof suffix);
    else
        snprintf(suffix, sizeof suffix, ".%lld%c", (long long)count,
                 ph->clients_active[0] ? 'c' : 'r');
    int sl = (int)strlen(suffix);
    snprintf(st->name, sizeof st->name, "%.*s%s", (int)(JOB_NAME_MAX - 1 - sl), ph->name, suffix);
    snprintf(st->ladder, sizeof st->ladder, "%s", ph->name);
    st->step = k + 1;
    if (ph->clients_active[0])
        st->active_clients = count;
    else if (ph->ranks_active[0] || ph->ranks_step)
        st->active_ranks = count;
    if (ph->step_duration > 0 && (st->deadline <= 0 || ph->step_duration < st->deadline))
        st->deadline = ph->step_duration; /* a deadline set too stays a bound */
    st->ranks_active[0] = '\0';
    st->ranks_step = 0;
    st->clients_active[0] = '\0';
    st->rate_steps[0] = '\0';
    st->rate_curve[0] = '\0';
}

int job_expand_ladders(const struct job *job, int64_t nranks, struct job *out, char *err,
                       size_t len)
{
    *out = *job;
    out->text = job->text ? strdup(job->text) : NULL;
    int total = 0;
    int64_t steps[JOB_STEPS_MAX] = {0};
    char why[256];
    for (int i = 0; i < job->nphases; i++) {
        const struct phase *ph = &job->phases[i];
        double rates[JOB_STEPS_MAX];
        bool curve = false;
        bool in_rate = ph->rate_steps[0] || ph->rate_curve[0];
        int n = 1;
        if (job_phase_is_ladder(ph))
            n = in_rate ? ladder_rate_steps(ph, rates, &curve)
                        : ladder_counts(ph, nranks, steps, why, sizeof why);
        if (n < 0 && in_rate)
            snprintf(why, sizeof why, "'%s' is not a rising list of %s",
                     curve ? ph->rate_curve : ph->rate_steps,
                     curve ? "percents (10,50,100)" : "rates (10,20,50)");
        if (n < 0) {
            const char *key = ph->clients_active[0] ? "clients_active" : "ranks_active";
            if (in_rate)
                key = curve ? "rate_curve" : "rate_steps";
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
        double rates[JOB_STEPS_MAX] = {0};
        bool curve = false;
        int n = ph->rate_steps[0] || ph->rate_curve[0]
                    ? ladder_rate_steps(ph, rates, &curve)
                    : ladder_counts(ph, nranks, steps, why, sizeof why);
        for (int k = 0; k < n; k++)
            ladder_step(ph, &out->phases[out->nphases++], k, steps[k], rates[k], curve);
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
