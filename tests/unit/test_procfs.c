/* test_procfs.c — unit tests for procfs.c on sample /proc texts from a
 * real host (tests/data/procfs-*.txt: stat, meminfo, loadavg, diskstats
 * and a PID stat taken from a Linux 6.18 machine; diskstats extended by
 * hand with 18- and 14-column lines; pool_stats written after
 * net/sunrpc/svc_xprt.c in both header variants) and on small hand-made
 * texts. Every kept field is checked against the samples; the aggregate
 * cpu line needs 4 numbers, older kernels' missing columns are 0 and cpuN
 * lines are counted; loadavg wants exactly its 5 fields; meminfo is in
 * bytes, needs MemTotal and MemFree and falls back to free for available;
 * a PID's comm runs to the last ')' and is truncated to fit; diskstats
 * finds a device by name in 14/18/20-column lines (1 when absent, -1 for a
 * malformed line before it); pool_stats finds its columns by the header's
 * names and sums the pools. CRLF line ends and a missing final newline are
 * fine; empty text, non-numbers and overflow give -1. Fuzz tests feed every
 * prefix of each sample and 20000 seeded random mutations of it, each in a
 * buffer of exactly its length so that AddressSanitizer catches a read
 * past len, and want 0, 1 or -1 back. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fuzz.h"
#include "procfs.h"

#define FUZZ_ROUNDS 20000
#define assert_near(a, b) assert_true(fabs((double)(a) - (double)(b)) < 1e-9)

/* ---- sample texts ---- */

/* A copy of a string without its NUL, so that a read past len is caught. */
static char *exact(const char *s, size_t *len)
{
    *len = strlen(s);
    return fuzz_copy(s, *len);
}

static int stat_of(const char *s, struct cpu_times *o)
{
    size_t n;
    char *t = exact(s, &n);
    int r = procfs_parse_stat(t, n, o);
    free(t);
    return r;
}

static int loadavg_of(const char *s, struct loadavg *o)
{
    size_t n;
    char *t = exact(s, &n);
    int r = procfs_parse_loadavg(t, n, o);
    free(t);
    return r;
}

static int meminfo_of(const char *s, struct meminfo *o)
{
    size_t n;
    char *t = exact(s, &n);
    int r = procfs_parse_meminfo(t, n, o);
    free(t);
    return r;
}

static int pid_stat_of(const char *s, struct pid_stat *o)
{
    size_t n;
    char *t = exact(s, &n);
    int r = procfs_parse_pid_stat(t, n, o);
    free(t);
    return r;
}

static int diskstats_of(const char *s, const char *dev, struct disk_stats *o)
{
    size_t n;
    char *t = exact(s, &n);
    int r = procfs_parse_diskstats(t, n, dev, o);
    free(t);
    return r;
}

static int pool_stats_of(const char *s, struct pool_stats *o)
{
    size_t n;
    char *t = exact(s, &n);
    int r = procfs_parse_pool_stats(t, n, o);
    free(t);
    return r;
}

/* ---- /proc/stat ---- */

static void test_stat_sample(void **state)
{
    (void)state;
    size_t n;
    char *t = fuzz_read_data("procfs-stat.txt", &n);
    struct cpu_times c;

    assert_int_equal(procfs_parse_stat(t, n, &c), 0);
    /* cpu  261201 0 667992 890641 8588 0 13176 818 0 0 */
    assert_int_equal(c.ticks[CPU_USER], 261201);
    assert_int_equal(c.ticks[CPU_NICE], 0);
    assert_int_equal(c.ticks[CPU_SYSTEM], 667992);
    assert_int_equal(c.ticks[CPU_IDLE], 890641);
    assert_int_equal(c.ticks[CPU_IOWAIT], 8588);
    assert_int_equal(c.ticks[CPU_IRQ], 0);
    assert_int_equal(c.ticks[CPU_SOFTIRQ], 13176);
    assert_int_equal(c.ticks[CPU_STEAL], 818);
    assert_int_equal(c.ncpus, 2);
    free(t);
}

