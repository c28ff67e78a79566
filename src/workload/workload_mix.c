/* workload_mix.c — a weighted mix of file operations per client, the
 * load a real NFS client puts on a server (SPECstorage's workloads, a
 * mix printed by `herd mix-from` from a client's mountstats): each call
 * is drawn from `mix` (getattr:40,read:20,...) by a golden-ratio
 * sequence from the client's seed (mix_next: every op's count within a
 * few calls of its share at every moment), `count` calls or for
 * `duration`, as fast as it can or at `rate`; which file a call acts on,
 * where in it and how far a truncate cuts come from the seeded
 * generator. Every op has its own count, errors and latency histogram (its
 * enum op: ops.h), and a call is one of the protocol's where the backend
 * has one (libnfs: GETATTR, SETATTR, ACCESS, READDIRPLUS, LOOKUP, READ,
 * WRITE, COMMIT, CREATE, REMOVE, RENAME, MKDIR, RMDIR, LOCK).
 *
 * Each client has a tree of its own, made untimed in prepare (a load
 * ladder's steps share it: a later step rewrites the data files and goes
 * on with the names and directories the step before left):
 *   <rundir>/<fileset>/<phase or ladder>-<client id>/
 *     fNNNNNN  `files` data files of sizes from file_size_min to
 *              file_size (log-uniform, by seed), written with the pattern
 *              and kept open for the phase: read, read_file, write,
 *              write_file, append, fsync, getattr, setattr, truncate,
 *              access and lock act on one of them, lookup on its name;
 *     n/K      names that create makes, rename moves and unlink removes;
 *     d/K      directories that mkdir makes and rmdir removes;
 *              `files` of each made first.
 * The names and directories live in a window [front, next): a create or
 * mkdir takes next, an unlink or rmdir the oldest (front), a rename moves
 * the oldest to next; an unlink, rename or rmdir with none to act on
 * makes one instead (counted as create or mkdir). Data files hold the
 * pattern at every instant (writes write the pattern's bytes, truncate
 * only shrinks, append extends with the pattern), so every read can be
 * verified. lookup_missing asks a name that never exists: ENOENT is its
 * answer, not an error (a name found is EEXIST).
 *
 * With sharing = shared the data files are one set for every client of
 * the run, beside their trees (which keep their own names and
 * directories, the windows being per client):
 *   <rundir>/<fileset>/<phase or ladder>-shared/fNNNNNN
 * Client 0 makes, fills and fsyncs them in prepare (so that a kernel
 * client's bytes are on the server before the others open them) and
 * claims them for the clean-up; the others open them at the start of
 * their run, which comes after every prepare, before their first row's
 * start (untimed, outside the schedule). readdir, lookup and
 * lookup_missing then ask the shared directory, and a lock is contended
 * by every client. The pattern stays exact with many writers, since all
 * write its bytes and nothing shrinks a file: a shared mix refuses
 * truncate (mix_check), so a client's idea of a file's size (the planned
 * one, grown by its own appends and writes) never exceeds the file's. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mixspec.h"
#include "pattern.h"
#include "units.h"
#include "workload.h"

/* One client tree's window of names and directories, for the clean-up,
 * which runs on a fresh context after every phase: kept for the process
 * by the tree's root (one run); the main thread's. */
struct mix_made {
    char base[HERD_PATH_MAX];
    int64_t files;                 /* data files that may exist */
    int64_t name_front, name_next; /* names n/K that may exist */
    int64_t dir_front, dir_next;   /* directories d/K that may exist */
};
static struct mix_made **mix_made; /* each its own block: a client keeps a pointer to its own */
static size_t mix_nmade;

static struct mix_made *mix_made_find(const char *base)
{
    for (size_t i = 0; i < mix_nmade; i++)
        if (strcmp(mix_made[i]->base, base) == 0)
            return mix_made[i];
    return NULL;
}

static struct mix_made *mix_made_add(const char *base)
{
    struct mix_made *m = mix_made_find(base);
    if (m)
        return m;
    struct mix_made **more = realloc(mix_made, (mix_nmade + 1) * sizeof *more);
    if (!more)
        return NULL;
    mix_made = more;
    if (!(m = calloc(1, sizeof *m)))
        return NULL;
    snprintf(m->base, sizeof m->base, "%s", base);
    mix_made[mix_nmade++] = m;
    return m;
}

