/* summary.c — compute and print the end-of-run table (see summary.h). */
#include "summary.h"

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "monitor_keys.h"
#include "units.h"
#include "urlserver.h"
#include "utf8.h"
#include "workload.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One row's window of direction d (0 read, 1 write) into l's range. */
static void summary_window_add(struct summary_line *l, int d, int32_t window)
{
    if (window <= 0)
        return;
    if (!l->window_lo[d] || window < l->window_lo[d])
        l->window_lo[d] = window;
    if (window > l->window_hi[d])
        l->window_hi[d] = window;
}

/* An open-loop phase's achieved calls/s: each client's paced calls over
 * its own time (its iterations' t_end - t_start, up to the phase's
 * deadline when it has one), summed over the clients, so that one client whose random arrivals ran
 * long does not lower every other client's rate, and a server that falls behind stretches every
 * client's time. Rows come client by client. */
static double summary_achieved(const struct rank_record *rows, size_t nrows, double deadline_at)
{
    double total = 0, seconds = 0;
    uint64_t units = 0;
    for (size_t i = 0; i < nrows; i++) {
        const struct rank_record *r = &rows[i];
        units += r->units;
        /* A deadline ends the schedule (its calls due are counted up to
         * it): the close after it is no time of the offered load's. */
        double end = deadline_at > 0 && r->t_end > deadline_at ? deadline_at : r->t_end;
        seconds += end > r->t_start ? end - r->t_start : 0;
        bool last =
            i + 1 == nrows || rows[i + 1].rank != r->rank || rows[i + 1].client != r->client;
        if (!last)
            continue;
        total += seconds > 0 ? (double)units / seconds : 0;
        units = 0;
        seconds = 0;
    }
    return total;
}

void summary_compute(const struct phase *ph, const struct phase_summary *sum,
                     const struct rank_record *rows, size_t nrows, uint64_t errors,
                     struct summary_line *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", ph->name);
    snprintf(out->kind, sizeof out->kind, "%s", job_kind_name(ph->kind));
    workload_find(ph->kind)->describe(ph, out->layout, sizeof out->layout);
    snprintf(out->status, sizeof out->status, "%s", sum->status);
    snprintf(out->notes, sizeof out->notes, "%s", sum->notes);
    out->connections_open = sum->connections_open;
    out->t_start = sum->t_start;
    out->t_end = sum->t_end;
    out->start_skew = sum->start_skew;
    out->active_hosts = sum->active_hosts;
    out->active_ranks = sum->active_ranks;
    out->active_clients = sum->active_clients;
    out->client_ladder = ph->active_clients > 0;
    snprintf(out->ladder, sizeof out->ladder, "%s", ph->ladder);
    out->server = (struct phase_server){NAN, NAN, NAN, NAN, NAN, NAN, NAN, .covered = -1};
    out->holds = workload_find(ph->kind)->flags & WORKLOAD_HOLDS;
    out->ph = ph;
    out->overlap = sum->overlap;
    out->stats.main_op = -1;
    out->iter_mean = out->iter_stddev = out->iter_min = out->iter_max = NAN;
    struct phase_stats *st = &out->stats;
    st->rows = (int64_t)nrows;
    st->errors = errors;
    st->stuck = sum->stuck;
    st->t_min = st->t_median = st->t_max = st->first_done = st->last_done = NAN;
    st->offered_per_s = ph->rate > 0 ? ph->rate * (double)sum->active_clients : NAN;
    st->achieved_per_s = NAN;
    if (nrows == 0)
        return;
    double *t = malloc(nrows * sizeof *t);
    size_t nt = 0; /* rows that did any work: an interrupted phase has idle ones */
    double first = 1e300, last = -1e300;
    for (size_t i = 0; i < nrows; i++) {
        const struct rank_record *r = &rows[i];
        st->grants += r->grants;
        st->contended += r->contended;
        if (i == 0 || r->rank != rows[i - 1].rank)
            st->ranks++; /* rows come in rank order */
        if (r->ops == 0)
            continue;
        if (t)
            t[nt++] = r->t_end - r->t_start;
        out->client_seconds += r->t_end > r->t_start ? r->t_end - r->t_start : 0;
        st->bytes += r->bytes;
        st->ops += r->ops;
        st->verify_failures += r->verify_failures;
        st->violations += r->violations;
        st->units += r->units;
        st->late += r->late;
        st->due += r->due;
        summary_window_add(out, 0, r->rpc_window_read);
        summary_window_add(out, 1, r->rpc_window_write);
        if (r->t_end < first)
            first = r->t_end;
        if (r->t_end > last)
            last = r->t_end;
    }
    if (t && nt) { /* without memory to sort them: NaN */
        qsort(t, nt, sizeof *t, cmp_double);
        st->t_min = t[0];
        st->t_max = t[nt - 1];
        st->t_median = nt % 2 ? t[nt / 2] : (t[nt / 2 - 1] + t[nt / 2]) / 2;
    }
    free(t);
    if (ph->ladder[0]) /* a ladder step: the inactive ranks' rows are empty */
        st->ranks = sum->active_ranks;
    if (nt == 0)
        return;
    st->first_done = first - sum->t_start;
    st->last_done = last - sum->t_start;
    st->mib_per_s = st->last_done > 0 ? (double)st->bytes / 1048576.0 / st->last_done : 0;
    st->ops_per_s = st->last_done > 0 ? (double)st->ops / st->last_done : 0;
    st->achieved_per_s =
        summary_achieved(rows, nrows, ph->deadline > 0 ? sum->t_start + ph->deadline : 0);
}

