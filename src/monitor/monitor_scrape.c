/* monitor_scrape.c — the monitor's node_exporter source: fetch the
 * Prometheus text at a URL with libcurl at every sample and turn it into
 * the same rows as the local /proc source (CPU by mode from
 * node_cpu_seconds_total, load, memory, node_nfsd_*, the nfsd thread
 * pool's node_nfsd_pool_*_total, every device's node_disk_*), plus every
 * node_nfsd_* gauge and every node_nfsd_* counter that changed as a
 * metric. A failed scrape is noted when the URL stops answering and again
 * when it answers; a reading's time is when its page came (a busy server
 * answers late), and its dt reaches back to when the reading before it
 * was asked for: the exporter reads its counters somewhere between the
 * request and the page, so what a delta holds may have happened at any
 * time since that request (a scrape in flight across a phase's end is
 * stamped after the end but may have read its counters before it; the
 * next row then still meets the phase). The first good scrape after
 * failures covers the whole gap since the last good one (its dt), so
 * counters lose nothing, unless
 * the exporter restarted (its CPU seconds went back): then it is a new
 * baseline. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "monitor_sources.h"
#include "promtext.h"

#define SOURCE "node_exporter"
#define SERIES_MAX 1024
#define DISKS_MAX 64
#define SCRAPE_TIMEOUT_MIN 2.0 /* seconds */
#define BODY_MAX (16u << 20)

/* One node_nfsd_* series. */
struct series {
    char name[MONITOR_NAME_MAX];
    char labels[MONITOR_NAME_MAX];
    double value;
};

/* One device's node_disk_* counters (NaN: not on the page). */
struct disk_reading {
    char device[32];
    double reads, read_bytes, writes, write_bytes, io_s, weighted_s, in_flight, flushes;
};

/* What one scrape said. */
struct reading {
    double cpu[CPU_MODES];
    int ncpus;
    double load1, load5, load15;
    double mem_total, mem_free, mem_available, mem_cached, mem_dirty, mem_writeback;
    double nfsd_threads, nfsd_rpcs, nfsd_rpc_errors, nfsd_read, nfsd_written;
    double rc_hits, rc_misses, rc_nocache, nfsd_connections;
    /* summed over the pools (node_nfsd_pool_*_total: knfsd's guest agent) */
    double pool_packets, pool_enqueued, pool_woken, pool_timedout;
    struct series *series;
    int nseries;
    struct disk_reading *disks;
    int ndisks;
    bool bad_labels;
};

#ifdef HERD_HAVE_CURL
#include <curl/curl.h>

struct scrape_source {
    CURL *curl;
    char url[1024];
    char host[MONITOR_HOST_MAX];
    char error[CURL_ERROR_SIZE];
    char *body;
    size_t len, cap;
    const struct clock *clock; /* the common clock: a reading's time is its reply's */
    struct reading prev;
    double prev_t;     /* when prev's page came */
    double prev_asked; /* when prev was asked for: its counters were read after */
    bool have_prev, failing;
};

static size_t body_append(char *data, size_t size, size_t n, void *arg)
{
    struct scrape_source *s = arg;
    size_t add = size * n;
    if (s->len + add + 1 > BODY_MAX)
        return 0; /* too big: curl reports a write error */
    if (s->len + add + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 65536;
        while (cap < s->len + add + 1)
            cap *= 2;
        char *p = realloc(s->body, cap);
        if (!p)
            return 0;
        s->body = p;
        s->cap = cap;
    }
    memcpy(s->body + s->len, data, add);
    s->len += add;
    s->body[s->len] = '\0';
    return add;
}

