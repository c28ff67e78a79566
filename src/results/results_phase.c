/* results_phase.c — what a phase's group in the results file holds
 * (results_phase.h): its attributes (kind, times, every job key, the
 * summary, a ladder step's place), its tables (ranks, errors, stuck, ops,
 * op_summary, meta_steps, holds; columns in results_tables.c) and its
 * latency histograms. results.c makes the group and saves the file. */
#include "results_phase.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h5util.h"
#include "ops.h"
#include "summary.h"

/* Every job key as an attribute: sizes and ints as int64, durations as
 * double seconds, bools as bool, the rest as canonical text. A key whose
 * name is already an attribute (kind) keeps the value written first. */
static int key_attrs(const struct h5_types *ty, hid_t g, const struct phase *ph, char *err,
                     size_t errlen)
{
    char text[JOB_PATH_MAX + 64];
    for (size_t i = 0; i < job_key_count(); i++) {
        const struct job_key *k = job_key_at(i);
        const char *field = job_key_value(k, ph);
        htri_t exists = H5Aexists(g, k->name);
        if (exists < 0)
            return h5_fail(err, errlen, "cannot look up attribute '%s'", k->name);
        if (exists > 0)
            continue;
        int rc;
        switch (k->type) {
        case KEY_SIZE: {
            uint64_t v;
            memcpy(&v, field, sizeof v);
            rc = h5_attr_i64(g, k->name, (int64_t)v, err, errlen);
            break;
        }
        case KEY_INT: {
            int64_t v;
            memcpy(&v, field, sizeof v);
            rc = h5_attr_i64(g, k->name, v, err, errlen);
            break;
        }
        case KEY_DURATION:
        case KEY_RATE: {
            double v;
            memcpy(&v, field, sizeof v);
            rc = h5_attr_f64(g, k->name, v, err, errlen);
            break;
        }
        case KEY_BOOL: {
            bool b;
            memcpy(&b, field, sizeof b);
            int8_t v = b ? 1 : 0;
            rc = h5_attr_set(g, k->name, ty->boolean, &v, err, errlen);
            break;
        }
        default:
            job_key_format(k, ph, text, sizeof text);
            rc = h5_attr_str(ty->str, g, k->name, text, err, errlen);
            break;
        }
        if (rc < 0)
            return -1;
    }
    return 0;
}

static void error_fill(void *out, size_t i, const void *src)
{
    const struct err_entry *e = &((const struct err_entry *)src)[i];
    struct error_row *row = out;
    int en = e->err < 0 ? -e->err : e->err;
    row->rank = e->rank;
    row->client = e->client;
    snprintf(row->op, sizeof row->op, "%s", op_name((enum op)e->op));
    row->err = en;
    errtab_errno_name(en, row->errno_name, sizeof row->errno_name);
    snprintf(row->message, sizeof row->message, "%s", strerror(en));
    row->count = e->count;
    h5_str_copy(row->first_path, sizeof row->first_path, e->first_path, sizeof e->first_path);
    row->first_time = e->first_time;
    h5_str_copy(row->status, sizeof row->status, e->status, sizeof e->status);
}

int results_errors_write(hid_t g, const struct err_entry *errors, size_t n, char *err,
                         size_t errlen)
{
    return h5_table_fill(g, &table_errors, n, error_fill, errors, err, errlen);
}

static void stuck_fill(void *out, size_t i, const void *src)
{
    const struct stuck_entry *e = &((const struct stuck_entry *)src)[i];
    struct stuck_row *row = out;
    row->rank = e->rank;
    row->client = e->client;
    snprintf(row->op, sizeof row->op, "%s", op_name((enum op)e->op));
    h5_str_copy(row->path, sizeof row->path, e->path, sizeof e->path);
    row->since = e->since;
    row->noticed = e->noticed;
    row->returned = e->returned;
}

static int stuck_write(hid_t g, const struct stuck_entry *stuck, size_t n, char *err, size_t errlen)
{
    return h5_table_fill(g, &table_stuck, n, stuck_fill, stuck, err, errlen);
}

