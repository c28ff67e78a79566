/* workload_io.c — the bandwidth workloads: write, read and md5 of unique
 * or shared files, the seed's `dd` and `md5sum` runs. One rank's share of
 * a phase: for each iteration and each of its files (files_per_rank),
 * open, move file_size bytes block by block, (fsync,) close, and for md5
 * digest what was read and compare it with the digest the pattern
 * predicts. A failing call is counted and ends only the iteration it
 * happened in.
 *
 * Block order (access, access.h): write and read visit the blocks of the
 * rank's range sequentially, in a seeded random permutation or in strided
 * passes, each block exactly once, so the bytes moved are exact and every
 * block verifies at its own offset. md5 always reads in file order (a
 * digest needs the bytes in order; holding a whole range to reorder it
 * would cost its size in memory): `access` does not change an md5 phase.
 * rwmix_read = P in a write or read phase reads P % of the blocks (chosen
 * by access_reads) and writes the pattern into the others, so the file
 * still holds the pattern afterwards. Under `rate`, with a backend that
 * keeps calls in flight (queue_depth > 1), up to that many blocks are
 * outstanding per client, each timed from its instant and its send.
 *
 * A write phase claims (workload_claim_file) each file as it creates it:
 * the first open of a file asks for a new one (BACKEND_EXCL) and opens
 * the existing file only when there is one. The clean-up then removes only
 * files this run created, never one an earlier run kept, and nothing is
 * looked at in advance (a phase of millions of files starts at once). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "access.h"
#include "fiber.h"
#include "md5.h"
#include "pattern.h"
#include "prefetch.h"
#include "units.h"
#include "workload.h"

struct io_state {
    struct pattern pattern;
    unsigned char *buf;            /* read buffer, 4 KiB aligned (read and mixed phases) */
    uint64_t offset, length;       /* this rank's region of each file */
    int file_index;                /* rank whose files, or -1 for the shared file */
    int64_t nfiles;                /* files per iteration: files_per_rank, 1 if shared */
    int mix;                       /* rwmix_read percent, or -1: the kind's own */
    unsigned char (*expected)[16]; /* md5: the digest of each file's region */
    unsigned char *settled;        /* write: a bit per file whose first open is done */
    bool reported;                 /* the first verify mismatch has been printed */
    unsigned depth;                /* calls a paced client keeps in flight (queue_depth) */
    struct io_slot *slots;         /* depth > 1: one per call in flight */
};

/* One block's call in flight (depth > 1), from its submit to its reap. */
struct io_slot {
    bool busy, read;
    uint64_t off;
    size_t n;
    struct pace_call call;
    unsigned char *buf; /* its bytes: read into, or written from */
};

/* File f (0 .. nfiles - 1) of this rank's set: file 0 keeps the name and
 * pattern key of files_per_rank = 1 (r<rank>.dat), file f > 0 is
 * r<rank>.<f>.dat with its own key. */
static uint64_t io_file_key(const struct phase_ctx *c, const struct io_state *s, int64_t f)
{
    if (s->file_index < 0)
        return pattern_file_key(c->ph->fileset, UINT64_MAX);
    return pattern_file_key(c->ph->fileset, (uint64_t)f << 32 | (uint32_t)s->file_index);
}

static void io_file_path(const struct phase_ctx *c, int index, int64_t f, char *buf, size_t len)
{
    if (f == 0 || index < 0) {
        workload_file_path(c, index, buf, len);
        return;
    }
    char dir[HERD_PATH_MAX];
    workload_fileset_dir(c, dir, sizeof dir);
    workload_path(buf, len, "%s/r%06d.%" PRId64 ".dat", dir, index, f);
}

/* pattern_md5's stop test: the expected digest of a huge region must not
 * outlast a SIGTERM. */
static bool io_stop(const void *arg)
{
    return workload_should_stop(arg);
}

/* Which file and range this rank works on, its read/write mix, and the
 * file each record names. */
