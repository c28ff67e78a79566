/* monitor_proc.c — the monitor's local source: this host's /proc read at
 * every sample (CPU by mode, load, memory, the kernel NFS server's
 * counters and thread pools, named processes in the monitor's scope and
 * their busiest thread, block devices), turned into rows of deltas since
 * the previous sample. What is missing here (no nfsd, an unknown device,
 * a scope that cannot be opened) is noted once. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "monitor_scope.h"
#include "monitor_sources.h"
#include "nfsd_stats.h"
#include "procfs.h"
#include "textfile.h"

#define SOURCE "proc"
#define MAX_NAMES 16
#define MAX_DISKS 16

/* Ticks of CPU time by process or thread id, one table per sample. */
struct idmap {
    int64_t *keys; /* 0 = empty slot */
    uint64_t *vals;
    size_t cap, n;
};

struct disk {
    char spec[PATH_MAX]; /* as configured: a name or a path */
    char device[32];     /* resolved name in /proc/diskstats; "" = unusable */
    struct disk_stats prev;
    bool have_prev, noted;
};

struct proc_source {
    char host[MONITOR_HOST_MAX];
    char *buf;
    size_t cap;
    double tick_seconds, page_bytes;
    bool baseline_done;
    struct cpu_times cpu;
    bool have_cpu;
    struct nfsd_stats nfsd;
    bool have_nfsd;
    struct pool_stats pool;
    bool have_pool;
    char names[MAX_NAMES][32];
    int nnames;
    char scope_text[PATH_MAX + 8];    /* monitor_scope as configured */
    struct monitor_scope *scope;      /* NULL: it could not be opened here, */
    char scope_why[MONITOR_NOTE_MAX]; /* for this reason */
    unsigned absent_noted;            /* bit i: names[i] was noted as not running */
    struct idmap procs[2], tasks[2];  /* [0] previous sample, [1] this one */
    struct disk disks[MAX_DISKS];
    int ndisks;
    unsigned noted; /* NOTE_* bits: said once already */
};

enum {
    NOTE_STAT = 1,
    NOTE_LOADAVG = 2,
    NOTE_MEMINFO = 4,
    NOTE_NFSD = 8,
    NOTE_POOL = 16,
    NOTE_PROCS = 32,
    NOTE_SCOPE = 64,
    NOTE_SCOPE_DENIED = 128
};

static void note_once(struct proc_source *s, struct monitor_batch *out, double t, unsigned bit,
                      const char *what, long rc)
{
    if (s->noted & bit)
        return;
    s->noted |= bit;
    monitor_add_note(out, t, s->host, SOURCE, "%s: %s", what,
                     rc < 0 ? strerror((int)-rc) : "not in the expected format");
}

/* ---- id -> ticks tables ---- */

static void idmap_clear(struct idmap *m)
{
    if (m->keys)
        memset(m->keys, 0, m->cap * sizeof *m->keys);
    m->n = 0;
}

static uint64_t *idmap_slot(struct idmap *m, int64_t id, bool insert)
{
    if (insert && (m->n + 1) * 2 > m->cap) {
        struct idmap bigger = {.cap = m->cap ? 2 * m->cap : 256};
        bigger.keys = calloc(bigger.cap, sizeof *bigger.keys);
        bigger.vals = calloc(bigger.cap, sizeof *bigger.vals);
        if (!bigger.keys || !bigger.vals) {
            free(bigger.keys);
            free(bigger.vals);
            return NULL;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i])
                *idmap_slot(&bigger, m->keys[i], true) = m->vals[i];
        free(m->keys);
        free(m->vals);
        *m = bigger;
    }
    if (m->cap == 0)
        return NULL;
    size_t i = ((uint64_t)id * 0x9E3779B97F4A7C15ull) & (m->cap - 1);
    while (m->keys[i] && m->keys[i] != id)
        i = (i + 1) & (m->cap - 1);
    if (!m->keys[i]) {
        if (!insert)
            return NULL;
        m->keys[i] = id;
        m->vals[i] = 0;
        m->n++;
    }
    return &m->vals[i];
}