/* From source's samples meeting [t0, t1]: the mean and max cpu_busy, the
 * last nfsd thread count, the thread pool's packets per second (over the
 * seconds those samples cover) and woken share; false if no sample had a
 * CPU figure. */
static bool summary_server(const struct monitor_sample *s, size_t ns, const char *source, double t0,
                           double t1, struct phase_server *out)
{
    double sum = 0, top = -1, packets = 0, woken = 0, seconds = 0;
    size_t n = 0;
    for (size_t i = 0; i < ns; i++) {
        if (strcmp(s[i].source, source) != 0 || s[i].t - s[i].dt > t1 || s[i].t <= t0)
            continue;
        if (!isnan(s[i].nfsd_threads))
            out->nfsd_threads = s[i].nfsd_threads;
        if (!isnan(s[i].pool_packets) && !isnan(s[i].pool_threads_woken)) {
            packets += s[i].pool_packets;
            woken += s[i].pool_threads_woken;
            seconds += s[i].dt;
        }
        if (isnan(s[i].cpu_busy))
            continue;
        sum += s[i].cpu_busy;
        top = s[i].cpu_busy > top ? s[i].cpu_busy : top;
        n++;
    }
    if (n == 0)
        return false;
    out->cpu_mean = sum / (double)n;
    out->cpu_max = top;
    if (seconds > 0) {
        out->nfsd_packets_per_s = packets / seconds;
        out->nfsd_woken_share = packets > 0 ? woken / packets : NAN;
    }
    return true;
}

/* proc_cpu and proc_thread_max of l from the process rows meeting it. */
static void summary_processes(struct summary_line *l, const struct monitor_process *p, size_t np)
{
    enum { NAMES = 32 }; /* more distinct names than this: the first ones */
    struct proc_sum {
        const char *name;
        double sum;
        size_t n;
    } names[NAMES];
    int nnames = 0;
    double top = -1;
    for (size_t i = 0; i < np; i++) {
        if (p[i].t - p[i].dt > l->t_end || p[i].t <= l->t_start)
            continue;
        if (!isnan(p[i].cpu_max_thread) && p[i].cpu_max_thread > top)
            top = p[i].cpu_max_thread;
        if (isnan(p[i].cpu))
            continue;
        int k = 0;
        while (k < nnames && strcmp(names[k].name, p[i].name) != 0)
            k++;
        if (k == nnames) {
            if (nnames == NAMES)
                continue;
            names[nnames++] = (struct proc_sum){.name = p[i].name};
        }
        names[k].sum += p[i].cpu;
        names[k].n++;
    }
    if (top >= 0)
        l->server.proc_thread_max = top;
    for (int k = 0; k < nnames; k++)
        l->server.proc_cpu = (isnan(l->server.proc_cpu) ? 0 : l->server.proc_cpu) +
                             names[k].sum / (double)names[k].n;
}

/* Whether source's readings span [t0, t1] whole: its first row after t0
 * counts from a reading at or before t0, each later one from the row
 * before it (no gap: an exporter that restarted starts anew), up to a row
 * at or after t1. A source's rows are in time order; t - dt is the
 * previous reading's time, equal to it but for rounding. */
static bool summary_covers(const struct monitor_sample *s, size_t ns, const char *source, double t0,
                           double t1)
{
    const double rounding = 1e-9;
    double reach = t0;
    for (size_t i = 0; i < ns; i++) {
        if (strcmp(s[i].source, source) != 0 || s[i].t <= reach)
            continue;
        if (s[i].t - s[i].dt > reach + rounding)
            return false;
        reach = s[i].t;
        if (reach >= t1)
            return true;
    }
    return false;
}

void summary_add_monitor(struct summary_line *lines, int n, const struct monitor_sample *s,
                         size_t ns, const struct monitor_process *p, size_t np,
                         const struct summary_sources *want)
{
    for (int i = 0; i < n; i++) {
        struct summary_line *l = &lines[i];
        if (!(l->t_end >= l->t_start))
            continue; /* a ladder step that did not run: no time, no server figures */
        /* monitor_url names the server's own exporter: it comes first */
        if (!summary_server(s, ns, "node_exporter", l->t_start, l->t_end, &l->server))
            summary_server(s, ns, "proc", l->t_start, l->t_end, &l->server);
        summary_processes(l, p, np);
        if (want->proc || want->node_exporter)
            l->server.covered =
                (!want->proc || summary_covers(s, ns, "proc", l->t_start, l->t_end)) &&
                (!want->node_exporter ||
                 summary_covers(s, ns, "node_exporter", l->t_start, l->t_end));
    }
}

/* The call a kind's p50/p99 are shown for (its workload's main_ops);
 * -1 = none. */
static int summary_main_op(const struct summary_line *l, const struct workload_ops *wl)
{
    if (wl->nmain_ops == 1)
        return wl->main_ops[0];
    for (int i = 0; i < wl->nmain_ops; i++)
        for (int k = 0; k < l->nops; k++)
            if (l->ops[k].op == wl->main_ops[i])
                return wl->main_ops[i];
    return -1;
}