static struct scrape_source *scrape_source_open(const char *url, double timeout,
                                                const struct clock *clock, char *err, size_t errlen)
{
    static bool curl_ready;
    if (!curl_ready) { /* before any thread of ours uses curl */
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
            snprintf(err, errlen, "monitor_url: libcurl cannot start");
            return NULL;
        }
        curl_ready = true;
    }
    if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) {
        snprintf(err, errlen, "monitor_url '%s': expected http://HOST:PORT/metrics", url);
        return NULL;
    }
    struct scrape_source *s = calloc(1, sizeof *s);
    if (!s || !(s->curl = curl_easy_init())) {
        free(s);
        snprintf(err, errlen, "monitor_url: libcurl cannot start");
        return NULL;
    }
    snprintf(s->url, sizeof s->url, "%s", url);
    s->clock = clock;
    monitor_url_host(url, s->host, sizeof s->host);
    curl_easy_setopt(s->curl, CURLOPT_URL, s->url);
    curl_easy_setopt(s->curl, CURLOPT_WRITEFUNCTION, body_append);
    curl_easy_setopt(s->curl, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(s->curl, CURLOPT_ERRORBUFFER, s->error);
    curl_easy_setopt(s->curl, CURLOPT_TIMEOUT_MS, (long)(timeout * 1000));
    curl_easy_setopt(s->curl, CURLOPT_NOSIGNAL, 1L); /* no SIGALRM from a thread */
    curl_easy_setopt(s->curl, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(s->curl, CURLOPT_USERAGENT, "herd/" HERD_VERSION);
    return s;
}

static void scrape_source_close(struct scrape_source *s)
{
    if (!s)
        return;
    curl_easy_cleanup(s->curl);
    free(s->prev.series);
    free(s->prev.disks);
    free(s->body);
    free(s);
}

/* Fetch the page into s->body; 0, or -1 with s->error set. */
static int scrape_fetch(struct scrape_source *s)
{
    s->len = 0;
    s->error[0] = '\0';
    CURLcode rc = curl_easy_perform(s->curl);
    if (rc != CURLE_OK) {
        if (!s->error[0])
            snprintf(s->error, sizeof s->error, "%s", curl_easy_strerror(rc));
        return -1;
    }
    return 0;
}
#else
struct scrape_source {
    char unused;
};

static struct scrape_source *scrape_source_open(const char *url, double timeout,
                                                const struct clock *clock, char *err, size_t errlen)
{
    (void)url, (void)timeout, (void)clock;
    snprintf(err, errlen, "monitor_url: this herd was built without libcurl");
    return NULL;
}

static void scrape_source_close(struct scrape_source *s)
{
    free(s);
}
#endif

void monitor_url_host(const char *url, char *host, size_t len)
{
    const char *h = strstr(url, "://");
    h = h ? h + 3 : url;
    snprintf(host, len, "%.*s", (int)strcspn(h, "/"), h);
}

/* ---- the text ---- */

/* The device of a node_disk_* line, found or added; NULL when full. */
static struct disk_reading *reading_disk(struct reading *r, const char *labels)
{
    char device[32];
    if (promtext_label(labels, "device", device, sizeof device) != 0)
        return NULL;
    for (int i = 0; i < r->ndisks; i++)
        if (strcmp(r->disks[i].device, device) == 0)
            return &r->disks[i];
    if (r->ndisks == DISKS_MAX || (!r->disks && !(r->disks = calloc(DISKS_MAX, sizeof *r->disks))))
        return NULL;
    struct disk_reading *d = &r->disks[r->ndisks++];
    snprintf(d->device, sizeof d->device, "%s", device);
    d->reads = d->read_bytes = d->writes = d->write_bytes = NAN;
    d->io_s = d->weighted_s = d->in_flight = d->flushes = NAN;
    return d;
}

/* A metric's place in a struct: summed over its series, or set. */
struct column {
    const char *name;
    size_t offset;
    bool sum;
};

/* The column named `name` in cols, or NULL. */
static const struct column *column_find(const struct column *cols, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(name, cols[i].name) == 0)
            return &cols[i];
    return NULL;
}