/* Ticks used since the previous sample by id now at `ticks`; a new id
 * counts from 0 (it started after the previous sample). */
static uint64_t idmap_delta(struct idmap *prev, struct idmap *cur, int64_t id, uint64_t ticks)
{
    uint64_t *slot = idmap_slot(cur, id, true);
    if (slot)
        *slot = ticks;
    uint64_t *old = idmap_slot(prev, id, false);
    return old && *old <= ticks ? ticks - *old : ticks;
}

static void idmap_swap(struct idmap pair[2])
{
    struct idmap t = pair[0];
    pair[0] = pair[1];
    pair[1] = t;
    idmap_clear(&pair[1]);
}

/* ---- set-up ---- */

static void disk_resolve(struct disk *d)
{
    if (d->spec[0] != '/') {
        snprintf(d->device, sizeof d->device, "%.31s", d->spec);
        return;
    }
    struct stat st;
    if (stat(d->spec, &st) != 0)
        return;
    char link[64], target[PATH_MAX];
    snprintf(link, sizeof link, "/sys/dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n <= 0)
        return;
    target[n] = '\0';
    const char *base = strrchr(target, '/');
    snprintf(d->device, sizeof d->device, "%.31s", base ? base + 1 : target);
}

/* Split "a,b , c" into trimmed names; returns how many were stored. */
static int split_list(const char *list, char *out, size_t width, int max)
{
    int n = 0;
    const char *p = list ? list : "";
    while (*p && n < max) {
        size_t len = strcspn(p, ",");
        const char *a = p, *b = p + len;
        while (a < b && (*a == ' ' || *a == '\t'))
            a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
            b--;
        if (b > a && (size_t)(b - a) < width) {
            memcpy(out + (size_t)n * width, a, (size_t)(b - a));
            out[(size_t)n * width + (size_t)(b - a)] = '\0';
            n++;
        }
        p += len + (p[len] == ',');
    }
    return n;
}

static struct proc_source *proc_source_open(const struct monitor_config *cfg)
{
    struct proc_source *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    snprintf(s->host, sizeof s->host, "%s", cfg->hostname ? cfg->hostname : "");
    long hz = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    s->tick_seconds = 1.0 / (double)(hz > 0 ? hz : 100);
    s->page_bytes = (double)(page > 0 ? page : 4096);
    s->nnames = split_list(cfg->processes, &s->names[0][0], sizeof s->names[0], MAX_NAMES);
    snprintf(s->scope_text, sizeof s->scope_text, "%s", cfg->scope ? cfg->scope : "host");
    if (s->nnames > 0)
        s->scope = monitor_scope_open(s->scope_text, s->scope_why, sizeof s->scope_why);
    char specs[MAX_DISKS][PATH_MAX];
    s->ndisks = split_list(cfg->disks, &specs[0][0], PATH_MAX, MAX_DISKS);
    for (int i = 0; i < s->ndisks; i++) {
        memcpy(s->disks[i].spec, specs[i], sizeof s->disks[i].spec);
        disk_resolve(&s->disks[i]);
    }
    return s;
}

static void proc_source_close(struct proc_source *s)
{
    if (!s)
        return;
    for (int i = 0; i < 2; i++) {
        free(s->procs[i].keys);
        free(s->procs[i].vals);
        free(s->tasks[i].keys);
        free(s->tasks[i].vals);
    }
    monitor_scope_close(s->scope);
    free(s->buf);
    free(s);
}

/* ---- one sample ---- */

#define DELTA(now, before) ((double)((now) - (before)))

/* /proc/stat: the CPU's share in each mode since the last sample. */
static void sample_cpu(struct proc_source *s, double t, struct monitor_batch *out,
                       struct monitor_sample *row)
{
    long n = textfile_read("/proc/stat", TEXTFILE_PROC_MAX, &s->buf, &s->cap);
    struct cpu_times cpu;
    if (n < 0 || procfs_parse_stat(s->buf, (size_t)n, &cpu) != 0) {
        note_once(s, out, t, NOTE_STAT, "/proc/stat", n < 0 ? n : 0);
        return;
    }
    if (s->have_cpu) {
        double d[CPU_MODES];
        for (int i = 0; i < CPU_MODES; i++)
            d[i] = cpu.ticks[i] >= s->cpu.ticks[i] ? DELTA(cpu.ticks[i], s->cpu.ticks[i]) : 0;
        monitor_sample_set_cpu(row, d);
    }
    row->ncpus = cpu.ncpus;
    s->cpu = cpu;
    s->have_cpu = true;
}

/* /proc/loadavg and /proc/meminfo: the load and memory now. */
static void sample_load_memory(struct proc_source *s, double t, struct monitor_batch *out,
                               struct monitor_sample *row)
{
    struct loadavg la;
    long n = textfile_read("/proc/loadavg", TEXTFILE_PROC_MAX, &s->buf, &s->cap);
    if (n >= 0 && procfs_parse_loadavg(s->buf, (size_t)n, &la) == 0)
        row->load1 = la.load1, row->load5 = la.load5, row->load15 = la.load15;
    else
        note_once(s, out, t, NOTE_LOADAVG, "/proc/loadavg", n < 0 ? n : 0);
    struct meminfo mi;
    n = textfile_read("/proc/meminfo", TEXTFILE_PROC_MAX, &s->buf, &s->cap);
    if (n >= 0 && procfs_parse_meminfo(s->buf, (size_t)n, &mi) == 0) {
        row->mem_total = (double)mi.total;
        row->mem_used = (double)(mi.total - (mi.available < mi.total ? mi.available : mi.total));
        row->mem_cached = (double)mi.cached;
        row->mem_dirty = (double)mi.dirty;
        row->mem_writeback = (double)mi.writeback;
    } else {
        note_once(s, out, t, NOTE_MEMINFO, "/proc/meminfo", n < 0 ? n : 0);
    }
}

/* The NFSv3 procedures and NFSv4 operations nfsd served since the last
 * sample, one metric row per op that changed. */
static void nfsd_ops_emit(const struct proc_source *s, const struct nfsd_stats *ns,
                          struct monitor_metric *m, struct monitor_batch *out)
{
    const struct nfsd_stats *p = &s->nfsd;
    for (int i = 0; i < ns->nv3 && i < p->nv3; i++) {
        if (ns->v3[i] == p->v3[i])
            continue;
        snprintf(m->name, sizeof m->name, "nfsd_v3_ops");
        snprintf(m->labels, sizeof m->labels, "op=%s", nfsd_v3_op_name(i));
        m->value = DELTA(ns->v3[i], p->v3[i]);
        monitor_add_metric(out, m);
    }
    for (int i = 0; i < ns->nv4ops && i < p->nv4ops; i++) {
        if (ns->v4ops[i] == p->v4ops[i])
            continue;
        char name[24];
        snprintf(m->name, sizeof m->name, "nfsd_v4_ops");
        snprintf(m->labels, sizeof m->labels, "op=%s", nfsd_v4_op_name(i, name, sizeof name));
        m->value = DELTA(ns->v4ops[i], p->v4ops[i]);
        monitor_add_metric(out, m);
    }
}

/* /proc/net/rpc/nfsd: the kernel NFS server's counters since the last
 * sample, and (emit) its ops. */
static void sample_nfsd(struct proc_source *s, double t, double dt, struct monitor_batch *out,
                        struct monitor_sample *row, bool emit)
{
    struct nfsd_stats ns;
    long n = textfile_read("/proc/net/rpc/nfsd", TEXTFILE_PROC_MAX, &s->buf, &s->cap);
    if (n < 0 || nfsd_stats_parse(s->buf, (size_t)n, &ns) != 0) {
        note_once(s, out, t, NOTE_NFSD, "no kernel NFS server counters (/proc/net/rpc/nfsd)",
                  n < 0 ? n : 0);
        return;
    }
    if (ns.threads >= 0)
        row->nfsd_threads = (double)ns.threads;
    if (s->have_nfsd) {
        const struct nfsd_stats *p = &s->nfsd;
        row->nfsd_rpc_calls = DELTA(ns.rpc_calls, p->rpc_calls);
        row->nfsd_rpc_bad = DELTA(ns.rpc_bad, p->rpc_bad);
        row->nfsd_read_bytes = DELTA(ns.io_read, p->io_read);
        row->nfsd_write_bytes = DELTA(ns.io_write, p->io_write);
        row->nfsd_rc_hits = DELTA(ns.rc_hits, p->rc_hits);
        row->nfsd_rc_misses = DELTA(ns.rc_misses, p->rc_misses);
        row->nfsd_rc_nocache = DELTA(ns.rc_nocache, p->rc_nocache);
        row->nfsd_th_full = DELTA(ns.th_full, p->th_full);
        row->nfsd_net_tcp_conn = DELTA(ns.net_tcp_conn, p->net_tcp_conn);
        struct monitor_metric m = {.t = t, .dt = dt};
        snprintf(m.host, sizeof m.host, "%s", s->host);
        snprintf(m.source, sizeof m.source, SOURCE);
        if (emit)
            nfsd_ops_emit(s, &ns, &m, out);
    }
    s->nfsd = ns;
    s->have_nfsd = true;
}

/* /proc/fs/nfsd/pool_stats: packets, sockets queued, threads woken and
 * timed out since the last sample. */
static void sample_pool(struct proc_source *s, double t, struct monitor_batch *out,
                        struct monitor_sample *row)
{
    struct pool_stats ps;
    long n = textfile_read("/proc/fs/nfsd/pool_stats", TEXTFILE_PROC_MAX, &s->buf, &s->cap);
    if (n >= 0 && procfs_parse_pool_stats(s->buf, (size_t)n, &ps) == 0) {
        if (s->have_pool) {
            row->pool_packets = DELTA(ps.packets_arrived, s->pool.packets_arrived);
            row->pool_sockets_enqueued = DELTA(ps.sockets_enqueued, s->pool.sockets_enqueued);
            row->pool_threads_woken = DELTA(ps.threads_woken, s->pool.threads_woken);
            row->pool_threads_timedout = DELTA(ps.threads_timedout, s->pool.threads_timedout);
        }
        s->pool = ps;
        s->have_pool = true;
    } else if (s->have_nfsd) { /* without nfsd its absence says nothing new */
        note_once(s, out, t, NOTE_POOL, "/proc/fs/nfsd/pool_stats", n < 0 ? n : 0);
    }
}

static void sample_host(struct proc_source *s, double t, double dt, struct monitor_batch *out,
                        bool emit)
{
    struct monitor_sample row;
    monitor_sample_init(&row, t, dt, s->host, SOURCE);
    sample_cpu(s, t, out, &row);
    sample_load_memory(s, t, out, &row);
    sample_nfsd(s, t, dt, out, &row, emit);
    sample_pool(s, t, out, &row);
    if (emit)
        monitor_add_sample(out, &row);
}

static int name_index(const struct proc_source *s, const char *comm)
{
    for (int i = 0; i < s->nnames; i++)
        if (strcmp(s->names[i], comm) == 0)
            return i;
    return -1;
}

static bool is_number(const char *name)
{
    if (!*name)
        return false;
    for (; *name; name++)
        if (*name < '0' || *name > '9')
            return false;
    return true;
}

/* The busiest thread of process pid since the previous sample, in ticks. */
static uint64_t busiest_thread(struct proc_source *s, const char *pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%.20s/task", pid);
    DIR *dir = opendir(path);
    if (!dir)
        return 0;
    uint64_t best = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (!is_number(e->d_name))
            continue;
        char stat_path[300];
        snprintf(stat_path, sizeof stat_path, "/proc/%.20s/task/%.20s/stat", pid, e->d_name);
        struct pid_stat ts;
        long n = textfile_read(stat_path, TEXTFILE_PROC_MAX, &s->buf, &s->cap);
        if (n < 0 || procfs_parse_pid_stat(s->buf, (size_t)n, &ts) != 0)
            continue;
        uint64_t d = idmap_delta(&s->tasks[0], &s->tasks[1], ts.pid, ts.utime + ts.stime);
        best = d > best ? d : best;
    }
    closedir(dir);
    return best;
}

