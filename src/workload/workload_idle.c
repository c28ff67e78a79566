/* workload_idle.c — a phase with no I/O: every rank waits `duration`
 * seconds (or until stopped). It gives the server's idle load as a
 * baseline, and a window in which a test or an operator changes the
 * server between phases. */

#include <stdio.h>

#include "fiber.h"
#include "workload.h"

#define IDLE_POLL 0.05 /* seconds between stop checks */

static int idle_prepare(struct phase_ctx *c)
{
    for (int64_t i = 0; i < c->ph->iterations; i++)
        c->records[i].file_rank = -1;
    return 0;
}

static void idle_run(struct phase_ctx *c)
{
    struct rank_record *r = &c->records[0];
    r->t_start = clock_now(c->clock);
    double until = r->t_start + c->ph->duration;
    while (!workload_should_stop(c) && clock_now(c->clock) < until) {
        double left = until - clock_now(c->clock);
        double step = left < IDLE_POLL ? left : IDLE_POLL;
        if (step > 0)
            fiber_sleep(step); /* a rank's other clients idle meanwhile */
    }
    r->t_end = clock_now(c->clock);
    r->completed = r->t_end >= until;
    for (int64_t i = 1; i < c->ph->iterations; i++)
        c->records[i].t_start = c->records[i].t_end = r->t_end;
}

static void idle_finish(struct phase_ctx *c)
{
    (void)c;
}

static const char *idle_check(const struct phase *ph, char *why, size_t len)
{
    if (ph->duration > 0)
        return NULL;
    snprintf(why, len, "an idle phase needs a duration greater than 0");
    return "duration";
}

static void idle_describe(const struct phase *ph, char *buf, size_t len)
{
    (void)ph;
    snprintf(buf, len, "-");
}

static const char *const idle_keys[] = {"duration", NULL};

const struct workload_ops workload_idle = {
    .keys = idle_keys,
    .check = idle_check,
    .name = "idle",
    .help = "nothing, for duration",
    .flags = WORKLOAD_NO_BACKEND,
    .describe = idle_describe,
    .prepare = idle_prepare,
    .run = idle_run,
    .finish = idle_finish,
};
