/* workload_io.c — the bandwidth workloads: write, read and md5 of unique
 * or shared files, the seed's `dd` and `md5sum` runs. One rank's share of
 * a phase: for each iteration open, move file_size bytes block by block,
 * (fsync,) close, and for md5 digest what was read and compare it with the
 * digest the pattern predicts. A failing call is counted and ends only the
 * iteration it happened in.
 *
 * A write phase claims (workload_claim) its file when prepare finds it
 * absent: the clean-up then removes only files this run created, never
 * one an earlier run kept. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "md5.h"
#include "pattern.h"
#include "prefetch.h"
#include "workload.h"

struct io_state {
    struct pattern pattern;
    unsigned char *buf;      /* read buffer, 4 KiB aligned */
    uint64_t key;            /* pattern key of the file */
    uint64_t offset, length; /* this rank's region of the file */
    int file_index;          /* rank whose file, or -1 for the shared file */
    unsigned char expected[16];
    char path[HERD_PATH_MAX];
};

/* pattern_md5's stop test: the expected digest of a huge region must not
 * outlast a SIGTERM. */
static bool io_stop(const void *arg)
{
    return workload_should_stop(arg);
}

/* Claim the data file if it does not exist yet. Every rank stats in
 * prepare, before any rank runs the phase, so exactly the files this run
 * will create are claimed (by at least one rank for the shared file). */
static void io_claim(struct phase_ctx *c, const char *path)
{
    struct stat st;
    if (c->be->stat(c->be_ctx, path, &st) == -ENOENT)
        workload_claim(c, CLAIM_FILE);
}

static int io_prepare(struct phase_ctx *c)
{
    const struct phase *ph = c->ph;
    struct io_state *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    c->state = s;
    int owner = ph->kind == KIND_WRITE ? c->rank : c->peer;
    s->file_index = ph->sharing == SHARING_UNIQUE ? owner : -1;
    s->length = ph->file_size;
    s->offset = (ph->sharing == SHARING_SHARED && ph->shared_mode == SHARED_SEGMENTED)
                    ? (uint64_t)owner * ph->file_size
                    : 0;
    s->key =
        pattern_file_key(ph->fileset, s->file_index < 0 ? UINT64_MAX : (uint64_t)s->file_index);
    workload_file_path(c, s->file_index, s->path, sizeof s->path);
    for (int64_t i = 0; i < ph->iterations; i++)
        c->records[i].file_rank =
            s->file_index < 0 ? (ph->shared_mode == SHARED_SEGMENTED ? owner : -1) : s->file_index;

    int rc = pattern_init(&s->pattern, ph->pattern, (int)ph->zero_percent, (uint64_t)ph->seed,
                          ph->block_size);
    if (rc < 0)
        return rc;
    if (ph->kind == KIND_READ) { /* md5 reads into its read-ahead ring */
        size_t size = (ph->block_size + 4095) / 4096 * 4096;
        s->buf = aligned_alloc(4096, size);
        if (!s->buf)
            return -ENOMEM;
    }
    if (ph->kind == KIND_MD5) {
        rc = pattern_md5(&s->pattern, s->key, s->offset, s->length, s->expected, io_stop, c);
        if (rc < 0)
            return rc; /* -EINTR: stopped; the runner ends the run */
    }
    if (ph->kind == KIND_WRITE) {
        workload_make_dirs(c);
        io_claim(c, s->path);
    }
    return 0;
}

/* Write or read the rank's range block by block (read: verify if asked).
 * Returns true if every block moved; *mismatch when the data was wrong. */
static bool io_transfer(struct phase_ctx *c, struct rank_record *r, struct backend_file *f,
                        bool *mismatch)
{
    struct io_state *s = c->state;
    const struct phase *ph = c->ph;
    enum op op = ph->kind == KIND_WRITE ? OP_WRITE : OP_READ;
    uint64_t end = s->offset + s->length;
    for (uint64_t off = s->offset; off < end;) {
        if (workload_should_stop(c))
            return false;
        size_t n = (size_t)(end - off < ph->block_size ? end - off : ph->block_size);
        ssize_t got;
        double t0;
        if (ph->kind == KIND_WRITE) {
            const void *data = pattern_block(&s->pattern, s->key, off, n);
            t0 = op_begin(c, op, s->path);
            got = c->be->pwrite(c->be_ctx, f, data, n, off);
        } else {
            t0 = op_begin(c, op, s->path);
            got = c->be->pread(c->be_ctx, f, s->buf, n, off);
        }
        if (workload_done(c, r, op, t0, got, s->path, &r->t_io) < 0)
            return false;
        r->bytes += (uint64_t)got;
        if (c->progress)
            progress_add(c->progress, (uint64_t)got);
        if ((size_t)got < n) { /* the file is shorter than the phase expects */
            workload_fail(c, r, op, -ENODATA, s->path);
            *mismatch = ph->verify;
            return false;
        }
        if (ph->kind == KIND_READ && ph->verify && !*mismatch &&
            pattern_compare(&s->pattern, s->key, off, s->buf, n) >= 0)
            *mismatch = true;
        off += n;
    }
    return true;
}

