/* job_keys.c — the key table: every job-file key once, with its type,
 * default, help, where it applies (scope, kinds, backend) and its bounds;
 * a value parsed into a phase and formatted back. The job model's own
 * rows are here; the plug-ins declare theirs (the monitor's, each
 * backend's backend_ops.keys), and the table joins the sets and the
 * kinds the registry lists (job.h's struct job_registry). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "job_parse.h"
#include "mixspec.h"
#include "stoprule.h"
#include "units.h"
#include "utf8.h"

static const char *const lock_mode_choices[] = {"exclusive", "shared", "mixed", NULL};
static const char *const lock_range_choices[] = {"whole", "block", "overlap", NULL};
static const char *const lock_wait_choices[] = {"blocking", "nonblocking", NULL};
static const char *const meta_step_names[META_STEPS] = {"create", "stat", "rename", "unlink",
                                                        "rmdir"};
static const char *const sharing_choices[] = {"unique", "shared", NULL};
static const char *const shared_mode_choices[] = {"same-content", "segmented", NULL};
static const char *const read_from_choices[] = {"self", "neighbor", NULL};
static const char *const access_choices[] = {"sequential", "random", "strided", NULL};
static const char *const arrivals_choices[] = {"fixed", "poisson", NULL}; /* enum pace_arrivals */

/* mix's operations (mixspec.h). */
static const char *mixspec_check(const char *v, char *why, size_t len)
{
    struct mix_spec spec;
    return mixspec_parse(v, &spec, why, len);
}

/* stop_when's rule (stoprule.h). */
static const char *stoprule_check(const char *v, char *why, size_t len)
{
    struct stop_rule rule;
    return stoprule_parse(v, &rule, why, len);
}

/* Rows name scope, kinds and backend only where they differ from the
 * default (any section, every kind, every backend). */
