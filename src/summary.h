/* summary.h — the end-of-run table rank 0 prints, one line per phase, in
 * the shape of the seed's hand-made tables: per-rank time min / median /
 * max, first and last rank done, aggregate MiB/s, errors, verify failures,
 * and the server's CPU while the phase ran when a monitor sampled it. */
#ifndef HERD_SUMMARY_H
#define HERD_SUMMARY_H

#include <stdint.h>
#include <stdio.h>

#include "job.h"
#include "monitor.h"
#include "record.h"
#include "results.h"

struct summary_line {
    char name[JOB_NAME_MAX];
    char kind[8];
    char layout[64]; /* "unique 16M", "shared 32M segmented" */
    int rows;
    double t_min, t_median, t_max; /* per rank and iteration, seconds */
    double first_done, last_done;  /* since the phase start, seconds */
    double mib_per_s;              /* all bytes / (last done - start) */
    double ops_per_s;              /* all timed calls / (last done - start) */
    uint64_t errors;               /* every failed call, set-up ones included */
    uint64_t verify_failures;
    uint64_t violations; /* lock: mutual exclusion broken */
    char status[16];
    double t_start, t_end;    /* the phase on the common clock */
    double cpu_mean, cpu_max; /* server CPU busy fraction; NaN = no samples */
    double nfsd_threads;      /* NaN = unknown */
    struct phase_stats stats; /* the same numbers and more, as stored in results.h5 */
};

void summary_compute(const struct phase *ph, const struct phase_summary *sum,
                     const struct rank_record *rows, size_t nrows, uint64_t errors,
                     struct summary_line *out);
/* Server CPU (cpu_busy) mean and max, and the nfsd thread count, of the
 * monitor samples whose interval (t - dt, t] meets each phase; samples of
 * the local /proc source are preferred over a node_exporter's. */
void summary_add_monitor(struct summary_line *lines, int n, const struct monitor_sample *s,
                         size_t ns);
void summary_print(FILE *out, const struct summary_line *lines, int n);

#endif