static int cmp_err_count(const void *a, const void *b)
{
    const struct summary_err *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    if (x->op != y->op)
        return x->op - y->op;
    return x->err - y->err;
}

/* Merge the ranks' error entries by (op, errno, status), most frequent
 * first; kinds beyond SUMMARY_ERRS_MAX are counted in errs_other. */
static void summary_add_errors(struct summary_line *l, const struct err_entry *e, size_t n)
{
    struct summary_err *all = n ? calloc(n, sizeof *all) : NULL;
    size_t nall = 0;
    for (size_t i = 0; all && i < n; i++) {
        size_t k = 0;
        while (k < nall && !(all[k].op == e[i].op && all[k].err == e[i].err &&
                             strncmp(all[k].status, e[i].status, ERRTAB_STATUS_MAX) == 0))
            k++;
        if (k == nall) {
            all[k].op = e[i].op;
            all[k].err = e[i].err;
            memcpy(all[k].status, e[i].status, ERRTAB_STATUS_MAX);
            all[k].status[ERRTAB_STATUS_MAX - 1] = '\0';
            nall++;
        }
        all[k].count += e[i].count;
    }
    if (all)
        qsort(all, nall, sizeof *all, cmp_err_count);
    for (size_t k = 0; k < nall; k++) {
        if (l->nerrs < SUMMARY_ERRS_MAX)
            l->errs[l->nerrs++] = all[k];
        else
            l->errs_other += all[k].count;
    }
    free(all);
}

/* IOR's per-iteration bandwidth: each iteration's bytes over its last end
 * minus its first start (rows that did work), mean and population stddev. */
static void summary_add_iterations(struct summary_line *l, const struct rank_record *rows,
                                   size_t nrows)
{
    l->iter_mean = l->iter_stddev = l->iter_min = l->iter_max = NAN;
    if (l->iterations < 2 || nrows == 0)
        return;
    /* One pass over the rows (nranks x iterations may be 10^6). */
    size_t ni = (size_t)l->iterations;
    double *t0 = malloc(ni * sizeof *t0), *t1 = malloc(ni * sizeof *t1);
    uint64_t *bytes = calloc(ni, sizeof *bytes);
    if (!t0 || !t1 || !bytes) {
        free(t0);
        free(t1);
        free(bytes);
        return;
    }
    for (size_t it = 0; it < ni; it++) {
        t0[it] = INFINITY;
        t1[it] = -INFINITY;
    }
    for (size_t i = 0; i < nrows; i++) {
        const struct rank_record *r = &rows[i];
        if (r->ops == 0 || r->iteration < 0 || (size_t)r->iteration >= ni)
            continue;
        size_t it = (size_t)r->iteration;
        bytes[it] += r->bytes;
        t0[it] = r->t_start < t0[it] ? r->t_start : t0[it];
        t1[it] = r->t_end > t1[it] ? r->t_end : t1[it];
    }
    double sum = 0, sq = 0, lo = INFINITY, hi = -INFINITY;
    int64_t n = 0;
    for (size_t it = 0; it < ni; it++) {
        if (!(t1[it] > t0[it]))
            continue; /* an iteration that never ran */
        double bw = (double)bytes[it] / 1048576.0 / (t1[it] - t0[it]);
        sum += bw;
        sq += bw * bw;
        lo = bw < lo ? bw : lo;
        hi = bw > hi ? bw : hi;
        n++;
    }
    free(t0);
    free(t1);
    free(bytes);
    if (n == 0)
        return;
    l->iter_mean = sum / (double)n;
    double var = sq / (double)n - l->iter_mean * l->iter_mean;
    l->iter_stddev = var > 0 ? sqrt(var) : 0;
    l->iter_min = lo;
    l->iter_max = hi;
}

/* The meta step of op o (its items call), if the phase ran one: items
 * over all ranks, first start to last end, items / seconds. */
static void summary_op_step(const struct phase_data *d, struct summary_op *o)
{
    double t0 = INFINITY, t1 = -INFINITY;
    o->items = 0;
    o->step_s = o->items_per_s = NAN;
    for (size_t i = 0; i < d->nmeta_steps; i++) {
        const struct meta_step_record *m = &d->meta_steps[i];
        if (m->op != o->op)
            continue;
        o->items += m->items;
        t0 = m->t_start < t0 ? m->t_start : t0;
        t1 = m->t_end > t1 ? m->t_end : t1;
    }
    if (!(t1 >= t0))
        return;
    o->step_s = t1 - t0;
    o->items_per_s = o->step_s > 0 ? (double)o->items / o->step_s : NAN;
}