static void test_stat_old_kernel(void **state)
{
    (void)state;
    struct cpu_times c;

    /* Linux 2.4: user nice system idle only. */
    assert_int_equal(stat_of("cpu  10 20 30 40\ncpu0 10 20 30 40\npage 1 2\n", &c), 0);
    assert_int_equal(c.ticks[CPU_USER], 10);
    assert_int_equal(c.ticks[CPU_NICE], 20);
    assert_int_equal(c.ticks[CPU_SYSTEM], 30);
    assert_int_equal(c.ticks[CPU_IDLE], 40);
    assert_int_equal(c.ticks[CPU_IOWAIT], 0);
    assert_int_equal(c.ticks[CPU_STEAL], 0);
    assert_int_equal(c.ncpus, 1);
    /* Three numbers are too few. */
    assert_int_equal(stat_of("cpu 1 2 3\n", &c), -1);
}

static void test_stat_edges(void **state)
{
    (void)state;
    struct cpu_times c;

    assert_int_equal(stat_of("", &c), -1);
    assert_int_equal(procfs_parse_stat(NULL, 0, &c), -1);
    assert_int_equal(stat_of("\n\n", &c), -1);
    assert_int_equal(stat_of("cpu0 1 2 3 4\ncpu1 1 2 3 4\n", &c), -1); /* no aggregate */
    assert_int_equal(stat_of("cpu 1 2 x 4\n", &c), -1);
    assert_int_equal(stat_of("cpu 1 2 3 -4\n", &c), -1);
    assert_int_equal(stat_of("cpu 1 2 3 18446744073709551616\n", &c), -1);
    assert_int_equal(stat_of("cpu 1 2 3 18446744073709551615", &c), 0);
    assert_true(c.ticks[CPU_IDLE] == UINT64_MAX);
    /* CRLF, no final newline, cpufreq-like names are not CPUs. */
    assert_int_equal(stat_of("cpu 1 2 3 4 5\r\ncpu0 1 2 3 4 5\r\ncpux 1\r\ncpu7 0", &c), 0);
    assert_int_equal(c.ticks[CPU_IOWAIT], 5);
    assert_int_equal(c.ncpus, 2);
    /* Extra columns (guest, guest_nice and later) are read past. */
    assert_int_equal(stat_of("intr 1 2 3\ncpu 1 2 3 4 5 6 7 8 9 10 11 12\n", &c), 0);
    assert_int_equal(c.ticks[CPU_STEAL], 8);
    assert_int_equal(c.ncpus, 0);
}

static void test_cpu_mode_names(void **state)
{
    (void)state;
    static const char *const want[CPU_MODES] = {"user",   "nice", "system",  "idle",
                                                "iowait", "irq",  "softirq", "steal"};
    for (int m = 0; m < CPU_MODES; m++)
        assert_string_equal(procfs_cpu_mode_name((enum cpu_mode)m), want[m]);
    assert_non_null(procfs_cpu_mode_name(CPU_MODES));
}

/* ---- /proc/loadavg ---- */

static void test_loadavg_sample(void **state)
{
    (void)state;
    size_t n;
    char *t = fuzz_read_data("procfs-loadavg.txt", &n);
    struct loadavg l;

    /* 1.54 1.50 1.68 1/84 16026 */
    assert_int_equal(procfs_parse_loadavg(t, n, &l), 0);
    assert_near(l.load1, 1.54);
    assert_near(l.load5, 1.50);
    assert_near(l.load15, 1.68);
    assert_int_equal(l.running, 1);
    assert_int_equal(l.total, 84);
    free(t);
}