static void reading_take_disk(struct reading *r, const char *name, const char *labels, double value)
{
    static const struct column cols[] = {
#define C(n, f) {"node_disk_" n, offsetof(struct disk_reading, f), false}
        C("reads_completed_total", reads),
        C("read_bytes_total", read_bytes),
        C("writes_completed_total", writes),
        C("written_bytes_total", write_bytes),
        C("io_time_seconds_total", io_s),
        C("io_time_weighted_seconds_total", weighted_s),
        C("io_now", in_flight),
        C("flush_requests_total", flushes),
#undef C
    };
    const struct column *c = column_find(cols, sizeof cols / sizeof cols[0], name);
    struct disk_reading *d = c ? reading_disk(r, labels) : NULL;
    if (d)
        *(double *)((char *)d + c->offset) = value;
}

/* A counter summed over its series (NaN until the first). */
static void sum_into(double *into, double value)
{
    *into = (isnan(*into) ? 0 : *into) + value;
}

static void reading_take(void *arg, const char *name, const char *labels, double value)
{
    struct reading *r = arg;
    if (strncmp(name, "node_disk_", 10) == 0) {
        reading_take_disk(r, name, labels, value);
        return;
    }
    if (strcmp(name, "node_cpu_seconds_total") == 0) {
        char mode[32];
        if (promtext_label(labels, "mode", mode, sizeof mode) != 0)
            return;
        for (int i = 0; i < CPU_MODES; i++)
            if (strcmp(mode, procfs_cpu_mode_name((enum cpu_mode)i)) == 0)
                r->cpu[i] += value;
        r->ncpus += strcmp(mode, "idle") == 0;
        return;
    }
    static const struct column cols[] = {
#define G(n, f) {n, offsetof(struct reading, f), false}
#define S(n, f)                                                                                    \
    {                                                                                              \
        n, offsetof(struct reading, f), true                                                       \
    }
        G("node_load1", load1),
        G("node_load5", load5),
        G("node_load15", load15),
        G("node_memory_MemTotal_bytes", mem_total),
        G("node_memory_MemFree_bytes", mem_free),
        G("node_memory_MemAvailable_bytes", mem_available),
        G("node_memory_Cached_bytes", mem_cached),
        G("node_memory_Dirty_bytes", mem_dirty),
        G("node_memory_Writeback_bytes", mem_writeback),
        G("node_nfsd_server_threads", nfsd_threads),
        G("node_nfsd_server_rpcs_total", nfsd_rpcs),
        G("node_nfsd_disk_bytes_read_total", nfsd_read),
        G("node_nfsd_disk_bytes_written_total", nfsd_written),
        G("node_nfsd_reply_cache_hits_total", rc_hits),
        G("node_nfsd_reply_cache_misses_total", rc_misses),
        G("node_nfsd_reply_cache_nocache_total", rc_nocache),
        G("node_nfsd_connections_total", nfsd_connections),
        S("node_nfsd_rpc_errors_total", nfsd_rpc_errors),
        S("node_nfsd_pool_packets_arrived_total", pool_packets),
        S("node_nfsd_pool_sockets_enqueued_total", pool_enqueued),
        S("node_nfsd_pool_threads_woken_total", pool_woken),
        S("node_nfsd_pool_threads_timedout_total", pool_timedout),
#undef G
#undef S
    };
    const struct column *c = column_find(cols, sizeof cols / sizeof cols[0], name);
    if (c && c->sum)
        sum_into((double *)((char *)r + c->offset), value);
    else if (c)
        *(double *)((char *)r + c->offset) = value;
    if (strncmp(name, "node_nfsd_", 10) == 0 && r->nseries < SERIES_MAX) {
        if (!r->series && !(r->series = calloc(SERIES_MAX, sizeof *r->series)))
            return;
        struct series *s = &r->series[r->nseries];
        if (strlen(name) >= sizeof s->name || strlen(labels) >= sizeof s->labels) {
            r->bad_labels = true;
            return;
        }
        snprintf(s->name, sizeof s->name, "%s", name);
        snprintf(s->labels, sizeof s->labels, "%s", labels);
        s->value = value;
        r->nseries++;
    }
}

