/* job.c — job files: parse the INI text with libinih, resolve [global]
 * defaults and --set overrides into phases, and validate them.
 *
 * Every key is one row of job_keys[]; parsing, defaults, `herd check`
 * output and the results file's phase attributes all come from that table.
 * Errors are one line: "FILE:LINE: key 'K': what is wrong". */
#include "job.h"
#include "jobtext.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "holds.h"
#include "monitor_scope.h"
#include "record.h"
#include "units.h"
#include "utf8.h"

/* Where a key row stores its value: the member f of struct phase. */
#define PHASE_MEMBER(f) offsetof(struct phase, f), sizeof(((struct phase *)0)->f)

static const char *const kind_choices[] = {"write", "read",  "md5",  "idle",
                                           "lock",  "storm", "meta", NULL};
static const char *const lock_mode_choices[] = {"exclusive", "shared", "mixed", NULL};
static const char *const lock_range_choices[] = {"whole", "block", "overlap", NULL};
static const char *const lock_wait_choices[] = {"blocking", "nonblocking", NULL};
static const char *const meta_step_names[META_STEPS] = {"create", "stat", "rename", "unlink",
                                                        "rmdir"};
static const char *const sharing_choices[] = {"unique", "shared", NULL};
static const char *const shared_mode_choices[] = {"same-content", "segmented", NULL};
static const char *const read_from_choices[] = {"self", "neighbor", NULL};
static const char *const access_choices[] = {"sequential", "random", "strided", NULL};
const char *const job_smb_protocols[] = {"NT1",     "SMB2_02", "SMB2_10", "SMB3_00",
                                         "SMB3_02", "SMB3_11", NULL};
static const char *const smb_encryption_choices[] = {"default", "off", "desired", "required", NULL};

