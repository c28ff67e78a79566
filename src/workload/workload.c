/* workload.c — what all workloads share: the stop test, error counting,
 * claims, the open loop of `rate` (workload_pace, workload_paced) and
 * the naming of data files (<rundir>/<fileset>/r000007.dat for rank 7's
 * own file, shared.dat for a shared one). The registry of kinds is
 * workload_kinds.c, above every kind. */
#include "workload.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

#include "fiber.h"
#include "pattern.h"
#include "signals.h"

bool workload_should_stop(const struct phase_ctx *c)
{
    /* Asked first: a rank that caught a signal tells the others there. */
    if (c->peer_stopped ? c->peer_stopped((struct phase_ctx *)c) : signals_caught() != 0)
        return true;
    return c->deadline_at > 0 && clock_now(c->clock) >= c->deadline_at;
}

bool workload_attempt_due(const struct phase_ctx *c, const struct rank_record *r, int64_t made)
{
    if (workload_should_stop(c))
        return false;
    if (c->ph->duration > 0)
        return clock_now(c->clock) < r->t_start + c->ph->duration;
    return made < c->ph->count;
}

void workload_describe_attempts(const struct phase *ph, char *buf, size_t len)
{
    if (ph->duration > 0)
        snprintf(buf, len, "shared for %gs", ph->duration);
    else
        snprintf(buf, len, "shared x%lld", (long long)ph->count);
}

void workload_error(struct phase_ctx *c, enum op op, int err, const char *path)
{
    if (c->errors) /* NULL: a clean-up without an error table */
        errtab_add(c->errors, c->rank, op, err, path, c->clock ? clock_now(c->clock) : 0);
}

void workload_cleanup_error(struct phase_ctx *c, enum op op, int err, const char *path)
{
    if (err < 0 && err != -ENOENT)
        workload_error(c, op, err, path);
}

void workload_fail(struct phase_ctx *c, struct rank_record *r, enum op op, int err,
                   const char *path)
{
    if (!r && c->records && c->ph->iterations > 0)
        r = &c->records[0];
    if (r)
        r->errors++;
    workload_error(c, op, err, path);
}

/* think_time: the rank pauses after a call, in slices so that a stop or
 * the deadline is heard within 50 ms. */
static void workload_think(const struct phase_ctx *c)
{
    double left = c->ph ? c->ph->think_time : 0;
    while (left > 0 && !workload_should_stop(c)) {
        double slice = left < 0.05 ? left : 0.05;
        fiber_sleep(slice);
        left -= slice;
    }
}

ssize_t workload_done(struct phase_ctx *c, struct rank_record *r, enum op op, double t0, ssize_t rc,
                      const char *path, double *t)
{
    return workload_done_at(c, r, op, t0, clock_mono(), rc, path, t);
}

ssize_t workload_done_at(struct phase_ctx *c, struct rank_record *r, enum op op, double t0,
                         double t1, ssize_t rc, const char *path, double *t)
{
    double dt = op_end_at(c, op, t0, t1);
    workload_think(c); /* outside the call's time: a client's think time */
    if (t)
        *t += dt;
    r->ops++;
    if (rc < 0) {
        r->errors++;
        c->op_errors[op]++;
        /* A failed backend call: keep the protocol's word for it too. */
        const char *status = c->be && c->be->status ? c->be->status(c->be_ctx) : NULL;
        if (c->errors)
            errtab_add_status(c->errors, c->rank, op, (int)rc, status, path,
                              c->clock ? clock_now(c->clock) : 0);
    }
    return rc;
}

/* The schedule's seed: the phase's seed, its index and the client, so
 * that every client of every phase draws its own arrivals. */
static uint64_t workload_pace_seed(const struct phase_ctx *c)
{
    return (uint64_t)c->ph->seed * 0x9E3779B97F4A7C15ULL ^ ((uint64_t)c->index << 40) ^
           (uint64_t)c->rank;
}