static void io_place(struct phase_ctx *c, struct io_state *s)
{
    const struct phase *ph = c->ph;
    int owner = ph->kind == KIND_WRITE ? c->rank : c->peer;
    s->file_index = ph->sharing == SHARING_UNIQUE ? owner : -1;
    s->nfiles = ph->sharing == SHARING_UNIQUE && ph->files_per_rank > 1 ? ph->files_per_rank : 1;
    s->mix = ph->kind != KIND_MD5 && ph->rwmix_read >= 0 ? (int)ph->rwmix_read : -1;
    s->length = ph->file_size;
    s->offset = (ph->sharing == SHARING_SHARED && ph->shared_mode == SHARED_SEGMENTED)
                    ? (uint64_t)owner * ph->file_size
                    : 0;
    int file_rank = s->file_index;
    if (file_rank < 0)
        file_rank = ph->shared_mode == SHARED_SEGMENTED ? owner : -1;
    for (int64_t i = 0; i < ph->iterations; i++)
        c->records[i].file_rank = file_rank;
}

/* md5: the expected digest of each file's range, before the clock
 * starts (-EINTR when a stop came meanwhile). */
static int io_expect_md5(struct phase_ctx *c, struct io_state *s)
{
    prefetch_prime(c->ph->block_size); /* the ring each file's digest reads into */
    s->expected = calloc((size_t)s->nfiles, sizeof *s->expected);
    if (!s->expected)
        return -ENOMEM;
    for (int64_t f = 0; f < s->nfiles; f++) {
        int rc = io_stop(c) ? -EINTR
                            : pattern_md5(&s->pattern, io_file_key(c, s, f), s->offset, s->length,
                                          s->expected[f], io_stop, c);
        if (rc < 0)
            return rc; /* -EINTR: stopped (signal, deadline); the runner says which */
    }
    return 0;
}

/* A paced client whose backend keeps several calls in flight
 * (queue_depth > 1): a buffer per call, faulted in here. */
static int io_slots_new(struct phase_ctx *c, struct io_state *s)
{
    const struct backend_ops *be = c->be;
    s->depth = be->queue_depth && be->submit && be->reap ? be->queue_depth(c->ph) : 1;
    if (s->depth <= 1)
        return 0;
    size_t size = (c->ph->block_size + 4095) / 4096 * 4096;
    if (!(s->slots = calloc(s->depth, sizeof *s->slots)))
        return -ENOMEM;
    for (unsigned i = 0; i < s->depth; i++) {
        if (!(s->slots[i].buf = aligned_alloc(4096, size)))
            return -ENOMEM;
        memset(s->slots[i].buf, 0, size);
    }
    return 0;
}

static int io_prepare(struct phase_ctx *c)
{
    const struct phase *ph = c->ph;
    struct io_state *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    c->state = s;
    io_place(c, s);
    struct access_order probe; /* an access value this build does not know */
    int rc = access_init(&probe, (enum access)ph->access, 0, 0);
    if (rc < 0)
        return rc;
    rc = workload_pattern_init(c, &s->pattern, ph->block_size);
    if (rc < 0)
        return rc;
    if (ph->kind == KIND_READ || s->mix >= 0) { /* md5 reads into its read-ahead ring */
        size_t size = (ph->block_size + 4095) / 4096 * 4096;
        s->buf = aligned_alloc(4096, size);
        if (!s->buf)
            return -ENOMEM;
        memset(s->buf, 0, size); /* faulted in here, not by the phase's first read */
    }
    if (ph->kind != KIND_MD5 && (rc = io_slots_new(c, s)) < 0)
        return rc;
    if (ph->kind == KIND_MD5 && (rc = io_expect_md5(c, s)) < 0)
        return rc;
    if (ph->kind == KIND_WRITE) {
        s->settled = calloc((size_t)(s->nfiles + 7) / 8, 1);
        if (!s->settled || (s->nfiles > 1 && workload_claim_files(c, s->nfiles) < 0))
            return -ENOMEM;
        workload_make_dirs(c);
    }
    return 0;
}