static void test_loadavg_edges(void **state)
{
    (void)state;
    struct loadavg l;

    assert_int_equal(loadavg_of("0.00 12.25 100 12/3456 789", &l), 0);
    assert_near(l.load1, 0.0);
    assert_near(l.load5, 12.25);
    assert_near(l.load15, 100.0);
    assert_int_equal(l.running, 12);
    assert_int_equal(l.total, 3456);
    assert_int_equal(loadavg_of("0.52 0.58 0.59 3/1201 81234\r\n", &l), 0);
    assert_int_equal(l.total, 1201);
    assert_int_equal(loadavg_of("", &l), -1);
    assert_int_equal(loadavg_of("\n", &l), -1);
    assert_int_equal(loadavg_of("0.52 0.58 0.59 3/1201\n", &l), -1);      /* no last pid */
    assert_int_equal(loadavg_of("0.52 0.58 0.59 3/1201 1 2\n", &l), -1);  /* one field more */
    assert_int_equal(loadavg_of("0.52 0.58 0.59 31201 81234\n", &l), -1); /* no '/' */
    assert_int_equal(loadavg_of("0.52 0.58 0.59 3/ 81234\n", &l), -1);
    assert_int_equal(loadavg_of("0.52 0.58 0.59 /3 81234\n", &l), -1);
    assert_int_equal(loadavg_of("nan 0.58 0.59 3/1201 81234\n", &l), -1);
    assert_int_equal(loadavg_of("1e3 0.58 0.59 3/1201 81234\n", &l), -1);
    assert_int_equal(loadavg_of("-1.0 0.58 0.59 3/1201 81234\n", &l), -1);
    assert_int_equal(loadavg_of("1. 0.58 0.59 3/1201 81234\n", &l), -1);
    assert_int_equal(loadavg_of(".5 0.58 0.59 3/1201 81234\n", &l), -1);
    assert_int_equal(loadavg_of("0.52 0.58 0.59 3/99999999999999999999 1\n", &l), -1);
}

/* ---- /proc/meminfo ---- */

static void test_meminfo_sample(void **state)
{
    (void)state;
    size_t n;
    char *t = fuzz_read_data("procfs-meminfo.txt", &n);
    struct meminfo m;

    assert_int_equal(procfs_parse_meminfo(t, n, &m), 0);
    assert_int_equal(m.total, 24683652ull * 1024);
    assert_int_equal(m.free, 21613620ull * 1024);
    assert_int_equal(m.available, 23959848ull * 1024);
    assert_int_equal(m.buffers, 21680ull * 1024);
    assert_int_equal(m.cached, 1989308ull * 1024); /* not SwapCached */
    assert_int_equal(m.dirty, 8572ull * 1024);
    assert_int_equal(m.writeback, 0); /* not WritebackTmp */
    free(t);
}

static void test_meminfo_edges(void **state)
{
    (void)state;
    struct meminfo m;

    /* An old kernel without MemAvailable: available is free. */
    assert_int_equal(meminfo_of("MemTotal: 1000 kB\r\nMemFree: 400 kB\r\nCached: 7 kB", &m), 0);
    assert_int_equal(m.total, 1024000);
    assert_int_equal(m.free, 409600);
    assert_int_equal(m.available, 409600);
    assert_int_equal(m.cached, 7168);
    assert_int_equal(m.buffers, 0);
    /* Unknown lines, whatever their form, are skipped. */
    assert_int_equal(meminfo_of("HugePages_Total: x\nMemFree: 1 kB\nweird\n\nMemTotal: 2 kB\n", &m),
                     0);
    assert_int_equal(m.total, 2048);
    assert_int_equal(meminfo_of("", &m), -1);
    assert_int_equal(meminfo_of("MemTotal: 1000 kB\n", &m), -1); /* no MemFree */
    assert_int_equal(meminfo_of("MemFree: 1000 kB\n", &m), -1);  /* no MemTotal */
    assert_int_equal(meminfo_of("MemTotal: 10x kB\nMemFree: 1 kB\n", &m), -1);
    assert_int_equal(meminfo_of("MemTotal: kB\nMemFree: 1 kB\n", &m), -1);
    assert_int_equal(meminfo_of("MemTotal: 10 MB\nMemFree: 1 kB\n", &m), -1);
    assert_int_equal(meminfo_of("MemTotal: 10 kB x\nMemFree: 1 kB\n", &m), -1);
    /* kB to bytes must not overflow. */
    assert_int_equal(meminfo_of("MemTotal: 18014398509481983 kB\nMemFree: 1 kB\n", &m), 0);
    assert_int_equal(meminfo_of("MemTotal: 18014398509481984 kB\nMemFree: 1 kB\n", &m), -1);
}

/* ---- /proc/PID/stat ---- */

static void test_pid_stat_sample(void **state)
{
    (void)state;
    size_t n;
    char *t = fuzz_read_data("procfs-pid-stat.txt", &n);
    struct pid_stat p;

    /* 16204 (herd (r0) x) R ... utime 138 stime 0 ... 4 threads ... rss 3379 */
    assert_int_equal(procfs_parse_pid_stat(t, n, &p), 0);
    assert_int_equal(p.pid, 16204);
    assert_string_equal(p.comm, "herd (r0) x");
    assert_int_equal(p.state, 'R');
    assert_int_equal(p.utime, 138);
    assert_int_equal(p.stime, 0);
    assert_int_equal(p.num_threads, 4);
    assert_int_equal(p.rss_pages, 3379);
    free(t);
}