/* Rows name scope, kinds and backend only where they differ from the
 * default (any section, every kind, every backend). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
const struct job_key job_keys[] = {
    {"target", KEY_STRING, PHASE_MEMBER(target), NULL, NULL,
     "directory herd works in (it creates and uses only target/herd-<run id>/)",
     .scope = KEY_GLOBAL_ONLY},
    {"backend", KEY_STRING, PHASE_MEMBER(backend), NULL, "posix",
     "I/O backend: posix (any mounted file system) | libnfs (target = nfs://server/export) | "
     "smb (target = smb://server/share, libsmbclient) | fault (posix with injected faults, "
     "see faults)",
     .scope = KEY_GLOBAL_ONLY},
    {"kind", KEY_ENUM, PHASE_MEMBER(kind), kind_choices, NULL,
     "what the phase does: write | read | md5 | lock | storm | meta | idle"},
    {"sharing", KEY_ENUM, PHASE_MEMBER(sharing), sharing_choices, "unique",
     "unique (one file per rank) | shared (one file for all ranks)"},
    {"shared_mode", KEY_ENUM, PHASE_MEMBER(shared_mode), shared_mode_choices, "same-content",
     "for shared files: same-content (every rank moves the whole file) | "
     "segmented (each rank its own contiguous region)"},
    {"file_size", KEY_SIZE, PHASE_MEMBER(file_size), NULL, "16M",
     "bytes per file (per rank's region when segmented); K/M/G suffixes"},
    {"block_size", KEY_SIZE, PHASE_MEMBER(block_size), NULL, "1M", "bytes per read or write call",
     .bounds = KEY_ABOVE | KEY_MAX, .min = 0, .max = 1u << 30},
    {"iterations", KEY_INT, PHASE_MEMBER(iterations), NULL, "1",
     "times each rank repeats the phase's work, back to back", .bounds = KEY_MIN, .min = 1},
    {"fsync", KEY_BOOL, PHASE_MEMBER(fsync), NULL, "yes",
     "write phases: fsync before close, inside the timed region", .kinds = KIND_BIT(KIND_WRITE)},
    {"direct", KEY_BOOL, PHASE_MEMBER(direct), NULL, "no",
     "open with O_DIRECT (block_size and file_size multiples of 4K)"},
    {"verify", KEY_BOOL, PHASE_MEMBER(verify), NULL, "no",
     "read phases: compare every byte with the expected pattern", .kinds = KIND_BIT(KIND_READ)},
    {"keep", KEY_BOOL, PHASE_MEMBER(keep), NULL, "no",
     "[global] only: leave the run directory in place at the end", .scope = KEY_GLOBAL_ONLY},
    {"read_from", KEY_ENUM, PHASE_MEMBER(read_from), read_from_choices, "self",
     "read/md5: self | neighbor (a file written by a rank on another host)",
     .kinds = KIND_BIT(KIND_READ) | KIND_BIT(KIND_MD5)},
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
     "idle: how long all ranks wait doing no I/O; lock, storm: run this long "
     "instead of `count` attempts"},
    {"count", KEY_INT, PHASE_MEMBER(count), NULL, "100", "lock, storm: attempts per rank",
     .kinds = KIND_BIT(KIND_LOCK) | KIND_BIT(KIND_STORM), .bounds = KEY_MIN, .min = 1},
    {"lock_mode", KEY_ENUM, PHASE_MEMBER(lock_mode), lock_mode_choices, "exclusive",
     "lock: exclusive | shared | mixed (alternating exclusive and shared)",
     .kinds = KIND_BIT(KIND_LOCK)},
    {"lock_range", KEY_ENUM, PHASE_MEMBER(lock_range), lock_range_choices, "whole",
     "lock: whole (all ranks contend for the file) | block (each rank its own "
     "block_size range) | overlap (ranges of two blocks: neighbours overlap)",
     .kinds = KIND_BIT(KIND_LOCK)},
    {"lock_wait", KEY_ENUM, PHASE_MEMBER(lock_wait), lock_wait_choices, "blocking",
     "lock: blocking (F_SETLKW) | nonblocking (F_SETLK; refusals count as contention)",
     .kinds = KIND_BIT(KIND_LOCK)},
    {"lock_hold", KEY_DURATION, PHASE_MEMBER(lock_hold), NULL, "1ms",
     "lock: how long a granted lock is held (an exclusive holder writes its token, "
     "sleeps, reads it back)",
     .kinds = KIND_BIT(KIND_LOCK)},
    {"lock_timeout", KEY_DURATION, PHASE_MEMBER(lock_timeout), NULL, "0",
     "lock: a blocking lock not granted in this long is given up, counted "
     "ETIMEDOUT (0 = wait forever)",
     .kinds = KIND_BIT(KIND_LOCK)},
    {"dirs", KEY_INT, PHASE_MEMBER(dirs), NULL, "10", "meta: directories in each tree",
     .kinds = KIND_BIT(KIND_META)},
    {"files", KEY_INT, PHASE_MEMBER(files), NULL, "100",
     "meta: files each rank creates, spread over the directories", .kinds = KIND_BIT(KIND_META)},
    {"meta_ops", KEY_STRING, PHASE_MEMBER(meta_ops), NULL, "create,stat,rename,unlink,rmdir",
     "meta: which steps to run, always in the order create, stat, rename, unlink, "
     "rmdir, all ranks finishing one before the next (split them over phases to time each)",
     .kinds = KIND_BIT(KIND_META)},
    {"access", KEY_ENUM, PHASE_MEMBER(access), access_choices, "sequential",
     "write, read: the order of a rank's blocks: sequential | random (a permutation "
     "from seed: every block once) | strided (passes of every 16th block: each block once); "
     "md5 phases always read in file order",
     .kinds = KIND_BIT(KIND_WRITE) | KIND_BIT(KIND_READ)},
    {"rwmix_read", KEY_STRING, PHASE_MEMBER(rwmix_text), NULL, "none",
     "read and write phases: percent of blocks read (0..100), the rest written, per rank "
     "(none: the kind's own: all read or all written)",
     .kinds = KIND_BIT(KIND_WRITE) | KIND_BIT(KIND_READ)},
    {"files_per_rank", KEY_INT, PHASE_MEMBER(files_per_rank), NULL, "1",
     "write, read, md5 with sharing = unique: files each rank works on per iteration",
     .kinds = KIND_BIT(KIND_WRITE) | KIND_BIT(KIND_READ) | KIND_BIT(KIND_MD5),
     .bounds = KEY_MIN | KEY_MAX, .min = 1, .max = JOB_META_MAX},
    {"ranks_active", KEY_STRING, PHASE_MEMBER(ranks_active), NULL, "",
     "load ladder: the phase runs once per step with this many ranks doing I/O, e.g. "
     "1,2,4,8,all (ranks spread over hosts; the others wait); one results phase per step"},
    {"ranks_step", KEY_INT, PHASE_MEMBER(ranks_step), NULL, "0",
     "load ladder: steps of 1, f, f^2 ... ranks up to all (f >= 2; 0 = no ladder)"},
    {"step_duration", KEY_DURATION, PHASE_MEMBER(step_duration), NULL, "0",
     "load ladder: each step stops after this long (its deadline; 0 = its iterations)"},
    {"think_time", KEY_DURATION, PHASE_MEMBER(think_time), NULL, "0",
     "pause after each timed call of a rank, so it offers a fixed load (0 = none)"},
    {"op_timeout", KEY_DURATION, PHASE_MEMBER(op_timeout), NULL, "60s",
     "libnfs: give up one operation after this long (whole seconds) and count "
     "ETIMEDOUT; posix cannot bound a system call and ignores it"},
    {"stuck_after", KEY_DURATION, PHASE_MEMBER(stuck_after), NULL, "10s",
     "report (stderr, and the phase's stuck table) any call in flight this long",
     .bounds = KEY_ABOVE, .min = 0},
    {"faults", KEY_STRING, PHASE_MEMBER(faults), NULL, "",
     "backend = fault: rules op=action, e.g. write=EIO@0.01, open=delay:200ms, lock=noop, "
     "read=serve:5ms/2 (a server of 2 workers shared by all ranks: calls queue)",
     .backend = "fault"},
    {"nfs_rsize", KEY_SIZE, PHASE_MEMBER(nfs_rsize), NULL, "0",
     "libnfs: bytes per READ RPC (readmax), 0 = the server's maximum", .backend = "libnfs"},
    {"nfs_wsize", KEY_SIZE, PHASE_MEMBER(nfs_wsize), NULL, "0",
     "libnfs: bytes per WRITE RPC (writemax), 0 = the server's maximum", .backend = "libnfs"},
    {"nfs_inflight", KEY_INT, PHASE_MEMBER(nfs_inflight), NULL, "16",
     "libnfs: READ/WRITE RPCs each rank keeps in flight (1..256): sequential reads read "
     "ahead, writes return before their RPCs are answered, as a Linux client's "
     "read-ahead and write-behind do (16: its RPC slot table's default); 1 = one call "
     "at a time, each waited for",
     .backend = "libnfs", .bounds = KEY_MIN | KEY_MAX, .min = 1, .max = JOB_INFLIGHT_MAX},
    {"link", KEY_STRING, PHASE_MEMBER(link), NULL, "",
     "[global] only: the network link between clients and server this run saw, recorded "
     "for labels (herd-compare --label link), e.g. nfs-server.sh --link's "
     "delay=20ms,jitter=2ms,rate=8mbit; letters, digits and = , . _ : + -",
     .scope = KEY_GLOBAL_ONLY},
    {"smb_user", KEY_STRING, PHASE_MEMBER(smb_user), NULL, "",
     "[global] only, smb: the user to log in as (its password in smb_password_file; never "
     "in the job or the URL)",
     .scope = KEY_GLOBAL_ONLY, .backend = "smb"},
    {"smb_password_file", KEY_STRING, PHASE_MEMBER(smb_password_file), NULL, "",
     "[global] only, smb: a file whose first line is smb_user's password, read by every "
     "rank at connect (mode 0600 advised); its path is recorded, never its content",
     .scope = KEY_GLOBAL_ONLY, .backend = "smb"},
    {"smb_guest", KEY_BOOL, PHASE_MEMBER(smb_guest), NULL, "no",
     "[global] only, smb: log in anonymously as guest (instead of smb_user); without it "
     "a refused login is an error, never a silent fall back to guest",
     .scope = KEY_GLOBAL_ONLY, .backend = "smb"},
    {"smb_min_protocol", KEY_ENUM, PHASE_MEMBER(smb_min_protocol), job_smb_protocols, "SMB2_02",
     "[global] only, smb: lowest dialect offered: NT1 | SMB2_02 | SMB2_10 | SMB3_00 | "
     "SMB3_02 | SMB3_11",
     .scope = KEY_GLOBAL_ONLY, .backend = "smb"},
    {"smb_max_protocol", KEY_ENUM, PHASE_MEMBER(smb_max_protocol), job_smb_protocols, "SMB3_11",
     "[global] only, smb: highest dialect offered (the negotiated one is in /hosts)",
     .scope = KEY_GLOBAL_ONLY, .backend = "smb"},
    {"smb_encryption", KEY_ENUM, PHASE_MEMBER(smb_encryption), smb_encryption_choices, "default",
     "[global] only, smb: default (the client configuration's) | off | desired | required",
     .scope = KEY_GLOBAL_ONLY, .backend = "smb"},
    {"nfs_version", KEY_INT, PHASE_MEMBER(nfs_version), NULL, "0",
     "[global] only, libnfs: NFS protocol version 3 or 4 (0 = the URL's, else 3)",
     .scope = KEY_GLOBAL_ONLY, .backend = "libnfs"},
    {"monitor_host", KEY_STRING, PHASE_MEMBER(monitor_host), NULL, "",
     "[global] only: host name (as ranks report it) of the file server in the MPI "
     "hostfile; its ranks do no I/O, the lowest samples its CPU, memory, nfsd and disks",
     .scope = KEY_GLOBAL_ONLY},
    {"monitor_rank", KEY_STRING, PHASE_MEMBER(monitor_rank), NULL, "",
     "[global] only: last | a rank number: that one rank samples its host instead of "
     "doing I/O (when the server runs one rank)",
     .scope = KEY_GLOBAL_ONLY},
    {"monitor_interval", KEY_DURATION, PHASE_MEMBER(monitor_interval), NULL, "1s",
     "[global] only: seconds between monitor samples and node_exporter scrapes",
     .scope = KEY_GLOBAL_ONLY, .bounds = KEY_MIN, .min = 0.01},
    {"monitor_processes", KEY_STRING, PHASE_MEMBER(monitor_processes), NULL, "ganesha.nfsd,nfsd",
     "[global] only: command names whose CPU and RSS the monitor records "
     "(kernel nfsd threads included)",
     .scope = KEY_GLOBAL_ONLY},
    {"monitor_scope", KEY_STRING, PHASE_MEMBER(monitor_scope), NULL, "host",
     "[global] only: which monitor_processes count: host (all on the monitor host) | "
     "ns:PATH (those in the namespace of file PATH: /proc/PID/ns/net, /run/netns/NAME) | "
     "cgroup:PATH (those in cgroup directory PATH or below it); paths of the monitor host",
     .scope = KEY_GLOBAL_ONLY, .check = monitor_scope_check},
    {"monitor_disks", KEY_STRING, PHASE_MEMBER(monitor_disks), NULL, "",
     "[global] only: block devices the monitor records, by name (sdb, loop0) or by a "
     "path on the monitor host (the exported directory)",
     .scope = KEY_GLOBAL_ONLY},
    {"monitor_url", KEY_STRING, PHASE_MEMBER(monitor_url), NULL, "",
     "[global] only: node_exporter metrics URL scraped by rank 0 every "
     "monitor_interval (http://HOST:9100/metrics)",
     .scope = KEY_GLOBAL_ONLY},
};
#pragma GCC diagnostic pop
const size_t job_nkeys = sizeof job_keys / sizeof job_keys[0];
_Static_assert(sizeof job_keys / sizeof job_keys[0] <= JOB_KEYS_MAX, "raise JOB_KEYS_MAX");

const char *job_kind_name(enum phase_kind kind)
{
    return kind_choices[kind];
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

/* Kinds that move file data in blocks (file_size, block_size apply). */
static bool kind_moves_data(enum phase_kind k)
{
    return k == KIND_WRITE || k == KIND_READ || k == KIND_MD5;
}