static void reading_init(struct reading *r)
{
    memset(r, 0, sizeof *r);
    double *first = &r->load1, *last = &r->pool_timedout;
    for (double *p = first; p <= last; p++)
        *p = NAN;
}

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

/* A disk row per device on both pages (node_exporter's seconds as the
 * local source's busy share and weighted milliseconds). */
static void reading_disk_rows(const struct reading *now, const struct reading *prev, double t,
                              double dt, const char *host, struct monitor_batch *out)
{
    for (int i = 0; i < now->ndisks; i++) {
        const struct disk_reading *d = &now->disks[i], *p = NULL;
        for (int j = 0; j < prev->ndisks && !p; j++)
            if (strcmp(prev->disks[j].device, d->device) == 0)
                p = &prev->disks[j];
        if (!p)
            continue;
        struct monitor_disk row = {.t = t, .dt = dt};
        snprintf(row.host, sizeof row.host, "%s", host);
        snprintf(row.device, sizeof row.device, "%s", d->device);
        row.reads = d->reads - p->reads;
        row.read_bytes = d->read_bytes - p->read_bytes;
        row.writes = d->writes - p->writes;
        row.write_bytes = d->write_bytes - p->write_bytes;
        row.busy = dt > 0 ? (d->io_s - p->io_s) / dt : NAN;
        row.weighted_ms = (d->weighted_s - p->weighted_s) * 1000.0;
        row.in_flight = d->in_flight;
        row.flushes = d->flushes - p->flushes;
        monitor_add_disk(out, &row);
    }
}

/* Rows for reading now against the previous one. */
static void reading_rows(const struct reading *now, const struct reading *prev, double t, double dt,
                         const char *host, struct monitor_batch *out)
{
    struct monitor_sample row;
    monitor_sample_init(&row, t, dt, host, SOURCE);
    double d[CPU_MODES];
    for (int i = 0; i < CPU_MODES; i++)
        d[i] = fmax(0, now->cpu[i] - prev->cpu[i]);
    monitor_sample_set_cpu(&row, d);
    row.ncpus = now->ncpus ? now->ncpus : NAN;
    row.load1 = now->load1, row.load5 = now->load5, row.load15 = now->load15;
    row.mem_total = now->mem_total;
    row.mem_used =
        now->mem_total - (isnan(now->mem_available) ? now->mem_free : now->mem_available);
    row.mem_cached = now->mem_cached;
    row.mem_dirty = now->mem_dirty;
    row.mem_writeback = now->mem_writeback;
    row.nfsd_threads = now->nfsd_threads;
    row.nfsd_rpc_calls = now->nfsd_rpcs - prev->nfsd_rpcs;
    row.nfsd_rpc_bad = now->nfsd_rpc_errors - prev->nfsd_rpc_errors;
    row.nfsd_read_bytes = now->nfsd_read - prev->nfsd_read;
    row.nfsd_write_bytes = now->nfsd_written - prev->nfsd_written;
    row.nfsd_rc_hits = now->rc_hits - prev->rc_hits;
    row.nfsd_rc_misses = now->rc_misses - prev->rc_misses;
    row.nfsd_rc_nocache = now->rc_nocache - prev->rc_nocache;
    row.nfsd_net_tcp_conn = now->nfsd_connections - prev->nfsd_connections;
    row.pool_packets = now->pool_packets - prev->pool_packets;
    row.pool_sockets_enqueued = now->pool_enqueued - prev->pool_enqueued;
    row.pool_threads_woken = now->pool_woken - prev->pool_woken;
    row.pool_threads_timedout = now->pool_timedout - prev->pool_timedout;
    monitor_add_sample(out, &row);
    reading_disk_rows(now, prev, t, dt, host, out);

    for (int i = 0; i < now->nseries; i++) {
        const struct series *s = &now->series[i];
        struct monitor_metric m = {.t = t, .dt = dt, .value = s->value};
        snprintf(m.host, sizeof m.host, "%s", host);
        snprintf(m.source, sizeof m.source, SOURCE);
        snprintf(m.name, sizeof m.name, "%s", s->name);
        snprintf(m.labels, sizeof m.labels, "%s", s->labels);
        if (ends_with(s->name, "_total")) { /* a counter: its change, when it changed */
            m.value = 0;
            for (int j = 0; j < prev->nseries; j++)
                if (strcmp(prev->series[j].name, s->name) == 0 &&
                    strcmp(prev->series[j].labels, s->labels) == 0)
                    m.value = s->value - prev->series[j].value;
            if (m.value == 0 || isnan(m.value))
                continue;
        }
        monitor_add_metric(out, &m);
    }
}