/* Fields 3 to 24 as in proc(5), numbered so that each value is its field
 * number: utime 14, stime 15, num_threads 20, rss 24. */
#define FIELDS_4_TO_24 "4 5 6 7 -1 9 10 11 12 13 14 15 16 17 18 -19 20 21 22 23 24"

static void test_pid_stat_comm(void **state)
{
    (void)state;
    struct pid_stat p;

    assert_int_equal(pid_stat_of("42 (a) b (c) S " FIELDS_4_TO_24 " 25 26\n", &p), 0);
    assert_int_equal(p.pid, 42);
    assert_string_equal(p.comm, "a) b (c");
    assert_int_equal(p.state, 'S');
    assert_int_equal(p.utime, 14);
    assert_int_equal(p.stime, 15);
    assert_int_equal(p.num_threads, 20);
    assert_int_equal(p.rss_pages, 24);
    /* Exactly 24 fields, no newline; an empty comm; a comm of spaces. */
    assert_int_equal(pid_stat_of("1 () D " FIELDS_4_TO_24, &p), 0);
    assert_string_equal(p.comm, "");
    assert_int_equal(p.state, 'D');
    assert_int_equal(pid_stat_of("7 ( ) ( ) Z " FIELDS_4_TO_24 "\r\n", &p), 0);
    assert_string_equal(p.comm, " ) ( ");
    assert_int_equal(p.rss_pages, 24);
    /* A comm longer than the buffer is cut to fit. */
    char text[512];
    snprintf(text, sizeof text, "9 (%0100d) R %s", 0, FIELDS_4_TO_24);
    assert_int_equal(pid_stat_of(text, &p), 0);
    assert_int_equal(strlen(p.comm), sizeof p.comm - 1);
    assert_int_equal(p.num_threads, 20);
}

static void test_pid_stat_edges(void **state)
{
    (void)state;
    struct pid_stat p;

    assert_int_equal(pid_stat_of("", &p), -1);
    assert_int_equal(pid_stat_of("42 (x S " FIELDS_4_TO_24, &p), -1); /* no ')' */
    assert_int_equal(pid_stat_of("42 x) S " FIELDS_4_TO_24, &p), -1); /* no '(' */
    assert_int_equal(pid_stat_of("(x) S " FIELDS_4_TO_24, &p), -1);   /* no pid */
    assert_int_equal(pid_stat_of("4x2 (x) S " FIELDS_4_TO_24, &p), -1);
    assert_int_equal(pid_stat_of("1 2 (x) S " FIELDS_4_TO_24, &p), -1);
    assert_int_equal(
        pid_stat_of("42 (x) S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23", &p),
        -1);                                                            /* 23 fields */
    assert_int_equal(pid_stat_of("42 (x) SS " FIELDS_4_TO_24, &p), -1); /* state is 1 char */
    assert_int_equal(pid_stat_of("42 (x) S 4 5 6 7 8 9 10 11 12 13 x4 15 16 17 18 19 20 21 22 "
                                 "23 24",
                                 &p),
                     -1);
    assert_int_equal(pid_stat_of("42 (x) S 4 5 6 7 8 9 10 11 12 13 -14 15 16 17 18 19 20 21 22 "
                                 "23 24",
                                 &p),
                     -1); /* utime is unsigned */
    assert_int_equal(pid_stat_of("42 (x) S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 "
                                 "23 24 18446744073709551615",
                                 &p),
                     0); /* rsslim RLIM_INFINITY */
    assert_int_equal(pid_stat_of("42 (x) S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 "
                                 "23 24 18446744073709551616",
                                 &p),
                     -1);
}

/* ---- /proc/diskstats ---- */

