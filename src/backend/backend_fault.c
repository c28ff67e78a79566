/* backend_fault.c — the POSIX backend with faults injected on demand, to
 * prove that herd's error accounting, deadlines, watchdog and checks are
 * real. The phase key `faults` lists rules "op=action", comma separated:
 *
 *   write=EIO@0.01    fail 1 % of writes with EIO (no @P: every call)
 *   open=delay:200ms  sleep before every open (a slow server)
 *   lock=noop         report every lock as granted without locking (a
 *                     broken lock manager: the lock check must catch it)
 *   read=serve:5ms/2  a server with 2 workers shared by every rank: each
 *                     read first takes one of 2 worker slots, holds it
 *                     5 ms, then does the real read. Beyond 2 concurrent
 *                     callers the others queue, so call time grows with
 *                     the callers and throughput stays at 2 / 5 ms (what
 *                     a plain delay, where every rank sleeps alone, never
 *                     does: a load ladder on it finds a knee).
 *
 * op is one of open read write fsync close stat unlink mkdir rmdir rename
 * lock, or `all`. Failures draw from a per-rank seeded generator.
 *
 * Worker slots are exclusive 1-byte open file description locks (fcntl
 * F_OFD_SETLK) at FAULT_SLOT_BASE + k on the run directory's lock file
 * (RUNDIR_LOCK), which exists for the whole run: shared by every rank on
 * the host and, where the file system shares locks, across hosts. OFD
 * locks, not POSIX record locks: closing a descriptor of the lock file
 * would drop every record lock the process holds on it. A serve call
 * opens the lock file (safepath: no link followed), takes a slot, sleeps,
 * and closes the descriptor, which releases the slot: nothing is held
 * between calls, so nothing is left to clean up. The run directory is the
 * first component of the first "herd-..." path the backend was given. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "job.h"
#include "ops.h"
#include "rundir.h"
#include "safepath.h"
#include "units.h"

/* serve:DURATION/WORKERS: 1..FAULT_SERVE_MAX workers. Slot k is the byte
 * FAULT_SLOT_BASE + k of the lock file: far beyond the one owner line
 * herd writes there, so no real byte is ever locked. */
#define FAULT_SERVE_MAX 64
#define FAULT_SLOT_BASE ((off_t)1 << 40)

enum fault_kind { FAULT_NONE, FAULT_ERRNO, FAULT_DELAY, FAULT_NOOP, FAULT_SERVE };

struct fault_rule {
    enum fault_kind kind;
    int err;        /* FAULT_ERRNO */
    double chance;  /* FAULT_ERRNO: 0..1 */
    double seconds; /* FAULT_DELAY, FAULT_SERVE: how long a call sleeps (holds its slot) */
    int workers;    /* FAULT_SERVE: 1..FAULT_SERVE_MAX */
};

struct fault_ctx {
    void *inner; /* the posix backend's context */
    int rootfd;  /* the target directory: the lock file is opened beneath it */
    /* First component of the first "herd-..." path given, "" before any:
     * the run directory whose lock file holds the worker slots. */
    char rundir[HERD_PATH_MAX];
    struct fault_rule rules[OP_COUNT];
    uint64_t rng;
};

static const struct {
    const char *name;
    int err;
} fault_errnos[] = {
    {"EIO", EIO},
    {"ENOENT", ENOENT},
    {"ESTALE", ESTALE},
    {"ENOSPC", ENOSPC},
    {"EACCES", EACCES},
    {"EAGAIN", EAGAIN},
    {"ETIMEDOUT", ETIMEDOUT},
    {"ENOLCK", ENOLCK},
    {"EDEADLK", EDEADLK},
    {"EINTR", EINTR},
    {"EROFS", EROFS},
    {"EDQUOT", EDQUOT},
    {"ECONNRESET", ECONNRESET},
    {"EBADF", EBADF},
};

