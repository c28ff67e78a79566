/* workload_lock.c — byte-range locks on one shared file, the seed's "how
 * well the nodes can lock a file on the NFS server". Every rank takes and
 * releases locks `count` times (or for `duration`): exclusive, shared or
 * alternating; on the whole file, its own block, or blocks that overlap its
 * neighbour's; blocking (with an optional timeout) or not.
 *
 * Mutual exclusion is checked, not assumed: while holding an exclusive
 * lock a rank saves the bytes at the start of its range, writes a token
 * (rank, attempt) there, sleeps lock_hold, reads the token back and writes
 * the saved bytes back before it unlocks; any other token means another
 * rank wrote inside a range this rank held exclusively, a violation. So a
 * working lock leaves the file's bytes as they were (a write phase's data
 * still verifies after a lock phase on it); only where the file was
 * shorter than the token does the token stay (a fresh lock file keeps
 * it). Hold intervals go to the results too, so overlap can be seen on
 * the common clock.
 *
 * The lock file is claimed (workload_claim) by the ranks that find it
 * absent in prepare, so the clean-up removes only a file this run made. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "fiber.h"
#include "signals.h"
#include "workload.h"

#define LOCK_TOKEN 16

struct lock_state {
    struct backend_file *f;
    char path[HERD_PATH_MAX];
};

static void lock_range_of(const struct phase_ctx *c, uint64_t *start, uint64_t *len);

/* A lock file that ends before this rank's token range (a fresh one is
 * empty) is extended with zeros there (untimed), so that every exclusive
 * hold saves, checks and restores the same 16 bytes and the op counts do
 * not depend on which rank held first. Bytes that exist are never
 * changed: only the file's length grows, past any data a phase checks. */
static void lock_fill_token_range(struct phase_ctx *c)
{
    struct lock_state *s = c->state;
    uint64_t start, len;
    lock_range_of(c, &start, &len);
    static const unsigned char zeros[LOCK_TOKEN];
    unsigned char have[LOCK_TOKEN];
    ssize_t n = c->be->pread(c->be_ctx, s->f, have, sizeof have, start);
    if (n == (ssize_t)sizeof have)
        return;
    n = c->be->pwrite(c->be_ctx, s->f, zeros, sizeof zeros, start);
    if (n < 0)
        workload_fail(c, NULL, OP_WRITE, (int)n, s->path);
}

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
    /* Every rank makes sure the file exists; opening it is not timed. A
     * rank that creates it has seen it absent first, so at least one rank
     * claims a file this run made, and none claims one that was there. */
    workload_make_dirs(c);
    struct stat st;
    if (c->be->stat(c->be_ctx, s->path, &st) == -ENOENT)
        workload_claim(c, CLAIM_FILE);
    int rc = c->be->open(c->be_ctx, s->path, BACKEND_READ | BACKEND_WRITE | BACKEND_CREATE, &s->f);
    if (rc < 0) {
        workload_fail(c, NULL, OP_OPEN, rc, s->path); /* iteration 0's row */
        s->f = NULL;
    }
    if (s->f)
        lock_fill_token_range(c);
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
    double until = clock_mono() + seconds;
    while (!fiber_sleep(until - clock_mono()) && !signals_caught())
        ;
}

/* A timed pread or pwrite of the token range at `at`, counted in r. */
static ssize_t lock_io(struct phase_ctx *c, struct rank_record *r, bool write, void *buf,
                       size_t len, uint64_t at)
{
    struct lock_state *s = c->state;
    enum op op = write ? OP_WRITE : OP_READ;
    double t0 = op_begin(c, op, s->path);
    ssize_t n = write ? c->be->pwrite(c->be_ctx, s->f, buf, len, at)
                      : c->be->pread(c->be_ctx, s->f, buf, len, at);
    if (workload_done(c, r, op, t0, n, s->path, &r->t_io) >= 0)
        r->bytes += (uint64_t)n;
    return n;
}

/* Hold an exclusive lock on a range starting at `at`: save the bytes there
 * (as many as the file has, up to LOCK_TOKEN), write the token, sleep,
 * read the token back, write the saved bytes back. Returns false only
 * when the token read back is not this rank's (a violation); a failed
 * call is counted and returns true (nothing was seen). The saved bytes
 * go back even after a violation or a failed read-back: under a working
 * lock the range holds what it held before. */
