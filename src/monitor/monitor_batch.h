/* monitor_batch.h — the rows the monitor produces (the /monitor tables:
 * samples, metrics, processes, disks, notes) and a batch of them: append,
 * move, free, and pack into one buffer for an MPI message and back. The
 * sources fill batches, the sampler thread holds them, the runner sends
 * them to rank 0 and the results file stores them; none of that is here.
 *
 * Counters are stored as deltas over the sample's interval dt (divide by
 * dt for rates); gauges as read; NaN where a source does not give a value. */
#ifndef HERD_MONITOR_BATCH_H
#define HERD_MONITOR_BATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "procfs.h"

#define MONITOR_HOST_MAX 64
#define MONITOR_SOURCE_MAX 16
#define MONITOR_NAME_MAX 64
#define MONITOR_NOTE_MAX 200

/* /monitor/samples: the host as a whole. */
struct monitor_sample {
    double t, dt; /* common clock at the sample; seconds it covers */
    char host[MONITOR_HOST_MAX];
    char source[MONITOR_SOURCE_MAX]; /* "proc" or "node_exporter" */
    double cpu[CPU_MODES];           /* fraction of all CPU time in each mode (sum 1) */
    double cpu_busy;                 /* 1 - idle - iowait */
    double ncpus;
    double load1, load5, load15;
    double mem_total, mem_used, mem_cached, mem_dirty, mem_writeback; /* bytes */
    double nfsd_threads;                 /* kernel NFS server threads (gauge) */
    double nfsd_rpc_calls, nfsd_rpc_bad; /* deltas */
    double nfsd_read_bytes, nfsd_write_bytes;
    double nfsd_rc_hits, nfsd_rc_misses, nfsd_rc_nocache;
    double nfsd_th_full; /* times every thread was busy */
    double nfsd_net_tcp_conn;
    double pool_packets, pool_sockets_enqueued, pool_threads_woken, pool_threads_timedout;
};

/* /monitor/metrics: named series that do not fit a column: per-op NFS
 * server counts ("nfsd_v3_ops", labels "op=read") and every node_nfsd_*
 * series of a node_exporter (labels as scraped). */
struct monitor_metric {
    double t, dt;
    char host[MONITOR_HOST_MAX];
    char source[MONITOR_SOURCE_MAX];
    char name[MONITOR_NAME_MAX];
    char labels[MONITOR_NAME_MAX];
    double value; /* delta for counters (*_total, op counts), else gauge */
};

/* /monitor/processes: every process with this command name in the
 * monitor's scope (monitor_scope.h), together. */
struct monitor_process {
    double t, dt;
    char host[MONITOR_HOST_MAX];
    char name[32]; /* comm, e.g. ganesha.nfsd, nfsd */
    double processes, threads;
    double cpu;            /* CPU seconds (utime + stime) / dt: 1.0 = one core */
    double cpu_max_thread; /* the busiest single thread, same unit */
    double rss_bytes;
};

/* /monitor/disks: one block device. */
struct monitor_disk {
    double t, dt;
    char host[MONITOR_HOST_MAX];
    char device[32];
    double reads, read_bytes, writes, write_bytes; /* deltas */
    double busy;                                   /* fraction of dt with I/O in flight */
    double weighted_ms; /* delta of time-weighted queue (avg queue = /dt/1000) */
    double in_flight;   /* gauge */
    double flushes;     /* delta of flush requests completed (Linux 5.5+; NaN before) */
};

/* /monitor/notes: what a source could not do, once per source and kind. */
struct monitor_note {
    double t;
    char host[MONITOR_HOST_MAX];
    char source[MONITOR_SOURCE_MAX];
    char text[MONITOR_NOTE_MAX];
};

/* Rows taken from a monitor (malloc'd arrays; monitor_batch_free). */
struct monitor_batch {
    struct monitor_sample *samples;
    size_t nsamples;
    struct monitor_metric *metrics;
    size_t nmetrics;
    struct monitor_process *processes;
    size_t nprocesses;
    struct monitor_disk *disks;
    size_t ndisks;
    struct monitor_note *notes;
    size_t nnotes;
};

/* Append one row (a copy) to the batch; on allocation failure the row is
 * dropped (the batch stays valid). */
void monitor_add_sample(struct monitor_batch *b, const struct monitor_sample *row);
void monitor_add_metric(struct monitor_batch *b, const struct monitor_metric *row);
void monitor_add_process(struct monitor_batch *b, const struct monitor_process *row);
void monitor_add_disk(struct monitor_batch *b, const struct monitor_disk *row);
void monitor_add_note(struct monitor_batch *b, double t, const char *host, const char *source,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* A sample row with every value NaN but the identity columns. */
void monitor_sample_init(struct monitor_sample *s, double t, double dt, const char *host,
                         const char *source);

/* s's CPU shares from one interval's ticks per mode (deltas, none
 * negative): each mode's share of their sum, and cpu_busy the share of
 * every mode but idle and iowait, summed as such so that it is never
 * below 0 (1 - idle - iowait can round to -3e-17). Left NaN when the
 * interval has no ticks. */
void monitor_sample_set_cpu(struct monitor_sample *s, const double ticks[CPU_MODES]);

/* Append src's rows to dst (src is left empty). Returns 0 or -ENOMEM. */
int monitor_batch_move(struct monitor_batch *dst, struct monitor_batch *src);
void monitor_batch_free(struct monitor_batch *b);

/* Flatten a batch into one buffer for a message, and back. */
int monitor_batch_pack(const struct monitor_batch *b, void **buf, size_t *len);
int monitor_batch_unpack(const void *buf, size_t len, struct monitor_batch *out);

#endif
