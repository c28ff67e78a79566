/* summary_json.c — the end-of-run summary as JSON (see summary_json.h).
 * Strings may hold any byte (paths, protocol statuses): valid UTF-8 passes,
 * control characters (display controls too, utf8.h: as \u202e, the same
 * character to a JSON reader, never raw on a terminal), '"' and '\' are
 * escaped, and a byte that is not part of valid UTF-8 becomes \udcXX
 * (Python's surrogateescape; os.fsencode gives the byte back). NaN and
 * infinities are null. */
#include "summary_json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "utf8.h"

static void json_str(FILE *f, const char *text)
{
    const unsigned char *s = (const unsigned char *)(text ? text : "");
    size_t n = strlen((const char *)s);
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        if (c == '"' || c == '\\') {
            fprintf(f, "\\%c", c);
            i++;
        } else if (utf8_is_control(c)) {
            fprintf(f, "\\u%04x", c);
            i++;
        } else {
            size_t len = utf8_len((const char *)s + i, n - i);
            uint32_t code = utf8_display_control((const char *)s + i, len);
            if (len == 0) {
                fprintf(f, "\\udc%02x", c);
                i++;
            } else if (code) {
                fprintf(f, "\\u%04x", (unsigned)code);
                i += len;
            } else {
                fwrite(s + i, 1, len, f);
                i += len;
            }
        }
    }
    fputc('"', f);
}

/* A double exactly (round-trips), or null when not finite. */
static void json_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.17g", v);
    else
        fputs("null", f);
}

static void json_key(FILE *f, const char *key, bool *first)
{
    if (!*first)
        fputc(',', f);
    *first = false;
    json_str(f, key);
    fputc(':', f);
}

static void json_kd(FILE *f, const char *key, double v, bool *first)
{
    json_key(f, key, first);
    json_num(f, v);
}

static void json_ku(FILE *f, const char *key, uint64_t v, bool *first)
{
    json_key(f, key, first);
    fprintf(f, "%llu", (unsigned long long)v);
}

static void json_ki(FILE *f, const char *key, int64_t v, bool *first)
{
    json_key(f, key, first);
    fprintf(f, "%lld", (long long)v);
}

static void json_ks(FILE *f, const char *key, const char *v, bool *first)
{
    json_key(f, key, first);
    if (v)
        json_str(f, v);
    else
        fputs("null", f);
}

static void json_kb(FILE *f, const char *key, bool v, bool *first)
{
    json_key(f, key, first);
    fputs(v ? "true" : "false", f);
}

static void json_op(FILE *f, const struct summary_line *l, const struct summary_op *o)
{
    bool first = true;
    fputc('{', f);
    json_ks(f, "op", op_name((enum op)o->op), &first);
    json_ks(f, "label", summary_op_label(l, o->op), &first);
    json_ku(f, "calls", o->calls, &first);
    json_ku(f, "errors", o->errors, &first);
    json_kd(f, "seconds", o->seconds, &first);
    json_kd(f, "ops_per_s", o->per_s, &first);
    if (!isnan(o->step_s)) { /* a meta step's items, as mdtest times them */
        json_ku(f, "items", o->items, &first);
        json_kd(f, "step_s", o->step_s, &first);
        json_kd(f, "items_per_s", o->items_per_s, &first);
    }
    json_key(f, "latency_s", &first);
    bool lf = true;
    fputc('{', f);
    json_kd(f, "p50", o->p50, &lf);
    json_kd(f, "p90", o->p90, &lf);
    json_kd(f, "p99", o->p99, &lf);
    json_kd(f, "max", o->max, &lf);
    fputs("}}", f);
}

/* The phase's own keys (summary_key_applies: those of its kind and
 * backend, and backend), each in its type: sizes and integers as numbers,
 * durations in seconds, yes/no as booleans, the rest as their text. */