int summary_op_totals(const struct phase_data *d, double last_done, struct summary_op out[OP_COUNT])
{
    int n = 0;
    for (int op = 0; op < OP_COUNT; op++) {
        struct summary_op o = {.op = op};
        for (size_t k = 0; d->ops && k < d->nranks; k++) {
            o.calls += d->ops[k].count[op];
            o.seconds += d->ops[k].seconds[op];
        }
        if (o.calls == 0)
            continue;
        for (size_t k = 0; k < d->nerrors; k++)
            if (d->errors[k].op == op)
                o.errors += d->errors[k].count;
        o.per_s = last_done > 0 ? (double)o.calls / last_done : NAN;
        summary_op_step(d, &o);
        const struct hist *h = d->hists ? &d->hists[op] : NULL;
        bool sampled = h && hist_count(h) > 0;
        o.p50 = sampled ? (double)hist_quantile(h, 0.50) * 1e-9 : NAN;
        o.p90 = sampled ? (double)hist_quantile(h, 0.90) * 1e-9 : NAN;
        o.p99 = sampled ? (double)hist_quantile(h, 0.99) * 1e-9 : NAN;
        o.max = sampled ? (double)hist_quantile(h, 1.0) * 1e-9 : NAN;
        out[n++] = o;
    }
    return n;
}

void summary_add_detail(struct summary_line *l, const struct phase *ph, const struct phase_data *d)
{
    l->iterations = ph->iterations;
    l->step = ph->ladder[0] ? ph->step : 0;
    l->nerrs = 0;
    l->errs_other = 0;
    uint64_t calls = 0, failed = 0;
    l->nops = summary_op_totals(d, l->stats.last_done, l->ops);
    for (int i = 0; i < l->nops; i++) {
        const struct summary_op *o = &l->ops[i];
        if (op_is_call((enum op)o->op)) {
            calls += o->calls;
            failed += o->errors < o->calls ? o->errors : o->calls;
        }
    }
    /* The rows' own counts too: a phase with no op table still says. */
    l->all_failed = (calls > 0 && failed >= calls) ||
                    (calls == 0 && l->stats.ops > 0 && l->stats.errors >= l->stats.ops);
    l->stats.main_op = summary_main_op(l, workload_find(ph->kind));
    summary_add_errors(l, d->errors, d->nerrors);
    summary_add_iterations(l, d->rows, d->nrows);
}

const char *summary_op_label(const struct summary_line *l, int op)
{
    if (strcmp(l->kind, "meta") == 0 && op == OP_OPEN)
        return "create";
    return op_name((enum op)op);
}

static const struct summary_op *summary_find_op(const struct summary_line *l, int op)
{
    for (int k = 0; k < l->nops; k++)
        if (l->ops[k].op == op)
            return &l->ops[k];
    return NULL;
}

double summary_main_per_s(const struct summary_line *l)
{
    const struct summary_op *m =
        l->stats.main_op >= 0 ? summary_find_op(l, l->stats.main_op) : NULL;
    return m && !l->all_failed ? m->per_s : NAN;
}

/* A latency as "850us", "12.3ms", "1.20s"; "-" for none. */
static void summary_format_latency(double s, char *buf, size_t len)
{
    if (isnan(s))
        snprintf(buf, len, "-");
    else if (s < 1e-3)
        snprintf(buf, len, "%.0fus", s * 1e6);
    else if (s < 1.0)
        snprintf(buf, len, "%.3gms", s * 1e3);
    else
        snprintf(buf, len, "%.3gs", s);
}

/* A rate, or "-" when nothing worked (or nothing was timed). */
/* Seconds as the table prints them; "-" for NaN (no row did work). */
static void summary_format_seconds(double s, char *buf, size_t len)
{
    if (isnan(s))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.3f", s);
}

static void summary_format_rate(double v, bool none, const char *fmt, char *buf, size_t len)
{
    if (none || isnan(v))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, fmt, v);
}

double summary_wait_share(const struct summary_line *l)
{
    return l->client_seconds > 0 ? l->overlap.wait_seconds / l->client_seconds : NAN;
}

/* A lock phase's rate (grants/s), how many grants had to wait for another
 * client's conflicting hold and how long the clients waited in all (and as
 * a share of the clients' time, summary_wait_share: with clients_per_rank
 * K, K clients per rank wait), and the non-blocking tries refused; n/a
 * where the phase gives no time. */
static void summary_print_waits(FILE *out, const struct summary_line *l)
{
    const struct phase_stats *st = &l->stats;
    double t = st->last_done;
    char rate[32], share[32], waited[32];
    summary_format_rate(t > 0 ? (double)st->grants / t : NAN, false, "%.0f", rate, sizeof rate);
    summary_format_rate(100 * summary_wait_share(l), false, "%.0f%%", share, sizeof share);
    /* "-": a stop cut the overlap check short */
    summary_format_rate((double)l->overlap.waited, !l->overlap.complete, "%.0f", waited,
                        sizeof waited);
    fprintf(out,
            "; grants/s %s; waited %s of %llu grants, %.3f s waiting (%s of the clients' time)",
            rate, waited, (unsigned long long)st->grants, l->overlap.wait_seconds, share);
    if (st->contended)
        fprintf(out, "; %llu tries refused", (unsigned long long)st->contended);
}

bool summary_key_applies(const struct job_key *k, const struct phase *ph)
{
    if (k->scope == KEY_GLOBAL_ONLY && strcmp(k->name, "backend") != 0)
        return false;
    if (k->kinds && !(k->kinds & KIND_BIT(ph->kind)))
        return false;
    return !k->backend || strcmp(k->backend, ph->backend) == 0;
}

/* The parameters the second line echoes ("bs 1M, count 50, fsync no,
 * backend posix"): of these, the ones that apply to the phase's kind. */