JOB_KEY_ROWS_BEGIN
static const struct job_key core_keys[] = {
    {"target", KEY_STRING, PHASE_MEMBER(target), NULL, NULL,
     "directory herd works in (it creates and uses only target/herd-<run id>/)",
     .scope = KEY_GLOBAL_ONLY},
    {"backend", KEY_STRING, PHASE_MEMBER(backend), NULL, "",
     "I/O backend: posix (any mounted file system) | libnfs (target = nfs://server/export) | "
     "smb (target = smb://server/share, libsmbclient) | fault (posix with injected faults, "
     "see faults); unset: the target's (nfs:// libnfs, smb:// smb, a path posix), and one "
     "that contradicts the target is refused",
     .scope = KEY_GLOBAL_ONLY},
    /* choices and help: the registry's kinds (table_build) */
    {"kind", KEY_ENUM, PHASE_MEMBER(kind), NULL, NULL, NULL},
    {"sharing", KEY_ENUM, PHASE_MEMBER(sharing), sharing_choices, "unique",
     "unique (one file per rank) | shared (one file for all ranks)"},
    {"shared_mode", KEY_ENUM, PHASE_MEMBER(shared_mode), shared_mode_choices, "same-content",
     "for shared files: same-content (every rank moves the whole file) | "
     "segmented (each rank its own contiguous region)"},
    {"file_size", KEY_SIZE, PHASE_MEMBER(file_size), NULL, "16M",
     "bytes per file (per rank's region when segmented); K/M/G suffixes; meta phases: 0 "
     "(empty files) unless their own section or the command line sets it ([global]'s and "
     "this default do not reach them)"},
    {"block_size", KEY_SIZE, PHASE_MEMBER(block_size), NULL, "1M", "bytes per read or write call",
     .bounds = KEY_ABOVE | KEY_MAX, .min = 0, .max = 1u << 30},
    {"iterations", KEY_INT, PHASE_MEMBER(iterations), NULL, "1",
     "times each rank repeats the phase's work, back to back", .bounds = KEY_MIN, .min = 1},
    {"fsync", KEY_BOOL, PHASE_MEMBER(fsync), NULL, "yes",
     "write phases: fsync before close, inside the timed region"},
    {"direct", KEY_BOOL, PHASE_MEMBER(direct), NULL, "no",
     "open with O_DIRECT (block_size and file_size multiples of 4K)"},
    {"verify", KEY_BOOL, PHASE_MEMBER(verify), NULL, "no",
     "read phases: compare every byte with the expected pattern",
     .instead = "md5 phases always check"},
    {"keep", KEY_BOOL, PHASE_MEMBER(keep), NULL, "no",
     "[global] only: leave the run directory in place at the end", .scope = KEY_GLOBAL_ONLY},
    {"read_from", KEY_ENUM, PHASE_MEMBER(read_from), read_from_choices, "self",
     "read/md5: self | neighbor (a file written by a rank on another host)"},
    {"pattern", KEY_PATTERN, PHASE_MEMBER(pattern), NULL, "random",
     "data written: random | zero | compressible:PERCENT (zero bytes per 4K)"},
    {"seed", KEY_INT, PHASE_MEMBER(seed), NULL, "1",
     "seed of the data pattern; read phases must use the writer's"},
    {"fileset", KEY_STRING, PHASE_MEMBER(fileset), NULL, "",
     "name of the set of files (default <sharing>-<file_size>); read and md5 "
     "phases find the files a write phase made through it"},
    {"run_id", KEY_STRING, PHASE_MEMBER(run_id), NULL, "",
     "[global] only: fixed run id, so a later run works in the same directory "
     "target/herd-<run_id> (e.g. write, remount, then read in a second run)",
     .scope = KEY_GLOBAL_ONLY},
    {"deadline", KEY_DURATION, PHASE_MEMBER(deadline), NULL, "0",
     "stop issuing operations this long after the phase start (0 = none)"},
    {"duration", KEY_DURATION, PHASE_MEMBER(duration), NULL, "0",
     "idle: how long all ranks wait doing no I/O; lock, storm, mix: run this long "
     "instead of `count` attempts",
     .instead = "use deadline to bound others"},
    {"count", KEY_INT, PHASE_MEMBER(count), NULL, "100",
     "lock, storm: attempts per rank; mix: calls per client", .bounds = KEY_MIN, .min = 1},
    {"lock_mode", KEY_ENUM, PHASE_MEMBER(lock_mode), lock_mode_choices, "exclusive",
     "lock: exclusive | shared | mixed (alternating exclusive and shared)"},
    {"lock_range", KEY_ENUM, PHASE_MEMBER(lock_range), lock_range_choices, "whole",
     "lock: whole (all ranks contend for the file) | block (each rank its own "
     "block_size range) | overlap (ranges of two blocks: neighbours overlap)"},
    {"lock_wait", KEY_ENUM, PHASE_MEMBER(lock_wait), lock_wait_choices, "blocking",
     "lock: blocking (F_SETLKW) | nonblocking (F_SETLK; refusals count as contention)"},
    {"lock_hold", KEY_DURATION, PHASE_MEMBER(lock_hold), NULL, "1ms",
     "lock: how long a granted lock is held (an exclusive holder writes its token, "
     "sleeps, reads it back)"},
    {"lock_timeout", KEY_DURATION, PHASE_MEMBER(lock_timeout), NULL, "0",
     "lock: a blocking lock not granted in this long is given up, counted "
     "ETIMEDOUT (0 = wait forever)"},
    {"dirs", KEY_INT, PHASE_MEMBER(dirs), NULL, "10", "meta: directories in each tree"},
    {"files", KEY_INT, PHASE_MEMBER(files), NULL, "100",
     "meta: files each rank creates, spread over the directories; mix: data files each "
     "client keeps open (and as many names it creates, renames and removes)"},
    {"mix", KEY_STRING, PHASE_MEMBER(mix), NULL,
     "getattr:40,lookup:15,read:20,write:10,"
     "readdir:5,create:4,unlink:3,rename:3",
     "mix: weighted operations each client draws its calls from, e.g. getattr:40,read:20,"
     "write:10 (read, read_file, write, write_file, append, fsync, getattr, setattr, "
     "truncate, access, readdir, lookup, lookup_missing, create, unlink, rename, mkdir, "
     "rmdir, lock; herd mix-from prints one from a client's mountstats)",
     .check = mixspec_check},
    {"mix_from", KEY_STRING, PHASE_MEMBER(mix_from), NULL, "",
     "mix: BEFORE,AFTER, two copies of a real client's /proc/self/mountstats (relative to "
     "the job file; one NFS mount in them): mix, rate, block_size and file_size as herd "
     "mix-from prints them, each unless the job sets it"},
    {"file_size_min", KEY_SIZE, PHASE_MEMBER(file_size_min), NULL, "0",
     "mix: the smallest data file; sizes spread log-uniformly from it to file_size, by "
     "seed (0: every file file_size)"},
    {"meta_ops", KEY_STRING, PHASE_MEMBER(meta_ops), NULL, "create,stat,rename,unlink,rmdir",
     "meta: which steps to run, always in the order create, stat, rename, unlink, "
     "rmdir, all ranks finishing one before the next (split them over phases to time each)"},
    {"access", KEY_ENUM, PHASE_MEMBER(access), access_choices, "sequential",
     "write, read: the order of a rank's blocks: sequential | random (a permutation "
     "from seed: every block once) | strided (passes of every 16th block: each block once); "
     "md5 phases always read in file order"},
    {"rwmix_read", KEY_STRING, PHASE_MEMBER(rwmix_text), NULL, "none",
     "read and write phases: percent of blocks read (0..100), the rest written, per rank "
     "(none: the kind's own: all read or all written)"},
    {"files_per_rank", KEY_INT, PHASE_MEMBER(files_per_rank), NULL, "1",
     "write, read, md5 with sharing = unique: files each rank works on per iteration",
     .bounds = KEY_MIN | KEY_MAX, .min = 1, .max = JOB_META_MAX},
    {"ranks_active", KEY_STRING, PHASE_MEMBER(ranks_active), NULL, "",
     "load ladder: the phase runs once per step with this many ranks doing I/O, e.g. "
     "1,2,4,8,all (ranks spread over hosts; the others wait); one results phase per step"},
    {"ranks_step", KEY_INT, PHASE_MEMBER(ranks_step), NULL, "0",
     "load ladder: steps of 1, f, f^2 ... ranks up to all (f >= 2; 0 = no ladder)"},
    {"step_duration", KEY_DURATION, PHASE_MEMBER(step_duration), NULL, "0",
     "load ladder: each step stops after this long (its deadline; 0 = its iterations)"},
    {"clients_per_rank", KEY_INT, PHASE_MEMBER(clients_per_rank), NULL, "1",
     "[global] only: NFS clients each rank runs on one event loop (libnfs), each a client "
     "of its own to the server: its TCP connection, AUTH_SYS machine name HOST-rR-cK, NFSv4 "
     "client, NLM caller name, file or region, RPC window and rows in the results",
     .scope = KEY_GLOBAL_ONLY, .bounds = KEY_MIN | KEY_MAX, .min = 1, .max = JOB_CLIENTS_MAX},
    {"clients_active", KEY_STRING, PHASE_MEMBER(clients_active), NULL, "",
     "load ladder in clients: the phase runs once per step with this many clients in all "
     "doing I/O, e.g. 10,100,500,all (spread evenly over the ranks; the others wait); one "
     "results phase per step, <name>.<N>c"},
    {"rate_steps", KEY_STRING, PHASE_MEMBER(rate_steps), NULL, "",
     "load ladder in rate: the phase runs once per step with each client offering this many "
     "calls/s, e.g. 10,20,50,100 (rising; one results phase per step, <name>.<R>ps)"},
    {"rate_curve", KEY_STRING, PHASE_MEMBER(rate_curve), NULL, "",
     "load ladder in rate as vdbench's curve: a closed-loop step at full speed (<name>.max), "
     "then steps at these percents of its calls/s per client, e.g. 10,50,70,80,90,100 "
     "(<name>.<P>pct)"},
    {"stop_when", KEY_STRING, PHASE_MEMBER(stop_when), NULL, "",
     "load ladder: end it after the first step that breaks this rule, e.g. p99 > 50ms, "
     "achieved < 95%, late > 10%, errors > 0, joined by ' or ' (p50/p90/p99/max: the "
     "response time of a rated step, else the main call's latency); the steps not run are "
     "recorded so, with the reason",
     .check = stoprule_check},
    {"think_time", KEY_DURATION, PHASE_MEMBER(think_time), NULL, "0",
     "pause after each timed call of a rank: a closed loop that waits between calls "
     "(0 = none; rate offers a fixed load)"},
    {"rate", KEY_RATE, PHASE_MEMBER(rate), NULL, "0",
     "calls per second each client offers on a schedule (open loop: 50, 2.5, 30/m): a "
     "write or read block, an md5 read, a meta item, a lock or storm attempt; latency "
     "counts from each call's intended instant (response) and from its send (service); "
     "a call the client could not send on time is late, never dropped (0 = as fast as it can)",
     .bounds = KEY_MAX, .max = JOB_RATE_MAX},
    {"arrivals", KEY_ENUM, PHASE_MEMBER(arrivals), arrivals_choices, "poisson",
     "with rate: the instants of a client's calls: poisson (exponential gaps, from seed, as "
     "vdbench and fio's rate_process=poisson) | fixed (every 1/rate, each client offset by "
     "its seed)"},
    {"op_timeout", KEY_DURATION, PHASE_MEMBER(op_timeout), NULL, "60s",
     "libnfs: give up one operation after this long (whole seconds) and count "
     "ETIMEDOUT; posix cannot bound a system call and ignores it"},
    {"stuck_after", KEY_DURATION, PHASE_MEMBER(stuck_after), NULL, "10s",
     "report (stderr, and the phase's stuck table) any call in flight this long",
     .bounds = KEY_ABOVE, .min = 0},
    {"link", KEY_STRING, PHASE_MEMBER(link), NULL, "",
     "[global] only: the network link between clients and server this run saw, recorded "
     "for labels (herd-compare --label link), e.g. nfs-server.sh --link's "
     "delay=20ms,jitter=2ms,rate=8mbit; letters, digits and = , . _ : + -",
     .scope = KEY_GLOBAL_ONLY},
    {"label", KEY_STRING, PHASE_MEMBER(label), NULL, "",
     "[global] only: free text naming the run (at most 128 bytes of printable UTF-8), "
     "recorded in the results (root attribute label), the --json summary and the run's "
     "first line; also herd run/check --label TEXT; when neither gives one, the "
     "environment's HERD_LABEL",
     .scope = KEY_GLOBAL_ONLY},
};
JOB_KEY_ROWS_END
_Static_assert(sizeof core_keys / sizeof core_keys[0] <= JOB_KEYS_MAX, "raise JOB_KEYS_MAX");

