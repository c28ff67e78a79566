/* runner_ladder.c — which ranks do I/O in a load ladder's step (the
 * step's active ranks spread over hosts, the others wait), a ladder's
 * stop rule and a rate_curve's rates. After each step rank 0 tests
 * stop_when on the step's summary and broadcasts the verdict: the steps
 * after a broken rule do not run (each recorded as not-run, with the
 * reason). */
#include "runner_state.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stoprule.h"
#include "summary.h"

int *run_spread_order(const struct run *r)
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

bool run_active(const struct run *r, int i, int64_t active_ranks)
{
    return active_ranks <= 0 || (r->spread ? r->spread[i] : i) < active_ranks;
}

int run_active_clients(const struct run *r, int i, const struct phase *ph)
{
    if (!run_active(r, i, ph->active_ranks))
        return 0;
    if (ph->active_clients <= 0)
        return r->clients;
    int64_t place = r->spread ? r->spread[i] : i;
    int64_t share = ph->active_clients / r->size + (place < ph->active_clients % r->size);
    return share < r->clients ? (int)share : r->clients;
}

void run_step_comm(struct run *r, const struct phase *ph, bool active)
{
    r->step_comm = MPI_COMM_NULL;
    if (ph->active_ranks > 0 || ph->active_clients > 0)
        MPI_Comm_split(r->comm, active ? 0 : MPI_UNDEFINED, r->rank, &r->step_comm);
}

struct phase_summary run_step_summary(const struct run *r, const struct phase *ph, int index)
{
    struct phase_summary sum = {.index = index, .active_hosts = run_active_hosts(r, ph)};
    for (int i = 0; i < r->size; i++) {
        int n = run_active_clients(r, i, ph);
        sum.active_ranks += n > 0;
        sum.active_clients += n;
    }
    return sum;
}

int run_active_hosts(const struct run *r, const struct phase *ph)
{
    int n = 0;
    for (int h = 0; h < r->nhosts; h++)
        for (int i = 0; i < r->size; i++)
            if (r->rank_host[i] == h && run_active_clients(r, i, ph) > 0) {
                n++;
                break;
            }
    return n;
}

/* Rank 0: the line of a step that does not run, and say so once. */
static void run_ladder_not_run(struct run *r, int index)
{
    const struct phase *ph = &r->job->phases[index];
    if (r->rec.nlines >= r->job->nphases)
        return;
    struct phase_summary sum = run_step_summary(r, ph, index);
    sum.status = "not-run";
    sum.t_start = sum.t_end = NAN;
    summary_not_run(ph, &sum, r->rec.ladder_reason, &r->rec.lines[r->rec.nlines++]);
}

bool run_ladder_skip(struct run *r, int index)
{
    struct phase *ph = &r->steps->phases[index];
    if (!ph->ladder[0])
        return false;
    if (ph->curve_percent > 0 && !(r->curve_max > 0) && !r->ladder_stopped[0]) {
        snprintf(r->ladder_stopped, sizeof r->ladder_stopped, "%s", ph->ladder);
        snprintf(r->rec.ladder_reason, sizeof r->rec.ladder_reason,
                 "not run: the curve's maximum (%s.max) did no work to take a percent of",
                 ph->ladder);
    }
    if (strcmp(ph->ladder, r->ladder_stopped) == 0) {
        if (r->rank == 0)
            run_ladder_not_run(r, index);
        return true;
    }
    if (ph->curve_percent > 0)
        ph->rate = ph->curve_percent / 100 * r->curve_max;
    return false;
}

/* The step's figures as the stop rule names them (stoprule.h): the
 * latency of a rated step's response, else of its main call. */
static void run_stop_values(const struct phase *ph, const struct summary_line *l,
                            double v[STOP_METRICS])
{
    int op = ph->rate > 0 ? OP_RESPONSE : l->stats.main_op;
    v[STOP_P50] = summary_op_quantile(l, op, 0.5);
    v[STOP_P90] = summary_op_quantile(l, op, 0.9);
    v[STOP_P99] = summary_op_quantile(l, op, 0.99);
    v[STOP_MAX] = summary_op_quantile(l, op, 1.0);
    const struct phase_stats *st = &l->stats;
    v[STOP_ACHIEVED] = summary_achieved_share(st);
    v[STOP_LATE] = ph->rate > 0 && st->units > 0 ? (double)st->late / (double)st->units : NAN;
    v[STOP_ERRORS] = (double)st->errors;
}

/* Rank 0: whether step ph (its line l) breaks its ladder's stop rule;
 * if so, why into r->rec.ladder_reason and on stderr. */
static bool run_stop_verdict(struct run *r, const struct phase *ph, const struct summary_line *l)
{
    struct stop_rule rule;
    char why[256];
    if (stoprule_parse(ph->stop_when, &rule, why, sizeof why) || rule.n == 0)
        return false;
    double v[STOP_METRICS];
    run_stop_values(ph, l, v);
    int broken = stoprule_broken(&rule, v);
    if (broken < 0)
        return false;
    char cond[96];
    stoprule_describe(&rule, broken, v, cond, sizeof cond);
    snprintf(r->rec.ladder_reason, sizeof r->rec.ladder_reason,
             "not run: step %s broke stop_when (%s)", ph->name, cond);
    fprintf(stderr, "herd: ladder %s: step %s broke stop_when (%s): its later steps are not run\n",
            ph->ladder, ph->name, cond);
    return true;
}

void run_ladder_after(struct run *r, int index)
{
    const struct phase *ph = &r->job->phases[index];
    if (!ph->ladder[0])
        return;
    double verdict[2] = {0, r->curve_max}; /* stopped, the curve's maximum */
    const struct summary_line *l =
        r->rank == 0 && r->rec.nlines ? &r->rec.lines[r->rec.nlines - 1] : NULL;
    if (l && strcmp(l->name, ph->name) == 0) {
        if (ph->curve_percent < 0) /* the curve's closed-loop maximum */
            verdict[1] =
                l->active_clients > 0 ? l->stats.achieved_per_s / (double)l->active_clients : 0;
        verdict[0] = run_stop_verdict(r, ph, l);
    }
    run_mpi_ok(MPI_Bcast(verdict, 2, MPI_DOUBLE, 0, r->comm), "MPI_Bcast (ladder verdict)");
    r->curve_max = verdict[1];
    if (verdict[0] > 0)
        snprintf(r->ladder_stopped, sizeof r->ladder_stopped, "%s", ph->ladder);
}
