/* workload_meta.c — metadata load, the seed's 4200-file `mv` that took
 * minutes on a sync export: each rank builds a tree of `files` files of
 * file_size bytes in `dirs` directories (its own tree, or one tree all
 * ranks share), stats every file, moves every file into a second tree
 * (rename, as mv does within a file system), unlinks them and removes the
 * directories. The steps named in meta_ops run in that order, all ranks
 * finishing one step before any starts the next, so each step's calls are
 * timed against the same competition. Per-op counts and seconds land in
 * the ops table; latencies in the histograms.
 *
 * Layout: <rundir>/<fileset>/<r000007|shared>/{a,b}/dNNNN/<name>, files
 * named fNNNNNN (or r000007-fNNNNNN in a shared tree). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pattern.h"
#include "workload.h"

struct meta_state {
    struct pattern pattern;
    int steps;             /* bit set of enum meta_step */
    char base[1300];       /* the tree's root */
    char where;            /* 'a' or 'b': where the files are now */
    char path[1500], to[1500];
};

static bool meta_shared(const struct phase_ctx *c)
{
    return c->ph->sharing == SHARING_SHARED;
}

static void meta_dir(const struct phase_ctx *c, char tree, int64_t d, char *buf, size_t len)
{
    const struct meta_state *s = c->state;
    snprintf(buf, len, "%s/%c/d%04lld", s->base, tree, (long long)d);
}

static void meta_file(const struct phase_ctx *c, char tree, int64_t i, char *buf, size_t len)
{
    const struct meta_state *s = c->state;
    if (meta_shared(c))
        snprintf(buf, len, "%s/%c/d%04lld/r%06d-f%06lld", s->base, tree,
                 (long long)(i % c->ph->dirs), c->rank, (long long)i);
    else
        snprintf(buf, len, "%s/%c/d%04lld/f%06lld", s->base, tree, (long long)(i % c->ph->dirs),
                 (long long)i);
}

/* A timed metadata call; failures other than -ok_err (0: none) are counted. */
static int meta_call(struct phase_ctx *c, struct rank_record *r, enum op op, int rc_or_call,
                     double t0, const char *path, int ok_err)
{
    op_end(c, op, t0);
    r->ops++;
    if (rc_or_call < 0 && rc_or_call != ok_err) {
        r->errors++;
        workload_error(c, op, rc_or_call, path);
    }
    return rc_or_call;
}

static void meta_mkdir(struct phase_ctx *c, struct rank_record *r, const char *path)
{
    double t0 = op_begin(c, OP_MKDIR, path);
    meta_call(c, r, OP_MKDIR, c->be->mkdir(c->be_ctx, path), t0, path, -EEXIST);
}

static int meta_prepare(struct phase_ctx *c)
{
    struct meta_state *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    c->state = s;
    s->steps = job_meta_steps(c->ph->meta_ops);
    char dir[1200];
    workload_fileset_dir(c, dir, sizeof dir);
    if (meta_shared(c))
        snprintf(s->base, sizeof s->base, "%s/shared", dir);
    else
        snprintf(s->base, sizeof s->base, "%s/r%06d", dir, c->rank);
    for (int64_t i = 0; i < c->ph->iterations; i++)
        c->records[i].file_rank = meta_shared(c) ? -1 : c->rank;
    /* Files moved by an earlier phase live in tree b. */
    struct stat st;
    snprintf(s->path, sizeof s->path, "%s/b", s->base);
    s->where = c->be->stat(c->be_ctx, s->path, &st) == 0 ? 'b' : 'a';
    size_t block = c->ph->block_size < c->ph->file_size ? c->ph->block_size : c->ph->file_size;
    return pattern_init(&s->pattern, c->ph->pattern, (int)c->ph->zero_percent,
                        (uint64_t)c->ph->seed, block ? block : 4096);
}