/* The whole table: core_keys, then each backend's rows with its name and
 * its defaults block (table_build). */
static struct job_key table[JOB_KEYS_MAX];
static size_t table_len;
/* The registry's kinds at their numbers, each with where its options
 * struct lies in a phase's kind_opts, and the kind key's choices (their
 * names, NULL-ended) and help (table_kinds). */
static struct table_kind {
    struct job_kind kind;
    size_t opts_base;
} kinds[JOB_KINDS_MAX];
static size_t nkinds;
static const char *kind_choices[JOB_KINDS_MAX + 1];
static char kinds_help[1024];
static _Alignas(8) unsigned char table_defaults[JOB_BACKENDS_MAX][JOB_BACKEND_OPTS_MAX];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static const char *value_parse(const struct job_key *k, void *field, struct phase *ph,
                               const char *v, char *why, size_t whylen);

/* A table herd cannot run with (a name twice, too many rows, a default
 * its own row refuses) is a build's mistake: say which and stop. */
static void table_broken(const char *name, const char *why)
{
    fprintf(stderr, "herd: internal: job key '%s': %s\n", name, why);
    abort();
}

static void table_add(const struct job_key *row, const char *backend, void *defaults)
{
    char why[256];
    if (table_len == JOB_KEYS_MAX)
        table_broken(row->name, "more than JOB_KEYS_MAX keys");
    for (size_t i = 0; i < table_len; i++)
        if (strcmp(table[i].name, row->name) == 0)
            table_broken(row->name, "declared twice");
    struct job_key *k = &table[table_len++];
    *k = *row;
    if (!backend)
        return;
    k->backend = backend;
    k->defaults = defaults;
    if (k->offset + (k->type == KEY_STRING ? k->size : sizeof(double)) > JOB_BACKEND_OPTS_MAX)
        table_broken(k->name, "outside the backend's options block");
    if (k->type == KEY_PATTERN)
        table_broken(k->name, "a pattern is a core key");
    if (k->fallback &&
        value_parse(k, (unsigned char *)defaults + k->offset, NULL, k->fallback, why, sizeof why))
        table_broken(k->name, why);
}

