/* monitor_batch.c — appending, moving, packing the monitor's rows
 * (monitor_batch.h). */
#include "monitor_batch.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void monitor_sample_set_cpu(struct monitor_sample *s, const double ticks[CPU_MODES])
{
    double total = 0, busy = 0;
    for (int i = 0; i < CPU_MODES; i++) {
        total += ticks[i];
        if (i != CPU_IDLE && i != CPU_IOWAIT)
            busy += ticks[i];
    }
    if (!(total > 0))
        return;
    for (int i = 0; i < CPU_MODES; i++)
        s->cpu[i] = ticks[i] / total;
    s->cpu_busy = busy / total;
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
