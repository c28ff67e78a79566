/* monitor.c — the sampler thread (see monitor.h): keeps the schedule on
 * the common clock, asks each source for a sample, holds the rows until
 * the runner takes them. */
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

/* Every source, in sampling order. */
static const struct monitor_source_ops *const monitor_sources[] = {
    &monitor_source_proc,
    &monitor_source_scrape,
};
#define MONITOR_SOURCES (sizeof monitor_sources / sizeof monitor_sources[0])

const char *monitor_library_at(size_t i, const char **version)
{
    for (size_t k = 0; k < MONITOR_SOURCES; k++) {
        const struct monitor_source_ops *s = monitor_sources[k];
        if (s->library && i-- == 0) {
            *version = s->version();
            return s->library;
        }
    }
    return NULL;
}

/* The last reading, at the stop, comes at least this long after the one
 * before: a shorter window's CPU shares are noise (/proc counts 10 ms
 * ticks). */
#define MONITOR_LAST_MIN 0.02

struct monitor {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stopping;
    double t_first, interval;
    const struct clock *clock;
    void *state[MONITOR_SOURCES]; /* one per source of monitor_sources, NULL = not used */
    bool read[MONITOR_SOURCES];   /* the source has taken a reading (the thread's) */
    bool baseline_in;             /* every source has (under lock) */
    struct monitor_batch pending; /* rows not yet taken (under lock) */
};

/* ---- the thread ---- */

static void monitor_sample_all(struct monitor *m, double t, double dt)
{
    struct monitor_batch rows = {0};
    bool all = true;
    for (size_t i = 0; i < MONITOR_SOURCES; i++) {
        if (!m->state[i])
            continue;
        if (monitor_sources[i]->sample(m->state[i], t, dt, &rows))
            m->read[i] = true;
        all = all && m->read[i];
    }
    pthread_mutex_lock(&m->lock);
    monitor_batch_move(&m->pending, &rows);
    m->baseline_in = all;
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
        if (stopping) { /* a last, shorter interval: its reading follows the stop request */
            if (now - prev < MONITOR_LAST_MIN) {
                clock_sleep_until(m->clock, prev + MONITOR_LAST_MIN);
                now = clock_now(m->clock);
            }
            monitor_sample_all(m, now, now - prev);
            return NULL;
        }
        monitor_sample_all(m, now, now - prev);
        prev = now;
    }
}

static void monitor_close_sources(struct monitor *m)
{
    for (size_t i = 0; i < MONITOR_SOURCES; i++)
        if (m->state[i])
            monitor_sources[i]->close(m->state[i]);
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
    for (size_t i = 0; i < MONITOR_SOURCES; i++) {
        if (!monitor_sources[i]->wanted(cfg))
            continue;
        m->state[i] = monitor_sources[i]->open(cfg, err, errlen);
        if (!m->state[i]) {
            monitor_close_sources(m);
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
        monitor_close_sources(m);
        pthread_cond_destroy(&m->wake);
        pthread_mutex_destroy(&m->lock);
        free(m);
        return NULL;
    }
    return m;
}

bool monitor_baseline_in(struct monitor *m)
{
    pthread_mutex_lock(&m->lock);
    bool in = m->baseline_in;
    pthread_mutex_unlock(&m->lock);
    return in;
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
    monitor_close_sources(m);
    pthread_cond_destroy(&m->wake);
    pthread_mutex_destroy(&m->lock);
    free(m);
}