static void test_diskstats_sample(void **state)
{
    (void)state;
    size_t n;
    char *t = fuzz_read_data("procfs-diskstats.txt", &n);
    struct disk_stats d;

    /* 20 columns (Linux 5.5+) */
    assert_int_equal(procfs_parse_diskstats(t, n, "vda", &d), 0);
    assert_int_equal(d.major, 254);
    assert_int_equal(d.minor, 0);
    assert_string_equal(d.name, "vda");
    assert_int_equal(d.reads, 186415);
    assert_int_equal(d.reads_merged, 38513);
    assert_int_equal(d.read_sectors, 6288954);
    assert_int_equal(d.read_ms, 133225);
    assert_int_equal(d.writes, 329940);
    assert_int_equal(d.writes_merged, 76397);
    assert_int_equal(d.write_sectors, 703464048);
    assert_int_equal(d.write_ms, 1191648);
    assert_int_equal(d.in_flight, 0);
    assert_int_equal(d.io_ms, 130792);
    assert_int_equal(d.weighted_ms, 1349219);
    assert_true(d.has_flushes);
    assert_int_equal(d.flushes, 67942);
    /* 18 columns (Linux 4.18+) */
    assert_int_equal(procfs_parse_diskstats(t, n, "sda", &d), 0);
    assert_int_equal(d.major, 8);
    assert_int_equal(d.minor, 0);
    assert_int_equal(d.reads, 1563);
    assert_int_equal(d.write_sectors, 253384);
    assert_int_equal(d.weighted_ms, 12412);
    assert_false(d.has_flushes);
    /* 14 columns; sdb is not taken for sdb1 nor the other way round */
    assert_int_equal(procfs_parse_diskstats(t, n, "sdb", &d), 0);
    assert_int_equal(d.minor, 16);
    assert_int_equal(d.reads, 97482);
    assert_int_equal(d.in_flight, 3);
    assert_int_equal(d.weighted_ms, 281008);
    assert_int_equal(procfs_parse_diskstats(t, n, "sdb1", &d), 0);
    assert_int_equal(d.minor, 17);
    assert_string_equal(d.name, "sdb1");
    assert_int_equal(d.read_sectors, 6170194);
    assert_int_equal(d.io_ms, 95304);
    assert_int_equal(procfs_parse_diskstats(t, n, "loop7", &d), 0);
    assert_int_equal(d.major, 7);
    assert_int_equal(d.minor, 7);
    assert_int_equal(d.reads, 0);
    assert_int_equal(procfs_parse_diskstats(t, n, "sd", &d), 1);
    assert_int_equal(procfs_parse_diskstats(t, n, "nvme0n1", &d), 1);
    assert_int_equal(procfs_parse_diskstats(t, n, "", &d), 1);
    free(t);
}

#define ELEVEN " 1 2 3 4 5 6 7 8 9 10 11"

static void test_diskstats_edges(void **state)
{
    (void)state;
    struct disk_stats d;

    assert_int_equal(diskstats_of("", "sda", &d), 1);
    assert_int_equal(diskstats_of("\n\n", "sda", &d), 1);
    assert_int_equal(diskstats_of("8 0 sda" ELEVEN, "sda", &d), 0); /* no newline */
    assert_int_equal(d.weighted_ms, 11);
    assert_int_equal(diskstats_of("8 0 sdb" ELEVEN "\r\n8 16 sda" ELEVEN "\r\n", "sda", &d), 0);
    assert_int_equal(d.minor, 16);
    assert_int_equal(d.reads, 1);
    /* Malformed before the device: -1; after it: not looked at. */
    assert_int_equal(diskstats_of("8 0 sdb 1 2 3 4 5 6 7 8 9 10\n8 16 sda" ELEVEN, "sda", &d), -1);
    assert_int_equal(diskstats_of("8 16 sda" ELEVEN "\n8 0 sdb 1 2 3\n", "sda", &d), 0);
    assert_int_equal(diskstats_of("8 0 sda 1 2 3 4 5 6 7 8 9 10\n", "sda", &d), -1); /* 13 */
    assert_int_equal(diskstats_of("8 0 sda 1 2 3 x 5 6 7 8 9 10 11\n", "sda", &d), -1);
    assert_int_equal(diskstats_of("8 0 sda 1 2 3 4 5 6 7 8 9 10 11 x\n", "sda", &d), -1);
    assert_int_equal(diskstats_of("8 0 sda 1 2 3 4 5 6 7 8 9 10 99999999999999999999\n", "sda", &d),
                     -1);
    assert_int_equal(diskstats_of("x 0 sda" ELEVEN, "sda", &d), -1);
    assert_int_equal(diskstats_of("4294967296 0 sda" ELEVEN, "sda", &d), -1);
    assert_int_equal(diskstats_of("8\n", "sda", &d), -1);
    assert_int_equal(diskstats_of("8 0\n", "sda", &d), -1);
    /* A name of 31 characters fits; a longer one is malformed. */
#define NAME31 "abcdefghijklmnopqrstuvwxyz01234"
    assert_int_equal(diskstats_of("8 0 " NAME31 ELEVEN, NAME31, &d), 0);
    assert_string_equal(d.name, NAME31);
    assert_int_equal(diskstats_of("8 0 " NAME31 "5" ELEVEN, "sda", &d), -1);
    assert_int_equal(diskstats_of("8 0 " NAME31 "5" ELEVEN, NAME31 "5", &d), -1);
}

