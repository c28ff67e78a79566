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
 * named fNNNNNN (or r000007-fNNNNNN in a shared tree).
 *
 * Every loop (over files, directories or a file's blocks) stops within one
 * call of a signal or the deadline (workload_should_stop), the clean-up's
 * too: `files` may be 10^7 per rank. A tree is claimed (CLAIM_TREE) by the
 * rank whose mkdir of its root succeeds; the clean-up removes only claimed
 * trees, never one an earlier run kept (a stat-only phase claims none). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pattern.h"
#include "units.h"
#include "workload.h"

struct meta_state {
    struct pattern pattern;
    int steps;                /* bit set of enum meta_step */
    char base[HERD_PATH_MAX]; /* the tree's root */
    char where;               /* 'a' or 'b': where the files are now */
    char path[HERD_PATH_MAX], to[HERD_PATH_MAX];
};

/* How many file names this rank's create steps used in each tree (the
 * highest index tried + 1), by the tree's root, for the clean-up: it then
 * visits only those names, not all `files` (up to 10^7 per rank), and a
 * rank that made no files in a tree has none to remove. A rank removes
 * only files named after it (its own tree, or its r000007- names in a
 * shared one), so its own count is the bound. Lives for the process (one
 * run); used by the main thread only. */
struct meta_made {
    char base[HERD_PATH_MAX];
    int64_t files;
};
static struct meta_made *meta_made;
static size_t meta_nmade;
static bool meta_made_lost; /* a note failed (ENOMEM): visit all names */

static struct meta_made *meta_made_find(const char *base)
{
    for (size_t i = 0; i < meta_nmade; i++)
        if (strcmp(meta_made[i].base, base) == 0)
            return &meta_made[i];
    return NULL;
}

/* Remember that names 0..files-1 of tree `base` may exist. Returns 0 or
 * -ENOMEM (the clean-up then visits all `files` names). */
static int meta_made_note(const char *base, int64_t files)
{
    struct meta_made *m = meta_made_find(base);
    if (!m) {
        struct meta_made *more = realloc(meta_made, (meta_nmade + 1) * sizeof *more);
        if (!more) {
            meta_made_lost = true;
            return -ENOMEM;
        }
        meta_made = more;
        m = &meta_made[meta_nmade++];
        snprintf(m->base, sizeof m->base, "%s", base);
        m->files = 0;
    }
    if (files > m->files)
        m->files = files;
    return 0;
}

static bool meta_shared(const struct phase_ctx *c)
{
    return c->ph->sharing == SHARING_SHARED;
}

static void meta_dir(const struct phase_ctx *c, char tree, int64_t d, char *buf, size_t len)
{
    const struct meta_state *s = c->state;
    workload_path(buf, len, "%s/%c/d%04lld", s->base, tree, (long long)d);
}

static void meta_file(const struct phase_ctx *c, char tree, int64_t i, char *buf, size_t len)
{
    const struct meta_state *s = c->state;
    if (meta_shared(c))
        workload_path(buf, len, "%s/%c/d%04lld/r%06d-f%06lld", s->base, tree,
                      (long long)(i % c->ph->dirs), c->rank, (long long)i);
    else
        workload_path(buf, len, "%s/%c/d%04lld/f%06lld", s->base, tree,
                      (long long)(i % c->ph->dirs), (long long)i);
}

/* One file of the create step at s->path: create, write file_size
 * bytes, close. */
static void meta_create_file(struct phase_ctx *c, struct rank_record *r, int64_t i)
{
    struct meta_state *s = c->state;
    const struct phase *ph = c->ph;
    struct backend_file *f;
    double t0 = op_begin(c, OP_OPEN, s->path);
    if (workload_done(c, r, OP_OPEN, t0,
                      c->be->open(c->be_ctx, s->path, BACKEND_WRITE | BACKEND_CREATE, &f), s->path,
                      &r->t_open) < 0)
        return;
    uint64_t key =
        pattern_file_key(ph->fileset, (uint64_t)c->rank * (uint64_t)ph->files + (uint64_t)i);
    for (uint64_t off = 0; off < ph->file_size && !workload_should_stop(c);) {
        size_t n = ph->file_size - off < ph->block_size ? ph->file_size - off : ph->block_size;
        const void *data = pattern_block(&s->pattern, key, off, n);
        t0 = op_begin(c, OP_WRITE, s->path);
        ssize_t got = c->be->pwrite(c->be_ctx, f, data, n, off);
        if (workload_done(c, r, OP_WRITE, t0, got, s->path, &r->t_io) < 0)
            break;
        r->bytes += (uint64_t)got;
        off += n;
    }
    t0 = op_begin(c, OP_CLOSE, s->path);
    workload_done(c, r, OP_CLOSE, t0, c->be->close(c->be_ctx, f), s->path, &r->t_close);
}
/* A timed mkdir; an existing directory is no error. Returns the call's rc. */
static int meta_mkdir(struct phase_ctx *c, struct rank_record *r, const char *path)
{
    double t0 = op_begin(c, OP_MKDIR, path);
    int rc = c->be->mkdir(c->be_ctx, path);
    workload_done(c, r, OP_MKDIR, t0, rc == -EEXIST ? 0 : rc, path, NULL);
    return rc;
}

static int meta_prepare(struct phase_ctx *c)
{
    struct meta_state *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    c->state = s;
    s->steps = job_meta_steps(c->ph->meta_ops);
    char dir[HERD_PATH_MAX];
    workload_fileset_dir(c, dir, sizeof dir);
    if (meta_shared(c))
        workload_path(s->base, sizeof s->base, "%s/shared", dir);
    else
        workload_path(s->base, sizeof s->base, "%s/r%06d", dir, c->rank);
    for (int64_t i = 0; i < c->ph->iterations; i++)
        c->records[i].file_rank = meta_shared(c) ? -1 : c->rank;
    /* Files moved by an earlier phase live in tree b. */
    struct stat st;
    workload_path(s->path, sizeof s->path, "%s/b", s->base);
    s->where = c->be->stat(c->be_ctx, s->path, &st) == 0 ? 'b' : 'a';
    size_t block = c->ph->block_size < c->ph->file_size ? c->ph->block_size : c->ph->file_size;
    return workload_pattern_init(c, &s->pattern, block ? block : 4096);
}

static void meta_create(struct phase_ctx *c, struct rank_record *r)
{
    struct meta_state *s = c->state;
    const struct phase *ph = c->ph;
    /* The run directory is the runner's (claimed there): this mkdir only
     * shows why it is missing where the runner could not make it. */
    meta_mkdir(c, r, c->rundir);
    workload_fileset_dir(c, s->path, sizeof s->path);
    if (meta_mkdir(c, r, s->path) == 0)
        workload_claim(c, CLAIM_FILESET_DIR);
    if (meta_mkdir(c, r, s->base) == 0)
        workload_claim(c, CLAIM_TREE); /* this run made the tree: the clean-up's */
    workload_path(s->path, sizeof s->path, "%s/a", s->base);
    meta_mkdir(c, r, s->path);
    for (int64_t d = 0; d < ph->dirs && !workload_should_stop(c); d++) {
        meta_dir(c, 'a', d, s->path, sizeof s->path);
        meta_mkdir(c, r, s->path);
    }
    int64_t tried = 0; /* names 0..tried-1 may exist now */
    struct pace_call call;
    for (int64_t i = 0; i < ph->files && !workload_should_stop(c) && workload_pace(c, &call); i++) {
        meta_file(c, 'a', i, s->path, sizeof s->path);
        tried = i + 1;
        meta_create_file(c, r, i);
        workload_paced(c, r, &call);
    }
    meta_made_note(s->base, tried);
    s->where = 'a';
}

static void meta_stat(struct phase_ctx *c, struct rank_record *r)
{
    struct meta_state *s = c->state;
    struct stat st;
    struct pace_call call;
    for (int64_t i = 0; i < c->ph->files && !workload_should_stop(c) && workload_pace(c, &call);
         i++) {
        meta_file(c, s->where, i, s->path, sizeof s->path);
        double t0 = op_begin(c, OP_STAT, s->path);
        workload_done(c, r, OP_STAT, t0, c->be->stat(c->be_ctx, s->path, &st), s->path, NULL);
        workload_paced(c, r, &call);
    }
}

static void meta_rename(struct phase_ctx *c, struct rank_record *r)
{
    struct meta_state *s = c->state;
    char other = s->where == 'a' ? 'b' : 'a';
    workload_path(s->path, sizeof s->path, "%s/%c", s->base, other);
    meta_mkdir(c, r, s->path);
    for (int64_t d = 0; d < c->ph->dirs && !workload_should_stop(c); d++) {
        meta_dir(c, other, d, s->path, sizeof s->path);
        meta_mkdir(c, r, s->path);
    }
    struct pace_call call;
    for (int64_t i = 0; i < c->ph->files && !workload_should_stop(c) && workload_pace(c, &call);
         i++) {
        meta_file(c, s->where, i, s->path, sizeof s->path);
        meta_file(c, other, i, s->to, sizeof s->to);
        double t0 = op_begin(c, OP_RENAME, s->path);
        workload_done(c, r, OP_RENAME, t0, c->be->rename(c->be_ctx, s->path, s->to), s->path, NULL);
        workload_paced(c, r, &call);
    }
    s->where = other;
}

static void meta_unlink(struct phase_ctx *c, struct rank_record *r)
{
    struct meta_state *s = c->state;
    struct pace_call call;
    for (int64_t i = 0; i < c->ph->files && !workload_should_stop(c) && workload_pace(c, &call);
         i++) {
        meta_file(c, s->where, i, s->path, sizeof s->path);
        double t0 = op_begin(c, OP_UNLINK, s->path);
        workload_done(c, r, OP_UNLINK, t0, c->be->unlink(c->be_ctx, s->path), s->path, NULL);
        workload_paced(c, r, &call);
    }
}

/* rmdir of a directory that may not exist (tree b before any rename). */
static void meta_rmdir(struct phase_ctx *c, struct rank_record *r, const char *path)
{
    double t0 = op_begin(c, OP_RMDIR, path);
    int rc = c->be->rmdir(c->be_ctx, path);
    workload_done(c, r, OP_RMDIR, t0, rc == -ENOENT ? 0 : rc, path, NULL);
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
        c->sync(c); /* every rank, stopped or not */
    if ((shared && c->rank != 0) || workload_should_stop(c))
        return; /* stopped: the roots still hold what was not removed */
    for (char tree = 'a'; tree <= 'b'; tree++) {
        workload_path(s->path, sizeof s->path, "%s/%c", s->base, tree);
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
    /* The call each step counts as its items, as mdtest counts them. */
    static const enum op item_op[META_STEPS] = {OP_OPEN, OP_STAT, OP_RENAME, OP_UNLINK, OP_RMDIR};
    r->t_start = clock_now(c->clock);
    for (int step = 0; step < META_STEPS; step++) {
        if (!(s->steps & (1 << step)))
            continue;
        enum op op = item_op[step];
        struct meta_step_record *m = &c->meta_steps[c->nmeta_steps++];
        uint64_t calls = c->op_count[op], failed = c->op_errors[op];
        *m = (struct meta_step_record){.rank = c->rank, .step = step, .op = op};
        m->t_start = clock_now(c->clock);
        workload_pace_restart(c); /* a step's schedule starts at the step */
        step_fn[step](c, r);      /* stops early on a signal, but still syncs */
        m->t_end = clock_now(c->clock);
        m->items = (c->op_count[op] - calls) - (c->op_errors[op] - failed);
        c->sync(c);
    }
    workload_row_end(c, r);
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
 * meta_ops stopped short of unlink/rmdir), only a tree this run created:
 * a shared tree if any rank claimed it, a rank's own tree if it did.
 * Pass 0 files, pass 1 dirs; both stop at a signal or the deadline. */
static void meta_remove(struct phase_ctx *c, int pass)
{
    bool shared = meta_shared(c);
    if (!workload_claimed(c, CLAIM_TREE, shared))
        return;
    struct meta_state s = {0};
    c->state = &s;
    char dir[HERD_PATH_MAX];
    workload_fileset_dir(c, dir, sizeof dir);
    workload_path(s.base, sizeof s.base, shared ? "%s/shared" : "%s/r%06d", dir, c->rank);
    if (pass == 0) {
        const struct meta_made *m = meta_made_find(s.base);
        /* No create step of mine on this tree: no files of mine in it. */
        int64_t files = m ? m->files : 0;
        if (meta_made_lost)
            files = c->ph->files;
        struct stat st;
        for (char tree = 'a'; tree <= 'b'; tree++) {
            workload_path(s.path, sizeof s.path, "%s/%c", s.base, tree);
            if (c->be->stat(c->be_ctx, s.path, &st) != 0)
                continue; /* gone (removed by its phase or an earlier clean-up) */
            for (int64_t i = 0; i < files && !workload_should_stop(c); i++) {
                meta_file(c, tree, i, s.path, sizeof s.path);
                workload_cleanup_error(c, OP_UNLINK, c->be->unlink(c->be_ctx, s.path), s.path);
            }
        }
    } else if (!shared || c->rank == 0) {
        for (char tree = 'a'; tree <= 'b'; tree++) {
            for (int64_t d = 0; d < c->ph->dirs && !workload_should_stop(c); d++) {
                meta_dir(c, tree, d, s.path, sizeof s.path);
                workload_cleanup_error(c, OP_RMDIR, c->be->rmdir(c->be_ctx, s.path), s.path);
            }
            workload_path(s.path, sizeof s.path, "%s/%c", s.base, tree);
            workload_cleanup_error(c, OP_RMDIR, c->be->rmdir(c->be_ctx, s.path), s.path);
        }
        workload_cleanup_error(c, OP_RMDIR, c->be->rmdir(c->be_ctx, s.base), s.base);
    }
    c->state = NULL;
}

/* One tree per rank or one for all, once, of sizes the clean-up can
 * visit; a ladder's steps need trees of their own. */
static const char *meta_check(const struct phase *ph, char *why, size_t len)
{
    if (ph->iterations != 1) {
        snprintf(why, len, "meta phases run their steps once; use several phases");
        return "iterations";
    }
    if (ph->dirs < 1 || ph->files < 0) {
        snprintf(why, len, "meta needs dirs >= 1 and files >= 0");
        return ph->dirs < 1 ? "dirs" : "files";
    }
    if (job_meta_steps(ph->meta_ops) <= 0) {
        snprintf(why, len, "'%s' is not a list of create, stat, rename, unlink, rmdir",
                 ph->meta_ops);
        return "meta_ops";
    }
    if (ph->files > JOB_META_MAX || ph->dirs > JOB_META_MAX) {
        snprintf(why, len, "%lld is more than %d per rank (clean-up visits every one)",
                 (long long)(ph->files > JOB_META_MAX ? ph->files : ph->dirs), JOB_META_MAX);
        return ph->files > JOB_META_MAX ? "files" : "dirs";
    }
    if (job_phase_is_ladder(ph) && ph->sharing == SHARING_SHARED) {
        snprintf(why, len,
                 "a meta ladder needs sharing = unique (shared trees are split over "
                 "every rank)");
        return "sharing";
    }
    return NULL;
}

/* Its files' data, when it creates them. */
static void meta_volume(const struct phase *ph, struct job_volume *v)
{
    if (job_meta_steps(ph->meta_ops) & (1 << META_CREATE))
        *v = (struct job_volume){(uint64_t)ph->file_size, (uint64_t)ph->files, 1, "files"};
}

static void meta_describe(const struct phase *ph, char *buf, size_t len)
{
    char size[32];
    units_format_size(ph->file_size, size, sizeof size);
    snprintf(buf, len, "%s %lldf/%lldd %s", ph->sharing == SHARING_UNIQUE ? "unique" : "shared",
             (long long)ph->files, (long long)ph->dirs, size);
}

/* main_ops: the first step that made calls (create = open) */
static const char *const meta_keys[] = {"dirs",     "files",      "meta_ops",   "rate",
                                        "arrivals", "rate_steps", "rate_curve", NULL};
/* Empty files, as mdtest's default: a [global] file_size meant for the
 * data phases would otherwise fill the export with files x ranks of it. */
static const char *const meta_own_defaults[] = {"file_size=0", NULL};

const struct workload_ops workload_meta = {
    .keys = meta_keys,
    .own_defaults = meta_own_defaults,
    .check = meta_check,
    .job_caps = JOB_KIND_TREE,
    .volume = meta_volume,
    .name = "meta",
    .help = "create, stat, rename and remove a tree of files",
    .main_ops = {OP_OPEN, OP_STAT, OP_RENAME, OP_UNLINK, OP_RMDIR, OP_MKDIR},
    .nmain_ops = 6,
    .dir_depth = 4,
    .describe = meta_describe,
    .prepare = meta_prepare,
    .run = meta_run,
    .finish = meta_finish,
    .remove = meta_remove,
};
