/* procfs.h — parsers for the Linux /proc texts the monitor samples on a
 * server host: /proc/stat (CPU by mode), /proc/loadavg, /proc/meminfo,
 * /proc/PID/stat, /proc/diskstats and /proc/fs/nfsd/pool_stats.
 *
 * Pure functions on text (no file access) so that they can be tested on
 * sample texts and fuzzed: each reads at most len bytes of text (which
 * need not be NUL-terminated), never crashes on truncated or garbage
 * input, and returns -1 when the text does not have the documented form
 * (the output is then unspecified). Field meanings: the kernel's
 * Documentation/filesystems/proc.rst and Documentation/admin-guide/iostats.rst. */
#ifndef HERD_PROCFS_H
#define HERD_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* /proc/stat "cpu" line modes, in the kernel's column order. guest and
 * guest_nice are already counted inside user and nice, so not kept. */
enum cpu_mode {
    CPU_USER,
    CPU_NICE,
    CPU_SYSTEM,
    CPU_IDLE,
    CPU_IOWAIT,
    CPU_IRQ,
    CPU_SOFTIRQ,
    CPU_STEAL,
    CPU_MODES
};

struct cpu_times {
    uint64_t ticks[CPU_MODES]; /* the aggregate "cpu " line, USER_HZ ticks */
    int ncpus;                 /* "cpuN" lines seen */
};

/* The aggregate "cpu" line (older kernels have fewer columns: missing
 * ones are 0; at least user nice system idle are required). */
int procfs_parse_stat(const char *text, size_t len, struct cpu_times *out);
const char *procfs_cpu_mode_name(enum cpu_mode m); /* "user", "nice", ... */

struct loadavg {
    double load1, load5, load15;
    int64_t running, total; /* the "R/T" field */
};
int procfs_parse_loadavg(const char *text, size_t len, struct loadavg *out);

/* /proc/meminfo values converted from kB to bytes. MemTotal and MemFree
 * are required; others missing are 0 (available = free when absent). */
struct meminfo {
    uint64_t total, free, available, buffers, cached, dirty, writeback;
};
int procfs_parse_meminfo(const char *text, size_t len, struct meminfo *out);

/* /proc/PID/stat or /proc/PID/task/TID/stat. comm may hold spaces and
 * parentheses: it runs from the first '(' to the last ')'. */
struct pid_stat {
    int64_t pid;
    char comm[64];
    char state;
    uint64_t utime, stime; /* USER_HZ ticks (fields 14, 15) */
    int64_t num_threads;   /* field 20 */
    int64_t rss_pages;     /* field 24 */
};
int procfs_parse_pid_stat(const char *text, size_t len, struct pid_stat *out);

/* One device's line of /proc/diskstats (14 or more columns; 18 and 20
 * on newer kernels add discard and flush counters, not kept here). */
struct disk_stats {
    unsigned major, minor;
    char name[32];
    uint64_t reads, reads_merged, read_sectors, read_ms;
    uint64_t writes, writes_merged, write_sectors, write_ms;
    uint64_t in_flight, io_ms, weighted_ms;
    bool has_flushes; /* Linux 5.5+: 20 columns, flushes the 16th after the name */
    uint64_t flushes;
};
/* Returns 0 and fills out for the line whose name is `device`, 1 when
 * no line names it, -1 when a line is malformed before it is found. */
int procfs_parse_diskstats(const char *text, size_t len, const char *device,
                           struct disk_stats *out);

/* /proc/fs/nfsd/pool_stats, summed over pools. The header line names
 * the columns ("# pool packets-arrived sockets-enqueued threads-woken
 * threads-timedout", older kernels also "overloads-avoided"); columns are
 * found by those names, a missing one stays 0. */
struct pool_stats {
    int pools;
    uint64_t packets_arrived, sockets_enqueued, threads_woken, threads_timedout;
};
int procfs_parse_pool_stats(const char *text, size_t len, struct pool_stats *out);

#endif