/* The first block of this phase that failed verify, on stderr (once per
 * rank and phase): results.h5 counts verify failures per row but keeps no
 * offset. */
static void io_report_mismatch(struct phase_ctx *c, const char *path, int64_t at, int64_t iteration)
{
    struct io_state *s = c->state;
    if (s->reported)
        return;
    s->reported = true;
    fprintf(stderr,
            "herd: rank %d: phase %s: verify: %s differs from the pattern at offset %" PRId64
            " (iteration %" PRId64 ")\n",
            c->rank, c->ph->name, path, at, iteration);
}

/* The bytes to write at off: generated into the backend's own buffer
 * when it lends one (pwrite_buffer: sent without a copy; a buffer that
 * held this block's bytes before gets only its tags), else the pattern's. */
static const void *io_write_data(struct phase_ctx *c, struct backend_file *f, uint64_t key,
                                 uint64_t off, size_t n)
{
    struct io_state *s = c->state;
    uint64_t *note;
    void *buf =
        c->be->pwrite_buffer
            ? c->be->pwrite_buffer(c->be_ctx, f, n, pattern_note(&s->pattern, key, off, n), &note)
            : NULL;
    return buf ? pattern_block_into(&s->pattern, key, off, n, buf, note)
               : pattern_block(&s->pattern, key, off, n);
}

/* Write or read the rank's range of one file block by block, in the
 * phase's access order, each block once (read: verify if asked; mixed:
 * access_reads chooses). Returns true if every block moved; *wrong counts
 * the blocks read with wrong data (a block cut short by the end of the
 * file is one). */
static bool io_transfer(struct phase_ctx *c, struct rank_record *r, struct backend_file *f,
                        const char *path, uint64_t key, int64_t iteration, uint64_t *wrong)
{
    struct io_state *s = c->state;
    const struct phase *ph = c->ph;
    uint64_t bs = ph->block_size, end = s->offset + s->length;
    uint64_t nblocks = (s->length + bs - 1) / bs;
    struct access_order order; /* the kind was checked in prepare */
    access_init(&order, (enum access)ph->access, nblocks,
                access_seed((uint64_t)ph->seed, key, iteration));
    for (uint64_t i = 0; i < nblocks; i++) {
        if (workload_should_stop(c))
            return false;
        uint64_t block = access_block(&order, i);
        uint64_t off = s->offset + block * bs;
        size_t n = (size_t)(end - off < bs ? end - off : bs);
        bool read = s->mix < 0
                        ? ph->kind == KIND_READ
                        : access_reads((uint64_t)ph->seed, key, c->rank, iteration, block, s->mix);
        enum op op = read ? OP_READ : OP_WRITE;
        ssize_t got;
        double t0;
        const void *data = s->buf; /* a read's bytes: here, or where the backend lent them */
        struct pace_call call;
        if (!workload_pace(c, &call))
            return false;
        if (!read) {
            data = io_write_data(c, f, key, off, n);
            t0 = op_begin(c, op, path);
            got = c->be->pwrite(c->be_ctx, f, data, n, off);
        } else {
            t0 = op_begin(c, op, path);
            got = c->be->pread_lend ? c->be->pread_lend(c->be_ctx, f, s->buf, n, off, &data)
                                    : c->be->pread(c->be_ctx, f, s->buf, n, off);
        }
        workload_done(c, r, op, t0, got, path, &r->t_io);
        workload_paced(c, r, &call);
        if (got < 0)
            return false;
        r->bytes += (uint64_t)got;
        progress_count_add(c->progress, (uint64_t)got);
        if ((size_t)got < n) { /* the file is shorter than the phase expects */
            workload_fail(c, r, op, -ENODATA, path);
            *wrong += ph->verify;
            return false;
        }
        if (read && ph->verify) {
            int64_t at = pattern_compare(&s->pattern, key, off, data, n);
            if (at >= 0) {
                (*wrong)++;
                io_report_mismatch(c, path, at, iteration); /* the first one only */
            }
        }
    }
    return true;
}