static void json_params(FILE *f, const struct phase *ph)
{
    bool first = true;
    fputc('{', f);
    for (size_t i = 0; ph && i < job_key_count(); i++) {
        const struct job_key *k = job_key_at(i);
        if (!summary_key_applies(k, ph))
            continue;
        const void *v = job_key_value(k, ph);
        char text[JOB_PATH_MAX + 64];
        if (k->type == KEY_SIZE)
            json_ku(f, k->name, *(const uint64_t *)v, &first);
        else if (k->type == KEY_INT)
            json_ki(f, k->name, *(const int64_t *)v, &first);
        else if (k->type == KEY_DURATION || k->type == KEY_RATE)
            json_kd(f, k->name, *(const double *)v, &first);
        else if (k->type == KEY_BOOL)
            json_kb(f, k->name, *(const bool *)v, &first);
        else {
            job_key_format(k, ph, text, sizeof text);
            json_ks(f, k->name, text, &first);
        }
    }
    fputc('}', f);
}

/* A phase's times: {"min", "median", "max", "first_done", "last_done"}. */
static void json_phase_seconds(FILE *f, const struct phase_stats *st)
{
    bool sf = true;
    fputc('{', f);
    json_kd(f, "min", st->t_min, &sf);
    json_kd(f, "median", st->t_median, &sf);
    json_kd(f, "max", st->t_max, &sf);
    json_kd(f, "first_done", st->first_done, &sf);
    json_kd(f, "last_done", st->last_done, &sf);
    fputc('}', f);
}

/* The iterations' MiB/s: {"mean", "stddev", "min", "max"}, or null. */
static void json_phase_iterations(FILE *f, const struct summary_line *l)
{
    if (isnan(l->iter_mean)) {
        fputs("null", f);
        return;
    }
    bool itf = true;
    fputc('{', f);
    json_kd(f, "mean", l->iter_mean, &itf);
    json_kd(f, "stddev", l->iter_stddev, &itf);
    json_kd(f, "min", l->iter_min, &itf);
    json_kd(f, "max", l->iter_max, &itf);
    fputc('}', f);
}

/* The phase's errors by op, errno and status: a list of objects. */
static void json_phase_errors(FILE *f, const struct summary_line *l)
{
    fputc('[', f);
    for (int k = 0; k < l->nerrs; k++) {
        const struct summary_err *e = &l->errs[k];
        char name[32];
        errtab_errno_name(e->err, name, sizeof name);
        bool ef = true;
        fputs(k ? ",{" : "{", f);
        json_ks(f, "op", op_name((enum op)e->op), &ef);
        json_ki(f, "errno", e->err, &ef);
        json_ks(f, "errno_name", name, &ef);
        json_ks(f, "status", e->status, &ef);
        json_ku(f, "count", e->count, &ef);
        fputc('}', f);
    }
    fputc(']', f);
}

/* The server's figures over the phase (the monitor's), and whether the
 * monitor covered it whole (null: no monitor). */
static void json_phase_server(FILE *f, const struct summary_line *l)
{
    bool vf = true;
    fputc('{', f);
    json_kd(f, "cpu_mean", l->server.cpu_mean, &vf);
    json_kd(f, "cpu_max", l->server.cpu_max, &vf);
    json_kd(f, "nfsd_threads", l->server.nfsd_threads, &vf);
    json_kd(f, "proc_cpu", l->server.proc_cpu, &vf);
    json_kd(f, "proc_thread_max", l->server.proc_thread_max, &vf);
    json_kd(f, "nfsd_packets_per_s", l->server.nfsd_packets_per_s, &vf);
    json_kd(f, "nfsd_woken_share", l->server.nfsd_woken_share, &vf);
    if (l->server.covered >= 0)
        json_kb(f, "covered", l->server.covered == 1, &vf);
    else
        json_ks(f, "covered", NULL, &vf);
    fputc('}', f);
}