/* Where a client's schedule starts: its first row's start (before the
 * kind's opens: the load is offered from then on, as a real client's
 * would be), now where there is none. */
static double workload_pace_anchor(const struct phase_ctx *c)
{
    double start = c->records && c->clock && c->records[0].t_start > 0
                       ? c->records[0].t_start + c->clock->base
                       : 0;
    return start > 0 && start <= clock_mono() ? start : clock_mono();
}

void workload_pace_restart(struct phase_ctx *c)
{
    if (c->ph->rate <= 0)
        return;
    /* Sleeps to the nanosecond, not 50 us late (the default timer slack,
     * a thread's own setting: set by the thread that paces). */
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    if (!c->pace_started)
        pace_init(&c->pace, c->ph->rate, (enum pace_arrivals)c->ph->arrivals, workload_pace_seed(c),
                  workload_pace_anchor(c));
    else
        pace_restart(&c->pace, clock_mono()); /* a meta step: from its start */
    c->pace_started = true;
}

void workload_pace_next(struct phase_ctx *c, struct pace_call *call)
{
    call->intended = 0;
    if (c->ph->rate <= 0)
        return;
    if (!c->pace_started)
        workload_pace_restart(c);
    pace_take(&c->pace, clock_mono(), call);
}

/* Wait for the call's instant in slices, so that a stop or the deadline
 * is heard within 50 ms even at a rate of one call a minute. */
bool workload_pace(struct phase_ctx *c, struct pace_call *call)
{
    workload_pace_next(c, call);
    if (call->intended <= 0)
        return true;
    for (double now = call->ready; now < call->intended; now = clock_mono()) {
        if (workload_should_stop(c))
            return false;
        fiber_sleep_until(call->intended - now > 0.05 ? now + 0.05 : call->intended);
    }
    call->sent = clock_mono();
    return !workload_should_stop(c);
}

static void workload_pace_add(struct phase_ctx *c, enum op op, double seconds)
{
    hist_add(&c->hist[op], seconds > 0 ? (uint64_t)(seconds * 1e9) : 0);
    c->op_count[op]++;
    c->op_seconds[op] += seconds;
}

void workload_paced(struct phase_ctx *c, struct rank_record *r, const struct pace_call *call)
{
    workload_paced_at(c, r, call, clock_mono());
}

void workload_paced_at(struct phase_ctx *c, struct rank_record *r, const struct pace_call *call,
                       double end)
{
    r->units++;
    if (call->intended <= 0)
        return;
    r->late += pace_call_late(call);
    workload_pace_add(c, OP_RESPONSE, end - call->intended);
    workload_pace_add(c, OP_SERVICE, end - call->sent);
    workload_pace_add(c, OP_LAG, pace_lag(call));
}

void workload_row_end(struct phase_ctx *c, struct rank_record *r)
{
    r->t_end = clock_now(c->clock);
    if (!c->pace_started)
        return;
    /* Due until the deadline, when it is what ended the row: the instants
     * after it were never to be sent. */
    double until = clock_mono();
    if (c->deadline_at > 0 && c->clock && c->deadline_at + c->clock->base < until)
        until = c->deadline_at + c->clock->base;
    uint64_t due = pace_due(&c->pace, until);
    r->due = due - c->pace_due;
    c->pace_due = due;
}

void workload_path(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    if (len > 0 && (n < 0 || (size_t)n >= len))
        buf[0] = '\0';
}

void workload_fileset_dir(const struct phase_ctx *c, char *buf, size_t len)
{
    workload_path(buf, len, "%s/%s", c->rundir, c->ph->fileset);
}

void workload_file_path(const struct phase_ctx *c, int index, char *buf, size_t len)
{
    if (index < 0)
        workload_path(buf, len, "%s/%s/shared.dat", c->rundir, c->ph->fileset);
    else
        workload_path(buf, len, "%s/%s/r%06d.dat", c->rundir, c->ph->fileset, index);
}