/* Parsing state handed to libinih's callbacks. */
struct parse_state {
    FILE *file;
    const char *path;
    int line;  /* location (JOB_LOC_BASE) most recently handed to libinih */
    int *locs; /* the location of every line read, in order */
    size_t nlocs, caplocs;
    int header_line;           /* line of the most recent [section] header */
    char header[JOB_NAME_MAX]; /* first section header that had no keys yet */
    int empty_line;
    struct job *job;
    /* Raw "key = value" lines per section, resolved after parsing so that a
     * global key may appear after a phase without surprising anyone. */
    struct raw {
        char section[JOB_NAME_MAX];
        char key[64];
        char value[JOB_PATH_MAX];
        int line;
    } * raws;
    size_t nraws, capraws;
    char sections[128][JOB_NAME_MAX];
    int section_lines[128];
    int nsections;
    char *err;
    size_t errlen;
    bool failed;
    /* --set KEY=VALUE (phase "": every phase it applies to) and
     * --set PHASE.KEY=VALUE, applied after the file's values. */
    struct set {
        char phase[JOB_NAME_MAX];
        const struct job_key *key;
        const char *value;
    } * sets;
    int nsets;
};

/* Line number of a value that came from --set rather than the file. */
#define LINE_SET (-1)

/* The one-line message "FILE:LINE: key 'K': msg" (or without line or
 * key), every unprintable byte escaped. */
/* "FILE:LINE" of a location, into buf. */
static const char *loc_text(const struct job *job, const char *path, int loc, char *buf, size_t len)
{
    int source = loc / JOB_LOC_BASE;
    const char *file = source > 0 && source < JOB_SOURCES && job && job->sources[source][0]
                           ? job->sources[source]
                           : path;
    snprintf(buf, len, "%s:%d", file, loc % JOB_LOC_BASE);
    return buf;
}

static void error_format(char *err, size_t errlen, const struct job *job, const char *path,
                         int line, const char *key, const char *msg)
{
    char raw[JOB_ERR_MAX], where[JOB_PATH_MAX + 16];
    if (line > 0)
        path = loc_text(job, path, line, where, sizeof where);
    if (line == LINE_SET)
        snprintf(raw, sizeof raw, "%s: --set %s: %s", path, key ? key : "", msg);
    else if (line > 0 && key)
        snprintf(raw, sizeof raw, "%s: key '%s': %s", path, key, msg);
    else if (line > 0)
        snprintf(raw, sizeof raw, "%s: %s", path, msg);
    else if (key)
        snprintf(raw, sizeof raw, "%s: key '%s': %s", path, key, msg);
    else
        snprintf(raw, sizeof raw, "%s: %s", path, msg);
    utf8_escape(raw, err, errlen);
}

static void fail(struct parse_state *st, int line, const char *key, const char *fmt, ...)
{
    if (st->failed)
        return;
    st->failed = true;
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    error_format(st->err, st->errlen, st->job, st->path, line, key, msg);
}

static int section_index(struct parse_state *st, const char *section)
{
    for (int i = 0; i < st->nsections; i++)
        if (strcmp(st->sections[i], section) == 0)
            return i;
    return -1;
}

/* Remember the location of the line just read (for libinih's error line). */
static void reader_note(struct parse_state *st, int loc)
{
    if (st->nlocs == st->caplocs) {
        size_t cap = st->caplocs ? st->caplocs * 2 : 256;
        int *p = realloc(st->locs, cap * sizeof *p);
        if (!p)
            return; /* only error lines suffer: they fall back to libinih's count */
        st->locs = p;
        st->caplocs = cap;
    }
    st->locs[st->nlocs++] = loc;
}

/* fgets-style reader that also counts lines, since Debian's libinih is
 * built without line numbers in the handler. */
static char *reader_next_line(char *str, int num, void *stream)
{
    struct parse_state *st = stream;
    char *s = fgets(str, num, st->file);
    if (s && strncmp(s, JOBTEXT_MARKER, strlen(JOBTEXT_MARKER)) == 0) {
        /* jobtext.h: the lines that follow are LINE... of source INDEX */
        int index, line, at = 0;
        if (sscanf(s + strlen(JOBTEXT_MARKER), "%d %d %n", &index, &line, &at) == 2 && index >= 0 &&
            index < JOB_SOURCES && line > 0 && line < JOB_LOC_BASE) {
            char *name = s + strlen(JOBTEXT_MARKER) + at;
            name[strcspn(name, "\r\n")] = '\0';
            snprintf(st->job->sources[index], sizeof st->job->sources[index], "%s", name);
            st->line = index * JOB_LOC_BASE + line - 1;
            reader_note(st, st->line);
            return s; /* a comment to libinih */
        }
    }
    if (s) {
        st->line++;
        reader_note(st, st->line);
        const char *p = s + strspn(s, " \t");
        if (*p == '[') {
            /* A header with no keys before the next one is never reported
             * by libinih: remember it to say so. */
            if (st->header_line && !st->empty_line && section_index(st, st->header) < 0)
                st->empty_line = st->header_line;
            st->header_line = st->line;
            size_t len = strcspn(p + 1, "]");
            snprintf(st->header, sizeof st->header, "%.*s", (int)len, p + 1);
            if (section_index(st, st->header) >= 0)
                fail(st, st->line, NULL, "section [%s] appears twice", st->header);
        }
        size_t n = strlen(s);
        if (n == (size_t)num - 1 && s[n - 1] != '\n' && !feof(st->file))
            fail(st, st->line, NULL, "line longer than %d characters", num - 2);
    }
    return s;
}

static const struct job_key *key_lookup(const char *name)
{
    for (size_t i = 0; i < job_nkeys; i++)
        if (strcmp(job_keys[i].name, name) == 0)
            return &job_keys[i];
    return NULL;
}

static bool section_name_ok(const char *s)
{
    return job_name_ok(s);
}

/* Remember one "key = value" of a section (or replace it when it exists). */
static void raw_append(struct parse_state *st, const char *section, const char *key,
                       const char *value, int line)
{
    size_t i;
    for (i = 0; i < st->nraws; i++)
        if (strcmp(st->raws[i].section, section) == 0 && strcmp(st->raws[i].key, key) == 0)
            break;
    if (i == st->nraws) {
        if (st->nraws == st->capraws) {
            size_t cap = st->capraws ? st->capraws * 2 : 32;
            void *p = realloc(st->raws, cap * sizeof *st->raws);
            if (!p) {
                fail(st, line, NULL, "out of memory");
                return;
            }
            st->raws = p;
            st->capraws = cap;
        }
        st->nraws++;
    }
    struct raw *r = &st->raws[i];
    snprintf(r->section, sizeof r->section, "%s", section);
    snprintf(r->key, sizeof r->key, "%s", key);
    snprintf(r->value, sizeof r->value, "%s", value);
    r->line = line;
}

