/* job.h — a job file (INI, parsed with libinih) resolved into phases.
 *
 * [global] holds defaults; every other section is a phase, run in file
 * order, inheriting every global key its kind takes (job_inherit.c) and
 * overriding any. All keys are described once, in the key table
 * (job_keys.c, and each backend's own rows): parsing, validation,
 * `herd check` output and the results file's phase attributes all read it. */
#ifndef HERD_JOB_H
#define HERD_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "joblimits.h"
#include "pattern_kind.h"

enum phase_kind {
    KIND_WRITE,
    KIND_READ,
    KIND_MD5,
    KIND_IDLE,
    KIND_LOCK,
    KIND_STORM,
    KIND_META,
    KIND_MIX
};
#define JOB_KINDS_MAX 32 /* a kind is a bit of job_key.kinds */
/* What a kind does with its fileset's files, for the job's own rules and
 * lint (struct job_kind's caps, job_kind_caps). */
enum job_kind_cap {
    JOB_KIND_WRITES = 1, /* writes the files: later phases may read them */
    JOB_KIND_READS = 2,  /* reads them: an earlier phase (or run) must write them */
    JOB_KIND_CHECKS = 4, /* always compares what it reads with the pattern (seed matters) */
    JOB_KIND_BLOCKS = 8, /* moves file data in block_size calls: block_size <= file_size */
    JOB_KIND_TREE = 16,  /* makes a tree of many files: file_size 0 = empty files; no
                            shared file, so no segmented regions */
    JOB_KIND_LOCKS = 32, /* takes byte-range locks: a hold record per grant (count x
                            iterations), and the backend must lock */
};
/* What one rank of a phase moves, as its kind counts it: unit bytes,
 * a x b times, key the one to name when that is too much; unit 0:
 * nothing (struct job_kind's volume). */
struct job_volume {
    uint64_t unit, a, b;
    const char *key;
};
enum lock_mode { LOCK_EXCLUSIVE, LOCK_SHARED, LOCK_MIXED };
enum lock_range { LOCK_WHOLE, LOCK_BLOCK, LOCK_OVERLAP };
enum lock_wait { LOCK_BLOCKING, LOCK_NONBLOCKING };
/* Steps of a meta phase, run in this order (each a subset may skip). */
enum meta_step { META_CREATE, META_STAT, META_RENAME, META_UNLINK, META_RMDIR, META_STEPS };
enum sharing { SHARING_UNIQUE, SHARING_SHARED };
enum shared_mode { SHARED_SAME_CONTENT, SHARED_SEGMENTED };
enum read_from { READ_SELF, READ_NEIGHBOR };

/* One phase with every key resolved (globals inherited, overrides applied).
 * Its [global]-only members (target, backend, keep, run_id, link, label,
 * clients_per_rank, monitor_*) are the same in every phase: the key
 * table's copies; the run reads them from struct run_settings. */