/* ---- /proc/fs/nfsd/pool_stats ---- */

static void test_pool_stats_samples(void **state)
{
    (void)state;
    size_t n;
    char *t = fuzz_read_data("procfs-pool-stats.txt", &n);
    struct pool_stats p;

    assert_int_equal(procfs_parse_pool_stats(t, n, &p), 0);
    assert_int_equal(p.pools, 2);
    assert_int_equal(p.packets_arrived, 1042387 + 998121);
    assert_int_equal(p.sockets_enqueued, 13722 + 10013);
    assert_int_equal(p.threads_woken, 1028665 + 988108);
    assert_int_equal(p.threads_timedout, 0);
    free(t);

    /* With overloads-avoided before threads-timedout. */
    t = fuzz_read_data("procfs-pool-stats-older.txt", &n);
    assert_int_equal(procfs_parse_pool_stats(t, n, &p), 0);
    assert_int_equal(p.pools, 2);
    assert_int_equal(p.packets_arrived, 3225979 + 3101554);
    assert_int_equal(p.sockets_enqueued, 41087 + 39211);
    assert_int_equal(p.threads_woken, 3184892 + 3062343);
    assert_int_equal(p.threads_timedout, 412 + 398);
    free(t);
}

static void test_pool_stats_edges(void **state)
{
    (void)state;
    struct pool_stats p;

    assert_int_equal(pool_stats_of("", &p), -1);
    assert_int_equal(pool_stats_of("0 1 2 3 4\n", &p), -1); /* no header */
    assert_int_equal(pool_stats_of("# pool packets-arrived sockets-enqueued threads-woken "
                                   "threads-timedout\n",
                                   &p),
                     0);
    assert_int_equal(p.pools, 0);
    /* Columns by name, in any order; a missing one stays 0; CRLF; no newline. */
    assert_int_equal(pool_stats_of("#pool threads-woken packets-arrived\r\n0 5 7\r\n1 1 2", &p), 0);
    assert_int_equal(p.pools, 2);
    assert_int_equal(p.threads_woken, 6);
    assert_int_equal(p.packets_arrived, 9);
    assert_int_equal(p.sockets_enqueued, 0);
    assert_int_equal(p.threads_timedout, 0);
    /* A line with more or fewer columns than the header, or a non-number. */
    assert_int_equal(pool_stats_of("# pool packets-arrived\n0 1 2\n", &p), -1);
    assert_int_equal(pool_stats_of("# pool packets-arrived\n0\n", &p), -1);
    assert_int_equal(pool_stats_of("# pool packets-arrived\n0 x\n", &p), -1);
    assert_int_equal(pool_stats_of("# pool packets-arrived\n0 -1\n", &p), -1);
    /* The sum must not overflow. */
    assert_int_equal(pool_stats_of("# pool packets-arrived\n0 18446744073709551615\n1 0\n", &p), 0);
    assert_int_equal(pool_stats_of("# pool packets-arrived\n0 18446744073709551615\n1 1\n", &p),
                     -1);
}

/* ---- fuzzing ---- */

typedef int (*parse_fn)(const char *text, size_t len);

struct check {
    parse_fn parse;
};

/* A fuzz_fn: the parse must answer 0, 1 or -1. */
static void check(void *arg, const char *text, size_t len)
{
    int r = ((const struct check *)arg)->parse(text, len);
    assert_true(r >= -1 && r <= 1);
}

/* Every prefix of the sample, then FUZZ_ROUNDS mutations of it of one to
 * four edits (fuzz.h: bytes, digit runs, long lines, spans, and these
 * separators and parentheses). */