/* Who the phase was: name, kind, status, layout, ranks, a ladder step. */
static void json_phase_what(FILE *f, const struct summary_line *l, int index, bool *first)
{
    json_ks(f, "name", l->name, first);
    json_ki(f, "index", index, first);
    json_ks(f, "kind", l->kind, first);
    json_ks(f, "status", l->status, first);
    json_ks(f, "layout", l->layout, first);
    json_ki(f, "rows", l->stats.rows, first);
    json_ki(f, "ranks", l->stats.ranks, first);
    json_ki(f, "iterations", l->iterations, first);
    if (l->step > 0) { /* one step of a load ladder: "<ladder>.<N>r" */
        json_ks(f, "ladder", l->ladder, first);
        json_ki(f, "step", l->step, first);
        json_ki(f, "active_ranks", l->active_ranks, first);
        json_ki(f, "active_clients", l->active_clients, first);
        json_ki(f, "active_hosts", l->active_hosts, first);
        json_ks(f, "note", l->note, first);
    }
}

/* The phase's counts after its rates: errors, verify, locks, stuck calls. */
static void json_phase_counts(FILE *f, const struct summary_line *l, bool *first)
{
    const struct phase_stats *st = &l->stats;
    json_ku(f, "errors", st->errors, first);
    json_key(f, "errors_by_kind", first);
    json_phase_errors(f, l);
    json_ku(f, "errors_other", l->errs_other, first);
    json_ks(f, "notes", l->notes, first);
    if (l->notes[0]) /* the server dropped or refused connections */
        json_ki(f, "connections_open", l->connections_open, first);
    else
        json_kd(f, "connections_open", NAN, first);
    json_ku(f, "verify_failures", st->verify_failures, first);
    if (l->holds) { /* lock phases: the grants that waited, the time waited */
        if (l->overlap.complete)
            json_ku(f, "waited_grants", l->overlap.waited, first);
        else /* a stop cut the overlap check short */
            json_kd(f, "waited_grants", NAN, first);
        json_kd(f, "wait_seconds", l->overlap.wait_seconds, first);
    }
    json_ku(f, "violations", st->violations, first);
    json_ku(f, "grants", st->grants, first);
    json_ku(f, "contended", st->contended, first);
    json_ku(f, "stuck", st->stuck, first);
}

/* An open-loop phase (rate > 0): offered and achieved calls/s, late
 * calls, and whether herd's own lag limited it; null in a closed loop.
 * The response, service and lag percentiles are in ops. */
static void json_phase_pace(FILE *f, const struct summary_line *l)
{
    const struct phase_stats *st = &l->stats;
    if (isnan(st->offered_per_s)) {
        fputs("null", f);
        return;
    }
    bool first = true;
    fputc('{', f);
    json_kd(f, "offered_per_s", st->offered_per_s, &first);
    json_kd(f, "achieved_per_s", st->achieved_per_s, &first);
    json_ku(f, "calls", st->units, &first);
    json_ku(f, "late", st->late, &first);
    json_ku(f, "due", st->due, &first);
    json_kd(f, "achieved_share", summary_achieved_share(st), &first);
    json_kd(f, "response_p50_s", summary_op_quantile(l, OP_RESPONSE, 0.50), &first);
    json_kd(f, "response_p99_s", summary_op_p99(l, OP_RESPONSE), &first);
    json_kd(f, "service_p50_s", summary_op_quantile(l, OP_SERVICE, 0.50), &first);
    json_kd(f, "service_p99_s", summary_op_p99(l, OP_SERVICE), &first);
    json_kd(f, "lag_p50_s", summary_op_quantile(l, OP_LAG, 0.50), &first);
    json_kd(f, "lag_p99_s", summary_op_p99(l, OP_LAG), &first);
    json_kd(f, "lag_max_s", summary_op_quantile(l, OP_LAG, 1.0), &first);
    json_kb(f, "herd_limited", summary_herd_limited(l), &first);
    fputc('}', f);
}

