/* prefetch.c — a reader thread feeding a ring of buffers (see prefetch.h);
 * for a backend that must be called from one thread only, the same reads
 * done in the consumer's thread, one slot at a time. */
#include "prefetch.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "prefault.h"

#define PREFETCH_DEPTH 3 /* buffers: one being digested, up to two read ahead */
#define PREFETCH_SLOT                                                                              \
    (1u << 20) /* a slot holds whole blocks, about this much:                                      \
                  one hand-over per MiB, not per block */

struct slot {
    unsigned char *buf;
    ssize_t len; /* bytes in it */
};

struct prefetch {
    struct phase_ctx *c;
    struct backend_file *f;
    struct rank_record *r;
    const char *path;
    uint64_t offset, end;
    size_t block;
    size_t slot; /* bytes per slot: a multiple of block */

    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    struct slot slots[PREFETCH_DEPTH];
    unsigned filled;   /* slots written by the reader, in total */
    unsigned taken;    /* slots handed to the consumer, in total */
    bool done;         /* the reader has finished (end, error or stop) */
    int status;        /* 0, or -errno why it finished early */
    bool cancel;       /* the consumer wants it to stop */
    bool inline_reads; /* no thread: prefetch_next reads (backend one_thread, or a rank of many
                          clients) */
    uint64_t next;     /* inline: where the next slot starts */
};

static int prefetch_read(struct prefetch *p, unsigned char *buf, uint64_t off, size_t n,
                         ssize_t *got)
{
    struct phase_ctx *c = p->c;
    struct rank_record *r = p->r;
    struct pace_call call;
    if (!workload_pace(c, &call)) {
        *got = 0;
        return -EINTR; /* as a stop between reads */
    }
    double t0 = op_begin(c, OP_READ, p->path);
    *got = c->be->pread(c->be_ctx, p->f, buf, n, off);
    workload_done(c, r, OP_READ, t0, *got, p->path, &r->t_io);
    workload_paced(c, r, &call);
    if (*got < 0)
        return (int)*got;
    r->bytes += (uint64_t)*got;
    progress_count_add(c->progress, (uint64_t)*got);
    if ((size_t)*got < n) { /* the file is shorter than the phase expects */
        workload_fail(c, r, OP_READ, -ENODATA, p->path);
        return -ENODATA;
    }
    return 0;
}

/* Fill one slot with consecutive blocks from off; returns 0 or -errno
 * (the bytes read before a failure are still in the slot). */
static int prefetch_fill(struct prefetch *p, struct slot *s, uint64_t off)
{
    s->len = 0;
    size_t want = (size_t)(p->end - off < p->slot ? p->end - off : p->slot);
    while ((size_t)s->len < want) {
        if (workload_should_stop(p->c))
            return -EINTR;
        size_t n = want - (size_t)s->len < p->block ? want - (size_t)s->len : p->block;
        ssize_t got;
        int rc = prefetch_read(p, s->buf + s->len, off + (uint64_t)s->len, n, &got);
        s->len += got > 0 ? got : 0;
        if (rc < 0)
            return rc;
    }
    return 0;
}