static void summary_print_params(FILE *out, const struct summary_line *l)
{
    static const struct {
        const char *key, *label;
    } echoed[] = {{"block_size", "bs"},  {"files", "files/rank"}, {"count", "count"},
                  {"lock_hold", "hold"}, {"fsync", "fsync"},      {"backend", "backend"}};
    int n = 0;
    for (size_t i = 0; i < sizeof echoed / sizeof echoed[0]; i++) {
        const struct job_key *k = job_key_lookup(echoed[i].key);
        if (!k || !l->ph || !summary_key_applies(k, l->ph))
            continue;
        char v[64];
        job_key_format(k, l->ph, v, sizeof v);
        /* Each of a rank's clients makes its own files (clients_per_rank). */
        bool per_client = strcmp(k->name, "files") == 0 && l->ph->clients_per_rank > 1;
        fprintf(out, "%s %s %s", n++ ? "," : ";", per_client ? "files/client" : echoed[i].label, v);
    }
}

/* The RPCs in flight the ranks kept ("READs in flight 2", "WRITEs in
 * flight 1-4" across ranks). */
static void summary_print_window(FILE *out, const struct summary_line *l)
{
    static const char *const rpc[2] = {"READs", "WRITEs"};
    for (int d = 0; d < 2; d++) {
        if (!l->window_hi[d])
            continue;
        fprintf(out, "; %s in flight %d", rpc[d], (int)l->window_lo[d]);
        if (l->window_hi[d] != l->window_lo[d])
            fprintf(out, "-%d", (int)l->window_hi[d]);
    }
}

double summary_achieved_share(const struct phase_stats *st)
{
    return st->due > 0 ? (double)st->units / (double)st->due : NAN;
}

double summary_op_quantile(const struct summary_line *l, int op, double q)
{
    const struct summary_op *o = summary_find_op(l, op);
    if (!o)
        return NAN;
    if (q >= 1.0)
        return o->max;
    if (q >= 0.99)
        return o->p99;
    return q >= 0.9 ? o->p90 : o->p50;
}

double summary_op_p99(const struct summary_line *l, int op)
{
    return summary_op_quantile(l, op, 0.99);
}

bool summary_herd_limited(const struct summary_line *l)
{
    double lag = summary_op_p99(l, OP_LAG), resp = summary_op_p99(l, OP_RESPONSE);
    return !isnan(lag) && !isnan(resp) && lag >= SUMMARY_LAG_FLOOR &&
           lag >= SUMMARY_LAG_SHARE * resp;
}

/* An open-loop phase (rate): offered and achieved calls/s, late calls,
 * response (from the intended instant) and service (from the send)
 * percentiles, herd's own lag. */
static void summary_print_pace(FILE *out, const struct summary_line *l)
{
    const struct phase_stats *st = &l->stats;
    if (isnan(st->offered_per_s))
        return;
    char achieved[32], share[32];
    summary_format_rate(st->achieved_per_s, false, "%.1f", achieved, sizeof achieved);
    summary_format_rate(100 * summary_achieved_share(st), false, "%.1f%%", share, sizeof share);
    fprintf(out, "; offered %.1f/s achieved %s/s (%s of the calls due), late %llu of %llu",
            st->offered_per_s, achieved, share, (unsigned long long)st->late,
            (unsigned long long)st->units);
    static const struct {
        int op;
        const char *label;
    } parts[] = {{OP_RESPONSE, "response"}, {OP_SERVICE, "service"}, {OP_LAG, "herd lag"}};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        const struct summary_op *o = summary_find_op(l, parts[i].op);
        char p50[32], p99[32], max[32];
        summary_format_latency(o ? o->p50 : NAN, p50, sizeof p50);
        summary_format_latency(o ? o->p99 : NAN, p99, sizeof p99);
        summary_format_latency(o ? o->max : NAN, max, sizeof max);
        fprintf(out, "; %s p50 %s p99 %s max %s", parts[i].label, p50, p99, max);
    }
}

/* The second line: effective parameters, the main call, per-op items/s
 * (meta), per-iteration bandwidth, the other error kinds. */