/* The registry plugins/registry.c defines (JOB_REGISTRY): the one
 * object in its section, which the linker bounds. */
extern const struct job_registry __start_herd_registry[];

const struct job_registry *job_registry(void)
{
    return __start_herd_registry;
}

/* Each kind at its number, its name a choice of the kind key, and
 * "what the phase does: NAME (HELP) | ..." for the key's help. */
static void table_kinds(const struct job_registry *r)
{
    struct job_kind kind;
    size_t used = (size_t)snprintf(kinds_help, sizeof kinds_help, "what the phase does:");
    size_t opts_end = 0;
    for (; r->kind_at(nkinds, &kind); nkinds++) {
        if (nkinds == JOB_KINDS_MAX || !kind.name || !kind.help)
            table_broken("kind", "more than JOB_KINDS_MAX kinds, or one without name or help");
        size_t base = (opts_end + 7) & ~(size_t)7; /* JOB_KIND_OPTS_FIT: aligned to 8 at most */
        if (base + kind.opts_size > JOB_KIND_OPTS_MAX)
            table_broken(kind.name, "its options do not fit JOB_KIND_OPTS_MAX");
        opts_end = base + kind.opts_size;
        kinds[nkinds] = (struct table_kind){kind, base};
        kind_choices[nkinds] = kind.name;
        if (used < sizeof kinds_help)
            used += (size_t)snprintf(kinds_help + used, sizeof kinds_help - used, "%s %s (%s)",
                                     nkinds ? " |" : "", kind.name, kind.help);
    }
    if (used >= sizeof kinds_help)
        table_broken("kind", "the kinds' help is longer than its buffer");
}

