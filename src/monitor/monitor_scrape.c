/* monitor_scrape.c — the monitor's node_exporter source: fetch the
 * Prometheus text at a URL with libcurl at every sample and turn it into
 * the same rows as the local /proc source (CPU by mode from
 * node_cpu_seconds_total, load, memory, node_nfsd_*), plus every
 * node_nfsd_* gauge and every node_nfsd_* counter that changed as a
 * metric. A failed scrape is noted when the URL stops answering and again
 * when it answers; the sample after a failure is a new baseline. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "monitor_sources.h"
#include "promtext.h"

#define SOURCE "node_exporter"
#define SERIES_MAX 1024
#define BODY_MAX (16u << 20)

/* One node_nfsd_* series. */
struct series {
    char name[MONITOR_NAME_MAX];
    char labels[MONITOR_NAME_MAX];
    double value;
};

/* What one scrape said. */
struct reading {
    double cpu[CPU_MODES];
    int ncpus;
    double load1, load5, load15;
    double mem_total, mem_free, mem_available, mem_cached, mem_dirty, mem_writeback;
    double nfsd_threads, nfsd_rpcs, nfsd_rpc_errors, nfsd_read, nfsd_written;
    double rc_hits, rc_misses, rc_nocache, nfsd_connections;
    struct series *series;
    int nseries;
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
    struct reading prev;
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

static struct scrape_source *scrape_source_open(const char *url, double timeout, char *err,
                                                size_t errlen)
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
    const char *h = strstr(url, "://") + 3;
    snprintf(s->host, sizeof s->host, "%.*s", (int)strcspn(h, "/"), h);
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

static struct scrape_source *scrape_source_open(const char *url, double timeout, char *err,
                                                size_t errlen)
{
    (void)url, (void)timeout;
    snprintf(err, errlen, "monitor_url: this herd was built without libcurl");
    return NULL;
}

static void scrape_source_close(struct scrape_source *s)
{
    free(s);
}
#endif

/* ---- the text ---- */

static void reading_take(void *arg, const char *name, const char *labels, double value)
{
    struct reading *r = arg;
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
    static const struct {
        const char *name;
        size_t offset;
    } gauges[] = {
#define G(n, f) {n, offsetof(struct reading, f)}
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
#undef G
    };
    for (size_t i = 0; i < sizeof gauges / sizeof gauges[0]; i++)
        if (strcmp(name, gauges[i].name) == 0)
            *(double *)((char *)r + gauges[i].offset) = value;
    if (strcmp(name, "node_nfsd_rpc_errors_total") == 0)
        r->nfsd_rpc_errors = (isnan(r->nfsd_rpc_errors) ? 0 : r->nfsd_rpc_errors) + value;
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
    double *first = &r->load1, *last = &r->nfsd_connections;
    for (double *p = first; p <= last; p++)
        *p = NAN;
}

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

/* Rows for reading now against the previous one. */
static void reading_rows(const struct reading *now, const struct reading *prev, double t, double dt,
                         const char *host, struct monitor_batch *out)
{
    struct monitor_sample row;
    monitor_sample_init(&row, t, dt, host, SOURCE);
    double total = 0, d[CPU_MODES];
    for (int i = 0; i < CPU_MODES; i++)
        total += d[i] = fmax(0, now->cpu[i] - prev->cpu[i]);
    for (int i = 0; i < CPU_MODES && total > 0; i++)
        row.cpu[i] = d[i] / total;
    if (total > 0)
        row.cpu_busy = 1.0 - row.cpu[CPU_IDLE] - row.cpu[CPU_IOWAIT];
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
    monitor_add_sample(out, &row);

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

#ifdef HERD_HAVE_CURL
static void scrape_source_sample(struct scrape_source *s, double t, double dt,
                                 struct monitor_batch *out)
{
    if (!s)
        return;
    struct reading now;
    reading_init(&now);
    int rc = scrape_fetch(s);
    if (rc == 0 && promtext_parse(s->body, s->len, reading_take, &now) < 0) {
        snprintf(s->error, sizeof s->error, "the page is not Prometheus text");
        rc = -1;
    }
    if (rc < 0) {
        if (!s->failing)
            monitor_add_note(out, t, s->host, SOURCE, "%s: %s", s->url, s->error);
        s->failing = true;
        s->have_prev = false;
        free(now.series);
        return;
    }
    if (s->failing)
        monitor_add_note(out, t, s->host, SOURCE, "%s: answering again", s->url);
    s->failing = false;
    if (s->have_prev && dt > 0)
        reading_rows(&now, &s->prev, t, dt, s->host, out);
    free(s->prev.series);
    s->prev = now;
    s->have_prev = true;
}
#else
static void scrape_source_sample(struct scrape_source *s, double t, double dt,
                                 struct monitor_batch *out)
{
    (void)s, (void)t, (void)dt, (void)out;
    (void)reading_rows;
    (void)reading_take;
    (void)reading_init;
}
#endif

static bool scrape_wanted(const struct monitor_config *cfg)
{
    return cfg->url && cfg->url[0];
}

static void *scrape_open(const struct monitor_config *cfg, char *err, size_t errlen)
{
    /* a scrape may take up to one interval, within 0.25 s .. 10 s */
    double timeout = cfg->interval < 0.25 ? 0.25 : cfg->interval > 10 ? 10 : cfg->interval;
    return scrape_source_open(cfg->url, timeout, err, errlen);
}

static void scrape_sample(void *state, double t, double dt, struct monitor_batch *out)
{
    scrape_source_sample(state, t, dt, out);
}

static void scrape_close(void *state)
{
    scrape_source_close(state);
}

const struct monitor_source_ops monitor_source_scrape = {
    .name = SOURCE,
    .wanted = scrape_wanted,
    .open = scrape_open,
    .sample = scrape_sample,
    .close = scrape_close,
};