static bool lock_check_token(struct phase_ctx *c, struct rank_record *r, uint64_t at,
                             uint64_t attempt)
{
    unsigned char mine[LOCK_TOKEN], seen[LOCK_TOKEN], saved[LOCK_TOKEN];
    memset(mine, 0, sizeof mine);
    uint64_t rank = (uint64_t)c->rank + 1; /* 0 would look like an empty file */
    memcpy(mine, &rank, sizeof rank);
    memcpy(mine + 8, &attempt, sizeof attempt);
    ssize_t kept = lock_io(c, r, false, saved, sizeof saved, at);
    if (kept < 0)
        return true; /* cannot restore what it cannot save: leave it alone */
    if (lock_io(c, r, true, mine, sizeof mine, at) < 0)
        return true;
    lock_sleep(c->ph->lock_hold);
    ssize_t n = lock_io(c, r, false, seen, sizeof seen, at);
    if (kept > 0) /* short file: the bytes past its old end keep the token */
        lock_io(c, r, true, saved, (size_t)kept, at);
    return n < 0 || (n == (ssize_t)sizeof seen && memcmp(mine, seen, sizeof mine) == 0);
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

    double asked = clock_now(c->clock);
    double t0 = op_begin(c, OP_LOCK, s->path);
    if (wait && ph->lock_timeout > 0)
        signals_alarm_arm(ph->lock_timeout);
    int rc = c->be->lock(c->be_ctx, s->f, exclusive ? BACKEND_LOCK_EXCLUSIVE : BACKEND_LOCK_SHARED,
                         wait, start, len);
    bool timed_out = wait && ph->lock_timeout > 0 && signals_alarm_disarm() && rc == -EINTR;
    /* Refused because someone holds it: not an error. */
    bool contended = !wait && (rc == -EAGAIN || rc == -EACCES);
    /* Wait-for-grant time: the histogram only, not the row's t_io. */
    int outcome = timed_out ? -ETIMEDOUT : rc;
    workload_done(c, r, OP_LOCK, t0, contended ? 0 : outcome, s->path, NULL);
    if (contended) {
        r->contended++;
        return;
    }
    if (rc < 0)
        return;
    r->grants++;
    double granted = clock_now(c->clock);
    if (exclusive) {
        if (!lock_check_token(c, r, start, attempt))
            r->violations++;
    } else {
        lock_sleep(ph->lock_hold);
    }
    double released = clock_now(c->clock);
    holds_add(&c->holds, c->rank, exclusive, asked, granted, released, start, len);

    t0 = op_begin(c, OP_LOCK, s->path);
    workload_done(c, r, OP_LOCK, t0,
                  c->be->lock(c->be_ctx, s->f, BACKEND_UNLOCK, false, start, len), s->path, NULL);
}

static void lock_run(struct phase_ctx *c)
{
    struct lock_state *s = c->state;
    const struct phase *ph = c->ph;
    for (int64_t i = 0; i < ph->iterations; i++) {
        struct rank_record *r = &c->records[i];
        r->t_start = clock_now(c->clock);
        uint64_t attempt = 0;
        bool ok = s->f != NULL;
        struct pace_call call;
        while (ok && workload_attempt_due(c, r, (int64_t)attempt) && workload_pace(c, &call)) {
            lock_attempt(c, r, attempt++);
            workload_paced(c, r, &call);
        }
        r->completed = ok && r->errors == 0 && !workload_should_stop(c);
        workload_row_end(c, r);
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
            workload_fail(c, NULL, OP_CLOSE, rc, s->path); /* iteration 0's row */
    }
    free(s);
    c->state = NULL;
}

/* The lock file: rank 0 removes it, if a rank of this run created it. */
static void lock_remove(struct phase_ctx *c, int pass)
{
    if (pass != 0 || c->rank != 0 || !workload_claimed(c, CLAIM_FILE, true))
        return;
    char path[HERD_PATH_MAX];
    workload_file_path(c, -1, path, sizeof path);
    int rc = c->be->unlink(c->be_ctx, path);
    if (rc < 0 && rc != -ENOENT)
        workload_error(c, OP_UNLINK, rc, path);
}

static const char *lock_check(const struct phase *ph, char *why, size_t len)
{
    if (ph->lock_range != LOCK_WHOLE && ph->block_size < 16) {
        snprintf(why, len,
                 "lock ranges of block_size bytes must hold the 16-byte token: "
                 "use block_size >= 16");
        return "block_size";
    }
    if (ph->lock_wait == LOCK_NONBLOCKING && ph->lock_timeout > 0) {
        snprintf(why, len, "applies to lock_wait = blocking only");
        return "lock_timeout";
    }
    return NULL;
}

static void lock_describe(const struct phase *ph, char *buf, size_t len)
{
    const char *mode = "mixed", *range = "overlap";
    if (ph->lock_mode == LOCK_EXCLUSIVE)
        mode = "excl";
    else if (ph->lock_mode == LOCK_SHARED)
        mode = "shared";
    if (ph->lock_range == LOCK_WHOLE)
        range = "whole";
    else if (ph->lock_range == LOCK_BLOCK)
        range = "block";
    snprintf(buf, len, "%s %s %s", mode, range, ph->lock_wait == LOCK_BLOCKING ? "wait" : "nowait");
}

static const char *const lock_keys[] = {"duration",  "count",      "lock_mode",    "lock_range",
                                        "lock_wait", "lock_hold",  "lock_timeout", "rate",
                                        "arrivals",  "rate_steps", "rate_curve",   NULL};

const struct workload_ops workload_lock = {
    .keys = lock_keys,
    .check = lock_check,
    .job_caps = JOB_KIND_LOCKS,
    .name = "lock",
    .help = "take and release fcntl locks on one shared file",
    .flags = WORKLOAD_HOLDS,
    .main_ops = {OP_LOCK},
    .nmain_ops = 1,
    .dir_depth = 1,
    .describe = lock_describe,
    .prepare = lock_prepare,
    .run = lock_run,
    .finish = lock_finish,
    .remove = lock_remove,
};