/* Parse serve's "DURATION/WORKERS" into rule: 0, or -EINVAL when the
 * duration is not one (or over a week) or workers is not a plain number
 * in 1..FAULT_SERVE_MAX. */
static int fault_parse_serve(const char *text, struct fault_rule *rule)
{
    const char *slash = strrchr(text, '/');
    if (!slash)
        return -EINVAL;
    char dur[32];
    if ((size_t)(slash - text) >= sizeof dur)
        return -EINVAL;
    snprintf(dur, sizeof dur, "%.*s", (int)(slash - text), text);
    double secs;
    if (units_parse_duration(dur, &secs) != 0 || secs > JOB_DURATION_MAX)
        return -EINVAL;
    const char *k = slash + 1;
    size_t digits = strspn(k, "0123456789");
    if (digits == 0 || digits > 2 || k[digits] != '\0')
        return -EINVAL;
    int workers = atoi(k);
    if (workers < 1 || workers > FAULT_SERVE_MAX)
        return -EINVAL;
    rule->kind = FAULT_SERVE;
    rule->seconds = secs;
    rule->workers = workers;
    return 0;
}

/* ERRNO[@P]: the errno by name, with a chance in (0, 1] (1 without @P).
 * false when either part is not one. */
static bool fault_parse_errno(const char *action, struct fault_rule *rule)
{
    char name[32];
    double chance = 1.0;
    const char *at = strchr(action, '@');
    snprintf(name, sizeof name, "%.*s", at ? (int)(at - action) : (int)strlen(action), action);
    if (at) {
        /* A plain decimal in (0, 1]: strtod alone would take "nan",
         * "inf", "0x1p-2", signs and leading spaces. */
        char *end;
        const char *p = at + 1;
        bool plain =
            ((*p >= '0' && *p <= '9') || *p == '.') && strspn(p, "0123456789.eE-") == strlen(p);
        chance = plain ? strtod(p, &end) : 0.0;
        if (!plain || *end || !isfinite(chance) || chance <= 0 || chance > 1) {
            rule->chance = -1; /* the probability is at fault */
            return false;
        }
    }
    for (size_t i = 0; i < sizeof fault_errnos / sizeof fault_errnos[0]; i++)
        if (strcmp(name, fault_errnos[i].name) == 0)
            rule->err = fault_errnos[i].err;
    rule->kind = FAULT_ERRNO;
    rule->chance = chance;
    return rule->err != 0;
}

/* One action for operation op (-1: all) into rule; NULL or what is
 * wrong (in why). */
static const char *fault_parse_action(const char *action, int op, struct fault_rule *rule,
                                      char *why, size_t len)
{
    double secs;
    if (strcmp(action, "noop") == 0) {
        if (op != OP_LOCK) {
            snprintf(why, len, "noop applies to lock only");
            return why;
        }
        rule->kind = FAULT_NOOP;
    } else if (strncmp(action, "delay:", 6) == 0) {
        if (units_parse_duration(action + 6, &secs) != 0 || secs > JOB_DURATION_MAX) {
            snprintf(why, len, "'%s': delay must be a duration of at most a week", action);
            return why;
        }
        rule->kind = FAULT_DELAY;
        rule->seconds = secs;
    } else if (strncmp(action, "serve:", 6) == 0) {
        if (fault_parse_serve(action + 6, rule) != 0) {
            snprintf(why, len,
                     "'%s': want serve:DURATION/WORKERS, workers 1 to %d (a duration of "
                     "at most a week)",
                     action, FAULT_SERVE_MAX);
            return why;
        }
    } else if (!fault_parse_errno(action, rule)) {
        if (rule->chance < 0)
            snprintf(why, len, "'%s': probability must be a number in (0, 1], e.g. EIO@0.01",
                     action);
        else
            snprintf(why, len,
                     "'%s' is not noop, delay:DURATION, serve:DURATION/WORKERS or "
                     "ERRNO[@P] (EIO, ESTALE, ENOSPC, ...)",
                     action);
        return why;
    }
    return NULL;
}