static void summary_print_detail(FILE *out, const struct summary_line *l)
{
    fprintf(out, "    ");
    if (l->note[0]) { /* a ladder step that did not run */
        fprintf(out, "ladder step %lld: %s\n", (long long)l->step, l->note);
        return;
    }
    if (l->step > 0) { /* which load point of its ladder */
        char skew[32];
        units_format_ms(l->start_skew, skew, sizeof skew);
        char clients[48] = "";
        if (l->client_ladder)
            snprintf(clients, sizeof clients, "%lld client%s of ", (long long)l->active_clients,
                     units_plural(l->active_clients));
        fprintf(out, "ladder step %lld: %s%lld rank%s on %lld host%s, start skew %s; ",
                (long long)l->step, clients, (long long)l->active_ranks,
                units_plural(l->active_ranks), (long long)l->active_hosts,
                units_plural(l->active_hosts), skew);
    }
    fprintf(out, "%s", l->layout);
    summary_print_params(out, l);
    summary_print_window(out, l);
    if (l->stats.main_op >= 0 &&
        strcmp(summary_op_label(l, l->stats.main_op), op_name(l->stats.main_op)) != 0)
        fprintf(out, "; p50/p99 of %s (%s)", op_name((enum op)l->stats.main_op),
                summary_op_label(l, l->stats.main_op));
    else if (l->stats.main_op >= 0)
        fprintf(out, "; p50/p99 of %s", op_name((enum op)l->stats.main_op));
    if (strcmp(l->kind, "meta") == 0) { /* each step's items over its own time */
        static const int steps[] = {OP_OPEN, OP_STAT, OP_RENAME, OP_UNLINK, OP_RMDIR};
        fprintf(out, "; items/s");
        for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
            const struct summary_op *o = summary_find_op(l, steps[i]);
            if (!o || isnan(o->step_s))
                continue;
            char rate[32];
            summary_format_rate(o->items_per_s, o->items == 0, "%.0f", rate, sizeof rate);
            fprintf(out, " %s %s", summary_op_label(l, steps[i]), rate);
        }
    }
    if (l->holds)
        summary_print_waits(out, l);
    summary_print_pace(out, l);
    if (!isnan(l->iter_mean))
        fprintf(out, "; %lld iterations: mean %.1f stddev %.1f MiB/s (min %.1f max %.1f)",
                (long long)l->iterations, l->iter_mean, l->iter_stddev, l->iter_min, l->iter_max);
    for (int k = 0; k < l->nerrs && k < 4; k++) {
        char name[32];
        errtab_errno_name(l->errs[k].err, name, sizeof name);
        fprintf(out, "%s%llu %s %s", k == 0 ? "; errors " : ", ",
                (unsigned long long)l->errs[k].count, name, op_name((enum op)l->errs[k].op));
    }
    fputc('\n', out);
}

void summary_print_legend(FILE *out)
{
    fputs("units: MiB = 2^20 bytes, s = seconds. rows = ranks x clients x iterations;\n"
          "min/median/max s = one client's (rank's) time for one iteration; last s = the common "
          "start instant to the last\n"
          "rank done, each rank's open, fsync (fsync = yes) and close included, as IOR's\n"
          "bandwidth with -e; MiB/s = all bytes / last s: the phase's result, as its phase\n"
          "line says; calls/s = every timed call (open, write, close, mkdir,\n"
          "stat... each counts: not files/s) / last s; main/s = the calls of the phase's\n"
          "main call alone (the one p50/p99 are of: write; read for read and md5) / last\n"
          "s: for write and read, IOR's IOPS; items/s (meta, second line) = per\n"
          "step, the files created, stat'ed, renamed, unlinked (directories removed) without\n"
          "error over that step's time, first rank's start to last rank's end, as mdtest;\n"
          "p50/p99 = latency of the phase's main call (second line); errors = failed calls,\n"
          "with the most frequent errno and op; verify = blocks read with wrong data (md5:\n"
          "files whose digest differs); viol = lock exclusion broken; status verify = no\n"
          "call failed but data was wrong; '-' = no figure: no rank did any work (times),\n"
          "or calls were made and every one failed (rates); lock: no MiB/s (its bytes\n"
          "are tokens), grants/s and the waits on the second line; READs/WRITEs in flight\n"
          "(libnfs, second line) = the RPCs the ranks kept in flight (lowest-highest).\n",
          out);
}

/* A phase's first line (its figures) and its second (summary_print_detail). */
static void summary_print_phase(FILE *out, const struct summary_line *l)
{
    char mib[32], cps[32], mps[32], p50[16] = "-", p99[16] = "-", errs[64];
    summary_format_rate(l->stats.mib_per_s, l->all_failed || l->holds, "%.1f", mib, sizeof mib);
    summary_format_rate(l->stats.ops_per_s, l->all_failed, "%.0f", cps, sizeof cps);
    summary_format_rate(summary_main_per_s(l), false, "%.0f", mps, sizeof mps);
    const struct summary_op *m =
        l->stats.main_op >= 0 ? summary_find_op(l, l->stats.main_op) : NULL;
    if (m) {
        summary_format_latency(m->p50, p50, sizeof p50);
        summary_format_latency(m->p99, p99, sizeof p99);
    }
    if (l->nerrs > 0) {
        char name[32];
        errtab_errno_name(l->errs[0].err, name, sizeof name);
        snprintf(errs, sizeof errs, "%llu %s", (unsigned long long)l->stats.errors, name);
    } else {
        snprintf(errs, sizeof errs, "%llu", (unsigned long long)l->stats.errors);
    }
    char tmin[16], tmed[16], tmax[16], tlast[16];
    summary_format_seconds(l->stats.t_min, tmin, sizeof tmin);
    summary_format_seconds(l->stats.t_median, tmed, sizeof tmed);
    summary_format_seconds(l->stats.t_max, tmax, sizeof tmax);
    summary_format_seconds(l->stats.last_done, tlast, sizeof tlast);
    fprintf(out, "%-16s %-5s %5lld %7s %8s %7s %7s %9s %9s %8s %7s %7s %6llu %4llu %-11s %s\n",
            l->name, l->kind, (long long)l->stats.rows, tmin, tmed, tmax, tlast, mib, cps, mps, p50,
            p99, (unsigned long long)l->stats.verify_failures,
            (unsigned long long)l->stats.violations, l->status, errs);
    summary_print_detail(out, l);
}