/* The exporter (or its host) restarted between prev and now: its CPU
 * seconds, which only grow, went back. */
static bool reading_restarted(const struct reading *now, const struct reading *prev)
{
    double a = 0, b = 0;
    for (int i = 0; i < CPU_MODES; i++)
        a += now->cpu[i], b += prev->cpu[i];
    return a < b;
}

#ifdef HERD_HAVE_CURL
static bool scrape_source_sample(struct scrape_source *s, double t, struct monitor_batch *out)
{
    if (!s)
        return false;
    struct reading now;
    reading_init(&now);
    double asked = t; /* the request goes out now */
    int rc = scrape_fetch(s);
    if (rc == 0 && s->clock) /* the page tells the server's state when it came */
        t = clock_now(s->clock);
    if (rc == 0 && promtext_parse(s->body, s->len, reading_take, &now) < 0) {
        snprintf(s->error, sizeof s->error, "the page is not Prometheus text");
        rc = -1;
    }
    if (rc < 0) {
        if (!s->failing)
            monitor_add_note(out, t, s->host, SOURCE, "%s: %s", s->url, s->error);
        s->failing = true;
        free(now.series);
        free(now.disks);
        return false;
    }
    if (s->failing)
        monitor_add_note(out, t, s->host, SOURCE, "%s: answering again", s->url);
    s->failing = false;
    if (s->have_prev && t > s->prev_t && !reading_restarted(&now, &s->prev))
        reading_rows(&now, &s->prev, t, t - s->prev_asked, s->host, out);
    free(s->prev.series);
    free(s->prev.disks);
    s->prev = now;
    s->prev_t = t;
    s->prev_asked = asked;
    s->have_prev = true;
    return true;
}
#else
static bool scrape_source_sample(struct scrape_source *s, double t, struct monitor_batch *out)
{
    (void)s, (void)t, (void)out;
    (void)reading_rows;
    (void)reading_restarted;
    (void)reading_take;
    (void)reading_init;
    return false;
}
#endif

static bool scrape_wanted(const struct monitor_config *cfg)
{
    return cfg->url && cfg->url[0];
}

static void *scrape_open(const struct monitor_config *cfg, char *err, size_t errlen)
{
    /* a scrape may take one interval, at least SCRAPE_TIMEOUT_MIN (a busy
     * server answers slowly: a missed scrape is a gap), at most 10 s */
    double timeout = cfg->interval > 10 ? 10 : cfg->interval;
    if (cfg->interval < SCRAPE_TIMEOUT_MIN)
        timeout = SCRAPE_TIMEOUT_MIN;
    return scrape_source_open(cfg->url, timeout, cfg->clock, err, errlen);
}

static bool scrape_sample(void *state, double t, double dt, struct monitor_batch *out)
{
    (void)dt; /* a row covers the time since the last good scrape */
    return scrape_source_sample(state, t, out);
}

static void scrape_close(void *state)
{
    scrape_source_close(state);
}

#ifdef HERD_HAVE_CURL
static const char *scrape_curl_version(void)
{
    return curl_version_info(CURLVERSION_NOW)->version;
}
#endif

const struct monitor_source_ops monitor_source_scrape = {
    .name = SOURCE,
#ifdef HERD_HAVE_CURL
    .library = "libcurl",
    .version = scrape_curl_version,
#endif
    .wanted = scrape_wanted,
    .open = scrape_open,
    .sample = scrape_sample,
    .close = scrape_close,
};
