/* monitor.c — the sampler thread (see monitor.h): keeps the schedule on
 * the common clock, asks each source for a sample, holds the rows until
 * the runner takes them; and the batch operations (append, move, pack for
 * a message, unpack). */
#include "monitor.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "monitor_sources.h"

struct monitor {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stopping;
    double t_first, interval;
    const struct clock *clock;
    struct proc_source *proc;
    struct scrape_source *scrape;
    struct monitor_batch pending; /* rows not yet taken (under lock) */
};

/* ---- batches ---- */

/* Every batch array of n items has room for batch_cap(n): 16, or the
 * next power of two, so that a push reallocates only when n reaches it. */
static size_t batch_cap(size_t n)
{
    size_t cap = 16;
    while (cap < n)
        cap *= 2;
    return cap;
}

/* Grow *v (of *n items) by one item of size; returns it, or NULL. */
static void *batch_push(void **v, size_t *n, size_t size)
{
    if (*n == 0 || (*n >= 16 && (*n & (*n - 1)) == 0)) {
        void *p = realloc(*v, batch_cap(*n + 1) * size);
        if (!p)
            return NULL;
        *v = p;
    }
    return (char *)*v + (*n)++ * size;
}

#define BATCH_ADD(b, field, count, row)                                                            \
    do {                                                                                           \
        void *v = (b)->field;                                                                      \
        void *slot = batch_push(&v, &(b)->count, sizeof *(row));                                   \
        (b)->field = v;                                                                            \
        if (slot)                                                                                  \
            memcpy(slot, (row), sizeof *(row));                                                    \
    } while (0)

void monitor_add_sample(struct monitor_batch *b, const struct monitor_sample *row)
{
    BATCH_ADD(b, samples, nsamples, row);
}

void monitor_add_metric(struct monitor_batch *b, const struct monitor_metric *row)
{
    BATCH_ADD(b, metrics, nmetrics, row);
}

void monitor_add_process(struct monitor_batch *b, const struct monitor_process *row)
{
    BATCH_ADD(b, processes, nprocesses, row);
}

void monitor_add_disk(struct monitor_batch *b, const struct monitor_disk *row)
{
    BATCH_ADD(b, disks, ndisks, row);
}

void monitor_add_note(struct monitor_batch *b, double t, const char *host, const char *source,
                      const char *fmt, ...)
{
    struct monitor_note note = {.t = t};
    snprintf(note.host, sizeof note.host, "%s", host);
    snprintf(note.source, sizeof note.source, "%s", source);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note.text, sizeof note.text, fmt, ap);
    va_end(ap);
    BATCH_ADD(b, notes, nnotes, &note);
}

void monitor_sample_init(struct monitor_sample *s, double t, double dt, const char *host,
                         const char *source)
{
    memset(s, 0, sizeof *s);
    double *first = &s->cpu[0], *last = &s->pool_threads_timedout;
    for (double *p = first; p <= last; p++)
        *p = NAN;
    s->t = t;
    s->dt = dt;
    snprintf(s->host, sizeof s->host, "%s", host);
    snprintf(s->source, sizeof s->source, "%s", source);
}

/* The arrays of a batch, in pack order. */
#define BATCH_ARRAYS 5
static void batch_arrays(struct monitor_batch *b, void ***v, size_t **n, size_t *size)
{
    v[0] = (void **)&b->samples, n[0] = &b->nsamples, size[0] = sizeof *b->samples;
    v[1] = (void **)&b->metrics, n[1] = &b->nmetrics, size[1] = sizeof *b->metrics;
    v[2] = (void **)&b->processes, n[2] = &b->nprocesses, size[2] = sizeof *b->processes;
    v[3] = (void **)&b->disks, n[3] = &b->ndisks, size[3] = sizeof *b->disks;
    v[4] = (void **)&b->notes, n[4] = &b->nnotes, size[4] = sizeof *b->notes;
}

int monitor_batch_move(struct monitor_batch *dst, struct monitor_batch *src)
{
    void **dv[BATCH_ARRAYS], **sv[BATCH_ARRAYS];
    size_t *dn[BATCH_ARRAYS], *sn[BATCH_ARRAYS], size[BATCH_ARRAYS];
    batch_arrays(dst, dv, dn, size);
    batch_arrays(src, sv, sn, size);
    int rc = 0;
    for (int i = 0; i < BATCH_ARRAYS; i++) {
        if (*sn[i] == 0)
            continue;
        void *p = realloc(*dv[i], batch_cap(*dn[i] + *sn[i]) * size[i]);
        if (!p) {
            rc = -ENOMEM;
            continue;
        }
        memcpy((char *)p + *dn[i] * size[i], *sv[i], *sn[i] * size[i]);
        *dv[i] = p;
        *dn[i] += *sn[i];
    }
    monitor_batch_free(src);
    return rc;
}

void monitor_batch_free(struct monitor_batch *b)
{
    free(b->samples);
    free(b->metrics);
    free(b->processes);
    free(b->disks);
    free(b->notes);
    memset(b, 0, sizeof *b);
}