static int handle_key(void *user, const char *section, const char *name, const char *value)
{
    struct parse_state *st = user;
    if (st->failed)
        return 1;
    if (!*section) {
        fail(st, st->line, name, "appears before any [section]");
        return 1;
    }
    int idx = section_index(st, section);
    if (idx < 0) {
        if (!section_name_ok(section)) {
            fail(st, st->header_line, NULL,
                 "section name '%s' must be 1-%d letters, digits, '_', '.' or '-', "
                 "not starting with '.' or '-'",
                 section, JOB_NAME_MAX - 1);
            return 1;
        }
        if (st->nsections == (int)(sizeof st->sections / sizeof st->sections[0])) {
            fail(st, st->line, NULL, "too many sections");
            return 1;
        }
        idx = st->nsections++;
        snprintf(st->sections[idx], JOB_NAME_MAX, "%s", section);
        st->section_lines[idx] = st->header_line;
    } else if (idx != st->nsections - 1) {
        fail(st, st->header_line, NULL, "section [%s] appears twice", section);
        return 1;
    }
    if (!key_lookup(name)) {
        fail(st, st->line, name, "unknown key (see `herd keys`)");
        return 1;
    }
    if (strlen(value) >= JOB_PATH_MAX) {
        fail(st, st->line, name, "value too long");
        return 1;
    }
    for (size_t i = 0; i < st->nraws; i++)
        if (strcmp(st->raws[i].section, section) == 0 && strcmp(st->raws[i].key, name) == 0) {
            char first[JOB_PATH_MAX + 16];
            fail(st, st->line, name, "given twice in [%s] (first at %s)", section,
                 loc_text(st->job, st->path, st->raws[i].line, first, sizeof first));
            return 1;
        }
    raw_append(st, section, name, value, st->line);
    return 1;
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

static int parse_int(const char *v, int64_t *out)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end || x < 0)
        return -1;
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

/* Set one key of ph from text; returns NULL or what is wrong with it. */
static const char *key_assign(const struct job_key *k, struct phase *ph, const char *v, char *why,
                              size_t whylen)
{
    void *field = (char *)ph + k->offset;
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
            snprintf(why, whylen, "'%s' is not a size (e.g. 4096, 64K, 16M, 1G)", v);
            return why;
        }
        return NULL;
    case KEY_INT:
        if (parse_int(v, field) != 0) {
            snprintf(why, whylen, "'%s' is not a non-negative integer", v);
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
            size_t off = (size_t)snprintf(why, whylen, "'%s' is not one of", v);
            for (int i = 0; k->choices[i] && off < whylen; i++)
                off += (size_t)snprintf(why + off, whylen - off, "%s %s", i ? " |" : "",
                                        k->choices[i]);
        }
        return why;
    }
    return "internal: unknown key type";
}