/* Whether process pid is in the monitor's scope; one that cannot be told
 * is left out, and when herd may not look (another user's), noted once. */
static bool in_scope(struct proc_source *s, const char *pid, struct monitor_batch *out, double t)
{
    int rc = monitor_scope_has(s->scope, pid);
    if (rc == -EACCES || rc == -EPERM) {
        char what[MONITOR_NOTE_MAX];
        snprintf(what, sizeof what, "monitor_scope '%.100s': process %.20s left out", s->scope_text,
                 pid);
        note_once(s, out, t, NOTE_SCOPE_DENIED, what, rc);
    }
    return rc > 0;
}

static void sample_processes(struct proc_source *s, double t, double dt, struct monitor_batch *out,
                             bool emit)
{
    if (s->nnames == 0)
        return;
    if (!s->scope) { /* no rows: counting the whole host instead would mislead */
        if (!(s->noted & NOTE_SCOPE))
            monitor_add_note(out, t, s->host, SOURCE, "%s; no process is sampled", s->scope_why);
        s->noted |= NOTE_SCOPE;
        return;
    }
    struct monitor_process rows[MAX_NAMES];
    uint64_t ticks[MAX_NAMES] = {0}, busiest[MAX_NAMES] = {0};
    for (int i = 0; i < s->nnames; i++) {
        rows[i] = (struct monitor_process){.t = t, .dt = dt};
        snprintf(rows[i].host, sizeof rows[i].host, "%s", s->host);
        snprintf(rows[i].name, sizeof rows[i].name, "%s", s->names[i]);
    }
    DIR *dir = opendir("/proc");
    if (!dir) {
        note_once(s, out, t, NOTE_PROCS, "/proc", -errno);
        return;
    }
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (!is_number(e->d_name))
            continue;
        char path[300];
        snprintf(path, sizeof path, "/proc/%.20s/stat", e->d_name);
        struct pid_stat ps;
        long n = textfile_read(path, TEXTFILE_PROC_MAX, &s->buf, &s->cap);
        if (n < 0 || procfs_parse_pid_stat(s->buf, (size_t)n, &ps) != 0)
            continue; /* it exited meanwhile */
        int j = name_index(s, ps.comm);
        if (j < 0 || !in_scope(s, e->d_name, out, t))
            continue;
        rows[j].processes += 1;
        rows[j].threads += (double)ps.num_threads;
        rows[j].rss_bytes += (double)ps.rss_pages * s->page_bytes;
        uint64_t d = idmap_delta(&s->procs[0], &s->procs[1], ps.pid, ps.utime + ps.stime);
        ticks[j] += d;
        /* The threads are read a moment after their process, so on a busy
         * host a thread may show ticks its process's reading has not caught
         * up with yet; no thread used more than its process in one window. */
        uint64_t b = busiest_thread(s, e->d_name);
        b = b < d ? b : d;
        busiest[j] = b > busiest[j] ? b : busiest[j];
    }
    closedir(dir);
    idmap_swap(s->procs);
    idmap_swap(s->tasks);
    bool whole_host = strcmp(s->scope_text, "host") == 0;
    for (int i = 0; emit && i < s->nnames; i++) {
        if (rows[i].processes == 0 && !(s->absent_noted & (1u << i)))
            monitor_add_note(out, t, s->host, SOURCE, "no process named '%s' %s%s", s->names[i],
                             whole_host ? "here" : "in ", whole_host ? "" : s->scope_text);
        if (rows[i].processes == 0)
            s->absent_noted |= 1u << i;
        rows[i].cpu = dt > 0 ? (double)ticks[i] * s->tick_seconds / dt : NAN;
        rows[i].cpu_max_thread = dt > 0 ? (double)busiest[i] * s->tick_seconds / dt : NAN;
        monitor_add_process(out, &rows[i]);
    }
}