/* One op's histogram with its summary attributes. */
static int latency_op_write(hid_t g, const char *name, const struct hist *h, char *err,
                            size_t errlen)
{
    uint64_t count = hist_count(h), max = 0;
    double sum = 0;
    for (int i = 0; i < HIST_BUCKETS; i++) {
        if (h->counts[i] == 0)
            continue;
        uint64_t lo = hist_bucket_lower(i), hi = hist_bucket_upper(i);
        /* midpoint of the integer values lo .. hi-1 the bucket holds */
        double mid = hi > lo ? (double)lo + (double)(hi - lo - 1) / 2.0 : (double)lo;
        sum += (double)h->counts[i] * mid;
        max = hi;
    }
    hid_t d = h5_dset_write(g, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, sizeof(uint64_t),
                            HIST_BUCKETS, h->counts, err, errlen);
    if (d < 0)
        return -1;
    if (h5_attr_u64(d, "count", count, err, errlen) < 0 ||
        h5_attr_u64(d, "p50_ns", hist_quantile(h, 0.50), err, errlen) < 0 ||
        h5_attr_u64(d, "p99_ns", hist_quantile(h, 0.99), err, errlen) < 0 ||
        h5_attr_u64(d, "max_ns", max, err, errlen) < 0 ||
        h5_attr_f64(d, "mean_ns", count > 0 ? sum / (double)count : 0.0, err, errlen) < 0) {
        H5Dclose(d);
        return -1;
    }
    return h5_dset_close(d, name, err, errlen);
}

static int latency_write(hid_t g, const struct hist *hists, char *err, size_t errlen)
{
    hid_t lat = h5_group_create(g, "latency", err, errlen);
    if (lat < 0)
        return -1;
    uint64_t bounds[HIST_BUCKETS];
    int rc = h5_attr_i32(lat, "sub_bits", HIST_SUB_BITS, err, errlen);
    if (rc == 0)
        rc = h5_attr_i32(lat, "max_bits", HIST_MAX_BITS, err, errlen);
    for (int pass = 0; rc == 0 && pass < 2; pass++) {
        const char *name = pass == 0 ? "bucket_lower_ns" : "bucket_upper_ns";
        for (int i = 0; i < HIST_BUCKETS; i++)
            bounds[i] = pass == 0 ? hist_bucket_lower(i) : hist_bucket_upper(i);
        hid_t d = h5_dset_write(lat, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, sizeof(uint64_t),
                                HIST_BUCKETS, bounds, err, errlen);
        rc = d < 0 ? -1 : h5_dset_close(d, name, err, errlen);
    }
    for (int op = 0; rc == 0 && hists != NULL && op < OP_COUNT; op++)
        if (hist_count(&hists[op]) > 0)
            rc = latency_op_write(lat, op_name((enum op)op), &hists[op], err, errlen);
    if (H5Gclose(lat) < 0 && rc == 0)
        rc = h5_fail(err, errlen, "cannot close group 'latency'");
    return rc;
}

/* One row per (rank, op) that a rank issued at least once. */
static int ops_write(hid_t g, const struct op_stats *ops, size_t nranks, char *err, size_t errlen)
{
    struct op_row *rows = calloc(nranks * OP_COUNT + 1, sizeof *rows);
    if (rows == NULL)
        return h5_msg_fail(err, errlen, "out of memory for the ops table");
    size_t n = 0;
    for (size_t rank = 0; ops && rank < nranks; rank++)
        for (int op = 0; op < OP_COUNT; op++)
            if (ops[rank].count[op]) {
                rows[n].rank = (int32_t)rank;
                snprintf(rows[n].op, sizeof rows[n].op, "%s", op_name((enum op)op));
                rows[n].count = ops[rank].count[op];
                rows[n].seconds = ops[rank].seconds[op];
                n++;
            }
    int rc = h5_table_write(g, &table_ops, rows, n, err, errlen);
    free(rows);
    return rc;
}