/* Mark each core key a kind names as applying to that kind. */
static void table_kind_keys(void)
{
    for (size_t kind = 0; kind < nkinds; kind++)
        for (const char *const *name = kinds[kind].kind.keys; name && *name; name++) {
            size_t i = 0;
            while (i < table_len && strcmp(table[i].name, *name) != 0)
                i++;
            if (i == table_len)
                table_broken(*name, "a kind's key that is not a core key");
            table[i].kinds |= KIND_BIT(kind);
        }
}

/* Each kind's own rows, marked as its own and placed at its options
 * struct in kind_opts. */
static void table_kind_own_keys(void)
{
    for (size_t kind = 0; kind < nkinds; kind++) {
        const struct table_kind *t = &kinds[kind];
        for (size_t i = 0; i < t->kind.nown_keys; i++) {
            const struct job_key *row = &t->kind.own_keys[i];
            if (row->offset + row->size > t->kind.opts_size) /* JOB_OPTS_MEMBER's size */
                table_broken(row->name, "outside its kind's options struct");
            if (row->type == KEY_PATTERN)
                table_broken(row->name, "a pattern is a core key");
            table_add(row, NULL, NULL);
            struct job_key *k = &table[table_len - 1];
            k->kind_own = true;
            k->kinds = KIND_BIT(kind);
            k->offset += t->opts_base;
        }
    }
}

static void table_build(void)
{
    const struct job_registry *r = job_registry();
    table_kinds(r);
    for (size_t i = 0; i < sizeof core_keys / sizeof core_keys[0]; i++) {
        table_add(&core_keys[i], NULL, NULL);
        if (strcmp(core_keys[i].name, "kind") == 0) {
            table[table_len - 1].choices = kind_choices;
            table[table_len - 1].help = kinds_help;
        }
    }
    table_kind_keys();
    table_kind_own_keys();
    size_t nbackends = 0;
    struct job_key_set set;
    for (size_t n = 0; r->key_set_at(n, &set); n++) {
        if (set.backend && nbackends == JOB_BACKENDS_MAX)
            table_broken(set.backend, "more than JOB_BACKENDS_MAX backends");
        void *defaults = set.backend ? table_defaults[nbackends++] : NULL;
        for (size_t i = 0; i < set.nkeys; i++)
            table_add(&set.keys[i], set.backend, defaults);
    }
}