/* Read the rank's range ahead in a second thread while digesting it here,
 * then compare the MD5 with the pattern's. Returns true if all was read. */
static bool io_digest(struct phase_ctx *c, struct rank_record *r, struct backend_file *f,
                      bool *mismatch)
{
    struct io_state *s = c->state;
    struct md5 md5;
    if (md5_begin(&md5) < 0) {
        workload_fail(c, r, OP_MD5, -ENOMEM, s->path);
        return false;
    }
    struct prefetch *p = prefetch_start(c, f, r, s->path, s->offset, s->length);
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
        workload_fail(c, r, OP_READ, -ENOMEM, s->path);
    if (n < 0) {
        *mismatch = n == -ENODATA; /* too short: its digest cannot match */
        return false;
    }
    hist_add(&c->hist[OP_MD5], (uint64_t)(r->t_md5 * 1e9)); /* whole-file digest time */
    *mismatch = memcmp(digest, s->expected, sizeof digest) != 0;
    return true;
}

/* One iteration: returns true if it ran to its end without error. */
static bool io_iteration(struct phase_ctx *c, struct rank_record *r)
{
    struct io_state *s = c->state;
    const struct phase *ph = c->ph;
    const struct backend_ops *be = c->be;
    int flags = ph->kind == KIND_WRITE ? BACKEND_WRITE | BACKEND_CREATE : BACKEND_READ;
    if (ph->direct)
        flags |= BACKEND_DIRECT;

    struct backend_file *f = NULL;
    double t0 = op_begin(c, OP_OPEN, s->path);
    if (workload_done(c, r, OP_OPEN, t0, be->open(c->be_ctx, s->path, flags, &f), s->path,
                      &r->t_open) < 0)
        return false;

    if (ph->kind != KIND_WRITE && be->advise) /* read and md5 go through their range in order */
        be->advise(c->be_ctx, f, s->offset, s->length);
    bool mismatch = false;
    bool ok =
        ph->kind == KIND_MD5 ? io_digest(c, r, f, &mismatch) : io_transfer(c, r, f, &mismatch);

    if (ph->kind == KIND_WRITE && ph->fsync && ok) {
        t0 = op_begin(c, OP_FSYNC, s->path);
        if (workload_done(c, r, OP_FSYNC, t0, be->fsync(c->be_ctx, f), s->path, &r->t_fsync) < 0)
            ok = false;
    }
    t0 = op_begin(c, OP_CLOSE, s->path);
    if (workload_done(c, r, OP_CLOSE, t0, be->close(c->be_ctx, f), s->path, &r->t_close) < 0)
        ok = false;
    if (mismatch)
        r->verify_failures++;
    return ok;
}

static void io_run(struct phase_ctx *c)
{
    for (int64_t i = 0; i < c->ph->iterations; i++) {
        struct rank_record *r = &c->records[i];
        r->t_start = clock_now(c->clock);
        if (!workload_should_stop(c))
            r->completed = io_iteration(c, r);
        r->t_end = clock_now(c->clock);
    }
}

static void io_finish(struct phase_ctx *c)
{
    struct io_state *s = c->state;
    if (!s)
        return;
    pattern_free(&s->pattern);
    free(s->buf);
    free(s);
    c->state = NULL;
}

/* A write phase leaves its files: each rank its own, rank 0 the shared
 * one; only a file this run created (claimed in prepare). */
static void io_remove(struct phase_ctx *c, int pass)
{
    bool unique = c->ph->sharing == SHARING_UNIQUE;
    if (pass != 0 || (!unique && c->rank != 0))
        return;
    if (!workload_claimed(c, CLAIM_FILE, !unique))
        return;
    char path[HERD_PATH_MAX];
    workload_file_path(c, unique ? c->rank : -1, path, sizeof path);
    int rc = c->be->unlink(c->be_ctx, path);
    if (rc < 0 && rc != -ENOENT) /* ENOENT: an earlier phase removed it */
        workload_error(c, OP_UNLINK, rc, path);
}

const struct workload_ops workload_write = {KIND_WRITE, io_prepare, io_run, io_finish, io_remove};
const struct workload_ops workload_read = {KIND_READ, io_prepare, io_run, io_finish, NULL};
const struct workload_ops workload_md5 = {KIND_MD5, io_prepare, io_run, io_finish, NULL};