static void fuzz_sample(parse_fn parse, const char *sample, uint64_t seed)
{
    struct fuzz f = {.rng = seed, .alphabet = " \n\t\r()#./-:"};
    struct check c = {parse};

    fuzz_file(&f, sample, FUZZ_ROUNDS, 4, check, &c);
}

static int fuzz_stat(const char *t, size_t n)
{
    struct cpu_times c;
    int r = procfs_parse_stat(t, n, &c);
    if (r == 0)
        assert_true(c.ncpus >= 0);
    return r;
}

static int fuzz_loadavg(const char *t, size_t n)
{
    struct loadavg l;
    int r = procfs_parse_loadavg(t, n, &l);
    if (r == 0)
        assert_true(l.load1 >= 0 && l.running >= 0 && l.total >= 0);
    return r;
}

static int fuzz_meminfo(const char *t, size_t n)
{
    struct meminfo m;
    return procfs_parse_meminfo(t, n, &m);
}

static int fuzz_pid_stat(const char *t, size_t n)
{
    struct pid_stat p;
    int r = procfs_parse_pid_stat(t, n, &p);
    if (r == 0)
        assert_non_null(memchr(p.comm, '\0', sizeof p.comm));
    return r;
}

static int fuzz_diskstats(const char *t, size_t n)
{
    static const char *const devs[] = {"none", "sdb1", "loop3", "vda"};
    struct disk_stats d;
    int r = 0;

    for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++) {
        r = procfs_parse_diskstats(t, n, devs[i], &d);
        assert_true(r >= -1 && r <= 1);
        if (r == 0)
            assert_string_equal(d.name, devs[i]);
    }
    return r;
}

static int fuzz_pool_stats(const char *t, size_t n)
{
    struct pool_stats p;
    int r = procfs_parse_pool_stats(t, n, &p);
    if (r == 0)
        assert_true(p.pools >= 0);
    return r;
}

static void test_fuzz_stat(void **state)
{
    (void)state;
    fuzz_sample(fuzz_stat, "procfs-stat.txt", 0x5eed0001);
}

static void test_fuzz_loadavg(void **state)
{
    (void)state;
    fuzz_sample(fuzz_loadavg, "procfs-loadavg.txt", 0x5eed0002);
}

static void test_fuzz_meminfo(void **state)
{
    (void)state;
    fuzz_sample(fuzz_meminfo, "procfs-meminfo.txt", 0x5eed0003);
}

static void test_fuzz_pid_stat(void **state)
{
    (void)state;
    fuzz_sample(fuzz_pid_stat, "procfs-pid-stat.txt", 0x5eed0004);
}

static void test_fuzz_diskstats(void **state)
{
    (void)state;
    fuzz_sample(fuzz_diskstats, "procfs-diskstats.txt", 0x5eed0005);
}

static void test_fuzz_pool_stats(void **state)
{
    (void)state;
    fuzz_sample(fuzz_pool_stats, "procfs-pool-stats.txt", 0x5eed0006);
    fuzz_sample(fuzz_pool_stats, "procfs-pool-stats-older.txt", 0x5eed0007);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stat_sample),      cmocka_unit_test(test_stat_old_kernel),
        cmocka_unit_test(test_stat_edges),       cmocka_unit_test(test_cpu_mode_names),
        cmocka_unit_test(test_loadavg_sample),   cmocka_unit_test(test_loadavg_edges),
        cmocka_unit_test(test_meminfo_sample),   cmocka_unit_test(test_meminfo_edges),
        cmocka_unit_test(test_pid_stat_sample),  cmocka_unit_test(test_pid_stat_comm),
        cmocka_unit_test(test_pid_stat_edges),   cmocka_unit_test(test_diskstats_sample),
        cmocka_unit_test(test_diskstats_edges),  cmocka_unit_test(test_pool_stats_samples),
        cmocka_unit_test(test_pool_stats_edges), cmocka_unit_test(test_fuzz_stat),
        cmocka_unit_test(test_fuzz_loadavg),     cmocka_unit_test(test_fuzz_meminfo),
        cmocka_unit_test(test_fuzz_pid_stat),    cmocka_unit_test(test_fuzz_diskstats),
        cmocka_unit_test(test_fuzz_pool_stats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