/* Parse spec into rules; returns NULL or what is wrong. */
static const char *fault_parse(const char *spec, struct fault_rule rules[OP_COUNT], char *why,
                               size_t len)
{
    memset(rules, 0, OP_COUNT * sizeof *rules);
    char buf[JOB_PATH_MAX];
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        while (*item == ' ')
            item++;
        char *eq = strchr(item, '=');
        if (!eq) {
            snprintf(why, len, "'%s' is not op=action", item);
            return why;
        }
        *eq = '\0';
        int op = -1;
        for (int i = 0; i < OP_COUNT; i++)
            if (strcmp(item, op_name((enum op)i)) == 0)
                op = i;
        if (op < 0 && strcmp(item, "all") != 0) {
            snprintf(why, len, "'%s' is not an operation (open, read, write, lock, all...)", item);
            return why;
        }
        struct fault_rule rule = {0};
        if (fault_parse_action(eq + 1, op, &rule, why, len))
            return why;
        for (int i = 0; i < OP_COUNT; i++)
            if (i == op || op < 0)
                rules[i] = rule;
    }
    return NULL;
}

/* xorshift64*: uniform in [0, 1). */
static double fault_random(struct fault_ctx *c)
{
    c->rng ^= c->rng >> 12;
    c->rng ^= c->rng << 25;
    c->rng ^= c->rng >> 27;
    return (double)((c->rng * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
}

/* Sleep seconds: 0, or -EINTR when a signal (stop request, lock_timeout
 * alarm) cut it short, as it would a real blocked call. */
static int fault_sleep(double seconds)
{
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    if (nanosleep(&ts, NULL) != 0 && errno == EINTR)
        return -EINTR;
    return 0;
}

/* Remember the first "herd-..." path's first component: the run
 * directory (every path herd gives a backend is "herd-<run id>/..."; it
 * does not change within a run, so later calls cost one test). */
static void fault_remember(struct fault_ctx *c, const char *path)
{
    if (c->rundir[0] || strncmp(path, "herd-", 5) != 0)
        return;
    size_t n = strcspn(path, "/");
    if (n < sizeof c->rundir)
        snprintf(c->rundir, sizeof c->rundir, "%.*s", (int)n, path);
}

/* Take one of r->workers slots (exclusive OFD locks on the run's lock
 * file), hold it r->seconds, release it. Non-blocking tries first, from a
 * per-rank random slot, so that free workers are used; when all are busy,
 * wait on a random one. 0, or a negative errno: the lock file could not be
 * opened (its errno), the wait or sleep was cut short (-EINTR). */
static int fault_serve(struct fault_ctx *c, const struct fault_rule *r)
{
    /* Slots live only in herd's own run directory: a first component that
     * is not "herd-..." (no path seen yet, or not herd's) names no lock
     * file herd made, and locking some other file could block whatever
     * really uses it. */
    if (strncmp(c->rundir, "herd-", 5) != 0)
        return -EINVAL;
    char lock[HERD_PATH_MAX];
    if (snprintf(lock, sizeof lock, "%s/%s", c->rundir, RUNDIR_LOCK) >= (int)sizeof lock)
        return -ENAMETOOLONG;
    /* Read and write (a write lock needs it), never created, no link followed. */
    int fd = safepath_open(c->rootfd, lock, O_RDWR, 0);
    if (fd < 0)
        return fd;
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 1};
    int first = (int)(fault_random(c) * r->workers);
    int rc = -EAGAIN;
    for (int i = 0; i < r->workers && rc == -EAGAIN; i++) {
        fl.l_start = FAULT_SLOT_BASE + (first + i) % r->workers;
        rc = fcntl(fd, F_OFD_SETLK, &fl) == 0 ? 0 : -errno;
        if (rc == -EACCES)
            rc = -EAGAIN; /* the other "held by somebody" answer */
    }
    if (rc == -EAGAIN) { /* every worker busy: queue on one */
        fl.l_start = FAULT_SLOT_BASE + (int)(fault_random(c) * r->workers);
        rc = fcntl(fd, F_OFD_SETLKW, &fl) == 0 ? 0 : -errno;
    }
    if (rc == 0)
        rc = fault_sleep(r->seconds);
    close(fd); /* releases the slot: OFD locks belong to this description */
    return rc;
}

/* Apply op's rule before the real call: 0 = go on, else the errno to fail with. */
static int fault_apply(struct fault_ctx *c, enum op op)
{
    const struct fault_rule *r = &c->rules[op];
    if (r->kind == FAULT_DELAY) {
        return fault_sleep(r->seconds);
    } else if (r->kind == FAULT_SERVE) {
        return fault_serve(c, r);
    } else if (r->kind == FAULT_ERRNO && fault_random(c) < r->chance) {
        return -r->err;
    }
    return 0;
}

/* The fault backend's one job-file option, in the phase's backend_opts
 * block: the rules, as written. */
struct fault_opts {
    char faults[JOB_PATH_MAX];
};
JOB_OPTS_FIT(struct fault_opts);

JOB_KEY_ROWS_BEGIN
static const struct job_key fault_keys[] = {
    {"faults", KEY_STRING, JOB_OPTS_MEMBER(struct fault_opts, faults), NULL, "",
     "backend = fault: rules op=action, e.g. write=EIO@0.01, open=delay:200ms, lock=noop, "
     "read=serve:5ms/2 (a server of 2 workers shared by all ranks: calls queue)"},
};
JOB_KEY_ROWS_END

static const char *fault_check(const struct phase *ph, char *why, size_t len)
{
    struct fault_rule rules[OP_COUNT];
    const struct fault_opts *o = job_backend_opts(ph);
    return fault_parse(o->faults, rules, why, len) ? "faults" : NULL;
}

static int fault_connect(const char *target, const struct phase *ph, const char *client, void **ctx)
{
    struct fault_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    /* The posix backend keeps its own target descriptor private: open
     * the same directory for the lock file (safepath_open beneath it). */
    c->rootfd = open(target, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (c->rootfd < 0) {
        int err = errno;
        free(c);
        return -err;
    }
    int rc = backend_posix.connect(target, ph, client, &c->inner);
    if (rc < 0) {
        close(c->rootfd);
        free(c);
        return rc;
    }
    c->rng = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)getpid() << 17) ^ (uint64_t)ph->seed;
    *ctx = c;
    return 0;
}