size_t job_key_count(void)
{
    pthread_once(&table_once, table_build);
    return table_len;
}

const struct job_key *job_key_at(size_t i)
{
    return i < job_key_count() ? &table[i] : NULL;
}

/* Whether key k of a backend applies to ph (ph's backend is k's). */
static bool key_is_foreign(const struct job_key *k, const struct phase *ph)
{
    return k->backend && strcmp(k->backend, ph->backend) != 0;
}

const void *job_key_value(const struct job_key *k, const struct phase *ph)
{
    if (k->kind_own)
        return ph->kind_opts + k->offset;
    if (!k->backend)
        return (const char *)ph + k->offset;
    const unsigned char *block = key_is_foreign(k, ph) ? k->defaults : ph->backend_opts;
    return block + k->offset;
}

const struct job_kind *job_kind_at(enum phase_kind kind)
{
    job_key_count(); /* the table and the kinds, built once */
    return (size_t)kind < nkinds ? &kinds[kind].kind : NULL;
}

const void *job_kind_opts(const struct phase *ph)
{
    job_key_count(); /* the kinds' places, set once */
    return ph->kind_opts + kinds[ph->kind].opts_base;
}

const char *job_kind_name(enum phase_kind kind)
{
    return job_kind_at(kind)->name;
}

const char *job_kind_check(const struct phase *ph, char *why, size_t len)
{
    const struct job_kind *kind = job_kind_at(ph->kind);
    if (!kind || !kind->check)
        return NULL;
    return kind->check(ph, why, len);
}

const char *job_meta_step_name(enum meta_step step)
{
    return meta_step_names[step];
}

int job_meta_steps(const char *text)
{
    int set = 0;
    const char *p = text;
    while (*p) {
        size_t n = strcspn(p, ",");
        int step = -1;
        for (int i = 0; i < META_STEPS; i++)
            if (strlen(meta_step_names[i]) == n && strncmp(p, meta_step_names[i], n) == 0)
                step = i;
        if (step < 0)
            return -1;
        set |= 1 << step;
        p += n + (p[n] == ',');
    }
    return set;
}

bool job_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= JOB_NAME_MAX || s[0] == '.' || s[0] == '-')
        return false;
    return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

bool job_key_applies(const char *name, enum phase_kind kind)
{
    const struct job_key *k = job_key_lookup(name);
    return k && (!k->kinds || (k->kinds & KIND_BIT(kind)));
}

unsigned job_kind_caps(enum phase_kind kind)
{
    return job_kind_at(kind)->caps;
}

const struct job_key *job_key_lookup(const char *name)
{
    for (size_t i = 0; i < job_key_count(); i++)
        if (strcmp(table[i].name, name) == 0)
            return &table[i];
    return NULL;
}

static int parse_bool(const char *v, bool *out)
{
    static const char *const yes[] = {"yes", "true", "on", "1"};
    static const char *const no[] = {"no", "false", "off", "0"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0)
            return *out = true, 0;
        if (strcasecmp(v, no[i]) == 0)
            return *out = false, 0;
    }
    return -1;
}

/* A non-negative integer as units.c reads a size: decimal digits only,
 * at least one (no sign, no space before, inside or after: a job file's
 * values come trimmed, a --set value as written), at most INT64_MAX. */
static int parse_int(const char *v, int64_t *out)
{
    int64_t x = 0;
    if (!*v)
        return -1;
    for (const char *p = v; *p; p++) {
        if (*p < '0' || *p > '9' || x > (INT64_MAX - (*p - '0')) / 10)
            return -1;
        x = x * 10 + (*p - '0');
    }
    *out = x;
    return 0;
}

