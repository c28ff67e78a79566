/* workload_getattr.c — a phase kind added by one file (docs/extending.md):
 * every rank asks for the attributes of the fileset's shared file `count`
 * times, or for `duration`, all from the same instant: what a crowd of
 * clients polling one file (a job's status file, a lock's marker) costs
 * the server, and how the clients' attribute caches absorb it. Each stat
 * is timed into the latency histograms; a missing file is one ENOENT per
 * call, counted. Its own key, getattr_burst, makes each attempt that
 * many stats in a row. Write the file first with sharing = shared and
 * the same fileset. Built into herd with cmake -DHERD_EXTRA_KIND=<this
 * file>. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "workload.h"

/* Its own keys (docs/extending.md): an options struct and one row a key. */
struct getattr_opts {
    int64_t burst; /* stats in a row per attempt */
};
JOB_KIND_OPTS_FIT(struct getattr_opts);

JOB_KEY_ROWS_BEGIN
static const struct job_key getattr_own_keys[] = {
    {"getattr_burst", KEY_INT, JOB_OPTS_MEMBER(struct getattr_opts, burst), NULL, "1",
     "getattr: stats in a row per attempt (a client that polls in bursts)",
     .bounds = KEY_MIN | KEY_MAX, .min = 1, .max = 1000},
};
JOB_KEY_ROWS_END

static int getattr_prepare(struct phase_ctx *c)
{
    char *path = malloc(HERD_PATH_MAX);
    if (!path)
        return -ENOMEM;
    workload_file_path(c, -1, path, HERD_PATH_MAX);
    c->state = path;
    for (int64_t i = 0; i < c->ph->iterations; i++)
        c->records[i].file_rank = -1;
    return 0;
}

static void getattr_run(struct phase_ctx *c)
{
    const struct phase *ph = c->ph;
    const char *path = c->state;
    const struct getattr_opts *o = job_kind_opts(ph);
    for (int64_t i = 0; i < ph->iterations; i++) {
        struct rank_record *r = &c->records[i];
        r->t_start = clock_now(c->clock);
        for (int64_t k = 0; workload_attempt_due(c, r, k); k++)
            for (int64_t b = 0; b < o->burst; b++) {
                struct stat st;
                double t0 = op_begin(c, OP_STAT, path);
                int rc = c->be->stat(c->be_ctx, path, &st);
                workload_done(c, r, OP_STAT, t0, rc, path, &r->t_io);
            }
        r->completed = r->errors == 0 && !workload_should_stop(c);
        r->t_end = clock_now(c->clock);
    }
}

static void getattr_finish(struct phase_ctx *c)
{
    free(c->state);
    c->state = NULL;
}

/* A rule of its own: a shared file it does not read has no use for a
 * block size, but a per-rank file would make it a different test. */
static const char *getattr_check(const struct phase *ph, char *why, size_t len)
{
    if (ph->sharing == SHARING_SHARED)
        return NULL;
    snprintf(why, len, "getattr asks for the fileset's shared file: set sharing = shared");
    return "sharing";
}

static const char *const getattr_keys[] = {"count", "duration", NULL};

const struct workload_ops workload_getattr = {
    .name = "getattr",
    .help = "stat one shared file, all ranks at once",
    .keys = getattr_keys,
    .own_keys = getattr_own_keys,
    .nown_keys = sizeof getattr_own_keys / sizeof getattr_own_keys[0],
    .opts_size = sizeof(struct getattr_opts),
    .job_caps = JOB_KIND_READS,
    .main_ops = {OP_STAT},
    .nmain_ops = 1,
    .check = getattr_check,
    .describe = workload_describe_attempts,
    .prepare = getattr_prepare,
    .run = getattr_run,
    .finish = getattr_finish,
};