/* Why disk d gave no sample: n, the bytes of /proc/diskstats read (or
 * -errno); rc, procfs_parse_diskstats's answer (1: not listed). */
static const char *proc_disk_problem(const struct disk *d, long n, int rc)
{
    if (!d->device[0])
        return "no block device found for it";
    if (n < 0)
        return strerror((int)-n);
    if (rc == 1)
        return "not in /proc/diskstats";
    return "/proc/diskstats not in the expected format";
}

static void sample_disks(struct proc_source *s, double t, double dt, struct monitor_batch *out,
                         bool emit)
{
    if (s->ndisks == 0)
        return;
    long n = textfile_read("/proc/diskstats", TEXTFILE_PROC_MAX, &s->buf, &s->cap);
    for (int i = 0; i < s->ndisks; i++) {
        struct disk *d = &s->disks[i];
        struct disk_stats now;
        int rc = (n < 0 || !d->device[0])
                     ? -1
                     : procfs_parse_diskstats(s->buf, (size_t)n, d->device, &now);
        if (rc != 0) {
            if (!d->noted)
                monitor_add_note(out, t, s->host, SOURCE, "disk '%s': %s", d->spec,
                                 proc_disk_problem(d, n, rc));
            d->noted = true;
            continue;
        }
        if (emit && d->have_prev) {
            struct monitor_disk row = {.t = t, .dt = dt};
            snprintf(row.host, sizeof row.host, "%s", s->host);
            snprintf(row.device, sizeof row.device, "%s", d->device);
            row.reads = DELTA(now.reads, d->prev.reads);
            row.read_bytes = DELTA(now.read_sectors, d->prev.read_sectors) * 512.0;
            row.writes = DELTA(now.writes, d->prev.writes);
            row.write_bytes = DELTA(now.write_sectors, d->prev.write_sectors) * 512.0;
            row.busy = dt > 0 ? DELTA(now.io_ms, d->prev.io_ms) / 1000.0 / dt : NAN;
            row.weighted_ms = DELTA(now.weighted_ms, d->prev.weighted_ms);
            row.in_flight = (double)now.in_flight;
            row.flushes =
                now.has_flushes && d->prev.has_flushes ? DELTA(now.flushes, d->prev.flushes) : NAN;
            monitor_add_disk(out, &row);
        }
        d->prev = now;
        d->have_prev = true;
    }
}

static void proc_source_sample(struct proc_source *s, double t, double dt,
                               struct monitor_batch *out)
{
    if (!s)
        return;
    bool emit = s->baseline_done;
    sample_host(s, t, dt, out, emit);
    sample_processes(s, t, dt, out, emit);
    sample_disks(s, t, dt, out, emit);
    s->baseline_done = true;
}

static bool proc_wanted(const struct monitor_config *cfg)
{
    return cfg->local;
}

static void *proc_open(const struct monitor_config *cfg, char *err, size_t errlen)
{
    struct proc_source *s = proc_source_open(cfg);
    if (!s)
        snprintf(err, errlen, "monitor: out of memory");
    return s;
}

static bool proc_sample(void *state, double t, double dt, struct monitor_batch *out)
{
    proc_source_sample(state, t, dt, out);
    return true; /* what cannot be read is a note and a NaN: the reading is taken */
}

static void proc_close(void *state)
{
    proc_source_close(state);
}

const struct monitor_source_ops monitor_source_proc = {
    .name = "proc",
    .wanted = proc_wanted,
    .open = proc_open,
    .sample = proc_sample,
    .close = proc_close,
};