static void meta_create(struct phase_ctx *c, struct rank_record *r)
{
    struct meta_state *s = c->state;
    const struct phase *ph = c->ph;
    meta_mkdir(c, r, c->rundir);
    workload_fileset_dir(c, s->path, sizeof s->path);
    meta_mkdir(c, r, s->path);
    meta_mkdir(c, r, s->base);
    snprintf(s->path, sizeof s->path, "%s/a", s->base);
    meta_mkdir(c, r, s->path);
    for (int64_t d = 0; d < ph->dirs && !workload_should_stop(c); d++) {
        meta_dir(c, 'a', d, s->path, sizeof s->path);
        meta_mkdir(c, r, s->path);
    }
    for (int64_t i = 0; i < ph->files && !workload_should_stop(c); i++) {
        meta_file(c, 'a', i, s->path, sizeof s->path);
        struct backend_file *f;
        double t0 = op_begin(c, OP_OPEN, s->path);
        int rc = c->be->open(c->be_ctx, s->path, BACKEND_WRITE | BACKEND_CREATE, &f);
        r->t_open += op_end(c, OP_OPEN, t0);
        r->ops++;
        if (rc < 0) {
            r->errors++;
            workload_error(c, OP_OPEN, rc, s->path);
            continue;
        }
        uint64_t key = pattern_file_key(ph->fileset, (uint64_t)c->rank * (uint64_t)ph->files + (uint64_t)i);
        for (uint64_t off = 0; off < ph->file_size;) {
            size_t n = ph->file_size - off < ph->block_size ? ph->file_size - off : ph->block_size;
            const void *data = pattern_block(&s->pattern, key, off, n);
            t0 = op_begin(c, OP_WRITE, s->path);
            ssize_t got = c->be->pwrite(c->be_ctx, f, data, n, off);
            r->t_io += op_end(c, OP_WRITE, t0);
            r->ops++;
            if (got < 0) {
                r->errors++;
                workload_error(c, OP_WRITE, (int)got, s->path);
                break;
            }
            r->bytes += (uint64_t)got;
            off += n;
        }
        t0 = op_begin(c, OP_CLOSE, s->path);
        rc = c->be->close(c->be_ctx, f);
        r->t_close += op_end(c, OP_CLOSE, t0);
        r->ops++;
        if (rc < 0) {
            r->errors++;
            workload_error(c, OP_CLOSE, rc, s->path);
        }
    }
    s->where = 'a';
}

static void meta_stat(struct phase_ctx *c, struct rank_record *r)
{
    struct meta_state *s = c->state;
    struct stat st;
    for (int64_t i = 0; i < c->ph->files && !workload_should_stop(c); i++) {
        meta_file(c, s->where, i, s->path, sizeof s->path);
        double t0 = op_begin(c, OP_STAT, s->path);
        meta_call(c, r, OP_STAT, c->be->stat(c->be_ctx, s->path, &st), t0, s->path, 0);
    }
}

static void meta_rename(struct phase_ctx *c, struct rank_record *r)
{
    struct meta_state *s = c->state;
    char other = s->where == 'a' ? 'b' : 'a';
    snprintf(s->path, sizeof s->path, "%s/%c", s->base, other);
    meta_mkdir(c, r, s->path);
    for (int64_t d = 0; d < c->ph->dirs && !workload_should_stop(c); d++) {
        meta_dir(c, other, d, s->path, sizeof s->path);
        meta_mkdir(c, r, s->path);
    }
    for (int64_t i = 0; i < c->ph->files && !workload_should_stop(c); i++) {
        meta_file(c, s->where, i, s->path, sizeof s->path);
        meta_file(c, other, i, s->to, sizeof s->to);
        double t0 = op_begin(c, OP_RENAME, s->path);
        meta_call(c, r, OP_RENAME, c->be->rename(c->be_ctx, s->path, s->to), t0, s->path, 0);
    }
    s->where = other;
}

static void meta_unlink(struct phase_ctx *c, struct rank_record *r)
{
    struct meta_state *s = c->state;
    for (int64_t i = 0; i < c->ph->files && !workload_should_stop(c); i++) {
        meta_file(c, s->where, i, s->path, sizeof s->path);
        double t0 = op_begin(c, OP_UNLINK, s->path);
        meta_call(c, r, OP_UNLINK, c->be->unlink(c->be_ctx, s->path), t0, s->path, 0);
    }
}