struct phase {
    char name[JOB_NAME_MAX];
    int line; /* line of the [section] header */
    char target[JOB_PATH_MAX];
    char backend[16];
    enum phase_kind kind;
    enum sharing sharing;
    enum shared_mode shared_mode;
    uint64_t file_size; /* bytes each rank moves per iteration */
    uint64_t block_size;
    int64_t iterations;
    bool fsync;
    bool direct;
    bool verify;
    bool keep;
    enum read_from read_from;
    enum pattern_kind pattern;
    int64_t zero_percent; /* for pattern = compressible:P */
    int64_t seed;
    char fileset[JOB_NAME_MAX]; /* names the files; default <sharing>-<file_size> */
    double deadline;            /* seconds, 0 = none */
    double duration;            /* idle phases: seconds to wait */
    double op_timeout;          /* seconds per operation where the backend can */
    double stuck_after;         /* watchdog: report a call in flight this long */
    char link[JOB_NAME_MAX];    /* [global] only: the link the clients saw, a label */
    char label[JOB_LABEL_MAX];  /* [global] only: free text naming the run */
    int64_t count;              /* lock, storm: attempts per rank */
    enum lock_mode lock_mode;
    enum lock_range lock_range;
    enum lock_wait lock_wait;
    double lock_hold;       /* seconds a granted lock is held */
    double lock_timeout;    /* blocking lock: give up after; 0 = never */
    int64_t dirs;           /* meta: directories per tree */
    int64_t files;          /* meta: files per rank */
    char meta_ops[64];      /* meta: steps, e.g. "create,stat,rename,unlink,rmdir" */
    char mix[512];          /* mix: "getattr:40,read:20,..." (mixspec.h) */
    uint64_t file_size_min; /* mix: the smallest file (0: file_size, every file alike) */
    char mix_from[2 * JOB_PATH_MAX + 1]; /* mix: "BEFORE,AFTER" mountstats snapshots */
    int access;                          /* enum access: the order of a file's blocks */
    char rwmix_text[8];                  /* rwmix_read as written: "none" or 0..100 */
    int64_t rwmix_read;       /* read/write: percent of blocks read (-1: none, the kind's) */
    int64_t files_per_rank;   /* read/write/md5: unique files each rank works on */
    char ranks_active[128];   /* load ladder: "1,2,4,all"; "" = every rank, no ladder */
    int64_t ranks_step;       /* load ladder: 1, f, f^2 ... all ranks (0 = none) */
    double step_duration;     /* load ladder: each step's deadline (0 = its iterations) */
    double think_time;        /* seconds a rank pauses after each timed call (0 = none) */
    double rate;              /* calls per second each client offers (0 = closed loop) */
    int arrivals;             /* enum pace_arrivals: fixed | poisson */
    int64_t clients_per_rank; /* [global] only: the NFS clients each rank runs (1: itself) */
    char clients_active[128]; /* load ladder in clients: "10,100,all" in all; "" = none */
    char rate_steps[128];     /* load ladder in rate: each client's rate per step, "10,50,100" */
    char rate_curve[128];     /* load ladder in rate: a closed-loop maximum, then these percent
                                 of it, "10,50,90,100" (vdbench's curve) */
    char stop_when[128];      /* a ladder ends at the first step that breaks it (stoprule.h) */
    /* Set by job_expand_ladders for one step of a ladder phase: */
    char ladder[JOB_NAME_MAX]; /* the ladder phase's name, "" for a plain phase */
    int64_t step;              /* 1-based step number */
    int64_t active_ranks;      /* ranks doing I/O in this step (0: every rank) */
    int64_t active_clients;    /* clients (of all ranks) doing I/O in this step (0: all) */
    double curve_percent;      /* a rate_curve step: its rate is this percent of the curve's
                                  first step's units/s per client (the runner sets rate); -1:
                                  that first step (a closed loop); 0: not a curve's step */
    char run_id[JOB_NAME_MAX]; /* [global] only; "" = a fresh id per run */
    /* [global] only (every phase holds the same): the server monitor */
    char monitor_host[JOB_NAME_MAX]; /* ranks on this host sample instead of I/O */
    char monitor_rank[16];           /* "" | "last" | a rank number: that rank samples */
    double monitor_interval;
    char monitor_processes[256];
    char monitor_scope[JOB_PATH_MAX]; /* host | ns:PATH | cgroup:PATH (monitor_scope.h) */
    char monitor_disks[JOB_PATH_MAX];
    char monitor_url[JOB_PATH_MAX];
    /* The options of the job's backend (every phase has the same one:
     * backend is [global] only), opaque here: the backend declares its
     * keys with offsets into this block (JOB_OPTS_MEMBER) and reads them
     * back through its own struct (job_backend_opts). */
    _Alignas(8) unsigned char backend_opts[JOB_BACKEND_OPTS_MAX];
    /* The kinds' own options, opaque here as the backend's are: a kind
     * declares its own keys with offsets into a struct of its own
     * (JOB_OPTS_MEMBER, struct job_kind's own_keys); the key table lays
     * every kind's struct end to end in this block, so that a phase holds
     * each kind's values (their defaults, or [global]'s) as it holds the
     * core keys', and a kind reads its own through job_kind_opts. */
    _Alignas(8) unsigned char kind_opts[JOB_KIND_OPTS_MAX];
    /* Line each key's value came from, indexed like job_key_at(): > 0 a
     * line of the file, -1 --set, 0 the default. */
    int key_line[JOB_KEYS_MAX];
};