struct mix_file {
    struct backend_file *f;
    uint64_t size, key;
    int mode;
};

struct mix_state {
    struct mix_spec spec;
    struct pattern pattern;
    unsigned char *buf;
    size_t block;
    uint64_t rng;
    double draw;              /* the op's draw (mix_next) */
    char base[HERD_PATH_MAX]; /* the client's tree */
    char data[HERD_PATH_MAX]; /* its data files' directory: base, or the shared set's */
    struct mix_file *files;
    int64_t nfiles;
    struct mix_made *made; /* this tree's window; NULL: no memory to note it */
    struct mix_made local; /* the window when made is NULL */
    char path[HERD_PATH_MAX], to[HERD_PATH_MAX];
};

/* xorshift64*: uniform in [0, 1). */
static double mix_random(struct mix_state *s)
{
    s->rng ^= s->rng >> 12;
    s->rng ^= s->rng << 25;
    s->rng ^= s->rng >> 27;
    return (double)((s->rng * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
}

/* The next draw of the op: a golden-ratio sequence from a seeded start
 * (the additive recurrence of lowest discrepancy), so that each client's
 * count of every op stays within a few calls of its weight's share at
 * every moment, in an order that interleaves them, where independent
 * draws would stray by the square root of the count. */
static double mix_next(struct mix_state *s)
{
    s->draw += 0.6180339887498949;
    s->draw -= floor(s->draw);
    return s->draw;
}

/* The client's tree: one per phase, and one per ladder (its steps go on
 * with the tree the step before left). */
static void mix_base(const struct phase_ctx *c, char *buf, size_t len)
{
    const struct phase *ph = c->ph;
    workload_path(buf, len, "%s/%s/%s-%06d", c->rundir, ph->fileset,
                  ph->ladder[0] ? ph->ladder : ph->name, c->rank);
}

/* sharing = shared: the data files are one set for every client. */
static bool mix_shared(const struct phase *ph)
{
    return ph->sharing == SHARING_SHARED;
}

/* The shared set's directory, beside the clients' trees (one per phase
 * or ladder, as they are). */
static void mix_shared_base(const struct phase_ctx *c, char *buf, size_t len)
{
    const struct phase *ph = c->ph;
    workload_path(buf, len, "%s/%s/%s-shared", c->rundir, ph->fileset,
                  ph->ladder[0] ? ph->ladder : ph->name);
}

/* Data file i's size: log-uniform from file_size_min to file_size, by
 * (seed, client, i), a whole number of bytes; the shared set's the same
 * for every client (its owner all ones). */
static uint64_t mix_file_size(const struct phase_ctx *c, int64_t i)
{
    const struct phase *ph = c->ph;
    uint64_t lo = ph->file_size_min ? ph->file_size_min : ph->file_size, hi = ph->file_size;
    if (lo >= hi)
        return hi;
    uint64_t owner = mix_shared(ph) ? UINT64_MAX : (uint64_t)c->rank;
    struct mix_state tmp = {.rng = (uint64_t)ph->seed * 0x9E3779B97F4A7C15ULL ^ (owner << 20) ^
                                   (uint64_t)i ^ 0x5DEECE66DULL};
    for (int k = 0; k < 3; k++)
        mix_random(&tmp);
    double u = mix_random(&tmp);
    return (uint64_t)exp(log((double)lo) + u * (log((double)hi) - log((double)lo)));
}

/* Write data file m's pattern bytes [from, to) in blocks; 0 or -errno. */
static ssize_t mix_fill(struct phase_ctx *c, struct mix_file *m, uint64_t from, uint64_t to)
{
    struct mix_state *s = c->state;
    for (uint64_t off = from; off < to;) {
        size_t n = to - off < s->block ? (size_t)(to - off) : s->block;
        ssize_t got =
            c->be->pwrite(c->be_ctx, m->f, pattern_block(&s->pattern, m->key, off, n), n, off);
        if (got < 0)
            return got;
        off += n;
    }
    return 0;
}

/* Make (untimed) the tree's directories; claim the tree when its root is
 * this run's. */
static void mix_make_tree(struct phase_ctx *c)
{
    struct mix_state *s = c->state;
    workload_make_dirs(c);
    int rc = c->be->mkdir(c->be_ctx, s->base);
    if (rc == 0)
        workload_claim(c, CLAIM_TREE);
    else if (rc != -EEXIST)
        workload_fail(c, NULL, OP_MKDIR, rc, s->base);
    static const char *const sub[] = {"n", "d"};
    for (size_t i = 0; i < 2; i++) {
        workload_path(s->path, sizeof s->path, "%s/%s", s->base, sub[i]);
        rc = c->be->mkdir(c->be_ctx, s->path);
        if (rc < 0 && rc != -EEXIST)
            workload_fail(c, NULL, OP_MKDIR, rc, s->path);
    }
}

/* Data file i as planned, its path in s->path: its size, its pattern
 * key (the client's own, client x files + i, or the shared set's, down
 * from the top, never an own file's) and mode. */
static struct mix_file *mix_file_plan(struct phase_ctx *c, int64_t i)
{
    struct mix_state *s = c->state;
    struct mix_file *m = &s->files[i];
    workload_path(s->path, sizeof s->path, "%s/f%06lld", s->data, (long long)i);
    m->size = mix_file_size(c, i);
    uint64_t index = mix_shared(c->ph) ? UINT64_MAX - (uint64_t)i
                                       : (uint64_t)c->rank * (uint64_t)s->nfiles + (uint64_t)i;
    m->key = pattern_file_key(c->ph->fileset, index);
    m->mode = 0644;
    return m;
}

/* Data file i: created, filled with the pattern to its size (a shared
 * one fsynced too, for the clients that open it next), kept open. */
static void mix_make_file(struct phase_ctx *c, int64_t i)
{
    struct mix_state *s = c->state;
    struct mix_file *m = mix_file_plan(c, i);
    int rc = c->be->open(c->be_ctx, s->path, BACKEND_READ | BACKEND_WRITE | BACKEND_CREATE, &m->f);
    if (rc == 0)
        rc = (int)mix_fill(c, m, 0, m->size);
    if (rc == 0 && mix_shared(c->ph))
        rc = c->be->fsync(c->be_ctx, m->f);
    if (rc < 0)
        workload_fail(c, NULL, OP_OPEN, rc, s->path);
}

/* Client 0's shared set's directory, claimed when this run made it
 * (CLAIM_FILE: the set), noted for the clean-up. */
static void mix_make_shared_dir(struct phase_ctx *c)
{
    struct mix_state *s = c->state;
    int rc = c->be->mkdir(c->be_ctx, s->data);
    if (rc == 0)
        workload_claim(c, CLAIM_FILE);
    else if (rc != -EEXIST)
        workload_fail(c, NULL, OP_MKDIR, rc, s->data);
    struct mix_made *set = mix_made_add(s->data);
    if (set)
        set->files = s->nfiles;
}

/* The data files (again too: their sizes as planned, whatever truncate
 * left): the client's own, or client 0 the shared set; the other
 * clients open it at the start of their run (mix_open_shared). */
static void mix_make_data(struct phase_ctx *c)
{
    struct mix_state *s = c->state;
    if (mix_shared(c->ph)) {
        if (c->rank != 0)
            return;
        mix_make_shared_dir(c);
    }
    for (int64_t i = 0; i < s->nfiles && !workload_should_stop(c); i++)
        mix_make_file(c, i);
}

/* A client but 0 of a shared mix: open the set client 0 made in its
 * prepare (every prepare ends before the common start), before the first
 * row's start, so that the opens are neither in its rows nor in its
 * schedule. A file that does not open is an open error, and the calls on
 * it fail (mix_call). */
static void mix_open_shared(struct phase_ctx *c)
{
    struct mix_state *s = c->state;
    for (int64_t i = 0; i < s->nfiles && !workload_should_stop(c); i++) {
        struct mix_file *m = mix_file_plan(c, i);
        int rc = c->be->open(c->be_ctx, s->path, BACKEND_READ | BACKEND_WRITE, &m->f);
        if (rc < 0)
            workload_fail(c, NULL, OP_OPEN, rc, s->path);
    }
}

/* The names and directories the calls act on: `files` of each made
 * first, so that unlink, rename and rmdir have some from the start. */
static void mix_make_names(struct phase_ctx *c)
{
    struct mix_state *s = c->state;
    for (int64_t k = 0; k < s->nfiles && !workload_should_stop(c); k++) {
        workload_path(s->path, sizeof s->path, "%s/n/%lld", s->base, (long long)k);
        struct backend_file *f;
        int rc = c->be->open(c->be_ctx, s->path, BACKEND_WRITE | BACKEND_CREATE, &f);
        if (rc == 0)
            rc = c->be->close(c->be_ctx, f);
        if (rc < 0)
            workload_fail(c, NULL, OP_CREATE, rc, s->path);
        s->made->name_next = k + 1;
        workload_path(s->path, sizeof s->path, "%s/d/%lld", s->base, (long long)k);
        rc = c->be->mkdir(c->be_ctx, s->path);
        if (rc < 0)
            workload_fail(c, NULL, OP_MKDIR, rc, s->path);
        s->made->dir_next = k + 1;
    }
}

static int mix_prepare(struct phase_ctx *c)
{
    const struct phase *ph = c->ph;
    struct mix_state *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    c->state = s;
    char why[256];
    if (mixspec_parse(ph->mix, &s->spec, why, sizeof why))
        return -EINVAL; /* job/ checked it */
    s->block = ph->block_size;
    s->nfiles = ph->files;
    s->rng = (uint64_t)ph->seed * 0xBF58476D1CE4E5B9ULL ^ ((uint64_t)c->index << 48) ^
             (uint64_t)(c->rank + 1);
    s->draw = mix_random(s);
    s->buf = aligned_alloc(4096, (s->block + 4095) / 4096 * 4096);
    s->files = calloc((size_t)s->nfiles, sizeof *s->files);
    if (!s->buf || !s->files || workload_pattern_init(c, &s->pattern, s->block) < 0)
        return -ENOMEM;
    mix_base(c, s->base, sizeof s->base);
    if (mix_shared(ph))
        mix_shared_base(c, s->data, sizeof s->data);
    else
        memcpy(s->data, s->base, sizeof s->data);
    bool again = mix_made_find(s->base) != NULL; /* a ladder's later step */
    s->made = mix_made_add(s->base);
    if (!s->made) /* no note for the clean-up: it visits what the phase could make */
        s->made = &s->local;
    s->made->files = mix_shared(ph) ? 0 : s->nfiles; /* the tree's own data files */
    mix_make_tree(c);
    mix_make_data(c);
    if (!again)
        mix_make_names(c);
    return 0;
}

/* A block-aligned offset in [0, size) (0 for an empty file). */
static uint64_t mix_offset(struct mix_state *s, uint64_t size)
{
    uint64_t blocks = (size + s->block - 1) / s->block;
    return blocks ? (uint64_t)(mix_random(s) * (double)blocks) * s->block : 0;
}

/* Read [off, off + n) of m and check it; bytes read, or -errno. */
static ssize_t mix_read_at(struct phase_ctx *c, struct rank_record *r, struct mix_file *m,
                           uint64_t off, size_t n)
{
    struct mix_state *s = c->state;
    ssize_t got = c->be->pread(c->be_ctx, m->f, s->buf, n, off);
    if (got < 0)
        return got;
    if ((size_t)got < n)
        return -ENODATA; /* shorter than this client made it */
    if (c->ph->verify && pattern_compare(&s->pattern, m->key, off, s->buf, n) >= 0)
        r->verify_failures++;
    r->bytes += (uint64_t)got;
    return got;
}

/* read, read_file; write, write_file, append: one timed call each. */
static ssize_t mix_data(struct phase_ctx *c, struct rank_record *r, enum op op, struct mix_file *m)
{
    struct mix_state *s = c->state;
    if (op == OP_READ || op == OP_WRITE) {
        uint64_t off = mix_offset(s, m->size);
        size_t n = m->size - off < s->block ? (size_t)(m->size - off) : s->block;
        if (op == OP_READ)
            return mix_read_at(c, r, m, off, n);
        n = n ? n : s->block; /* an empty file gets its first block */
        ssize_t rc = mix_fill(c, m, off, off + n);
        if (rc == 0) {
            r->bytes += n;
            m->size = off + n > m->size ? off + n : m->size;
        }
        return rc;
    }
    if (op == OP_READ_FILE) {
        ssize_t rc = 0;
        for (uint64_t off = 0; off < m->size && rc >= 0; off += s->block)
            rc = mix_read_at(c, r, m, off,
                             m->size - off < s->block ? (size_t)(m->size - off) : s->block);
        return rc < 0 ? rc : 0;
    }
    uint64_t from = op == OP_APPEND ? m->size : 0;
    uint64_t to = op == OP_APPEND ? m->size + s->block : m->size;
    ssize_t rc = mix_fill(c, m, from, to);
    if (rc == 0) {
        r->bytes += to - from;
        m->size = to;
    }
    return rc;
}

/* setattr (the mode, between 0644 and 0600), truncate (shorter, to a
 * size between file_size_min and now), getattr, access, fsync, lock. */
static int mix_attr(struct phase_ctx *c, enum op op, struct mix_file *m)
{
    struct mix_state *s = c->state;
    const struct backend_ops *be = c->be;
    struct stat st;
    switch (op) {
    case OP_GETATTR:
        return be->fstat(c->be_ctx, m->f, &st);
    case OP_SETATTR: {
        int mode = m->mode == 0644 ? 0600 : 0644;
        int rc = be->fsetattr(c->be_ctx, m->f, mode, -1);
        m->mode = rc == 0 ? mode : m->mode;
        return rc;
    }
    case OP_TRUNCATE: {
        uint64_t lo = c->ph->file_size_min < m->size ? c->ph->file_size_min : m->size;
        uint64_t size = lo + (uint64_t)(mix_random(s) * (double)(m->size - lo));
        int rc = be->fsetattr(c->be_ctx, m->f, -1, (int64_t)size);
        m->size = rc == 0 ? size : m->size;
        return rc;
    }
    case OP_ACCESS:
        return be->faccess(c->be_ctx, m->f);
    case OP_FSYNC:
        return be->fsync(c->be_ctx, m->f);
    default: { /* OP_LOCK: lock and unlock the file's first byte */
        int rc = be->lock(c->be_ctx, m->f, BACKEND_LOCK_EXCLUSIVE, true, 0, 1);
        return rc < 0 ? rc : be->lock(c->be_ctx, m->f, BACKEND_UNLOCK, false, 0, 1);
    }
    }
}

/* A name in the window's list: n/K or d/K. */
static const char *mix_name(struct mix_state *s, char *buf, char list, int64_t k)
{
    workload_path(buf, HERD_PATH_MAX, "%s/%c/%lld", s->base, list, (long long)k);
    return buf;
}

/* The calls on names: create, unlink, rename, mkdir, rmdir. *op may
 * become create or mkdir when the window is empty. */
static int mix_names(struct phase_ctx *c, enum op *op)
{
    struct mix_state *s = c->state;
    struct mix_made *w = s->made;
    const struct backend_ops *be = c->be;
    if ((*op == OP_UNLINK || *op == OP_RENAME) && w->name_front == w->name_next)
        *op = OP_CREATE;
    if (*op == OP_RMDIR && w->dir_front == w->dir_next)
        *op = OP_MKDIR;
    int rc;
    switch (*op) {
    case OP_CREATE: {
        struct backend_file *f;
        rc = be->open(c->be_ctx, mix_name(s, s->path, 'n', w->name_next++),
                      BACKEND_WRITE | BACKEND_CREATE | BACKEND_EXCL, &f);
        return rc < 0 ? rc : be->close(c->be_ctx, f);
    }
    case OP_UNLINK:
        rc = be->unlink(c->be_ctx, mix_name(s, s->path, 'n', w->name_front));
        w->name_front += rc == 0 || rc == -ENOENT;
        return rc;
    case OP_RENAME:
        rc = be->rename(c->be_ctx, mix_name(s, s->path, 'n', w->name_front),
                        mix_name(s, s->to, 'n', w->name_next));
        if (rc == 0) {
            w->name_front++;
            w->name_next++;
        }
        return rc;
    case OP_MKDIR:
        return be->mkdir(c->be_ctx, mix_name(s, s->path, 'd', w->dir_next++));
    default: /* OP_RMDIR */
        rc = be->rmdir(c->be_ctx, mix_name(s, s->path, 'd', w->dir_front));
        w->dir_front += rc == 0 || rc == -ENOENT;
        return rc;
    }
}

/* One drawn call, timed and counted as its op. */
static void mix_call(struct phase_ctx *c, struct rank_record *r, enum op op)
{
    struct mix_state *s = c->state;
    struct mix_file *m = s->nfiles ? &s->files[(int64_t)(mix_random(s) * (double)s->nfiles)] : NULL;
    const char *path = s->data;
    bool on_file = op != OP_READDIR && op != OP_LOOKUP_MISSING && op != OP_CREATE &&
                   op != OP_UNLINK && op != OP_RENAME && op != OP_MKDIR && op != OP_RMDIR;
    if (on_file && (!m || !m->f)) { /* its file could not be made or opened: counted there */
        workload_fail(c, r, op, -EBADF, path);
        return;
    }
    double t0 = op_begin(c, op, path);
    ssize_t rc;
    struct stat st;
    uint64_t entries;
    switch (op) {
    case OP_READ:
    case OP_READ_FILE:
    case OP_WRITE:
    case OP_WRITE_FILE:
    case OP_APPEND:
        rc = mix_data(c, r, op, m);
        break;
    case OP_READDIR:
        rc = c->be->readdir(c->be_ctx, s->data, &entries);
        break;
    case OP_LOOKUP:
        workload_path(s->path, sizeof s->path, "%s/f%06lld", s->data, (long long)(m - s->files));
        rc = c->be->stat(c->be_ctx, s->path, &st);
        break;
    case OP_LOOKUP_MISSING:
        workload_path(s->path, sizeof s->path, "%s/x%llu", s->data,
                      (unsigned long long)(mix_random(s) * 1e9));
        rc = c->be->stat(c->be_ctx, s->path, &st);
        if (rc == -ENOENT)
            rc = 0;
        else if (rc == 0)
            rc = -EEXIST;
        break;
    case OP_CREATE:
    case OP_UNLINK:
    case OP_RENAME:
    case OP_MKDIR:
    case OP_RMDIR:
        rc = mix_names(c, &op);
        path = s->path;
        break;
    default:
        rc = mix_attr(c, op, m);
        break;
    }
    workload_done(c, r, op, t0, rc < 0 ? rc : 0, path, &r->t_io);
}

static void mix_run(struct phase_ctx *c)
{
    struct mix_state *s = c->state;
    if (mix_shared(c->ph) && c->rank != 0)
        mix_open_shared(c);
    for (int64_t i = 0; i < c->ph->iterations; i++) {
        struct rank_record *r = &c->records[i];
        r->t_start = clock_now(c->clock);
        struct pace_call call;
        for (int64_t k = 0; workload_attempt_due(c, r, k) && workload_pace(c, &call); k++) {
            mix_call(c, r, (enum op)mixspec_pick(&s->spec, mix_next(s)));
            workload_paced(c, r, &call);
        }
        r->completed = r->errors == 0 && !workload_should_stop(c);
        workload_row_end(c, r);
    }
}

static void mix_finish(struct phase_ctx *c)
{
    struct mix_state *s = c->state;
    if (!s)
        return;
    for (int64_t i = 0; s->files && i < s->nfiles; i++)
        if (s->files[i].f) {
            int rc = c->be->close(c->be_ctx, s->files[i].f);
            if (rc < 0)
                workload_fail(c, NULL, OP_CLOSE, rc, s->data);
        }
    pattern_free(&s->pattern);
    free(s->files);
    free(s->buf);
    free(s);
    c->state = NULL;
}

/* Unlink data files f000000.. of dir (files of them), quietly. */
static void mix_remove_files(struct phase_ctx *c, const char *dir, int64_t files)
{
    char path[HERD_PATH_MAX];
    for (int64_t i = 0; i < files && !workload_should_stop(c); i++) {
        workload_path(path, sizeof path, "%s/f%06lld", dir, (long long)i);
        workload_cleanup_error(c, OP_UNLINK, c->be->unlink(c->be_ctx, path), path);
    }
}

/* The client's tree, when this run made its root: pass 0 its data files
 * and names, pass 1 its directories and the root. */
static void mix_remove_tree(struct phase_ctx *c, int pass)
{
    char base[HERD_PATH_MAX], path[HERD_PATH_MAX];
    mix_base(c, base, sizeof base);
    const struct mix_made *m = mix_made_find(base);
    if (!m || !workload_claimed(c, CLAIM_TREE, true))
        return;
    const struct backend_ops *be = c->be;
    if (pass == 0) {
        mix_remove_files(c, base, m->files);
        for (int64_t k = m->name_front; k < m->name_next && !workload_should_stop(c); k++) {
            workload_path(path, sizeof path, "%s/n/%lld", base, (long long)k);
            workload_cleanup_error(c, OP_UNLINK, be->unlink(c->be_ctx, path), path);
        }
        return;
    }
    for (int64_t k = m->dir_front; k < m->dir_next && !workload_should_stop(c); k++) {
        workload_path(path, sizeof path, "%s/d/%lld", base, (long long)k);
        workload_cleanup_error(c, OP_RMDIR, be->rmdir(c->be_ctx, path), path);
    }
    static const char *const sub[] = {"n", "d"};
    for (size_t i = 0; i < 2; i++) {
        workload_path(path, sizeof path, "%s/%s", base, sub[i]);
        workload_cleanup_error(c, OP_RMDIR, be->rmdir(c->be_ctx, path), path);
    }
    workload_cleanup_error(c, OP_RMDIR, be->rmdir(c->be_ctx, base), base);
}

/* Client 0, the shared set when this run made it: pass 0 its files,
 * pass 1 its directory. */
static void mix_remove_shared(struct phase_ctx *c, int pass)
{
    char base[HERD_PATH_MAX];
    mix_shared_base(c, base, sizeof base);
    const struct mix_made *m = mix_made_find(base);
    if (!m || !workload_claimed(c, CLAIM_FILE, true))
        return;
    if (pass == 0)
        mix_remove_files(c, base, m->files);
    else
        workload_cleanup_error(c, OP_RMDIR, c->be->rmdir(c->be_ctx, base), base);
}

/* After the run: what this run made of the client's tree and, client 0,
 * of the shared set. */
static void mix_remove(struct phase_ctx *c, int pass)
{
    mix_remove_tree(c, pass);
    if (mix_shared(c->ph) && c->rank == 0)
        mix_remove_shared(c, pass);
}

/* Data ops need bytes to act on; sizes in order; a shared set's files
 * never shrink, or a client would read past a file's end. */
static const char *mix_check(const struct phase *ph, char *why, size_t len)
{
    struct mix_spec spec;
    if (mixspec_parse(ph->mix, &spec, why, len))
        return "mix";
    if (ph->file_size_min > ph->file_size) {
        snprintf(why, len, "is larger than file_size");
        return "file_size_min";
    }
    if (ph->files < 1) {
        snprintf(why, len, "a mix needs at least 1 data file per client");
        return "files";
    }
    if (mix_shared(ph) && mixspec_share(&spec, OP_TRUNCATE) > 0) {
        snprintf(why, len,
                 "truncate needs sharing = unique (on a shared file it would cut the bytes "
                 "other clients read)");
        return "mix";
    }
    return NULL;
}

static void mix_describe(const struct phase *ph, char *buf, size_t len)
{
    char size[32];
    units_format_size(ph->file_size, size, sizeof size);
    const char *shared = mix_shared(ph) ? " shared" : "";
    if (ph->duration > 0)
        snprintf(buf, len, "mix %lldf%s x %s for %gs", (long long)ph->files, shared, size,
                 ph->duration);
    else
        snprintf(buf, len, "mix %lldf%s x %s x%lld", (long long)ph->files, shared, size,
                 (long long)ph->count);
}

/* One client's data files and names, as it makes them in prepare (a
 * shared set's files client 0's, at most as many). */
static void mix_volume(const struct phase *ph, struct job_volume *v)
{
    *v = (struct job_volume){ph->file_size ? ph->file_size : 1, (uint64_t)ph->files, 1, "files"};
}

static const char *const mix_keys[] = {
    "mix",  "files",    "file_size_min", "count",      "duration", "verify",
    "rate", "arrivals", "rate_steps",    "rate_curve", NULL};
/* Small files by default: a mix's clients each keep `files` of them. */
static const char *const mix_own_defaults[] = {"files=16", "file_size=64K", "block_size=4K", NULL};

const struct workload_ops workload_mix = {
    .name = "mix",
    .help = "each client draws its calls from a weighted mix of file operations (mix) on "
            "files of its own (sharing = shared: one set of files for all)",
    .keys = mix_keys,
    .own_defaults = mix_own_defaults,
    .job_caps = JOB_KIND_TREE,
    .volume = mix_volume,
    .main_ops = {OP_GETATTR, OP_READ, OP_WRITE, OP_LOOKUP, OP_READ_FILE, OP_CREATE},
    .nmain_ops = 6,
    .dir_depth = 3,
    .check = mix_check,
    .describe = mix_describe,
    .prepare = mix_prepare,
    .run = mix_run,
    .finish = mix_finish,
    .remove = mix_remove,
};