static int fault_configure(void *ctx, const struct phase *ph)
{
    struct fault_ctx *c = ctx;
    char why[256];
    if (!ph) { /* between phases (clean-up): no faults */
        memset(c->rules, 0, sizeof c->rules);
        return 0;
    }
    const struct fault_opts *o = job_backend_opts(ph);
    return fault_parse(o->faults, c->rules, why, sizeof why) ? -EINVAL : 0;
}

static void fault_disconnect(void *ctx)
{
    struct fault_ctx *c = ctx;
    backend_posix.disconnect(c->inner);
    close(c->rootfd);
    free(c);
}

/* Every call: the rule first, then the POSIX backend. A call that takes
 * a path first remembers its run directory (fault_remember). */
#define FAULT_CALL(op, call)                                                                       \
    struct fault_ctx *c = ctx;                                                                     \
    int injected = fault_apply(c, op);                                                             \
    if (injected < 0)                                                                              \
        return injected;                                                                           \
    return backend_posix.call;

static int fault_open(void *ctx, const char *path, int flags, struct backend_file **f)
{
    fault_remember(ctx, path);
    FAULT_CALL(OP_OPEN, open(c->inner, path, flags, f))
}

static ssize_t fault_pread(void *ctx, struct backend_file *f, void *buf, size_t len,
                           uint64_t offset)
{
    FAULT_CALL(OP_READ, pread(c->inner, f, buf, len, offset))
}