/* A backend's options struct, as its key rows and its code see it:
 * JOB_OPTS_FIT(type) after the struct, JOB_OPTS_MEMBER(type, f) in a row,
 * job_backend_opts(ph) to read them. A kind's likewise:
 * JOB_KIND_OPTS_FIT(type), JOB_OPTS_MEMBER, job_kind_opts(ph). */
#define JOB_OPTS_FIT(type)                                                                         \
    _Static_assert(sizeof(type) <= JOB_BACKEND_OPTS_MAX && _Alignof(type) <= 8,                    \
                   #type " does not fit struct phase's backend_opts")
#define JOB_KIND_OPTS_FIT(type)                                                                    \
    _Static_assert(sizeof(type) <= JOB_KIND_OPTS_MAX && _Alignof(type) <= 8,                       \
                   #type " does not fit struct phase's kind_opts")
#define JOB_OPTS_MEMBER(type, f) offsetof(type, f), sizeof(((type *)0)->f)
/* Where a row of a key every backend shares stores its value: member f
 * of struct phase. */
#define PHASE_MEMBER(f) JOB_OPTS_MEMBER(struct phase, f)
/* Around a table of key rows, which name scope, kinds and bounds only
 * where they differ from the default (the other members stay zero). */
#define JOB_KEY_ROWS_BEGIN                                                                         \
    _Pragma("GCC diagnostic push")                                                                 \
        _Pragma("GCC diagnostic ignored \"-Wmissing-field-initializers\"")
#define JOB_KEY_ROWS_END _Pragma("GCC diagnostic pop")
static inline const void *job_backend_opts(const struct phase *ph)
{
    return ph->backend_opts;
}

/* A line of a job: source * JOB_LOC_BASE + line, source 0 the job file
 * itself, others its includes (struct job's sources). */
#define JOB_LOC_BASE (1 << 21)
#define JOB_SOURCES 16
#define JOB_NOTES_MAX 4096

/* The run-wide settings: the values of herd's own [global]-only keys
 * (KEY_GLOBAL_ONLY rows of struct phase's members), which describe the
 * run as a whole. job_load fills them once from [global] and the plain
 * --set; code that needs one reads it here (struct job's settings), not
 * from a phase. Each phase still holds a copy of the same value, only
 * because the key table places every key's value in a phase
 * (PHASE_MEMBER): job_load's checks, herd check, herd tables and the
 * results file's phase attributes read the keys from there. The
 * backend's own [global]-only options stay in the phases' backend_opts,
 * which the backend reads from the phase it is handed (job_backend_opts). */
struct run_settings {
    char target[JOB_PATH_MAX];
    char backend[16];
    bool keep;                 /* leave the run directory */
    char run_id[JOB_NAME_MAX]; /* reuse target/herd-<run_id>; "" = a fresh id */
    int64_t clients_per_rank;  /* the NFS clients each rank runs (1: itself) */
    char link[JOB_NAME_MAX];   /* the link the clients saw, a label */
    char label[JOB_LABEL_MAX]; /* free text (or HERD_LABEL's: job_label_default) */
    /* the server monitor */
    char monitor_host[JOB_NAME_MAX]; /* ranks on this host sample instead of I/O */
    char monitor_rank[16];           /* "" | "last" | a rank number: that rank samples */
    double monitor_interval;
    char monitor_processes[256];
    char monitor_scope[JOB_PATH_MAX]; /* host | ns:PATH | cgroup:PATH (monitor_scope.h) */
    char monitor_disks[JOB_PATH_MAX];
    char monitor_url[JOB_PATH_MAX];
};

struct job {
    char path[JOB_PATH_MAX];
    char *text; /* the job file as parsed (includes and ${VAR} done: jobtext.h) */
    char sources[JOB_SOURCES][JOB_PATH_MAX]; /* file of each source index */
    struct phase *phases;
    int nphases;
    struct run_settings settings; /* the [global]-only keys' values */
    /* "note: ..." lines, each ending in a newline: one per key that a
     * phase inherited ([global], a plain --set) and its kind refused,
     * naming the phases that kept the key's default instead. */
    char notes[JOB_NOTES_MAX];
};

enum key_type {
    KEY_STRING,
    KEY_SIZE,
    KEY_INT,
    KEY_BOOL,
    KEY_ENUM,
    KEY_DURATION,
    KEY_PATTERN,
    KEY_RATE, /* events per second, a double: 50, 2.5, 30/m */
};

/* access: how a rank walks its range of a file. */
enum access { ACCESS_SEQUENTIAL, ACCESS_RANDOM, ACCESS_STRIDED };

/* KEY_GLOBAL_ONLY: describes the run as a whole, set in [global] only. */
enum key_scope { KEY_ANY_SECTION, KEY_GLOBAL_ONLY };
#define KIND_BIT(k) (1u << (k))

struct job_key {
    const char *name;
    enum key_type type;
    size_t offset; /* into struct phase; a backend's: into backend_opts; a kind's: kind_opts */
    size_t size;   /* of the field, for strings */
    const char *const *choices; /* KEY_ENUM: NULL-terminated, index = value */
    const char *fallback;       /* default as text; NULL = required */
    const char *help;
    /* Where the key may appear and what it applies to; job_load refuses it
     * elsewhere with "applies to ...". */
    enum key_scope scope;
    unsigned kinds; /* KIND_BIT()s of the kinds that name it (struct job_kind's keys);
                       0 = every kind */
    /* With kinds: what to do instead in a phase of another kind, added to
     * the refusal ("use deadline to bound others"); NULL = nothing. */
    const char *instead;
    /* The one backend it applies to, NULL = every backend. Set by the
     * table for the rows a backend declares (backend_ops.keys), with
     * defaults: that backend's options block holding every default, the
     * value a phase of another backend reports. */
    const char *backend;
    const void *defaults;
    /* Set by the table for the rows a kind declares (struct job_kind's
     * own_keys): the value lives in the phase's kind_opts, offset past
     * the kinds before it there; kinds is that kind's bit. */
    bool kind_own;
    /* KEY_STRING: what is wrong with a value (NULL: nothing), asked
     * wherever the key is set; NULL = any text that fits the field. */
    const char *(*check)(const char *value, char *why, size_t whylen);
    /* KEY_INT, KEY_SIZE, KEY_DURATION, KEY_RATE: bounds of the value every phase
     * resolves to (as fio's minval/maxval), checked by one rule:
     * KEY_MIN "must be at least MIN", KEY_ABOVE "must be greater than
     * MIN", KEY_MAX "must be at most MAX", KEY_MIN with KEY_MAX "must be
     * MIN to MAX". 0: any value the type parses. */
    unsigned bounds;
    double min, max;
};
enum key_bound { KEY_MIN = 1, KEY_ABOVE = 2, KEY_MAX = 4 };

/* The key table: herd's own rows (job_keys.c), then each kind's own
 * (in kind order), then the monitor's and each built-in backend's, in
 * the registry's order; job_key_at(i) for i below
 * job_key_count(). Built on first use. */
size_t job_key_count(void);
const struct job_key *job_key_at(size_t i);
/* Where phase ph keeps key k's value (read-only): its member of struct
 * phase or of the backend options block; for a key of another backend,
 * that key's default. */
const void *job_key_value(const struct job_key *k, const struct phase *ph);
/* The key called name, or NULL. */
const struct job_key *job_key_lookup(const char *name);
/* The options struct of ph's kind (its own_keys' values): where the
 * table placed that kind's struct in ph->kind_opts. */
const void *job_kind_opts(const struct phase *ph);

/* What the plug-ins above job/ (backends, the monitor, the workloads'
 * records) add to the job model, so that job/ names none of them: their
 * key rows, the kinds, which backends exist, their rules on a resolved
 * phase, and the size of what a phase gathers to rank 0. */
struct job_key_set {
    const char *backend; /* the one backend its rows apply to; NULL: every backend */
    const struct job_key *keys;
    size_t nkeys;
};
/* One phase kind, as job/ sees it (the kind's ops table, workload.h,
 * has these and the runner's steps). */
struct job_kind {
    const char *name; /* the kind key's choice */
    const char *help; /* what a phase of it does, in a few words */
    /* The core keys that apply to it and not to every kind (NULL-ended
     * names): a key some kinds name applies to those only. */
    const char *const *keys;
    /* "KEY=VALUE" defaults of its own (NULL-ended, or NULL): a phase of
     * it takes VALUE unless its own section or the command line gives
     * KEY ([global] and the key's default do not reach it). */
    const char *const *own_defaults;
    unsigned caps; /* enum job_kind_cap bits */
    /* Its own keys, as a backend's (fio's .options and
     * .option_struct_size): rows whose offsets are into a struct of its
     * own (JOB_OPTS_MEMBER) of opts_size bytes, which it reads with
     * job_kind_opts; NULL, 0: none. They apply to this kind only. */
    const struct job_key *own_keys;
    size_t nown_keys;
    size_t opts_size;
    /* The first rule of the kind that ph breaks: the key at fault, with
     * why written; NULL when none. NULL: no rule of its own. */
    const char *(*check)(const struct phase *ph, char *why, size_t len);
    /* What one rank of ph moves (v zeroed before); NULL: nothing. */
    void (*volume)(const struct phase *ph, struct job_volume *v);
};
/* The registry: one constant table, defined at compile time by
 * plugins/registry.c with JOB_REGISTRY, so that it is there before
 * anything asks (nothing installs it). job/ reaches it through the
 * section JOB_REGISTRY puts it in, whose start the linker names: a
 * program linked without it does not link. */
struct job_registry {
    /* Entry i of the kinds (in enum phase_kind's order) and of the key
     * sets (after job/'s own rows, in this order), into *out; false past
     * the last. */
    bool (*kind_at)(size_t i, struct job_kind *out);
    bool (*key_set_at)(size_t i, struct job_key_set *out);
    bool (*backend_known)(const char *name);
    /* The backend of a job that names `named` (NULL: none) and target:
     * backend.h's backend_for_target. */
    const char *(*target_backend)(const char *named, const char *target, char *why, size_t len);
    /* The first plug-in rule ph breaks: the key at fault, with why
     * written; NULL when none. */
    const char *(*phase_check)(const struct phase *ph, char *why, size_t len);
    size_t record_bytes; /* one iteration's record of one rank */
    size_t hold_bytes;   /* one granted lock's record */
};
#define JOB_REGISTRY __attribute__((used, section("herd_registry")))

/* One --set argument, split: "KEY=VALUE" (phase NULL: every phase the
 * key applies to) or "PHASE.KEY=VALUE" (split at the last '.' before the
 * '=': key names have none, phase names may). The parts point into arg.
 * false when there is no '=' or nothing before it. */
struct job_set_arg {
    const char *phase, *key, *value;
    size_t phase_len, key_len;
};
bool job_set_split(const char *arg, struct job_set_arg *out);

/* Load and validate a job file. text is what jobtext_read made of it
 * (variables replaced, no comment after a value: jobtext.h), or NULL to
 * read it from path (path also names the file in messages). `sets` are
 * --set arguments (job_set_split), each beating the job file's value of
 * its key in every phase it names. On error returns -1 and writes one line
 * "FILE:LINE: key 'K': what is wrong" (or without key/line where none
 * applies) into err. */
int job_load(const char *path, const char *text, char *const *sets, int nsets, struct job *job,
             char *err, size_t errlen);
void job_free(struct job *job);

/* The label of a loaded job that gives none (neither its [global] nor
 * --set): value (HERD_LABEL's), under label's own rule, in the job and
 * every phase. 0 (also when the job has a label or value is NULL or
 * empty), or -1 with what is wrong with value in why, the job unchanged. */
int job_label_default(struct job *job, const char *value, char *why, size_t len);

/* Canonical text of one key's value in a phase ("16M", "yes", "unique"). */
void job_key_format(const struct job_key *key, const struct phase *ph, char *buf, size_t len);

/* Bytes one rank moves in a phase (all iterations) into *bytes. Returns 0,
 * or -EOVERFLOW when the product does not fit in 64 bits. */
int job_phase_bytes(const struct phase *ph, uint64_t *bytes);
/* Its kind's count of what one rank of ph moves (job_volume). */
void job_phase_volume(const struct phase *ph, struct job_volume *v);

/* job_phase_bytes, UINT64_MAX when it overflows (never, for a phase that
 * job_load accepted). */
uint64_t job_phase_bytes_per_rank(const struct phase *ph);

/* Whether every phase of a loaded job can run on nranks ranks: records
 * gathered to rank 0 fit an MPI int count (INT_MAX bytes) and half of this
 * host's memory, byte counts for nranks ranks and file offsets fit 64
 * bits. job_load applies the same rule with nranks = 1. Returns 0, or
 * -EOVERFLOW with one line "FILE:LINE: key 'K': why" in err. */
int job_check_scale(const struct job *job, int64_t nranks, char *err, size_t len);

/* The one line "FILE:LINE: key 'K': why" for phase ph's key (the line
 * its value came from) of a loaded job, into err: for the rules applied
 * after loading. */
void job_key_error(const struct job *job, const struct phase *ph, const char *key, const char *why,
                   char *err, size_t len);

/* What is legal but almost surely a mistake, for nranks I/O ranks: a meta
 * phase that writes more than JOB_LINT_META_BYTES in all with a file_size
 * from the command line (a plain --set file_size meant for the data
 * phases), a read, md5 or storm phase whose fileset no earlier phase
 * writes (unless a fixed run_id says the files are an earlier run's), a
 * verifying read or an md5 phase whose seed differs from the one its
 * fileset's last writer used (every block would fail verify).
 * One line "FILE:LINE: key 'K': warning: why" per finding, appended to out
 * (each ending in a newline). Returns how many. */
#define JOB_LINT_META_BYTES (1ull << 30)

/* The rank counts of a ranks_active list ("1,2,4,all"): positive, rising,
 * "all" only last. nranks > 0 resolves "all" to it and refuses counts above
 * it. Up to max counts into out (out NULL: only check). Returns how many,
 * or -EINVAL (-ERANGE: a count above nranks). */
#define JOB_STEPS_MAX 64
int job_ladder_steps(const char *spec, int64_t *out, int max, int64_t nranks);

/* A ladder in rate's list ("10,20,50", or rate_curve's percents with most
 * 100): rising values above 0 and at most `most`, into out (max of them;
 * NULL: only count). How many, or -EINVAL. */
int job_ladder_rates(const char *spec, double *out, int max, double most);
#define JOB_RATE_MAX 1e6 /* calls/s a client may offer (rate's bound) */

/* Whether ph is a load ladder (ranks_active, ranks_step, clients_active,
 * rate_steps, rate_curve). */
static inline bool job_phase_is_ladder(const struct phase *ph)
{
    return ph->ranks_active[0] || ph->ranks_step || ph->clients_active[0] || ph->rate_steps[0] ||
           ph->rate_curve[0];
}

/* A copy of job with every load-ladder phase (ranks_active, ranks_step)
 * replaced by one phase per step, for nranks I/O ranks: "<name>.<N>r",
 * with ladder = the phase's name, step = 1.., active_ranks = N and, with
 * step_duration, that deadline. out is freed with job_free. 0, or -1 with
 * one line "FILE:LINE: key 'K': why" in err. */
int job_expand_ladders(const struct job *job, int64_t nranks, struct job *out, char *err,
                       size_t len);

int job_lint(const struct job *job, int64_t nranks, char *out, size_t len);
/* The job's notes, then job_lint's lines, on out, each as "herd: LINE"
 * (herd check's and, at its start, herd run's); returns how many
 * warnings (the notes are none). */
int job_lint_print(const struct job *job, int64_t nranks, FILE *out);

/* Bytes of physical memory of this host (0 if unknown). */
uint64_t job_host_memory(void);

/* Whether s is a name herd may use as a path component and an HDF5 name
 * (section, fileset, run_id): 1 to JOB_NAME_MAX-1 bytes of [A-Za-z0-9._-],
 * not starting with '.' or '-'. */
bool job_name_ok(const char *s);

const char *job_kind_name(enum phase_kind kind);

/* The version of libinih that herd was built with (pkg-config's: the
 * library has no version of its own to ask). For herd version. */
const char *job_inih_version(void);

/* Whether the key called name applies to phases of kind (a key of no
 * kinds: to every one; no such key: false). */
bool job_key_applies(const char *name, enum phase_kind kind);
/* What the kind does with its fileset's files: enum job_kind_cap bits. */
unsigned job_kind_caps(enum phase_kind kind);

/* The meta steps named in text ("create,stat,..."), as a bit set of
 * 1 << enum meta_step; -1 if a name is unknown. */
int job_meta_steps(const char *text);
const char *job_meta_step_name(enum meta_step step);

#endif
