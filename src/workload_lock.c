/* workload_lock.c — byte-range locks on one shared file, the seed's "how
 * well the nodes can lock a file on the NFS server". Every rank takes and
 * releases locks `count` times (or for `duration`): exclusive, shared or
 * alternating; on the whole file, its own block, or blocks that overlap its
 * neighbour's; blocking (with an optional timeout) or not.
 *
 * Mutual exclusion is checked, not assumed: while holding an exclusive
 * lock a rank writes a token (rank, attempt) at the start of its range,
 * sleeps lock_hold, and reads the token back; any other token means
 * another rank wrote inside a range this rank held exclusively, a
 * violation. Hold intervals go to the results too, so overlap can be seen
 * on the common clock. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "signals.h"
#include "workload.h"

#define LOCK_TOKEN 16

struct lock_state {
    struct backend_file *f;
    char path[1200];
};

static int lock_prepare(struct phase_ctx *c)
{
    struct lock_state *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    c->state = s;
    workload_file_path(c, -1, s->path, sizeof s->path);
    for (int64_t i = 0; i < c->ph->iterations; i++)
        c->records[i].file_rank = -1;
    /* Holds are short: sleep them to the microsecond, not the default
     * 50 us timer slack. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    /* Every rank makes sure the file exists; opening it is not timed. */
    workload_make_dirs(c);
    int rc = c->be->open(c->be_ctx, s->path, BACKEND_READ | BACKEND_WRITE | BACKEND_CREATE, &s->f);
    if (rc < 0) {
        workload_error(c, OP_OPEN, rc, s->path);
        s->f = NULL;
    }
    return 0;
}

/* The byte range a rank locks (len 0 = the whole file). */
static void lock_range_of(const struct phase_ctx *c, uint64_t *start, uint64_t *len)
{
    uint64_t b = c->ph->block_size;
    *start = 0;
    *len = 0; /* LOCK_WHOLE */
    switch (c->ph->lock_range) {
    case LOCK_WHOLE:
        break;
    case LOCK_BLOCK:
        *start = (uint64_t)c->rank * b;
        *len = b;
        break;
    case LOCK_OVERLAP:
        *start = (uint64_t)c->rank * b;
        *len = 2 * b;
        break;
    }
}

static void lock_sleep(double seconds)
{
    if (seconds <= 0)
        return; /* nanosleep(0) still sleeps for the timer slack, ~50 us */
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !signals_caught())
        ;
}

/* Hold an exclusive lock: token in, sleep, token back. True if intact. */
static bool lock_check_token(struct phase_ctx *c, struct rank_record *r, uint64_t at,
                             uint64_t attempt)
{
    struct lock_state *s = c->state;
    unsigned char mine[LOCK_TOKEN], seen[LOCK_TOKEN];
    memset(mine, 0, sizeof mine);
    uint64_t rank = (uint64_t)c->rank + 1; /* 0 would look like an empty file */
    memcpy(mine, &rank, sizeof rank);
    memcpy(mine + 8, &attempt, sizeof attempt);
    double t0 = op_begin(c, OP_WRITE, s->path);
    ssize_t n = c->be->pwrite(c->be_ctx, s->f, mine, sizeof mine, at);
    r->t_io += op_end(c, OP_WRITE, t0);
    r->ops++;
    if (n < 0) {
        r->errors++;
        workload_error(c, OP_WRITE, (int)n, s->path);
        return true;
    }
    r->bytes += (uint64_t)n;
    lock_sleep(c->ph->lock_hold);
    t0 = op_begin(c, OP_READ, s->path);
    n = c->be->pread(c->be_ctx, s->f, seen, sizeof seen, at);
    r->t_io += op_end(c, OP_READ, t0);
    r->ops++;
    if (n < 0) {
        r->errors++;
        workload_error(c, OP_READ, (int)n, s->path);
        return true;
    }
    r->bytes += (uint64_t)n;
    return n == (ssize_t)sizeof seen && memcmp(mine, seen, sizeof mine) == 0;
}