/* The runner makes (and claims) the run directory before the first
 * phase; where it could not (a read-only or full target), every rank's
 * attempt here shows the reason in its errors. Of a rank's clients the
 * first makes them when it could (dirs_made): the others would only send
 * the same MKDIRs again. */
void workload_make_dirs(struct phase_ctx *c)
{
    if (c->dirs_made)
        return;
    char dir[HERD_PATH_MAX];
    int rc = c->be->mkdir(c->be_ctx, c->rundir);
    if (rc < 0 && rc != -EEXIST)
        workload_fail(c, NULL, OP_MKDIR, rc, c->rundir);
    workload_fileset_dir(c, dir, sizeof dir);
    rc = c->be->mkdir(c->be_ctx, dir);
    if (rc == 0)
        workload_claim(c, CLAIM_FILESET_DIR);
    else if (rc != -EEXIST)
        workload_fail(c, NULL, OP_MKDIR, rc, dir); /* prepare: iteration 0's row */
}

int workload_pattern_init(const struct phase_ctx *c, struct pattern *p, size_t max_block)
{
    const struct phase *ph = c->ph;
    return (c->clients > 1 ? pattern_init_shared : pattern_init)(
        p, ph->pattern, (int)ph->zero_percent, (uint64_t)ph->seed, max_block);
}

void workload_claim(struct phase_ctx *c, unsigned bits)
{
    if (c->claims && c->index >= 0 && c->index < c->claims->nphases)
        c->claims->mine[c->index] |= (unsigned char)bits;
}

/* File f of c's client: its bit among the rank's clients' files. */
static int64_t workload_claim_bit(const struct phase_ctx *c, int64_t f)
{
    int64_t k = c->clients > 1 ? c->clients : 1;
    return f * k + c->client;
}

int workload_claim_files(struct phase_ctx *c, int64_t nfiles)
{
    struct claims *k = c->claims;
    if (!k || c->index < 0 || c->index >= k->nphases || nfiles < 1)
        return 0;
    if (!k->files && !(k->files = calloc((size_t)k->nphases, sizeof *k->files)))
        return -ENOMEM;
    int64_t bits = nfiles * (c->clients > 1 ? c->clients : 1); /* every client's files */
    if (!k->files[c->index] && !(k->files[c->index] = calloc((size_t)(bits + 7) / 8, 1)))
        return -ENOMEM;
    return 0;
}

void workload_claim_file(struct phase_ctx *c, int64_t f)
{
    workload_claim(c, CLAIM_FILE);
    unsigned char *bits = c->claims && c->claims->files ? c->claims->files[c->index] : NULL;
    int64_t b = workload_claim_bit(c, f);
    if (bits)
        bits[b / 8] |= (unsigned char)(1u << (b % 8));
}

bool workload_claimed_file(const struct phase_ctx *c, int64_t f)
{
    const unsigned char *bits = c->claims && c->claims->files ? c->claims->files[c->index] : NULL;
    if (!bits) /* one file per rank: the phase's bit */
        return workload_claimed(c, CLAIM_FILE, false);
    int64_t b = workload_claim_bit(c, f);
    return (bits[b / 8] >> (b % 8)) & 1u;
}

void workload_claims_free(struct claims *claims)
{
    for (int i = 0; claims->files && i < claims->nphases; i++)
        free(claims->files[i]);
    free(claims->files);
    free(claims->mine);
    free(claims->any);
    claims->files = NULL;
    claims->mine = claims->any = NULL;
}

bool workload_claimed(const struct phase_ctx *c, unsigned bits, bool any)
{
    if (!c->claims || c->index < 0 || c->index >= c->claims->nphases)
        return false;
    const unsigned char *v = any ? c->claims->any : c->claims->mine;
    return v && (v[c->index] & bits) != 0;
}