/* rmdir of a directory that may not exist (tree b before any rename). */
static void meta_rmdir(struct phase_ctx *c, struct rank_record *r, const char *path)
{
    double t0 = op_begin(c, OP_RMDIR, path);
    meta_call(c, r, OP_RMDIR, c->be->rmdir(c->be_ctx, path), t0, path, -ENOENT);
}

/* Remove the trees' directories. In a shared tree, rank r takes the
 * directories d with d % nranks == r, then (after every rank is done)
 * rank 0 the tree roots. */
static void meta_rmdirs(struct phase_ctx *c, struct rank_record *r)
{
    struct meta_state *s = c->state;
    bool shared = meta_shared(c);
    for (char tree = 'a'; tree <= 'b'; tree++)
        for (int64_t d = 0; d < c->ph->dirs && !workload_should_stop(c); d++) {
            if (shared && d % c->nranks != c->rank)
                continue;
            meta_dir(c, tree, d, s->path, sizeof s->path);
            meta_rmdir(c, r, s->path);
        }
    if (shared)
        c->sync(c);
    if (shared && c->rank != 0)
        return;
    for (char tree = 'a'; tree <= 'b'; tree++) {
        snprintf(s->path, sizeof s->path, "%s/%c", s->base, tree);
        meta_rmdir(c, r, s->path);
    }
    meta_rmdir(c, r, s->base);
}

static void meta_run(struct phase_ctx *c)
{
    struct meta_state *s = c->state;
    struct rank_record *r = &c->records[0];
    static void (*const step_fn[META_STEPS])(struct phase_ctx *, struct rank_record *) = {
        meta_create, meta_stat, meta_rename, meta_unlink, meta_rmdirs};
    r->t_start = clock_now(c->clock);
    for (int step = 0; step < META_STEPS; step++) {
        if (!(s->steps & (1 << step)))
            continue;
        step_fn[step](c, r); /* stops early on a signal, but still syncs */
        c->sync(c);
    }
    r->t_end = clock_now(c->clock);
    r->completed = r->errors == 0 && !workload_should_stop(c);
}

static void meta_finish(struct phase_ctx *c)
{
    struct meta_state *s = c->state;
    if (!s)
        return;
    pattern_free(&s->pattern);
    free(s);
    c->state = NULL;
}

/* After the run: remove whatever of the trees is left (a phase whose
 * meta_ops stopped short of unlink/rmdir). Pass 0 files, pass 1 dirs. */
static void meta_remove(struct phase_ctx *c, int pass)
{
    struct meta_state s = {0};
    c->state = &s;
    char dir[1200];
    workload_fileset_dir(c, dir, sizeof dir);
    snprintf(s.base, sizeof s.base, meta_shared(c) ? "%s/shared" : "%s/r%06d", dir, c->rank);
    if (pass == 0) {
        struct stat st;
        for (char tree = 'a'; tree <= 'b'; tree++) {
            snprintf(s.path, sizeof s.path, "%s/%c", s.base, tree);
            if (c->be->stat(c->be_ctx, s.path, &st) != 0)
                continue; /* gone (removed by its phase or an earlier clean-up) */
            for (int64_t i = 0; i < c->ph->files; i++) {
                meta_file(c, tree, i, s.path, sizeof s.path);
                c->be->unlink(c->be_ctx, s.path);
            }
        }
    } else if (!meta_shared(c) || c->rank == 0) {
        for (char tree = 'a'; tree <= 'b'; tree++) {
            for (int64_t d = 0; d < c->ph->dirs; d++) {
                meta_dir(c, tree, d, s.path, sizeof s.path);
                c->be->rmdir(c->be_ctx, s.path);
            }
            snprintf(s.path, sizeof s.path, "%s/%c", s.base, tree);
            c->be->rmdir(c->be_ctx, s.path);
        }
        c->be->rmdir(c->be_ctx, s.base);
    }
    c->state = NULL;
}

const struct workload_ops workload_meta = {KIND_META, meta_prepare, meta_run, meta_finish,
                                           meta_remove};