static void *prefetch_main(void *arg)
{
    struct prefetch *p = arg;
    int status = 0;
    for (uint64_t off = p->offset; off < p->end && status == 0;) {
        pthread_mutex_lock(&p->lock);
        /* The slot handed out last is still being used: keep it. */
        while (p->filled - p->taken >= PREFETCH_DEPTH - 1 && !p->cancel)
            pthread_cond_wait(&p->changed, &p->lock);
        bool cancel = p->cancel;
        struct slot *s = &p->slots[p->filled % PREFETCH_DEPTH];
        pthread_mutex_unlock(&p->lock);
        if (cancel) {
            status = -EINTR;
            break;
        }
        status = prefetch_fill(p, s, off);
        pthread_mutex_lock(&p->lock);
        if (s->len > 0)
            p->filled++; /* a partly filled slot is still handed over: it is data */
        pthread_cond_broadcast(&p->changed);
        pthread_mutex_unlock(&p->lock);
        off += (uint64_t)s->len;
    }
    pthread_mutex_lock(&p->lock);
    p->done = true;
    p->status = status;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* Bytes per slot for blocks of block bytes: whole blocks, about PREFETCH_SLOT. */
static size_t prefetch_slot_bytes(size_t block)
{
    return block >= PREFETCH_SLOT ? block : PREFETCH_SLOT / block * block;
}

/* A slot's buffer: its bytes rounded up to whole pages. */
static size_t prefetch_buffer_bytes(size_t slot)
{
    return (slot + 4095) / 4096 * 4096;
}

void prefetch_prime(size_t block)
{
    if (block > 0)
        prefault_heap(prefetch_buffer_bytes(prefetch_slot_bytes(block)), PREFETCH_DEPTH);
}

struct prefetch *prefetch_start(struct phase_ctx *c, struct backend_file *f, struct rank_record *r,
                                const char *path, uint64_t offset, uint64_t length)
{
    struct prefetch *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    *p = (struct prefetch){.c = c,
                           .f = f,
                           .r = r,
                           .path = path,
                           .offset = offset,
                           .end = offset + length,
                           .block = c->ph->block_size};
    p->slot = prefetch_slot_bytes(p->block);
    size_t size = prefetch_buffer_bytes(p->slot);
    for (int i = 0; i < PREFETCH_DEPTH; i++) {
        p->slots[i].buf = aligned_alloc(4096, size);
        if (!p->slots[i].buf) {
            for (int j = 0; j < i; j++)
                free(p->slots[j].buf);
            free(p);
            return NULL;
        }
    }
    p->inline_reads = c->be->one_thread || c->clients > 1; /* fibers: one thread */
    p->next = offset;
    if (p->inline_reads)
        return p;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->changed, NULL);
    if (pthread_create(&p->thread, NULL, prefetch_main, p) != 0) {
        for (int i = 0; i < PREFETCH_DEPTH; i++)
            free(p->slots[i].buf);
        free(p);
        return NULL;
    }
    return p;
}

/* prefetch_next without a thread: read the next slot here. */
static ssize_t prefetch_next_inline(struct prefetch *p, const void **data)
{
    if (p->done || p->next >= p->end) {
        p->done = true;
        return p->status;
    }
    struct slot *s = &p->slots[0];
    int rc = prefetch_fill(p, s, p->next);
    p->next += (uint64_t)s->len;
    if (rc < 0) {
        p->done = true;
        p->status = rc;
    }
    if (s->len == 0)
        return p->status;
    *data = s->buf; /* its bytes first; the failure comes with the next call */
    return s->len;
}

ssize_t prefetch_next(struct prefetch *p, const void **data)
{
    if (p->inline_reads)
        return prefetch_next_inline(p, data);
    pthread_mutex_lock(&p->lock);
    while (p->filled == p->taken && !p->done)
        pthread_cond_wait(&p->changed, &p->lock);
    ssize_t len;
    if (p->filled > p->taken) {
        struct slot *s = &p->slots[p->taken % PREFETCH_DEPTH];
        *data = s->buf;
        len = s->len;
        p->taken++; /* frees the block handed out before this one */
        pthread_cond_broadcast(&p->changed);
    } else {
        len = p->status; /* 0 at the end */
    }
    pthread_mutex_unlock(&p->lock);
    return len;
}

void prefetch_finish(struct prefetch *p)
{
    if (!p)
        return;
    if (!p->inline_reads) {
        pthread_mutex_lock(&p->lock);
        p->cancel = true;
        pthread_cond_broadcast(&p->changed);
        pthread_mutex_unlock(&p->lock);
        pthread_join(p->thread, NULL);
        pthread_mutex_destroy(&p->lock);
        pthread_cond_destroy(&p->changed);
    }
    for (int i = 0; i < PREFETCH_DEPTH; i++)
        free(p->slots[i].buf);
    free(p);
}