/* A block's call sent into a free slot at call->sent: 0, or the
 * failed submit's -errno, counted. */
static int io_submit(struct phase_ctx *c, struct rank_record *r, struct backend_file *f,
                     const char *path, uint64_t key, struct io_slot *sl)
{
    struct io_state *s = c->state;
    enum op op = sl->read ? OP_READ : OP_WRITE;
    if (!sl->read)
        pattern_block_into(&s->pattern, key, sl->off, sl->n, sl->buf, &(uint64_t){0});
    if (c->inflight->since == 0) /* the watchdog follows the oldest call in flight */
        inflight_begin(c->inflight, op, path, sl->call.sent);
    int rc =
        c->be->submit(c->be_ctx, f, !sl->read, sl->buf, sl->n, sl->off, (uint64_t)(sl - s->slots));
    if (rc < 0) {
        workload_done_at(c, r, op, sl->call.sent, clock_mono(), rc, path, &r->t_io);
        return rc;
    }
    sl->busy = true;
    return 0;
}

/* The oldest call still in flight, for the watchdog; NULL: none. */
static const struct io_slot *io_oldest(const struct io_state *s)
{
    const struct io_slot *old = NULL;
    for (unsigned i = 0; i < s->depth; i++)
        if (s->slots[i].busy && (!old || s->slots[i].call.sent < old->call.sent))
            old = &s->slots[i];
    return old;
}

/* A reaped call: timed from its send to its reply, counted as the
 * block's unit, verified. Returns whether it moved the whole block. */
static bool io_reaped(struct phase_ctx *c, struct rank_record *r, const char *path, uint64_t key,
                      int64_t iteration, const struct backend_done *d, uint64_t *wrong)
{
    struct io_state *s = c->state;
    struct io_slot *sl = &s->slots[d->tag];
    enum op op = sl->read ? OP_READ : OP_WRITE;
    sl->busy = false;
    workload_done_at(c, r, op, sl->call.sent, d->at, d->result, path, &r->t_io);
    const struct io_slot *old = io_oldest(s);
    if (old)
        inflight_begin(c->inflight, old->read ? OP_READ : OP_WRITE, path, old->call.sent);
    workload_paced_at(c, r, &sl->call, d->at);
    if (d->result < 0)
        return false;
    r->bytes += (uint64_t)d->result;
    progress_count_add(c->progress, (uint64_t)d->result);
    if ((size_t)d->result < sl->n) {
        workload_fail(c, r, op, -ENODATA, path);
        *wrong += c->ph->verify;
        return false;
    }
    if (sl->read && c->ph->verify) {
        int64_t at = pattern_compare(&s->pattern, key, sl->off, sl->buf, sl->n);
        if (at >= 0) {
            (*wrong)++;
            io_report_mismatch(c, path, at, iteration);
        }
    }
    return true;
}

/* io_transfer for a paced client with up to depth calls in flight: each
 * block's call goes at its instant when a slot is free then (late when
 * none was: sent as soon as one is), and ends when its reply comes, in
 * any order; response and service are timed to the reply. After a
 * failure or a stop no call is sent; those in flight are reaped. */