void job_key_format(const struct job_key *k, const struct phase *ph, char *buf, size_t len)
{
    const void *field = (const char *)ph + k->offset;
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

/* Apply the raw lines of one section (and, for phases, global first). */
static void section_apply(struct parse_state *st, const char *section, struct phase *ph,
                          bool global_only_check)
{
    char why[256];
    for (size_t i = 0; i < st->nraws && !st->failed; i++) {
        struct raw *r = &st->raws[i];
        if (strcmp(r->section, section) != 0)
            continue;
        const struct job_key *k = key_lookup(r->key);
        if (global_only_check && k->scope == KEY_GLOBAL_ONLY) {
            fail(st, r->line, r->key, "can only be set in [global]");
            return;
        }
        const char *bad = key_assign(k, ph, r->value, why, sizeof why);
        if (bad)
            fail(st, r->line, r->key, "%s", bad);
    }
}

/* Where a phase's value of key came from: its own line, the [global] line
 * (LINE_SET when --set gave it), or 0 when it is the default. */
static int line_of(struct parse_state *st, const char *section, const char *key)
{
    for (int i = 0; i < st->nsets; i++)
        if (strcmp(st->sets[i].key->name, key) == 0 &&
            (!st->sets[i].phase[0] || strcmp(st->sets[i].phase, section) == 0))
            return LINE_SET;
    for (size_t i = 0; i < st->nraws; i++)
        if (strcmp(st->raws[i].section, section) == 0 && strcmp(st->raws[i].key, key) == 0)
            return st->raws[i].line;
    for (size_t i = 0; i < st->nraws; i++)
        if (strcmp(st->raws[i].section, "global") == 0 && strcmp(st->raws[i].key, key) == 0)
            return st->raws[i].line;
    return 0;
}

/* The first key the phase's own section sets that does not apply to its
 * kind (a [global] one is a default for the kinds it applies to, and fine
 * elsewhere), or NULL. */
static const struct job_key *phase_foreign_kind_key(struct parse_state *st, const struct phase *ph)
{
    for (size_t i = 0; i < st->nraws; i++) {
        const struct job_key *k = key_lookup(st->raws[i].key);
        if (strcmp(st->raws[i].section, ph->name) == 0 && k && k->kinds &&
            !(k->kinds & KIND_BIT(ph->kind)))
            return k;
    }
    return NULL;
}

/* The first key set for the phase (its section or [global]) that belongs
 * to another backend than the phase's, or NULL. */
static const struct job_key *phase_foreign_backend_key(struct parse_state *st,
                                                       const struct phase *ph)
{
    for (size_t i = 0; i < job_nkeys; i++) {
        const struct job_key *k = &job_keys[i];
        if (k->backend && strcmp(k->backend, ph->backend) != 0 && line_of(st, ph->name, k->name))
            return k;
    }
    return NULL;
}

/* "lock and storm" for a key's kinds, into buf. */
static const char *key_kinds_text(const struct job_key *k, char *buf, size_t len)
{
    size_t used = 0;
    int n = 0, total = __builtin_popcount(k->kinds);
    buf[0] = '\0';
    for (int kind = 0; kind_choices[kind] && used < len; kind++) {
        if (!(k->kinds & KIND_BIT(kind)))
            continue;
        n++;
        const char *sep = n == 1 ? "" : n == total ? " and " : ", ";
        used += (size_t)snprintf(buf + used, len - used, "%s%s", sep, kind_choices[kind]);
    }
    return buf;
}

uint64_t job_host_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

/* Whether `bytes` gathered to rank 0 (for `what`, e.g. "16000000 iterations
 * x 4 ranks need") fit one MPI int count and half of mem; else why. */
static bool gather_fits(double bytes, uint64_t mem, const char *what, char *why, size_t len)
{
    char need[32], have[32];
    units_format_human(bytes, need, sizeof need);
    if (bytes > (double)INT_MAX) {
        snprintf(why, len,
                 "%s %.0f bytes (%s) of records on rank 0, more than MPI's int count "
                 "(2147483647 bytes) allows",
                 what, bytes, need);
        return false;
    }
    if (mem && bytes > (double)(mem / 2)) {
        units_format_human((double)mem, have, sizeof have);
        snprintf(why, len,
                 "%s %.0f bytes (%s) of records on rank 0, more than half of this host's "
                 "memory (%s) allows",
                 what, bytes, need, have);
        return false;
    }
    return true;
}

/* The key a byte count of ph scales with, to name in a message. */
static const char *bytes_key(const struct phase *ph)
{
    if (ph->kind == KIND_META)
        return "files";
    if (ph->kind == KIND_STORM)
        return "count";
    return ph->iterations > 1 ? "iterations" : "file_size";
}

/* The scale rule of one phase on nranks ranks (0: before the rank count
 * is known, as for one rank) with mem bytes of memory on rank 0's host
 * (0 = unknown): NULL, or the key at fault with why. Every product is
 * computed with overflow checks; numbers in messages are the exact
 * product or, past 2^64, a double. */
static const char *phase_scale(const struct phase *ph, int64_t nranks, uint64_t mem, char *why,
                               size_t len)
{
    char what[160], ranks[48];
    double n = nranks > 0 ? (double)nranks : 1.0;
    /* "x 4 ranks", or, before -n is known, what even one rank needs */
    if (nranks > 0)
        snprintf(ranks, sizeof ranks, "x %lld rank%s", (long long)nranks, nranks == 1 ? "" : "s");
    else
        snprintf(ranks, sizeof ranks, "need, even for one rank,");
    /* Records: iterations rows per rank, all gathered to rank 0. */
    snprintf(what, sizeof what, "%lld iterations %s%s", (long long)ph->iterations, ranks,
             nranks > 0 ? " need" : "");
    if (!gather_fits((double)ph->iterations * sizeof(struct rank_record) * n, mem, what, why, len))
        return "iterations";
    /* Lock holds: one per granted lock, gathered to rank 0 likewise. */
    if (ph->kind == KIND_LOCK && ph->duration <= 0) {
        snprintf(what, sizeof what, "%lld locks x %lld iterations %s%s", (long long)ph->count,
                 (long long)ph->iterations, ranks, nranks > 0 ? " need" : "");
        if (!gather_fits((double)ph->count * (double)ph->iterations * sizeof(struct hold) * n, mem,
                         what, why, len))
            return "count";
    }
    if (ph->kind == KIND_META && (ph->files > JOB_META_MAX || ph->dirs > JOB_META_MAX)) {
        snprintf(why, len, "%lld is more than %d per rank (clean-up visits every one)",
                 (long long)(ph->files > JOB_META_MAX ? ph->files : ph->dirs), JOB_META_MAX);
        return ph->files > JOB_META_MAX ? "files" : "dirs";
    }
    /* File offsets are signed 64-bit (off_t); a segmented file holds every
     * rank's region end to end. */
    bool segmented = ph->sharing == SHARING_SHARED && ph->shared_mode == SHARED_SEGMENTED &&
                     ph->kind != KIND_META;
    uint64_t end;
    if (ph->file_size > INT64_MAX ||
        (segmented &&
         (__builtin_mul_overflow(ph->file_size, (uint64_t)nranks, &end) || end > INT64_MAX))) {
        char size[32];
        units_format_size(ph->file_size, size, sizeof size);
        if (segmented)
            snprintf(what, sizeof what, "%s x %lld rank%s (segmented)", size, (long long)n,
                     n == 1 ? "" : "s");
        else
            snprintf(what, sizeof what, "%s", size);
        snprintf(why, len, "%s = %.4g bytes is past the largest file offset (2^63 - 1)", what,
                 (double)ph->file_size * (segmented ? n : 1.0));
        return "file_size";
    }
    uint64_t per, all;
    if (job_phase_bytes(ph, &per) < 0) {
        double unit =
            ph->kind == KIND_STORM
                ? (double)(ph->block_size < ph->file_size ? ph->block_size : ph->file_size)
                : (double)ph->file_size;
        double times = ph->kind == KIND_META    ? (double)ph->files
                       : ph->kind == KIND_STORM ? (double)ph->count * (double)ph->iterations
                                                : (double)ph->iterations;
        snprintf(why, len, "%.0f bytes x %.0f = %.4g bytes per rank, more than 2^64", unit, times,
                 unit * times);
        return bytes_key(ph);
    }
    if (__builtin_mul_overflow(per, (uint64_t)nranks, &all)) {
        snprintf(why, len, "%llu bytes per rank x %lld ranks = %.4g bytes, more than 2^64",
                 (unsigned long long)per, (long long)nranks, (double)per * n);
        return bytes_key(ph);
    }
    return NULL;
}

/* rwmix_read's value: -1 for "none" (or "-1", as the docs write it),
 * 0..100, or -2 when it is neither. */
static int64_t rwmix_parse(const char *text)
{
    if (strcmp(text, "none") == 0 || strcmp(text, "-1") == 0)
        return -1;
    int64_t v;
    if (strspn(text, "0123456789") != strlen(text) || parse_int(text, &v) != 0 || v > 100)
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
static const struct job_key *phase_out_of_bounds(const struct phase *ph, char *why, size_t len)
{
    for (size_t i = 0; i < job_nkeys; i++) {
        const struct job_key *k = &job_keys[i];
        if (!k->bounds)
            continue;
        const void *field = (const char *)ph + k->offset;
        double v = k->type == KEY_SIZE  ? (double)*(const uint64_t *)field
                   : k->type == KEY_INT ? (double)*(const int64_t *)field
                                        : *(const double *)field;
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

/* One error per job: the first check of phase_validate's that fails is
 * reported (fail() keeps the first), on the key's line. */
#define PHASE_BAD(key, ...)                                                                        \
    fail(st, line_of(st, ph->name, key) ? line_of(st, ph->name, key) : ph->line, key, __VA_ARGS__)

/* the target, the backend, every bounded key, sizes and durations, and keys of another kind or
 * backend. */
static void phase_check_sizes(struct parse_state *st, const struct phase *ph)
{
    const struct job_key *foreign;
    const struct job_key *bounded;
    char kinds[64];
    char why[512];
    if (!ph->target[0])
        PHASE_BAD("target", "missing: set it in [global] or in [%s]", ph->name);
    else if (!backend_find(ph->backend))
        PHASE_BAD("backend", "'%s' is not a backend this herd was built with", ph->backend);
    else if ((bounded = phase_out_of_bounds(ph, why, sizeof why)) != NULL)
        PHASE_BAD(bounded->name, "%s", why);
    else if (ph->file_size == 0 && ph->kind != KIND_META)
        PHASE_BAD("file_size", "must be greater than 0");
    else if (ph->block_size > ph->file_size && kind_moves_data(ph->kind))
        PHASE_BAD("block_size", "is larger than file_size");
    else if (ph->direct && (ph->block_size % 4096 || ph->file_size % 4096))
        PHASE_BAD("direct", "O_DIRECT needs block_size and file_size multiples of 4K");
    else if (ph->kind == KIND_IDLE && ph->duration <= 0)
        PHASE_BAD("duration", "an idle phase needs a duration greater than 0");
    else if (ph->duration > 0 && ph->kind != KIND_IDLE && ph->kind != KIND_LOCK &&
             ph->kind != KIND_STORM)
        PHASE_BAD("duration",
                  "applies to idle, lock and storm phases (use deadline to bound others)");
    else if ((foreign = phase_foreign_kind_key(st, ph)) != NULL)
        PHASE_BAD(foreign->name, "applies to %s phases only, not to %s",
                  key_kinds_text(foreign, kinds, sizeof kinds), kind_choices[ph->kind]);
    else if ((foreign = phase_foreign_backend_key(st, ph)) != NULL)
        PHASE_BAD(foreign->name, "applies to backend = %s only, not to %s", foreign->backend,
                  ph->backend);
}

/* what one kind asks of its keys (lock ranges and waits, meta trees, verify, read_from). */
static void phase_check_kind(struct parse_state *st, const struct phase *ph)
{
    if (ph->kind == KIND_LOCK && ph->lock_range != LOCK_WHOLE && ph->block_size < 16)
        PHASE_BAD("block_size", "lock ranges of block_size bytes must hold the 16-byte token: "
                                "use block_size >= 16");
    else if (ph->kind == KIND_LOCK && ph->lock_wait == LOCK_NONBLOCKING && ph->lock_timeout > 0)
        PHASE_BAD("lock_timeout", "applies to lock_wait = blocking only");
    else if (ph->kind == KIND_META && ph->iterations != 1)
        PHASE_BAD("iterations", "meta phases run their steps once; use several phases");
    else if (ph->kind == KIND_META && (ph->dirs < 1 || ph->files < 0))
        PHASE_BAD(ph->dirs < 1 ? "dirs" : "files", "meta needs dirs >= 1 and files >= 0");
    else if (ph->kind == KIND_META && job_meta_steps(ph->meta_ops) <= 0)
        PHASE_BAD("meta_ops", "'%s' is not a list of create, stat, rename, unlink, rmdir",
                  ph->meta_ops);
    else if (ph->verify && ph->kind != KIND_READ)
        PHASE_BAD("verify", "applies to read phases only (md5 phases always check)");
    else if (ph->read_from == READ_NEIGHBOR && ph->kind == KIND_WRITE)
        PHASE_BAD("read_from", "applies to read and md5 phases only");
    else if (ph->read_from == READ_NEIGHBOR && ph->sharing == SHARING_SHARED &&
             ph->shared_mode == SHARED_SAME_CONTENT)
        PHASE_BAD("read_from", "neighbor needs unique files or shared_mode = segmented "
                               "(with same-content every rank reads the same bytes)");
}

/* names and spellings: fileset, nfs_version, link, rwmix_read; files_per_rank with sharing. */
static void phase_check_names(struct parse_state *st, const struct phase *ph)
{
    if (!job_name_ok(ph->fileset))
        PHASE_BAD("fileset",
                  "'%s' must be letters, digits, '_', '.' and '-', not starting with "
                  "'.' or '-'",
                  ph->fileset);
    else if (ph->nfs_version != 0 && ph->nfs_version != 3 && ph->nfs_version != 4)
        PHASE_BAD("nfs_version", "must be 3 or 4");
    else if (strspn(ph->link, JOB_LINK_CHARS) != strlen(ph->link))
        PHASE_BAD("link", "'%s' may hold only letters, digits and = , . _ : + -", ph->link);
    else if (ph->rwmix_read < -1)
        PHASE_BAD("rwmix_read", "'%s' is not none or a percent 0 to 100", ph->rwmix_text);
    else if (ph->files_per_rank > 1 && ph->sharing != SHARING_UNIQUE)
        PHASE_BAD("files_per_rank", "applies to sharing = unique (a shared file is one file)");
}

/* a load ladder: ranks_active or ranks_step, step_duration, a meta ladder's sharing. */
static void phase_check_ladder(struct parse_state *st, const struct phase *ph)
{
    if (ph->ranks_active[0] && ph->ranks_step)
        PHASE_BAD("ranks_step", "set ranks_active or ranks_step, not both");
    else if (ph->ranks_step == 1 || ph->ranks_step < 0 || ph->ranks_step > 1000)
        PHASE_BAD("ranks_step", "must be 2 to 1000 (the factor between steps), or 0");
    else if (ph->ranks_active[0] && job_ladder_steps(ph->ranks_active, NULL, 0, 0) < 0)
        PHASE_BAD("ranks_active", "'%s' is not a list of rank counts (1,2,4,all), rising",
                  ph->ranks_active);
    else if (ph->step_duration > 0 && !ph->ranks_active[0] && !ph->ranks_step)
        PHASE_BAD("step_duration", "applies to a load ladder (ranks_active or ranks_step)");
    else if ((ph->ranks_active[0] || ph->ranks_step) && ph->kind == KIND_META &&
             ph->sharing == SHARING_SHARED)
        PHASE_BAD("sharing", "a meta ladder needs sharing = unique (shared trees are split over "
                             "every rank)");
}

/* where and how often the monitor samples. */
static void phase_check_monitor(struct parse_state *st, const struct phase *ph)
{
    if (ph->monitor_host[0] && ph->monitor_rank[0])
        PHASE_BAD("monitor_rank", "set monitor_host or monitor_rank, not both");
    else if (ph->monitor_rank[0] && strcmp(ph->monitor_rank, "last") != 0 &&
             (strspn(ph->monitor_rank, "0123456789") != strlen(ph->monitor_rank) ||
              strlen(ph->monitor_rank) > 7))
        PHASE_BAD("monitor_rank", "'%s' is not last or a rank number (below %d)", ph->monitor_rank,
                  JOB_RANKS_MAX);
    else if (ph->monitor_url[0] && strncmp(ph->monitor_url, "http://", 7) != 0 &&
             strncmp(ph->monitor_url, "https://", 8) != 0)
        PHASE_BAD("monitor_url", "'%s' is not an http:// or https:// URL", ph->monitor_url);
#ifndef HERD_HAVE_CURL
    else if (ph->monitor_url[0])
        PHASE_BAD("monitor_url", "this herd was built without libcurl");
#endif
}

/* the backend's own check, lock support, and the scale of the phase. */
static void phase_check_backend(struct parse_state *st, const struct phase *ph)
{
    char why[512];
    const struct backend_ops *be = backend_find(ph->backend);
    const char *key = be->check ? be->check(ph, why, sizeof why) : NULL;
    if (!key && ph->kind == KIND_LOCK && !be->lock) {
        snprintf(why, sizeof why, "lock is not supported by the %s backend", ph->backend);
        key = "kind";
    }
    if (!key)
        key = phase_scale(ph, 0, job_host_memory(), why, sizeof why);
    if (key)
        PHASE_BAD(key, "%s", why);
}

/* Whether phase ph (every key resolved) can run, the first problem into
 * st: each check in turn, until one fails. */
static void phase_validate(struct parse_state *st, const struct phase *ph)
{
    void (*const checks[])(struct parse_state *, const struct phase *) = {
        phase_check_sizes,  phase_check_kind,    phase_check_names,
        phase_check_ladder, phase_check_monitor, phase_check_backend,
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0] && !st->failed; i++)
        checks[i](st, ph);
}

int job_read_text(const char *path, char **text)
{
    return jobtext_read(path, text, NULL, 0);
}

/* The --set arguments: "KEY=VALUE" for every phase the key applies to,
 * "PHASE.KEY=VALUE" for one phase (split at the last '.' before '=':
 * key names have none, phase names may). */
static void sets_parse(struct parse_state *st, char *const *sets, int nsets)
{
    st->sets = nsets > 0 ? calloc((size_t)nsets, sizeof *st->sets) : NULL;
    if (nsets > 0 && !st->sets) {
        fail(st, 0, NULL, "out of memory");
        return;
    }
    for (int i = 0; i < nsets && !st->failed; i++) {
        const char *eq = strchr(sets[i], '=');
        if (!eq || eq == sets[i]) {
            fail(st, 0, NULL, "--set %s: expected KEY=VALUE or PHASE.KEY=VALUE", sets[i]);
            return;
        }
        const char *dot = memrchr(sets[i], '.', (size_t)(eq - sets[i]));
        const char *name = dot ? dot + 1 : sets[i];
        char key[64];
        snprintf(key, sizeof key, "%.*s", (int)(eq - name < 63 ? eq - name : 63), name);
        struct set *set = &st->sets[st->nsets];
        set->key = key_lookup(key);
        set->value = eq + 1;
        if (!set->key || (size_t)(eq - name) >= sizeof key) {
            fail(st, LINE_SET, key, "unknown key (see `herd keys`)");
            return;
        }
        if (strlen(eq + 1) >= JOB_PATH_MAX) {
            fail(st, LINE_SET, key, "value too long");
            return;
        }
        if (dot) {
            snprintf(set->phase, sizeof set->phase, "%.*s", (int)(dot - sets[i]), sets[i]);
            if ((size_t)(dot - sets[i]) >= sizeof set->phase || section_index(st, set->phase) < 0 ||
                strcmp(set->phase, "global") == 0) {
                fail(st, LINE_SET, key, "no phase [%.*s] in the job", (int)(dot - sets[i]),
                     sets[i]);
                return;
            }
            if (set->key->scope == KEY_GLOBAL_ONLY) {
                fail(st, LINE_SET, key, "describes the whole run: --set %s=..., not per phase",
                     key);
                return;
            }
        }
        st->nsets++;
    }
}

/* Whether --set s reaches phase (NULL: [global]). A key of some kinds
 * reaches only those phases, never [global] (whose value every phase
 * would inherit); a [global]-only key reaches only [global]. */
static bool set_reaches(const struct set *s, const struct phase *ph)
{
    if (!ph)
        return !s->phase[0] && !s->key->kinds;
    if (s->phase[0])
        return strcmp(s->phase, ph->name) == 0;
    return s->key->scope != KEY_GLOBAL_ONLY &&
           (!s->key->kinds || (s->key->kinds & KIND_BIT(ph->kind)));
}

/* Apply the --set values that reach ph (global: the [global] values),
 * after its own. */
static void sets_apply(struct parse_state *st, struct phase *ph, bool global)
{
    char why[256];
    for (int i = 0; i < st->nsets && !st->failed; i++) {
        struct set *s = &st->sets[i];
        if (!set_reaches(s, global ? NULL : ph))
            continue;
        const char *bad = key_assign(s->key, ph, s->value, why, sizeof why);
        if (bad)
            fail(st, LINE_SET, s->key->name, "%s", bad);
    }
}

/* A --set of a key of some kinds that no phase of the job has: say so
 * rather than ignore it. */
static void sets_unused(struct parse_state *st)
{
    for (int i = 0; i < st->nsets && !st->failed; i++) {
        const struct set *s = &st->sets[i];
        if (s->phase[0] || !s->key->kinds)
            continue;
        bool used = false;
        for (int p = 0; p < st->job->nphases && !used; p++)
            used = set_reaches(s, &st->job->phases[p]);
        if (!used) {
            char kinds[64];
            fail(st, LINE_SET, s->key->name, "applies to %s phases, and the job has none",
                 key_kinds_text(s->key, kinds, sizeof kinds));
        }
    }
}

int job_load(const char *path, const char *text, char *const *sets, int nsets, struct job *job,
             char *err, size_t errlen)
{
    memset(job, 0, sizeof *job);
    snprintf(job->path, sizeof job->path, "%s", path);
    struct parse_state st = {.path = path, .job = job, .err = err, .errlen = errlen};
    err[0] = '\0';

    if (!text) { /* read it here: includes and ${VAR} (jobtext.h), with their own errors */
        if (jobtext_read(path, &job->text, err, errlen) < 0)
            return -1;
    } else if (!(job->text = strdup(text))) {
        fail(&st, 0, NULL, "out of memory");
        return -1;
    }
    if (strlen(job->text) > JOBTEXT_MAX) {
        fail(&st, 0, NULL, "larger than 1 MiB: not a job file");
        job_free(job);
        return -1;
    }
    st.file = fmemopen(job->text, strlen(job->text), "r");
    if (!st.file) {
        fail(&st, 0, NULL, "cannot parse job file: %s", strerror(errno));
        job_free(job);
        return -1;
    }
    ini_max_line = 4096;
    ini_allow_multiline = false; /* keeps reported line numbers exact */
    /* jobtext.c took the comments out before it replaced ${VAR}: a ';'
     * left in a value came from a variable and belongs to it. */
    ini_allow_inline_comments = false;
    int rc = ini_parse_stream(reader_next_line, &st, handle_key, &st);
    fclose(st.file);
    if (rc > 0) /* libinih counts every line it read: its location is ours */
        fail(&st, rc <= (int)st.nlocs ? st.locs[rc - 1] : rc, NULL,
             "syntax error (expected [section] or key = value)");
    free(st.locs);
    if (st.header_line && !st.empty_line && section_index(&st, st.header) < 0)
        st.empty_line = st.header_line;
    if (st.empty_line)
        fail(&st, st.empty_line, NULL, "section has no keys (a phase needs at least kind)");
    else if (rc < 0)
        fail(&st, 0, NULL, "cannot parse job file");

    sets_parse(&st, sets, nsets);

    /* Defaults, then [global], then each phase. */
    struct phase global;
    memset(&global, 0, sizeof global);
    char why[256];
    for (size_t i = 0; i < job_nkeys && !st.failed; i++)
        if (job_keys[i].fallback &&
            key_assign(&job_keys[i], &global, job_keys[i].fallback, why, sizeof why))
            fail(&st, 0, job_keys[i].name, "internal: bad default");
    if (!st.failed)
        section_apply(&st, "global", &global, false);
    sets_apply(&st, &global, true);
    job->keep = global.keep;
    snprintf(job->run_id, sizeof job->run_id, "%s", global.run_id);
    if (!st.failed && global.run_id[0] && !job_name_ok(global.run_id))
        fail(&st, line_of(&st, "global", "run_id"), "run_id",
             "'%s' may hold only letters, digits, '_', '.' and '-', not starting with '.' "
             "or '-'",
             global.run_id);

    int nphases = 0;
    for (int i = 0; i < st.nsections; i++)
        nphases += strcmp(st.sections[i], "global") != 0;
    if (!st.failed && nphases == 0)
        fail(&st, 0, NULL, "no phases: add a section such as [write] with kind = write");
    job->phases = calloc(nphases ? nphases : 1, sizeof *job->phases);
    if (!job->phases && !st.failed)
        fail(&st, 0, NULL, "out of memory");
    for (int i = 0; i < st.nsections && !st.failed; i++) {
        if (strcmp(st.sections[i], "global") == 0)
            continue;
        struct phase *ph = &job->phases[job->nphases++];
        *ph = global;
        snprintf(ph->name, sizeof ph->name, "%s", st.sections[i]);
        ph->line = st.section_lines[i];
        for (size_t k = 0; k < job_nkeys; k++)
            ph->key_line[k] = line_of(&st, ph->name, job_keys[k].name);
        section_apply(&st, st.sections[i], ph, true);
        sets_apply(&st, ph, false);
        if (st.failed)
            break;
        if (!line_of(&st, ph->name, "kind")) {
            fail(&st, ph->line, "kind",
                 "missing in [%s]: write | read | md5 | lock | storm | meta | idle", ph->name);
            break;
        }
        if (!ph->fileset[0]) {
            char size[32];
            units_format_size(ph->file_size, size, sizeof size);
            snprintf(ph->fileset, sizeof ph->fileset, "%s-%s",
                     ph->sharing == SHARING_UNIQUE ? "unique" : "shared", size);
        }
        ph->rwmix_read = rwmix_parse(ph->rwmix_text);
        phase_validate(&st, ph);
    }
    sets_unused(&st);
    free(st.raws);
    free(st.sets);
    if (st.failed) {
        job_free(job);
        return -1;
    }
    return 0;
}

void job_free(struct job *job)
{
    free(job->text);
    free(job->phases);
    job->text = NULL;
    job->phases = NULL;
    job->nphases = 0;
}

int job_phase_bytes(const struct phase *ph, uint64_t *bytes)
{
    uint64_t unit = ph->file_size, times = (uint64_t)ph->iterations, b = 0;
    *bytes = 0;
    if (ph->kind == KIND_META) {
        if (!(job_meta_steps(ph->meta_ops) & (1 << META_CREATE)))
            return 0;
        times = (uint64_t)ph->files;
    } else if (ph->kind == KIND_STORM) {
        unit = ph->block_size < ph->file_size ? ph->block_size : ph->file_size;
        if (__builtin_mul_overflow((uint64_t)ph->count, times, &times))
            return -EOVERFLOW;
    } else if (!kind_moves_data(ph->kind)) {
        return 0;
    } else if (__builtin_mul_overflow(times, (uint64_t)ph->files_per_rank, &times)) {
        return -EOVERFLOW; /* write, read, md5: every file of the rank */
    }
    if (__builtin_mul_overflow(unit, times, &b))
        return -EOVERFLOW;
    *bytes = b;
    return 0;
}

uint64_t job_phase_bytes_per_rank(const struct phase *ph)
{
    uint64_t b;
    return job_phase_bytes(ph, &b) < 0 ? UINT64_MAX : b;
}

/* Where a phase's value of key came from (the phase's header line when
 * it is the default). */
static int phase_key_loc(const struct phase *ph, const char *key)
{
    for (size_t k = 0; k < job_nkeys; k++)
        if (strcmp(job_keys[k].name, key) == 0 && ph->key_line[k])
            return ph->key_line[k];
    return ph->line;
}

int job_check_scale(const struct job *job, int64_t nranks, char *err, size_t len)
{
    uint64_t mem = job_host_memory();
    char why[512];
    for (int i = 0; i < job->nphases; i++) {
        const struct phase *ph = &job->phases[i];
        const char *key = phase_scale(ph, nranks, mem, why, sizeof why);
        if (!key)
            continue;
        error_format(err, len, job, job->path, phase_key_loc(ph, key), key, why);
        return -EOVERFLOW;
    }
    return 0;
}

/* Append one warning line for key of phase ph. */
static void lint_add(const struct job *job, const struct phase *ph, const char *key, char *out,
                     size_t len, const char *fmt, ...)
{
    char msg[512], line[JOB_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int loc = phase_key_loc(ph, key);
    char warn[600];
    snprintf(warn, sizeof warn, "warning: %s", msg);
    error_format(line, sizeof line, job, job->path, loc, key, warn);
    size_t used = strlen(out);
    if (used < len)
        snprintf(out + used, len - used, "%s\n", line);
}

/* Whether a phase before index writes fileset. */
static bool lint_written_before(const struct job *job, int index, const char *fileset)
{
    for (int i = 0; i < index; i++)
        if (job->phases[i].kind == KIND_WRITE && strcmp(job->phases[i].fileset, fileset) == 0)
            return true;
    return false;
}

int job_lint(const struct job *job, int64_t nranks, char *out, size_t len)
{
    int n = 0;
    if (len)
        out[0] = '\0';
    for (int i = 0; i < job->nphases; i++) {
        const struct phase *ph = &job->phases[i];
        uint64_t bytes = job_phase_bytes_per_rank(ph);
        double all = (double)bytes * (double)nranks;
        if (ph->kind == KIND_META && all > (double)JOB_LINT_META_BYTES) {
            char size[32], total[32];
            units_format_size(ph->file_size, size, sizeof size);
            units_format_human(all, total, sizeof total);
            lint_add(job, ph, "file_size", out, len,
                     "meta phase [%s] writes %s: %lld files x %lld ranks of file_size %s "
                     "(inherited?); set file_size in [%s] (0: empty files)",
                     ph->name, total, (long long)ph->files, (long long)nranks, size, ph->name);
            n++;
        }
        bool reads = ph->kind == KIND_READ || ph->kind == KIND_MD5 || ph->kind == KIND_STORM;
        if (reads && !job->run_id[0] && !lint_written_before(job, i, ph->fileset)) {
            lint_add(job, ph, "fileset", out, len,
                     "%s phase [%s] reads fileset '%s', which no earlier phase writes (and no "
                     "fixed run_id names an earlier run's files): every open will fail",
                     job_kind_name(ph->kind), ph->name, ph->fileset);
            n++;
        }
    }
    return n;
}

int job_ladder_steps(const char *spec, int64_t *out, int max, int64_t nranks)
{
    int n = 0;
    int64_t last = 0;
    for (const char *p = spec; *p;) {
        size_t len = strcspn(p, ",");
        int64_t v;
        if (len == 3 && strncmp(p, "all", 3) == 0) {
            if (p[len]) /* "all" is the last step */
                return -EINVAL;
            v = nranks > 0 ? nranks : INT64_MAX;
            if (v == last) /* the step before already has all ranks: the same step */
                break;
        } else {
            char num[24];
            if (len == 0 || len >= sizeof num || strspn(p, "0123456789") < len)
                return -EINVAL;
            snprintf(num, sizeof num, "%.*s", (int)len, p);
            v = strtoll(num, NULL, 10);
            if (v < 1 || v > JOB_RANKS_MAX)
                return -EINVAL;
            if (nranks > 0 && v > nranks)
                return -ERANGE;
        }
        if (v <= last || n == (out ? max : JOB_STEPS_MAX))
            return -EINVAL;
        if (out)
            out[n] = v;
        n++;
        last = v;
        p += len;
        if (*p == ',' && !*++p)
            return -EINVAL; /* a trailing comma */
    }
    return n > 0 ? n : -EINVAL;
}

/* The steps of a ladder phase for nranks ranks into steps; how many. */
static int ladder_counts(const struct phase *ph, int64_t nranks, int64_t *steps, char *why,
                         size_t len)
{
    if (ph->ranks_active[0]) {
        int n = job_ladder_steps(ph->ranks_active, steps, JOB_STEPS_MAX, nranks);
        if (n == -ERANGE)
            snprintf(why, len, "'%s' asks for more ranks than the run's %lld I/O ranks",
                     ph->ranks_active, (long long)nranks);
        else if (n < 0)
            snprintf(why, len, "'%s' is not a list of rank counts", ph->ranks_active);
        return n;
    }
    int n = 0;
    for (int64_t v = 1; v < nranks && n < JOB_STEPS_MAX - 1; v *= ph->ranks_step)
        steps[n++] = v;
    steps[n++] = nranks;
    return n;
}

int job_expand_ladders(const struct job *job, int64_t nranks, struct job *out, char *err,
                       size_t len)
{
    *out = *job;
    out->text = job->text ? strdup(job->text) : NULL;
    int total = 0;
    int64_t steps[JOB_STEPS_MAX];
    char why[256];
    for (int i = 0; i < job->nphases; i++) {
        const struct phase *ph = &job->phases[i];
        bool ladder = ph->ranks_active[0] || ph->ranks_step;
        int n = ladder ? ladder_counts(ph, nranks, steps, why, sizeof why) : 1;
        if (n < 0) {
            error_format(err, len, job, job->path, phase_key_loc(ph, "ranks_active"),
                         "ranks_active", why);
            free(out->text);
            out->text = NULL;
            return -1;
        }
        total += n;
    }
    out->phases = calloc((size_t)total, sizeof *out->phases);
    if (!out->phases || (job->text && !out->text)) {
        free(out->text);
        free(out->phases);
        snprintf(err, len, "%s: out of memory", job->path);
        return -1;
    }
    out->nphases = 0;
    for (int i = 0; i < job->nphases; i++) {
        const struct phase *ph = &job->phases[i];
        if (!ph->ranks_active[0] && !ph->ranks_step) {
            out->phases[out->nphases++] = *ph;
            continue;
        }
        int n = ladder_counts(ph, nranks, steps, why, sizeof why);
        for (int k = 0; k < n; k++) {
            struct phase *st = &out->phases[out->nphases++];
            *st = *ph;
            char suffix[32];
            int sl = snprintf(suffix, sizeof suffix, ".%lldr", (long long)steps[k]);
            snprintf(st->name, sizeof st->name, "%.*s%s", (int)(JOB_NAME_MAX - 1 - sl), ph->name,
                     suffix);
            snprintf(st->ladder, sizeof st->ladder, "%s", ph->name);
            st->step = k + 1;
            st->active_ranks = steps[k];
            if (ph->step_duration > 0 && (st->deadline <= 0 || ph->step_duration < st->deadline))
                st->deadline = ph->step_duration; /* a deadline set too stays a bound */
            st->ranks_active[0] = '\0';
            st->ranks_step = 0;
        }
    }
    for (int i = 0; i < out->nphases; i++) /* step names must not clash with other phases */
        for (int j = i + 1; j < out->nphases; j++)
            if (strcmp(out->phases[i].name, out->phases[j].name) == 0) {
                char msg[200];
                snprintf(msg, sizeof msg, "the ladder step [%s] has the name of another phase",
                         out->phases[i].name);
                error_format(err, len, job, job->path, out->phases[j].line, NULL, msg);
                job_free(out);
                return -1;
            }
    return 0;
}