static void meta_step_fill(void *out, size_t i, const void *src)
{
    const struct meta_step_record *m = &((const struct meta_step_record *)src)[i];
    struct meta_step_row *row = out;
    row->rank = m->rank;
    row->client = m->client;
    snprintf(row->step, sizeof row->step, "%s", job_meta_step_name((enum meta_step)m->step));
    snprintf(row->op, sizeof row->op, "%s", op_name((enum op)m->op));
    row->t_start = m->t_start;
    row->t_end = m->t_end;
    row->items = m->items;
}

/* The table only where a meta phase's steps were gathered. */
static int meta_steps_write(hid_t g, const struct phase_data *d, char *err, size_t errlen)
{
    if (d->nmeta_steps == 0)
        return 0;
    return h5_table_fill(g, &table_meta_steps, d->nmeta_steps, meta_step_fill, d->meta_steps, err,
                         errlen);
}

/* summary_* attributes and the op_summary table (ops with calls only). */
static int summary_write(const struct h5_types *ty, hid_t g, const struct phase_data *d, char *err,
                         size_t errlen)
{
    const struct phase_stats *st = d->stats;
    const struct {
        const char *name;
        double v;
    } f64[] = {
        {"summary_t_min", st->t_min},
        {"summary_t_median", st->t_median},
        {"summary_t_max", st->t_max},
        {"summary_first_done", st->first_done},
        {"summary_last_done", st->last_done},
        {"summary_mib_per_s", st->mib_per_s},
        {"summary_ops_per_s", st->ops_per_s},
        {"summary_offered_per_s", st->offered_per_s},
        {"summary_achieved_per_s", st->achieved_per_s},
    };
    const struct {
        const char *name;
        uint64_t v;
    } u64[] = {
        {"summary_rows", (uint64_t)st->rows},
        {"summary_ranks", (uint64_t)st->ranks},
        {"summary_bytes", st->bytes},
        {"summary_ops", st->ops},
        {"summary_errors", st->errors},
        {"summary_verify_failures", st->verify_failures},
        {"summary_grants", st->grants},
        {"summary_contended", st->contended},
        {"summary_violations", st->violations},
        {"summary_stuck", st->stuck},
        {"summary_units", st->units},
        {"summary_late", st->late},
        {"summary_due", st->due},
    };
    for (size_t i = 0; i < sizeof f64 / sizeof f64[0]; i++)
        if (h5_attr_f64(g, f64[i].name, f64[i].v, err, errlen) < 0)
            return -1;
    for (size_t i = 0; i < sizeof u64 / sizeof u64[0]; i++)
        if (h5_attr_i64(g, u64[i].name, (int64_t)u64[i].v, err, errlen) < 0)
            return -1;
    if (h5_attr_str(ty->str, g, "summary_main_op", st->main_op >= 0 ? op_name(st->main_op) : "",
                    err, errlen) < 0)
        return -1;
    struct summary_op ops[OP_COUNT];
    struct op_summary_row rows[OP_COUNT];
    int n = summary_op_totals(d, st->last_done, ops);
    for (int i = 0; i < n; i++) {
        const struct summary_op *o = &ops[i];
        rows[i] = (struct op_summary_row){.calls = o->calls,
                                          .seconds = o->seconds,
                                          .ops_per_s = o->per_s,
                                          .p50_s = o->p50,
                                          .p90_s = o->p90,
                                          .p99_s = o->p99,
                                          .max_s = o->max,
                                          .items = o->items,
                                          .step_s = o->step_s,
                                          .items_per_s = o->items_per_s};
        snprintf(rows[i].op, sizeof rows[i].op, "%s", op_name((enum op)o->op));
    }
    return h5_table_write(g, &table_op_summary, rows, (size_t)n, err, errlen);
}

/* A phase's attributes: kind, index, times, every key's value, a
 * ladder step's place, and its notes where it has any. */