static bool io_transfer_queued(struct phase_ctx *c, struct rank_record *r, struct backend_file *f,
                               const char *path, uint64_t key, int64_t iteration, uint64_t *wrong)
{
    struct io_state *s = c->state;
    const struct phase *ph = c->ph;
    uint64_t bs = ph->block_size, end = s->offset + s->length;
    uint64_t nblocks = (s->length + bs - 1) / bs, i = 0;
    struct access_order order;
    access_init(&order, (enum access)ph->access, nblocks,
                access_seed((uint64_t)ph->seed, key, iteration));
    unsigned busy = 0;
    bool ok = true, taken = false;
    struct pace_call call;
    while (busy > 0 || (ok && i < nblocks)) {
        ok = ok && !workload_should_stop(c);
        double now = clock_mono(), until = now + 0.05; /* a stop is heard within 50 ms */
        if (ok && i < nblocks && busy < s->depth) {
            if (!taken)
                workload_pace_next(c, &call); /* a slot is free from now */
            taken = true;
            if (now >= call.intended) {
                struct io_slot *sl = s->slots;
                while (sl->busy)
                    sl++;
                uint64_t block = access_block(&order, i++);
                sl->off = s->offset + block * bs;
                sl->n = (size_t)(end - sl->off < bs ? end - sl->off : bs);
                sl->read = s->mix < 0 ? ph->kind == KIND_READ
                                      : access_reads((uint64_t)ph->seed, key, c->rank, iteration,
                                                     block, s->mix);
                sl->call = call;
                sl->call.sent = now;
                taken = false;
                ok = io_submit(c, r, f, path, key, sl) == 0;
                busy += ok;
                continue;
            }
            until = call.intended < until ? call.intended : until;
        }
        if (busy == 0) {
            fiber_sleep_until(until);
            continue;
        }
        struct backend_done d;
        int rc = c->be->reap(c->be_ctx, f, until, &d);
        if (rc == 1) {
            busy--;
            ok = io_reaped(c, r, path, key, iteration, &d, wrong) && ok;
        } else if (rc < 0) { /* every call in flight ended with the wait */
            for (unsigned k = 0; k < s->depth; k++)
                if (s->slots[k].busy) {
                    d = (struct backend_done){.tag = k, .result = rc, .at = clock_mono()};
                    io_reaped(c, r, path, key, iteration, &d, wrong);
                }
            busy = 0;
            ok = false;
        }
    }
    return ok;
}

/* Read the rank's range ahead in a second thread while digesting it here,
 * then compare the MD5 with the pattern's. Returns true if all was read;
 * *wrong is 1 when the digest differs (a digest cannot say which blocks). */
static bool io_digest(struct phase_ctx *c, struct rank_record *r, struct backend_file *f,
                      const char *path, const unsigned char expected[16], uint64_t *wrong)
{
    struct io_state *s = c->state;
    struct md5 md5;
    if (md5_begin(&md5) < 0) {
        workload_fail(c, r, OP_MD5, -ENOMEM, path);
        return false;
    }
    struct prefetch *p = prefetch_start(c, f, r, path, s->offset, s->length);
    ssize_t n = -ENOMEM;
    const void *data;
    while (p && (n = prefetch_next(p, &data)) > 0) {
        double t0 = clock_mono();
        md5_update(&md5, data, (size_t)n);
        r->t_md5 += clock_mono() - t0;
    }
    prefetch_finish(p);
    unsigned char digest[16];
    double t0 = clock_mono();
    md5_end(&md5, digest);
    r->t_md5 += clock_mono() - t0;
    if (!p)
        workload_fail(c, r, OP_READ, -ENOMEM, path);
    if (n < 0) {
        *wrong = n == -ENODATA; /* too short: its digest cannot match */
        return false;
    }
    hist_add(&c->hist[OP_MD5], (uint64_t)(r->t_md5 * 1e9)); /* whole-file digest time */
    *wrong = memcmp(digest, expected, 16) != 0;
    return true;
}

/* Open file fi. A write's first open of a file asks for a new one: made
 * here, it is this run's (claimed); already there (kept by an earlier run,
 * or made by another rank: the shared file), it is opened as it is. */
