/* monitor.h — the server-side sampler: a thread that, every interval on
 * herd's common clock, reads this host's /proc (CPU by mode, load, memory,
 * the kernel NFS server's counters, named processes, disks) and/or scrapes
 * a node_exporter URL, and keeps the samples as rows of the /monitor
 * tables until the runner takes them. It calls no MPI and never blocks the
 * caller for longer than a mutex hold. A source that cannot be read is
 * noted once (a row in notes) and left out from then on, or until it
 * answers again for a URL.
 *
 * Counters are stored as deltas over the sample's interval dt (divide by
 * dt for rates); gauges as read; NaN where a source does not give a value. */
#ifndef HERD_MONITOR_H
#define HERD_MONITOR_H

#include <stdbool.h>
#include <stddef.h>

#include "clock.h"
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

struct monitor_config {
    double interval;       /* seconds between samples */
    bool local;            /* sample this host's /proc */
    const char *processes; /* comma-separated comm names ("" = none) */
    const char *scope;     /* monitor_scope: which of them count (NULL = "host") */
    const char *disks;     /* comma-separated device names or paths ("" = none) */
    const char *url;       /* node_exporter metrics URL ("" = none) */
    const char *hostname;  /* host column of local rows */
    const struct clock *clock;
};

struct monitor;

/* Start sampling: a baseline read at common time t_first (or at once when
 * that is past), then one sample every interval after it. NULL (and err)
 * when the thread cannot start or the config is unusable. */
struct monitor *monitor_start(const struct monitor_config *cfg, double t_first, char *err,
                              size_t errlen);
/* Move every row sampled so far into out (appending to what it holds). */
void monitor_take(struct monitor *m, struct monitor_batch *out);
/* Take one last sample covering the time since the previous one, stop the
 * thread, move the remaining rows into out and free the monitor. */
void monitor_stop(struct monitor *m, struct monitor_batch *out);

/* Append src's rows to dst (src is left empty). Returns 0 or -ENOMEM. */
int monitor_batch_move(struct monitor_batch *dst, struct monitor_batch *src);
void monitor_batch_free(struct monitor_batch *b);

/* Flatten a batch into one buffer for a message, and back. */
int monitor_batch_pack(const struct monitor_batch *b, void **buf, size_t *len);
int monitor_batch_unpack(const void *buf, size_t len, struct monitor_batch *out);

#endif