static int phase_attrs_write(const struct h5_types *ty, hid_t g, const struct phase *ph,
                             const struct phase_summary *sum, char *err, size_t errlen)
{
    if (h5_attr_str(ty->str, g, "kind", job_kind_name(ph->kind), err, errlen) < 0 ||
        h5_attr_i32(g, "index", sum->index, err, errlen) < 0 ||
        h5_attr_f64(g, "t_start", sum->t_start, err, errlen) < 0 ||
        h5_attr_f64(g, "t_end", sum->t_end, err, errlen) < 0 ||
        h5_attr_f64(g, "elapsed", sum->t_end - sum->t_start, err, errlen) < 0 ||
        h5_attr_f64(g, "start_skew", sum->start_skew, err, errlen) < 0 ||
        h5_attr_i64(g, "active_clients", sum->active_clients, err, errlen) < 0 ||
        key_attrs(ty, g, ph, err, errlen) < 0)
        return -1;
    if (ph->ladder[0] && /* one step of a load ladder */
        (h5_attr_str(ty->str, g, "ladder", ph->ladder, err, errlen) < 0 ||
         h5_attr_i64(g, "step", ph->step, err, errlen) < 0 ||
         h5_attr_i64(g, "active_ranks", sum->active_ranks, err, errlen) < 0 ||
         h5_attr_i64(g, "active_hosts", sum->active_hosts, err, errlen) < 0))
        return -1;
    if (sum->notes[0] && /* the server dropped or refused connections */
        (h5_attr_i64(g, "connections_open", sum->connections_open, err, errlen) < 0 ||
         h5_attr_str(ty->str, g, "notes", sum->notes, err, errlen) < 0))
        return -1;
    return 0;
}

/* A lock phase's holds table and its overlap attributes; those of an
 * overlap check cut short (a stop) are left out, but wait_seconds. */
static int holds_write(hid_t g, const struct phase_summary *sum, const struct phase_data *d,
                       char *err, size_t errlen)
{
    const struct holds_overlap *o = &sum->overlap;
    if (h5_table_write(g, &table_holds, d->holds, d->nholds, err, errlen) < 0 ||
        h5_attr_f64(g, "wait_seconds", o->wait_seconds, err, errlen) < 0)
        return -1;
    if (o->complete &&
        (h5_attr_f64(g, "overlap_seconds", o->together, err, errlen) < 0 ||
         h5_attr_f64(g, "exclusive_overlap_seconds", o->exclusive_clash, err, errlen) < 0 ||
         h5_attr_i32(g, "max_holders", o->max_holders, err, errlen) < 0 ||
         h5_attr_i64(g, "waited_grants", (int64_t)o->waited, err, errlen) < 0))
        return -1;
    return 0;
}

int results_phase_fill(const struct h5_types *ty, hid_t g, const struct phase *ph,
                       const struct phase_summary *sum, const struct phase_data *d, char *err,
                       size_t errlen)
{
    if (phase_attrs_write(ty, g, ph, sum, err, errlen) < 0)
        return -1;
    if (d->nrows > 0 && d->rows == NULL)
        return h5_msg_fail(err, errlen, "no rank records given");
    if (d->nerrors > 0 && d->errors == NULL)
        return h5_msg_fail(err, errlen, "no error entries given");
    if (h5_table_write(g, &table_phase_ranks, d->rows, d->nrows, err, errlen) < 0 ||
        results_errors_write(g, d->errors, d->nerrors, err, errlen) < 0 ||
        stuck_write(g, d->stuck, d->nstuck, err, errlen) < 0 ||
        ops_write(g, d->ops, d->nranks, err, errlen) < 0 ||
        meta_steps_write(g, d, err, errlen) < 0 ||
        (d->has_holds && holds_write(g, sum, d, err, errlen) < 0) ||
        latency_write(g, d->hists, err, errlen) < 0 ||
        (d->stats && summary_write(ty, g, d, err, errlen) < 0))
        return -1;
    /* Written last: a group without status was cut short while written. */
    return h5_attr_str(ty->str, g, "status", sum->status, err, errlen);
}