static ssize_t fault_pwrite(void *ctx, struct backend_file *f, const void *buf, size_t len,
                            uint64_t offset)
{
    FAULT_CALL(OP_WRITE, pwrite(c->inner, f, buf, len, offset))
}

static int fault_fsync(void *ctx, struct backend_file *f)
{
    FAULT_CALL(OP_FSYNC, fsync(c->inner, f))
}

static int fault_close(void *ctx, struct backend_file *f)
{
    struct fault_ctx *c = ctx;
    int injected = fault_apply(c, OP_CLOSE);
    int rc = backend_posix.close(c->inner, f); /* always release the descriptor */
    return injected < 0 ? injected : rc;
}

static int fault_stat(void *ctx, const char *path, struct stat *st)
{
    fault_remember(ctx, path);
    FAULT_CALL(OP_STAT, stat(c->inner, path, st))
}

static int fault_fstat(void *ctx, struct backend_file *f, struct stat *st)
{
    FAULT_CALL(OP_GETATTR, fstat(c->inner, f, st))
}

static int fault_fsetattr(void *ctx, struct backend_file *f, int mode, int64_t size)
{
    FAULT_CALL(mode >= 0 ? OP_SETATTR : OP_TRUNCATE, fsetattr(c->inner, f, mode, size))
}

static int fault_faccess(void *ctx, struct backend_file *f)
{
    FAULT_CALL(OP_ACCESS, faccess(c->inner, f))
}

static int fault_readdir(void *ctx, const char *path, uint64_t *entries)
{
    fault_remember(ctx, path);
    FAULT_CALL(OP_READDIR, readdir(c->inner, path, entries))
}

static int fault_unlink(void *ctx, const char *path)
{
    fault_remember(ctx, path);
    FAULT_CALL(OP_UNLINK, unlink(c->inner, path))
}

static int fault_mkdir(void *ctx, const char *path)
{
    fault_remember(ctx, path);
    FAULT_CALL(OP_MKDIR, mkdir(c->inner, path))
}

static int fault_rmdir(void *ctx, const char *path)
{
    fault_remember(ctx, path);
    FAULT_CALL(OP_RMDIR, rmdir(c->inner, path))
}

static int fault_rename(void *ctx, const char *from, const char *to)
{
    fault_remember(ctx, from);
    FAULT_CALL(OP_RENAME, rename(c->inner, from, to))
}

static int fault_lock(void *ctx, struct backend_file *f, enum backend_lock kind, bool wait,
                      uint64_t start, uint64_t len)
{
    if (((struct fault_ctx *)ctx)->rules[OP_LOCK].kind == FAULT_NOOP)
        return 0;
    FAULT_CALL(OP_LOCK, lock(c->inner, f, kind, wait, start, len))
}

static int fault_local_dir(void *ctx, const char *path)
{
    struct fault_ctx *c = ctx;
    return backend_posix.local_dir(c->inner, path);
}

const struct backend_ops backend_fault = {
    .name = "fault",
    .keys = fault_keys,
    .nkeys = sizeof fault_keys / sizeof fault_keys[0],
    .check = fault_check,
    .connect = fault_connect,
    .configure = fault_configure,
    .disconnect = fault_disconnect,
    .open = fault_open,
    .pread = fault_pread,
    .pwrite = fault_pwrite,
    .fsync = fault_fsync,
    .close = fault_close,
    .stat = fault_stat,
    .fstat = fault_fstat,
    .fsetattr = fault_fsetattr,
    .faccess = fault_faccess,
    .readdir = fault_readdir,
    .unlink = fault_unlink,
    .mkdir = fault_mkdir,
    .rmdir = fault_rmdir,
    .rename = fault_rename,
    .lock = fault_lock,
    .local_dir = fault_local_dir,
};