/* localhost, 127.0.0.0/8 or ::1. */
static bool summary_is_loopback(const char *name)
{
    struct in_addr v4;
    struct in6_addr v6;
    return strcasecmp(name, "localhost") == 0 ||
           (inet_pton(AF_INET, name, &v4) == 1 && ntohl(v4.s_addr) >> 24 == 127) ||
           (inet_pton(AF_INET6, name, &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6));
}

/* The index in hosts of the host monitor_url's node_exporter runs on;
 * -1 when it is not known to be one of them. */
static int summary_url_host(const char *monitor_url, const struct host_info *hosts, int nhosts)
{
    const char *server = strstr(monitor_url, "://");
    struct urlserver u;
    char why[128];
    if (urlserver_parse(server ? server + 3 : monitor_url, &u, why, sizeof why) < 0)
        return -1;
    if (nhosts > 0 && summary_is_loopback(u.host))
        return 0;
    for (int h = 0; h < nhosts; h++)
        if (monitor_host_matches(hosts[h].hostname, u.host))
            return h;
    return -1;
}

void summary_cpu_host_find(const char *monitor_url, const char *sampler_host,
                           const struct host_info *hosts, int nhosts, const struct rank_info *ranks,
                           int nranks, struct summary_cpu_host *out)
{
    out->name[0] = '\0';
    out->client_ranks = -1;
    int host = -1;
    if (monitor_url[0]) {
        host = summary_url_host(monitor_url, hosts, nhosts);
    } else if (sampler_host[0]) {
        snprintf(out->name, sizeof out->name, "%s", sampler_host);
        out->client_ranks = 0; /* a host no I/O rank runs on */
        for (int h = 0; h < nhosts && host < 0; h++)
            if (strcmp(hosts[h].hostname, sampler_host) == 0)
                host = h;
    }
    if (host < 0)
        return;
    snprintf(out->name, sizeof out->name, "%s", hosts[host].hostname);
    out->client_ranks = 0;
    for (int i = 0; i < nranks; i++)
        out->client_ranks += ranks[i].host == host;
}

/* The server table's legend: what srv cpu covers (the host's CPU, shared
 * with the client ranks that ran on it, when any did), pkts/s and woken. */
static void summary_print_cpu_legend(FILE *out, const struct summary_cpu_host *cpu_host)
{
    if (!cpu_host || cpu_host->client_ranks <= 0) {
        fputs("srv cpu = busy share of all the server's CPUs; pkts/s = requests reaching\n"
              "kernel nfsd's threads per second; woken = the share of them that found an idle\n"
              "thread (pool_stats: well below 100%, every thread was busy).\n",
              out);
        return;
    }
    char host[sizeof cpu_host->name * 6]; /* a host's name is not a job value */
    utf8_escape(cpu_host->name, host, sizeof host);
    fprintf(out,
            "srv cpu = busy share of all the CPUs of host %s, shared with %d client rank%s\n"
            "of this run (the server's alone only where no client runs on its host);\n"
            "pkts/s = requests reaching kernel nfsd's threads per second; woken = the share\n"
            "of them that found an idle thread (pool_stats: well below 100%%, every thread\n"
            "was busy).\n",
            host, cpu_host->client_ranks, units_plural(cpu_host->client_ranks));
}

/* The server's table, when a monitor sampled it: its CPU, nfsd threads,
 * the monitored processes and nfsd's pool per phase, with its legend. */
static void summary_print_server(FILE *out, const struct summary_line *lines, int n,
                                 const struct summary_cpu_host *cpu_host)
{
    bool cpu = false, threads = false, part = false;
    for (int i = 0; i < n; i++) {
        cpu |= !isnan(lines[i].server.cpu_mean) || !isnan(lines[i].server.proc_cpu);
        threads |= !isnan(lines[i].server.nfsd_threads);
    }
    if (!cpu && !threads)
        return;
    /* procs cpu: cores the monitor_processes used; top thread: the
     * busiest one's share of a core (100% = a thread pinned on a core);
     * pkts/s and woken: kernel nfsd's pool_stats (see the legend). */
    fprintf(out, "\n%-18s %12s %12s %12s %10s %10s %9s %6s\n", "phase", "srv cpu mean",
            "srv cpu max", "nfsd threads", "procs cpu", "top thread", "pkts/s", "woken");
    for (int i = 0; i < n; i++) {
        const struct summary_line *l = &lines[i];
        char mean[16] = "-", max[16] = "-", thr[16] = "-", pc[16] = "-", pt[16] = "-";
        char pkts[16] = "-", woken[16] = "-";
        if (!isnan(l->server.nfsd_packets_per_s))
            snprintf(pkts, sizeof pkts, "%.0f", l->server.nfsd_packets_per_s);
        if (!isnan(l->server.nfsd_woken_share))
            snprintf(woken, sizeof woken, "%.0f%%", 100 * l->server.nfsd_woken_share);
        if (!isnan(l->server.cpu_mean)) {
            snprintf(mean, sizeof mean, "%.1f%%", 100 * l->server.cpu_mean);
            snprintf(max, sizeof max, "%.1f%%", 100 * l->server.cpu_max);
        }
        if (!isnan(l->server.nfsd_threads))
            snprintf(thr, sizeof thr, "%.0f", l->server.nfsd_threads);
        if (!isnan(l->server.proc_cpu))
            snprintf(pc, sizeof pc, "%.2f", l->server.proc_cpu);
        if (!isnan(l->server.proc_thread_max))
            snprintf(pt, sizeof pt, "%.0f%%", 100 * l->server.proc_thread_max);
        fprintf(out, "%-18s %12s %12s %12s %10s %10s %9s %6s%s\n", l->name, mean, max, thr, pc, pt,
                pkts, woken, l->server.covered == 0 ? "  (part)" : "");
        part |= l->server.covered == 0;
    }
    summary_print_cpu_legend(out, cpu_host);
    if (part)
        fputs("(part) = the monitor's readings do not span the phase whole (none at or before\n"
              "its start, or at or after its end, from a source): its figures, if any, are of\n"
              "part of it.\n",
              out);
}