static int io_open(struct phase_ctx *c, const char *path, int64_t fi, int flags,
                   struct backend_file **f)
{
    struct io_state *s = c->state;
    unsigned char bit = (unsigned char)(1u << (fi % 8));
    if (!s->settled || (s->settled[fi / 8] & bit))
        return c->be->open(c->be_ctx, path, flags, f);
    int rc = c->be->open(c->be_ctx, path, flags | BACKEND_EXCL, f);
    if (rc == 0)
        workload_claim_file(c, fi);
    else if (rc == -EEXIST)
        rc = c->be->open(c->be_ctx, path, flags, f);
    if (rc == 0)
        s->settled[fi / 8] |= bit; /* after a failure the next iteration asks again */
    return rc;
}

/* One file of one iteration: open, move, (fsync,) close. Returns true if
 * it ran to its end without error. */
static bool io_file(struct phase_ctx *c, struct rank_record *r, int64_t iteration, int64_t fi)
{
    struct io_state *s = c->state;
    const struct phase *ph = c->ph;
    const struct backend_ops *be = c->be;
    char path[HERD_PATH_MAX];
    io_file_path(c, s->file_index, fi, path, sizeof path);
    uint64_t key = io_file_key(c, s, fi);
    int flags = ph->kind == KIND_WRITE ? BACKEND_WRITE | BACKEND_CREATE : BACKEND_READ;
    if (s->mix >= 0)
        flags |= BACKEND_READ | BACKEND_WRITE;
    if (ph->direct)
        flags |= BACKEND_DIRECT;

    struct backend_file *f = NULL;
    double t0 = op_begin(c, OP_OPEN, path);
    int rc = io_open(c, path, fi, flags, &f);
    if (workload_done(c, r, OP_OPEN, t0, rc, path, &r->t_open) < 0)
        return false;

    /* md5, and a plain sequential read, go through their range in order. */
    bool in_order = ph->kind == KIND_MD5 ||
                    (ph->kind == KIND_READ && s->mix < 0 && ph->access == ACCESS_SEQUENTIAL);
    /* Not under a rate: each paced read sends its READs at its own
     * instant, never ahead of it. */
    if (in_order && be->advise && ph->rate <= 0)
        be->advise(c->be_ctx, f, s->offset, s->length);
    uint64_t wrong = 0;
    bool ok;
    if (ph->kind == KIND_MD5)
        ok = io_digest(c, r, f, path, s->expected[fi], &wrong);
    else if (s->depth > 1)
        ok = io_transfer_queued(c, r, f, path, key, iteration, &wrong);
    else
        ok = io_transfer(c, r, f, path, key, iteration, &wrong);

    if (ph->kind == KIND_WRITE && ph->fsync && ok) {
        t0 = op_begin(c, OP_FSYNC, path);
        if (workload_done(c, r, OP_FSYNC, t0, be->fsync(c->be_ctx, f), path, &r->t_fsync) < 0)
            ok = false;
    }
    t0 = op_begin(c, OP_CLOSE, path);
    if (workload_done(c, r, OP_CLOSE, t0, be->close(c->be_ctx, f), path, &r->t_close) < 0)
        ok = false;
    r->verify_failures += wrong; /* read: blocks with wrong data; md5: files */
    return ok;
}

/* One iteration: each of the rank's files in turn. Returns true if it ran
 * to its end without error; the first failing file ends it. */
static bool io_iteration(struct phase_ctx *c, struct rank_record *r, int64_t iteration)
{
    struct io_state *s = c->state;
    for (int64_t fi = 0; fi < s->nfiles; fi++)
        if (workload_should_stop(c) || !io_file(c, r, iteration, fi))
            return false;
    return true;
}

static void io_run(struct phase_ctx *c)
{
    for (int64_t i = 0; i < c->ph->iterations; i++) {
        struct rank_record *r = &c->records[i];
        r->t_start = clock_now(c->clock);
        if (!workload_should_stop(c))
            r->completed = io_iteration(c, r, i);
        workload_row_end(c, r);
    }
}

static void io_finish(struct phase_ctx *c)
{
    struct io_state *s = c->state;
    if (!s)
        return;
    pattern_free(&s->pattern);
    free(s->buf);
    free(s->expected);
    free(s->settled);
    for (unsigned i = 0; s->slots && i < s->depth; i++)
        free(s->slots[i].buf);
    free(s->slots);
    free(s);
    c->state = NULL;
}

