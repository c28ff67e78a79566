/* summary.c — compute and print the end-of-run table (see summary.h). */
#include "summary.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "units.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void summary_compute(const struct phase *ph, const struct phase_summary *sum,
                     const struct rank_record *rows, size_t nrows, uint64_t errors,
                     struct summary_line *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", ph->name);
    snprintf(out->kind, sizeof out->kind, "%s", job_kind_name(ph->kind));
    char size[32];
    units_format_size(ph->file_size, size, sizeof size);
    if (ph->kind == KIND_IDLE)
        snprintf(out->layout, sizeof out->layout, "-");
    else if (ph->kind == KIND_LOCK)
        snprintf(out->layout, sizeof out->layout, "%s %s %s",
                 ph->lock_mode == LOCK_EXCLUSIVE ? "excl"
                 : ph->lock_mode == LOCK_SHARED  ? "shared"
                                                 : "mixed",
                 ph->lock_range == LOCK_WHOLE   ? "whole"
                 : ph->lock_range == LOCK_BLOCK ? "block"
                                                : "overlap",
                 ph->lock_wait == LOCK_BLOCKING ? "wait" : "nowait");
    else if (ph->kind == KIND_META)
        snprintf(out->layout, sizeof out->layout, "%s %lldf/%lldd %s",
                 ph->sharing == SHARING_UNIQUE ? "unique" : "shared", (long long)ph->files,
                 (long long)ph->dirs, size);
    else if (ph->kind == KIND_STORM)
        if (ph->duration > 0)
            snprintf(out->layout, sizeof out->layout, "shared for %gs", ph->duration);
        else
            snprintf(out->layout, sizeof out->layout, "shared x%lld", (long long)ph->count);
    else
        snprintf(out->layout, sizeof out->layout, "%s %s%s",
                 ph->sharing == SHARING_UNIQUE ? "unique" : "shared", size,
                 ph->sharing == SHARING_SHARED && ph->shared_mode == SHARED_SEGMENTED ? " seg"
                                                                                      : "");
    snprintf(out->status, sizeof out->status, "%s", sum->status);
    out->rows = (int)nrows;
    out->errors = errors;
    out->t_start = sum->t_start;
    out->t_end = sum->t_end;
    out->cpu_mean = out->cpu_max = out->nfsd_threads = NAN;
    struct phase_stats *st = &out->stats;
    st->rows = (int64_t)nrows;
    st->errors = errors;
    st->stuck = sum->stuck;
    st->t_min = st->t_median = st->t_max = st->first_done = st->last_done = NAN;
    if (nrows == 0)
        return;
    double *t = malloc(nrows * sizeof *t);
    uint64_t bytes = 0, ops = 0;
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
        bytes += r->bytes;
        ops += r->ops;
        out->verify_failures += r->verify_failures;
        out->violations += r->violations;
        if (r->t_end < first)
            first = r->t_end;
        if (r->t_end > last)
            last = r->t_end;
    }
    if (t && nt) {
        qsort(t, nt, sizeof *t, cmp_double);
        out->t_min = t[0];
        out->t_max = t[nt - 1];
        out->t_median = nt % 2 ? t[nt / 2] : (t[nt / 2 - 1] + t[nt / 2]) / 2;
    } else if (!t) {
        out->t_min = out->t_median = out->t_max = NAN; /* no memory to sort them */
    }
    free(t);
    st->bytes = bytes;
    st->ops = ops;
    st->verify_failures = out->verify_failures;
    st->violations = out->violations;
    if (nt == 0)
        return;
    out->first_done = first - sum->t_start;
    out->last_done = last - sum->t_start;
    out->mib_per_s = out->last_done > 0 ? (double)bytes / 1048576.0 / out->last_done : 0;
    out->ops_per_s = out->last_done > 0 ? (double)ops / out->last_done : 0;
    st->t_min = out->t_min;
    st->t_median = out->t_median;
    st->t_max = out->t_max;
    st->first_done = out->first_done;
    st->last_done = out->last_done;
    st->mib_per_s = out->mib_per_s;
    st->ops_per_s = out->ops_per_s;
}

/* Mean and max cpu_busy of source's samples meeting [t0, t1]; false if none. */
static bool summary_cpu(const struct monitor_sample *s, size_t ns, const char *source, double t0,
                        double t1, double *mean, double *max, double *threads)
{
    double sum = 0, top = -1;
    size_t n = 0;
    for (size_t i = 0; i < ns; i++) {
        if (strcmp(s[i].source, source) != 0 || s[i].t - s[i].dt > t1 || s[i].t <= t0)
            continue;
        if (!isnan(s[i].nfsd_threads))
            *threads = s[i].nfsd_threads;
        if (isnan(s[i].cpu_busy))
            continue;
        sum += s[i].cpu_busy;
        top = s[i].cpu_busy > top ? s[i].cpu_busy : top;
        n++;
    }
    if (n == 0)
        return false;
    *mean = sum / (double)n;
    *max = top;
    return true;
}

void summary_add_monitor(struct summary_line *lines, int n, const struct monitor_sample *s,
                         size_t ns)
{
    for (int i = 0; i < n; i++) {
        struct summary_line *l = &lines[i];
        if (!summary_cpu(s, ns, "proc", l->t_start, l->t_end, &l->cpu_mean, &l->cpu_max,
                         &l->nfsd_threads))
            summary_cpu(s, ns, "node_exporter", l->t_start, l->t_end, &l->cpu_mean, &l->cpu_max,
                        &l->nfsd_threads);
    }
}

void summary_print(FILE *out, const struct summary_line *lines, int n)
{
    bool cpu = false, threads = false;
    for (int i = 0; i < n; i++) {
        cpu |= !isnan(lines[i].cpu_mean);
        threads |= !isnan(lines[i].nfsd_threads);
    }
    fprintf(out, "\n%-18s %-5s %-22s %5s %8s %8s %8s %8s %9s %9s %7s %6s %5s %s\n", "phase", "kind",
            "files", "rows", "min s", "median s", "max s", "last s", "MiB/s", "ops/s", "errors",
            "verify", "viol", "status");
    for (int i = 0; i < n; i++) {
        const struct summary_line *l = &lines[i];
        fprintf(
            out, "%-18s %-5s %-22s %5d %8.3f %8.3f %8.3f %8.3f %9.1f %9.0f %7llu %6llu %5llu %s\n",
            l->name, l->kind, l->layout, l->rows, l->t_min, l->t_median, l->t_max, l->last_done,
            l->mib_per_s, l->ops_per_s, (unsigned long long)l->errors,
            (unsigned long long)l->verify_failures, (unsigned long long)l->violations, l->status);
    }
    if (!cpu && !threads)
        return;
    fprintf(out, "\n%-18s %12s %12s %12s\n", "phase", "srv cpu mean", "srv cpu max",
            "nfsd threads");
    for (int i = 0; i < n; i++) {
        const struct summary_line *l = &lines[i];
        char mean[16] = "-", max[16] = "-", thr[16] = "-";
        if (!isnan(l->cpu_mean)) {
            snprintf(mean, sizeof mean, "%.1f%%", 100 * l->cpu_mean);
            snprintf(max, sizeof max, "%.1f%%", 100 * l->cpu_max);
        }
        if (!isnan(l->nfsd_threads))
            snprintf(thr, sizeof thr, "%.0f", l->nfsd_threads);
        fprintf(out, "%-18s %12s %12s %12s\n", l->name, mean, max, thr);
    }
}