void summary_print(FILE *out, const struct summary_line *lines, int n, bool legend,
                   const struct summary_cpu_host *cpu_host)
{
    fprintf(out, "\n%-16s %-5s %5s %7s %8s %7s %7s %9s %9s %8s %7s %7s %6s %4s %-11s %s\n", "phase",
            "kind", "rows", "min s", "median s", "max s", "last s", "MiB/s", "calls/s", "main/s",
            "p50", "p99", "verify", "viol", "status", "errors");
    for (int i = 0; i < n; i++)
        summary_print_phase(out, &lines[i]);
    if (legend) {
        fputc('\n', out);
        summary_print_legend(out);
    }
    summary_print_server(out, lines, n, cpu_host);
}

/* The errno failing most calls over every op (errs[] is per op, errno and
 * status), as a name; "" when nothing failed. */
static void summary_top_errno(const struct summary_line *l, char *name, size_t len)
{
    uint64_t best = 0;
    int top = 0;
    for (int i = 0; i < l->nerrs; i++) {
        uint64_t total = 0;
        for (int k = 0; k < l->nerrs; k++)
            if (l->errs[k].err == l->errs[i].err)
                total += l->errs[k].count;
        if (total > best) {
            best = total;
            top = l->errs[i].err;
        }
    }
    if (top)
        errtab_errno_name(top, name, len);
    else
        name[0] = '\0';
}

/* A step's offered load and its figures, and why it did not run. */
static void summary_step_pace(const struct summary_line *l, struct step_row *row)
{
    row->rate = l->ph ? l->ph->rate : 0;
    row->offered_per_s = l->stats.offered_per_s;
    row->achieved_per_s = l->stats.achieved_per_s;
    row->units = l->stats.units;
    row->late = l->stats.late;
    row->due = l->stats.due;
    row->response_p50_s = summary_op_quantile(l, OP_RESPONSE, 0.5);
    row->response_p99_s = summary_op_p99(l, OP_RESPONSE);
    row->service_p99_s = summary_op_p99(l, OP_SERVICE);
    row->lag_p99_s = summary_op_p99(l, OP_LAG);
    snprintf(row->note, sizeof row->note, "%s", l->note);
}

void summary_not_run(const struct phase *ph, const struct phase_summary *sum, const char *note,
                     struct summary_line *out)
{
    summary_compute(ph, sum, NULL, 0, 0, out);
    out->step = ph->step;
    out->iterations = ph->iterations;
    snprintf(out->note, sizeof out->note, "%s", note);
}

size_t summary_ladder_steps(const struct summary_line *lines, int n, const char *ladder,
                            struct step_row *rows)
{
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        const struct summary_line *l = &lines[i];
        if (l->step <= 0 || strcmp(l->ladder, ladder) != 0)
            continue;
        struct step_row *row = &rows[k++];
        memset(row, 0, sizeof *row);
        row->step = (int32_t)l->step;
        snprintf(row->phase, sizeof row->phase, "%s", l->name);
        snprintf(row->kind, sizeof row->kind, "%s", l->kind);
        snprintf(row->status, sizeof row->status, "%s", l->status);
        row->active_ranks = (int32_t)l->active_ranks;
        row->active_clients = (int32_t)l->active_clients;
        row->active_hosts = (int32_t)l->active_hosts;
        row->mib_per_s = l->stats.mib_per_s; /* as summary_mib_per_s, even when all failed */
        row->ops_per_s = l->stats.ops_per_s;
        const struct summary_op *m =
            l->stats.main_op >= 0 ? summary_find_op(l, l->stats.main_op) : NULL;
        if (l->stats.main_op >= 0)
            snprintf(row->main_op, sizeof row->main_op, "%s", op_name((enum op)l->stats.main_op));
        row->p50_s = m ? m->p50 : NAN;
        row->p99_s = m ? m->p99 : NAN;
        row->max_s = m ? m->max : NAN;
        row->bytes = l->stats.bytes;
        row->ops = l->stats.ops;
        row->errors = l->stats.errors;
        summary_top_errno(l, row->top_errno, sizeof row->top_errno);
        row->stuck = l->stats.stuck;
        row->verify_failures = l->stats.verify_failures;
        row->server = l->server;
        row->t_start = l->t_start;
        row->elapsed = l->t_end - l->t_start;
        row->start_skew = l->start_skew;
        summary_step_pace(l, row);
    }
    return k;
}