/* A write phase leaves its files: each rank its own (all files_per_rank
 * of them), rank 0 the shared one; only files this run created (claimed
 * in prepare). */
static void io_remove(struct phase_ctx *c, int pass)
{
    bool unique = c->ph->sharing == SHARING_UNIQUE;
    if (pass != 0 || (!unique && c->rank != 0))
        return;
    if (!workload_claimed(c, CLAIM_FILE, !unique))
        return;
    int64_t nfiles = unique && c->ph->files_per_rank > 1 ? c->ph->files_per_rank : 1;
    for (int64_t fi = 0; fi < nfiles && !workload_should_stop(c); fi++) {
        if (unique && !workload_claimed_file(c, fi))
            continue; /* there before this run */
        char path[HERD_PATH_MAX];
        io_file_path(c, unique ? c->rank : -1, fi, path, sizeof path);
        int rc = c->be->unlink(c->be_ctx, path);
        if (rc < 0 && rc != -ENOENT) /* ENOENT: an earlier phase removed it */
            workload_error(c, OP_UNLINK, rc, path);
    }
}

static void io_describe(const struct phase *ph, char *buf, size_t len)
{
    char size[32];
    units_format_size(ph->file_size, size, sizeof size);
    snprintf(buf, len, "%s %s%s", ph->sharing == SHARING_UNIQUE ? "unique" : "shared", size,
             ph->sharing == SHARING_SHARED && ph->shared_mode == SHARED_SEGMENTED ? " seg" : "");
}

/* write, read and md5 share one implementation; write alone removes its
 * files (read and md5 phases only read what a write made). */
/* Every file of the rank, each iteration. */
static void io_volume(const struct phase *ph, struct job_volume *v)
{
    *v = (struct job_volume){(uint64_t)ph->file_size, (uint64_t)ph->iterations,
                             (uint64_t)ph->files_per_rank,
                             ph->iterations > 1 ? "iterations" : "file_size"};
}

#define IO_WORKLOAD(nm, hlp, ks, caps, op, rm)                                                     \
    {                                                                                              \
        .name = (nm), .help = (hlp), .keys = (ks), .job_caps = (caps), .volume = io_volume,        \
        .flags = WORKLOAD_MOVES_BYTES, .main_ops = {(op)}, .nmain_ops = 1, .dir_depth = 1,         \
        .describe = io_describe, .prepare = io_prepare, .run = io_run, .finish = io_finish,        \
        .remove = (rm),                                                                            \
    }

static const char *const write_keys[] = {"fsync",          "access",     "rwmix_read",
                                         "files_per_rank", "rate",       "arrivals",
                                         "rate_steps",     "rate_curve", NULL};
static const char *const read_keys[] = {"verify",         "read_from", "access",   "rwmix_read",
                                        "files_per_rank", "rate",      "arrivals", "rate_steps",
                                        "rate_curve",     NULL};
static const char *const md5_keys[] = {"read_from",  "files_per_rank", "rate", "arrivals",
                                       "rate_steps", "rate_curve",     NULL};

const struct workload_ops workload_write =
    IO_WORKLOAD("write", "write files in blocks", write_keys, JOB_KIND_WRITES | JOB_KIND_BLOCKS,
                OP_WRITE, io_remove);
const struct workload_ops workload_read =
    IO_WORKLOAD("read", "read files in blocks; verify = yes compares every byte", read_keys,
                JOB_KIND_READS | JOB_KIND_BLOCKS, OP_READ, NULL);
const struct workload_ops workload_md5 =
    IO_WORKLOAD("md5", "read files and check their MD5", md5_keys,
                JOB_KIND_READS | JOB_KIND_CHECKS | JOB_KIND_BLOCKS, OP_READ, NULL);