static int parse_pattern(const char *v, struct phase *ph)
{
    if (strcmp(v, "random") == 0) {
        ph->pattern = PATTERN_RANDOM;
        ph->zero_percent = 0;
        return 0;
    }
    if (strcmp(v, "zero") == 0) {
        ph->pattern = PATTERN_ZERO;
        ph->zero_percent = 100;
        return 0;
    }
    int64_t pct;
    if (strncmp(v, "compressible:", 13) == 0 && parse_int(v + 13, &pct) == 0 && pct <= 100) {
        ph->pattern = PATTERN_COMPRESSIBLE;
        ph->zero_percent = pct;
        return 0;
    }
    return -1;
}

/* Parse v into field, key k's storage (ph: the phase, for a pattern);
 * returns NULL or what is wrong with it. */
static const char *value_parse(const struct job_key *k, void *field, struct phase *ph,
                               const char *v, char *why, size_t whylen)
{
    if (utf8_check(v, why, whylen) < 0)
        return why;
    switch (k->type) {
    case KEY_STRING:
        if (strlen(v) >= k->size) {
            snprintf(why, whylen, "longer than %zu characters", k->size - 1);
            return why;
        }
        snprintf(field, k->size, "%s", v);
        return k->check ? k->check(v, why, whylen) : NULL;
    case KEY_SIZE:
        if (units_parse_size(v, field) != 0) {
            snprintf(why, whylen,
                     "'%s' is not a size: whole bytes, as 4096, 64K, 16M, 16MB, 16MiB, 1.5G "
                     "(K = 1024)",
                     v);
            return why;
        }
        return NULL;
    case KEY_INT:
        if (parse_int(v, field) != 0) {
            snprintf(why, whylen, "'%s' is not a non-negative integer (decimal digits only)", v);
            return why;
        }
        return NULL;
    case KEY_BOOL:
        if (parse_bool(v, field) != 0) {
            snprintf(why, whylen, "'%s' is not yes or no", v);
            return why;
        }
        return NULL;
    case KEY_DURATION:
        if (units_parse_duration(v, field) != 0) {
            snprintf(why, whylen, "'%s' is not a duration (e.g. 30, 30s, 250ms, 2m)", v);
            return why;
        }
        if (*(double *)field > JOB_DURATION_MAX) {
            snprintf(why, whylen, "'%s' is more than a week (%.0fs)", v, JOB_DURATION_MAX);
            return why;
        }
        return NULL;
    case KEY_RATE:
        if (units_parse_rate(v, field) != 0) {
            snprintf(why, whylen, "'%s' is not a rate: calls per second, as 50, 2.5, 30/m, 90/h",
                     v);
            return why;
        }
        return NULL;
    case KEY_PATTERN:
        if (parse_pattern(v, ph) != 0) {
            snprintf(why, whylen, "'%s' is not random, zero or compressible:PERCENT (0-100)", v);
            return why;
        }
        return NULL;
    case KEY_ENUM:
        for (int i = 0; k->choices[i]; i++)
            if (strcmp(v, k->choices[i]) == 0) {
                *(int *)field = i;
                return NULL;
            }
        {
            size_t off = (size_t)snprintf(why, whylen, "'%s' is not one of ", v);
            if (off < whylen)
                job_key_choices_text(k, why + off, whylen - off);
        }
        return why;
    }
    return "internal: unknown key type";
}

/* Set one key of ph from text; returns NULL or what is wrong with it. A
 * key of another backend than ph's is parsed (so that its errors are its
 * own) into a scratch block and not kept: job_load refuses it anyway. */
const char *job_key_assign(const struct job_key *k, struct phase *ph, const char *v, char *why,
                           size_t whylen)
{
    _Alignas(8) unsigned char scratch[JOB_BACKEND_OPTS_MAX];
    unsigned char *block = key_is_foreign(k, ph) ? scratch : ph->backend_opts;
    void *field = k->backend ? (void *)(block + k->offset) : (void *)((char *)ph + k->offset);
    if (k->kind_own)
        field = ph->kind_opts + k->offset;
    return value_parse(k, field, ph, v, why, whylen);
}

