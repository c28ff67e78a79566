/* workload_storm.c — every rank, from the same instant, opens, stats,
 * reads and closes the same file `count` times (or for `duration`): the
 * seed's "300 nodes asking to see one file at the same time". Each call is
 * timed into the latency histograms; a missing file is one ENOENT per rank
 * per attempt (the stat fails and the attempt ends), never a crash.
 * The file is the fileset's shared file: write it first with a write
 * phase using sharing = shared and the same fileset. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "workload.h"

struct storm_state {
    unsigned char *buf;
    size_t len;
    char path[HERD_PATH_MAX];
};

static int storm_prepare(struct phase_ctx *c)
{
    struct storm_state *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    c->state = s;
    s->len = c->ph->block_size < c->ph->file_size ? c->ph->block_size : c->ph->file_size;
    s->buf = aligned_alloc(4096, (s->len + 4095) / 4096 * 4096);
    if (!s->buf)
        return -ENOMEM;
    workload_file_path(c, -1, s->path, sizeof s->path);
    for (int64_t i = 0; i < c->ph->iterations; i++)
        c->records[i].file_rank = -1;
    return 0;
}

/* One attempt: stat, open, read the first block, close. */
static void storm_attempt(struct phase_ctx *c, struct rank_record *r)
{
    struct storm_state *s = c->state;
    struct stat st;
    double t0 = op_begin(c, OP_STAT, s->path);
    if (workload_done(c, r, OP_STAT, t0, c->be->stat(c->be_ctx, s->path, &st), s->path, NULL) < 0)
        return;
    struct backend_file *f;
    t0 = op_begin(c, OP_OPEN, s->path);
    if (workload_done(c, r, OP_OPEN, t0, c->be->open(c->be_ctx, s->path, BACKEND_READ, &f), s->path,
                      &r->t_open) < 0)
        return;
    t0 = op_begin(c, OP_READ, s->path);
    ssize_t n = c->be->pread(c->be_ctx, f, s->buf, s->len, 0);
    if (workload_done(c, r, OP_READ, t0, n, s->path, &r->t_io) >= 0)
        r->bytes += (uint64_t)n;
    t0 = op_begin(c, OP_CLOSE, s->path);
    workload_done(c, r, OP_CLOSE, t0, c->be->close(c->be_ctx, f), s->path, &r->t_close);
}

static void storm_run(struct phase_ctx *c)
{
    const struct phase *ph = c->ph;
    for (int64_t i = 0; i < ph->iterations; i++) {
        struct rank_record *r = &c->records[i];
        r->t_start = clock_now(c->clock);
        struct pace_call call;
        for (int64_t k = 0; workload_attempt_due(c, r, k) && workload_pace(c, &call); k++) {
            storm_attempt(c, r);
            workload_paced(c, r, &call);
        }
        r->completed = r->errors == 0 && !workload_should_stop(c);
        workload_row_end(c, r);
    }
}

static void storm_finish(struct phase_ctx *c)
{
    struct storm_state *s = c->state;
    if (!s)
        return;
    free(s->buf);
    free(s);
    c->state = NULL;
}

/* One block (or the whole file, if smaller) per attempt. */
static void storm_volume(const struct phase *ph, struct job_volume *v)
{
    *v = (struct job_volume){ph->block_size < ph->file_size ? ph->block_size : ph->file_size,
                             (uint64_t)ph->count, (uint64_t)ph->iterations, "count"};
}

static const char *const storm_keys[] = {"duration",   "count",      "rate", "arrivals",
                                         "rate_steps", "rate_curve", NULL};

const struct workload_ops workload_storm = {
    .keys = storm_keys,
    .job_caps = JOB_KIND_READS,
    .volume = storm_volume,
    .name = "storm",
    .help = "stat, open, read a block of and close one shared file, all ranks at once",
    .main_ops = {OP_OPEN},
    .nmain_ops = 1,
    .dir_depth = 1,
    .describe = workload_describe_attempts,
    .prepare = storm_prepare,
    .run = storm_run,
    .finish = storm_finish,
};