/* One attempt: lock, hold, unlock. */
static void lock_attempt(struct phase_ctx *c, struct rank_record *r, uint64_t attempt)
{
    struct lock_state *s = c->state;
    const struct phase *ph = c->ph;
    bool exclusive = ph->lock_mode == LOCK_EXCLUSIVE ||
                     (ph->lock_mode == LOCK_MIXED && (c->rank + attempt) % 2 == 0);
    bool wait = ph->lock_wait == LOCK_BLOCKING;
    uint64_t start, len;
    lock_range_of(c, &start, &len);

    double t0 = op_begin(c, OP_LOCK, s->path);
    if (wait && ph->lock_timeout > 0)
        signals_alarm_arm(ph->lock_timeout);
    int rc = c->be->lock(c->be_ctx, s->f, exclusive ? BACKEND_LOCK_EXCLUSIVE : BACKEND_LOCK_SHARED,
                         wait, start, len);
    bool timed_out = wait && ph->lock_timeout > 0 && signals_alarm_disarm() && rc == -EINTR;
    op_end(c, OP_LOCK, t0); /* wait-for-grant time */
    r->ops++;
    if (rc == -EAGAIN || rc == -EACCES) {
        if (!wait) {
            r->contended++; /* refused because someone holds it: not an error */
            return;
        }
    }
    if (rc < 0) {
        r->errors++;
        workload_error(c, OP_LOCK, timed_out ? -ETIMEDOUT : rc, s->path);
        return;
    }
    r->grants++;
    double granted = clock_now(c->clock);
    if (exclusive) {
        if (!lock_check_token(c, r, start, attempt))
            r->violations++;
    } else {
        lock_sleep(ph->lock_hold);
    }
    double released = clock_now(c->clock);
    holds_add(&c->holds, c->rank, exclusive, granted, released, start, len);

    t0 = op_begin(c, OP_LOCK, s->path);
    rc = c->be->lock(c->be_ctx, s->f, BACKEND_UNLOCK, false, start, len);
    op_end(c, OP_LOCK, t0);
    r->ops++;
    if (rc < 0) {
        r->errors++;
        workload_error(c, OP_LOCK, rc, s->path);
    }
}

static void lock_run(struct phase_ctx *c)
{
    struct lock_state *s = c->state;
    const struct phase *ph = c->ph;
    for (int64_t i = 0; i < ph->iterations; i++) {
        struct rank_record *r = &c->records[i];
        r->t_start = clock_now(c->clock);
        double until = ph->duration > 0 ? r->t_start + ph->duration : 0;
        uint64_t attempt = 0;
        bool ok = s->f != NULL;
        while (ok && !workload_should_stop(c)) {
            if (until > 0 ? clock_now(c->clock) >= until : attempt >= (uint64_t)ph->count)
                break;
            lock_attempt(c, r, attempt++);
        }
        r->completed = ok && r->errors == 0 && !workload_should_stop(c);
        r->t_end = clock_now(c->clock);
    }
}

static void lock_finish(struct phase_ctx *c)
{
    struct lock_state *s = c->state;
    if (!s)
        return;
    if (s->f) {
        int rc = c->be->close(c->be_ctx, s->f);
        if (rc < 0)
            workload_error(c, OP_CLOSE, rc, s->path);
    }
    free(s);
    c->state = NULL;
}

/* The lock file: rank 0 removes it. */
static void lock_remove(struct phase_ctx *c, int pass)
{
    if (pass != 0 || c->rank != 0)
        return;
    char path[1200];
    workload_file_path(c, -1, path, sizeof path);
    c->be->unlink(c->be_ctx, path);
}

const struct workload_ops workload_lock = {KIND_LOCK, lock_prepare, lock_run, lock_finish,
                                           lock_remove};