static void json_phase(FILE *f, const struct summary_line *l, int index)
{
    const struct phase_stats *st = &l->stats;
    bool first = true;
    fputc('{', f);
    json_phase_what(f, l, index, &first);
    json_key(f, "params", &first);
    json_params(f, l->ph);
    json_kd(f, "t_start", l->t_start, &first);
    json_kd(f, "t_end", l->t_end, &first);
    json_kd(f, "start_skew", l->start_skew, &first);
    json_key(f, "seconds", &first);
    json_phase_seconds(f, st);
    json_ku(f, "bytes", st->bytes, &first);
    json_ku(f, "calls", st->ops, &first);
    json_kb(f, "all_calls_failed", l->all_failed, &first);
    /* No rate for a phase whose every call failed: null, as the table's '-'. */
    json_kd(f, "mib_per_s", l->all_failed ? NAN : st->mib_per_s, &first);
    json_kd(f, "ops_per_s", l->all_failed ? NAN : st->ops_per_s, &first);
    json_key(f, "iterations_mib_per_s", &first);
    json_phase_iterations(f, l);
    json_ks(f, "main_op", l->stats.main_op >= 0 ? op_name((enum op)l->stats.main_op) : NULL,
            &first);
    json_kd(f, "main_ops_per_s", summary_main_per_s(l), &first);
    json_ku(f, "units", st->units, &first);
    json_kd(f, "units_per_s", st->achieved_per_s, &first);
    json_key(f, "ops", &first);
    fputc('[', f);
    for (int k = 0; k < l->nops; k++) {
        if (k)
            fputc(',', f);
        json_op(f, l, &l->ops[k]);
    }
    fputc(']', f);
    json_phase_counts(f, l, &first);
    json_key(f, "pace", &first);
    json_phase_pace(f, l);
    json_key(f, "server", &first);
    json_phase_server(f, l);
    fputc('}', f);
}

static void json_run(FILE *f, const struct summary_json_run *run, const struct summary_line *lines,
                     int n)
{
    bool first = true;
    fputc('{', f); /* JSON_HEAD: summary_json_file_check knows a summary by it */
    json_ki(f, "schema_version", SUMMARY_JSON_SCHEMA, &first);
    json_ks(f, "herd_version", HERD_VERSION, &first);
    json_ks(f, "libnfs_version", backend_library_version("libnfs"), &first);
    json_ks(f, "libsmbclient_version", backend_library_version("libsmbclient"), &first);
    json_ks(f, "run_id", run->run_id, &first);
    json_ks(f, "label", run->label, &first);
    json_ks(f, "server_fs", run->server_fs, &first);
    json_ks(f, "server_disk", run->server_disk ? run->server_disk : "", &first);
    json_ks(f, "status", run->status, &first);
    json_ki(f, "exit_code", run->exit_code, &first);
    json_ks(f, "results_file", run->results_file, &first);
    json_ks(f, "job", run->job_path, &first);
    json_ki(f, "ranks", run->nranks, &first);
    json_ki(f, "clients_per_rank", run->clients_per_rank, &first);
    json_ki(f, "clients", (int64_t)run->nranks * run->clients_per_rank, &first);
    json_kd(f, "monitor_client_ranks",
            run->monitor_client_ranks >= 0 ? run->monitor_client_ranks : NAN, &first);
    json_kd(f, "mib", 1048576.0, &first);
    json_key(f, "phases", &first);
    fputc('[', f);
    for (int i = 0; i < n; i++) {
        fputs(i ? ",\n" : "\n", f);
        json_phase(f, &lines[i], i);
    }
    fputs("]}\n", f);
}

/* How every summary this writer makes begins. */
#define JSON_HEAD "{\"schema_version\":"

const char *summary_json_file_check(int fd, off_t size)
{
    char head[sizeof JSON_HEAD - 1];
    if (size < (off_t)sizeof head || pread(fd, head, sizeof head, 0) != (ssize_t)sizeof head ||
        memcmp(head, JSON_HEAD, sizeof head) != 0)
        return "not a herd JSON summary";
    return NULL;
}

struct json_args {
    const struct summary_json_run *run;
    const struct summary_line *lines;
    int n;
};

static void json_write_file(FILE *f, const void *arg)
{
    const struct json_args *a = arg;
    json_run(f, a->run, a->lines, a->n);
}

void summary_json_print(FILE *f, const struct summary_json_run *run,
                        const struct summary_line *lines, int n)
{
    json_run(f, run, lines, n);
}

int summary_json_write(struct safeout *out, const struct summary_json_run *run,
                       const struct summary_line *lines, int n, char *err, size_t errlen)
{
    struct json_args a = {run, lines, n};
    return safeout_write(out, json_write_file, &a, err, errlen);
}