void job_key_format(const struct job_key *k, const struct phase *ph, char *buf, size_t len)
{
    const void *field = job_key_value(k, ph);
    switch (k->type) {
    case KEY_STRING:
        snprintf(buf, len, "%s", (const char *)field);
        break;
    case KEY_SIZE:
        units_format_size(*(const uint64_t *)field, buf, len);
        break;
    case KEY_INT:
        snprintf(buf, len, "%lld", (long long)*(const int64_t *)field);
        break;
    case KEY_BOOL:
        snprintf(buf, len, "%s", *(const bool *)field ? "yes" : "no");
        break;
    case KEY_DURATION:
        snprintf(buf, len, "%gs", *(const double *)field);
        break;
    case KEY_RATE:
        snprintf(buf, len, "%g", *(const double *)field);
        break;
    case KEY_PATTERN:
        if (ph->pattern == PATTERN_COMPRESSIBLE)
            snprintf(buf, len, "compressible:%lld", (long long)ph->zero_percent);
        else
            snprintf(buf, len, "%s", ph->pattern == PATTERN_ZERO ? "zero" : "random");
        break;
    case KEY_ENUM:
        snprintf(buf, len, "%s", k->choices[*(const int *)field]);
        break;
    }
}

const char *job_key_choices_text(const struct job_key *k, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; k->choices && k->choices[i] && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? " | " : "", k->choices[i]);
    return buf;
}

/* "lock and storm" for a key's kinds, into buf. */
const char *job_key_kinds_text(const struct job_key *k, char *buf, size_t len)
{
    size_t used = 0;
    int n = 0, total = __builtin_popcount(k->kinds);
    buf[0] = '\0';
    job_key_count(); /* the kinds, built once */
    for (size_t kind = 0; kind < nkinds && used < len; kind++) {
        if (!(k->kinds & KIND_BIT(kind)))
            continue;
        n++;
        const char *sep = ", ";
        if (n == 1)
            sep = "";
        else if (n == total)
            sep = " and ";
        used += (size_t)snprintf(buf + used, len - used, "%s%s", sep, kinds[kind].kind.name);
    }
    return buf;
}

/* rwmix_read's value: -1 for "none" (or "-1", as the docs write it),
 * 0..100, or -2 when it is neither. */
int64_t job_rwmix_parse(const char *text)
{
    if (strcmp(text, "none") == 0 || strcmp(text, "-1") == 0)
        return -1;
    int64_t v;
    if (parse_int(text, &v) != 0 || v > 100)
        return -2;
    return v;
}

/* Combinations that cannot work; one message naming the offending key. */
/* A bound of key k's type as the user writes it: 1, 1G, 10ms. */
static void bound_format(const struct job_key *k, double v, char *buf, size_t len)
{
    if (k->type == KEY_SIZE)
        units_format_size((uint64_t)v, buf, len);
    else if (k->type == KEY_DURATION && v > 0 && v < 1)
        snprintf(buf, len, "%gms", v * 1000);
    else if (k->type == KEY_DURATION && v > 0)
        snprintf(buf, len, "%gs", v);
    else
        snprintf(buf, len, "%.0f", v);
}

/* The first key (in table order) whose resolved value in ph is outside
 * its row's bounds, with the rule it breaks in why; NULL when none. */
const struct job_key *job_key_out_of_bounds(const struct phase *ph, char *why, size_t len)
{
    for (size_t i = 0; i < job_key_count(); i++) {
        const struct job_key *k = &table[i];
        if (!k->bounds)
            continue;
        const void *field = job_key_value(k, ph);
        double v = *(const double *)field;
        if (k->type == KEY_SIZE)
            v = (double)*(const uint64_t *)field;
        else if (k->type == KEY_INT)
            v = (double)*(const int64_t *)field;
        char lo[32], hi[32];
        bound_format(k, k->min, lo, sizeof lo);
        bound_format(k, k->max, hi, sizeof hi);
        if ((k->bounds & KEY_MIN) && (k->bounds & KEY_MAX) && (v < k->min || v > k->max))
            snprintf(why, len, "must be %s to %s", lo, hi);
        else if ((k->bounds & KEY_MIN) && v < k->min)
            snprintf(why, len, "must be at least %s", lo);
        else if ((k->bounds & KEY_ABOVE) && v <= k->min)
            snprintf(why, len, "must be greater than %s", lo);
        else if ((k->bounds & KEY_MAX) && v > k->max)
            snprintf(why, len, "must be at most %s", hi);
        else
            continue;
        return k;
    }
    return NULL;
}