int monitor_batch_pack(const struct monitor_batch *b, void **buf, size_t *len)
{
    struct monitor_batch copy = *b;
    void **v[BATCH_ARRAYS];
    size_t *n[BATCH_ARRAYS], size[BATCH_ARRAYS];
    batch_arrays(&copy, v, n, size);
    size_t total = BATCH_ARRAYS * sizeof(uint64_t);
    for (int i = 0; i < BATCH_ARRAYS; i++)
        total += *n[i] * size[i];
    char *p = malloc(total);
    if (!p)
        return -ENOMEM;
    char *q = p + BATCH_ARRAYS * sizeof(uint64_t);
    for (int i = 0; i < BATCH_ARRAYS; i++) {
        uint64_t count = *n[i];
        memcpy(p + i * sizeof count, &count, sizeof count);
        if (count)
            memcpy(q, *v[i], *n[i] * size[i]);
        q += *n[i] * size[i];
    }
    *buf = p;
    *len = total;
    return 0;
}

int monitor_batch_unpack(const void *buf, size_t len, struct monitor_batch *out)
{
    memset(out, 0, sizeof *out);
    void **v[BATCH_ARRAYS];
    size_t *n[BATCH_ARRAYS], size[BATCH_ARRAYS];
    batch_arrays(out, v, n, size);
    const char *p = buf;
    size_t off = BATCH_ARRAYS * sizeof(uint64_t);
    if (len < off)
        return -EINVAL;
    for (int i = 0; i < BATCH_ARRAYS; i++) {
        uint64_t count;
        memcpy(&count, p + i * sizeof count, sizeof count);
        if (count > (len - off) / size[i]) {
            monitor_batch_free(out);
            return -EINVAL;
        }
        if (count) {
            *v[i] = malloc(batch_cap(count) * size[i]);
            if (!*v[i]) {
                monitor_batch_free(out);
                return -ENOMEM;
            }
            memcpy(*v[i], p + off, count * size[i]);
        }
        *n[i] = count;
        off += count * size[i];
    }
    return off == len ? 0 : (monitor_batch_free(out), -EINVAL);
}

/* ---- the thread ---- */

static void monitor_sample_all(struct monitor *m, double t, double dt)
{
    struct monitor_batch rows = {0};
    if (m->proc)
        proc_source_sample(m->proc, t, dt, &rows);
    if (m->scrape)
        scrape_source_sample(m->scrape, t, dt, &rows);
    pthread_mutex_lock(&m->lock);
    monitor_batch_move(&m->pending, &rows);
    pthread_mutex_unlock(&m->lock);
}

/* Wait until common time t or a stop request; true when stopping. */
static bool monitor_wait(struct monitor *m, double t)
{
    double local = t + m->clock->base;
    struct timespec ts = {.tv_sec = (time_t)local};
    ts.tv_nsec = (long)((local - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L)
        ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    pthread_mutex_lock(&m->lock);
    while (!m->stopping && clock_mono() < local)
        if (pthread_cond_timedwait(&m->wake, &m->lock, &ts) == ETIMEDOUT)
            break;
    bool stopping = m->stopping;
    pthread_mutex_unlock(&m->lock);
    return stopping;
}

static void *monitor_main(void *arg)
{
    struct monitor *m = arg;
    sigset_t all; /* stop requests and lock alarms are the main thread's */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    if (monitor_wait(m, m->t_first))
        return NULL;
    double prev = clock_now(m->clock);
    monitor_sample_all(m, prev, 0); /* the baseline */
    for (long k = 1;; k++) {
        double tick = m->t_first + (double)k * m->interval;
        double now = clock_now(m->clock);
        if (tick < now) /* a slow sample: skip the ticks it overran */
            k = (long)ceil((now - m->t_first) / m->interval),
            tick = m->t_first + (double)k * m->interval;
        bool stopping = monitor_wait(m, tick);
        now = clock_now(m->clock);
        if (stopping) {
            if (now - prev >= 0.02) /* a last, shorter interval up to the stop */
                monitor_sample_all(m, now, now - prev);
            return NULL;
        }
        monitor_sample_all(m, now, now - prev);
        prev = now;
    }
}

struct monitor *monitor_start(const struct monitor_config *cfg, double t_first, char *err,
                              size_t errlen)
{
    struct monitor *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    m->t_first = t_first;
    m->interval = cfg->interval;
    m->clock = cfg->clock;
    if (cfg->local)
        m->proc = proc_source_open(cfg);
    if (cfg->url && cfg->url[0]) {
        double timeout = cfg->interval < 0.25 ? 0.25 : cfg->interval > 10 ? 10 : cfg->interval;
        m->scrape = scrape_source_open(cfg->url, timeout, err, errlen);
        if (!m->scrape) {
            proc_source_close(m->proc);
            free(m);
            return NULL;
        }
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&m->wake, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&m->lock, NULL);
    int rc = pthread_create(&m->thread, NULL, monitor_main, m);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the sampler thread: %s", strerror(rc));
        proc_source_close(m->proc);
        scrape_source_close(m->scrape);
        pthread_cond_destroy(&m->wake);
        pthread_mutex_destroy(&m->lock);
        free(m);
        return NULL;
    }
    return m;
}

void monitor_take(struct monitor *m, struct monitor_batch *out)
{
    pthread_mutex_lock(&m->lock);
    struct monitor_batch rows = m->pending;
    memset(&m->pending, 0, sizeof m->pending);
    pthread_mutex_unlock(&m->lock);
    monitor_batch_move(out, &rows);
}

void monitor_stop(struct monitor *m, struct monitor_batch *out)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    m->stopping = true;
    pthread_cond_signal(&m->wake);
    pthread_mutex_unlock(&m->lock);
    pthread_join(m->thread, NULL);
    monitor_take(m, out);
    proc_source_close(m->proc);
    scrape_source_close(m->scrape);
    pthread_cond_destroy(&m->wake);
    pthread_mutex_destroy(&m->lock);
    free(m);
}
