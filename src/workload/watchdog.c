/* watchdog.c — the per-rank thread that records operations in flight for
 * too long (see watchdog.h). */
#include "watchdog.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Seconds between looks: a quarter of the threshold, between 10 ms and 1 s,
 * so that a call lasting min(1.25 x threshold, threshold + 1 s) or more is
 * in flight at some look however the looks fall (a fixed 1 s missed calls
 * that ended within a second of the threshold, e.g. at op_timeout). */
static double watchdog_period(double threshold)
{
    double p = threshold / 4;
    if (p < 0.01)
        return 0.01;
    return p > 1.0 ? 1.0 : p;
}

struct watchdog {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stopping;
    struct inflight *f;
    int nf;
    const struct clock *clock;
    double threshold;
    int rank;
    char host[64];
    struct stuck_entry *entries;
    size_t n, cap;
    /* Per client: the start of its call last recorded, while in flight,
     * and that entry's index. */
    double *open_since;
    size_t *open_entry;
};

static void watchdog_look_one(struct watchdog *w, int k)
{
    struct inflight *f = &w->f[k];
    double since = atomic_load_explicit(&f->since, memory_order_acquire);
    double now = clock_mono();
    if (w->open_since[k] > 0 && since != w->open_since[k]) {
        /* The recorded call returned. */
        w->entries[w->open_entry[k]].returned = now - w->clock->base;
        w->open_since[k] = 0;
    }
    if (since <= 0 || since == w->open_since[k] || now - since < w->threshold)
        return;
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 8;
        void *p = realloc(w->entries, cap * sizeof *w->entries);
        if (!p)
            return;
        w->entries = p;
        w->cap = cap;
    }
    struct stuck_entry *e = &w->entries[w->n++];
    memset(e, 0, sizeof *e);
    e->rank = w->rank;
    e->client = k;
    e->op = atomic_load_explicit(&f->op, memory_order_relaxed);
    const char *path = atomic_load_explicit(&f->path, memory_order_relaxed);
    snprintf(e->path, sizeof e->path, "%s", path ? path : "");
    e->since = since - w->clock->base;
    e->noticed = now - w->clock->base;
    e->returned = -1;
    w->open_since[k] = since;
    w->open_entry[k] = w->n - 1;
    char who[48];
    if (w->nf > 1)
        snprintf(who, sizeof who, "rank %d client %d", w->rank, k);
    else
        snprintf(who, sizeof who, "rank %d", w->rank);
    fprintf(stderr, "herd: %s on %s: %s of %s stuck for %.0f s\n", who, w->host, op_name(e->op),
            e->path, now - since);
}

static void watchdog_look(struct watchdog *w)
{
    for (int k = 0; k < w->nf; k++)
        watchdog_look_one(w, k);
}

static void watchdog_free(struct watchdog *w)
{
    free(w->open_since);
    free(w->open_entry);
    free(w->entries);
    free(w);
}

static void *watchdog_main(void *arg)
{
    struct watchdog *w = arg;
    pthread_mutex_lock(&w->lock);
    while (!w->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        long long ns = (long long)ts.tv_nsec + (long long)(watchdog_period(w->threshold) * 1e9);
        ts.tv_sec += (time_t)(ns / 1000000000);
        ts.tv_nsec = (long)(ns % 1000000000);
        pthread_cond_timedwait(&w->wake, &w->lock, &ts);
        if (!w->stopping)
            watchdog_look(w);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

struct watchdog *watchdog_start(struct inflight *f, int nf, const struct clock *clock,
                                double threshold, int rank, const char *host)
{
    struct watchdog *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->open_since = calloc((size_t)nf, sizeof *w->open_since);
    w->open_entry = calloc((size_t)nf, sizeof *w->open_entry);
    if (!w->open_since || !w->open_entry) {
        watchdog_free(w);
        return NULL;
    }
    w->f = f;
    w->nf = nf;
    w->clock = clock;
    w->threshold = threshold;
    w->rank = rank;
    snprintf(w->host, sizeof w->host, "%s", host);
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    if (pthread_create(&w->thread, NULL, watchdog_main, w) != 0) {
        watchdog_free(w);
        return NULL;
    }
    return w;
}

void watchdog_stop(struct watchdog *w, struct stuck_entry **entries, size_t *n)
{
    *entries = NULL;
    *n = 0;
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->stopping = true;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    for (int k = 0; k < w->nf; k++)
        if (w->open_since[k] > 0 &&
            atomic_load_explicit(&w->f[k].since, memory_order_acquire) != w->open_since[k])
            w->entries[w->open_entry[k]].returned = clock_mono() - w->clock->base;
    *entries = w->entries;
    *n = w->n;
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->wake);
    w->entries = NULL;
    watchdog_free(w);
}
