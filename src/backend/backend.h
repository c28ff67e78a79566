/* backend.h — the I/O interface every workload uses (like fio's
 * ioengine_ops or IOR's aiori). One static ops struct per backend.
 *
 * Every call returns 0 (or a byte count) on success and a negative errno on
 * failure; nothing else signals errors. Paths are relative to the target
 * root the backend was connected to; a backend never reaches outside it. */
#ifndef HERD_BACKEND_H
#define HERD_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

struct backend_file; /* opaque, backend-specific */
struct hist;         /* hist.h */
struct job_key;      /* job.h */
struct phase;        /* job.h */
struct job;          /* job.h */

/* Settings a client's memory is estimated for instead of a phase's own
 * (0: the phase's): the nearest settings that fit (clientfit.h). */
struct client_tune {
    int64_t inflight;    /* calls in flight per client, fixed (libnfs: nfs_inflight) */
    uint64_t block_size; /* bytes per call */
};

/* BACKEND_EXCL with BACKEND_CREATE: fail with -EEXIST when the file exists
 * (O_EXCL). A path naming a symbolic link, or passing through one, is
 * never followed: -ELOOP (safepath.h). */
enum backend_open {
    BACKEND_READ = 1,
    BACKEND_WRITE = 2,
    BACKEND_CREATE = 4,
    BACKEND_DIRECT = 8,
    BACKEND_EXCL = 16
};

/* A queued call that ended (reap): its tag, its result (bytes, or
 * -errno) and when it ended (clock_mono seconds). */
struct backend_done {
    uint64_t tag;
    ssize_t result;
    double at;
};

enum backend_lock { BACKEND_UNLOCK, BACKEND_LOCK_SHARED, BACKEND_LOCK_EXCLUSIVE };

struct backend_ops {
    const char *name;
    /* The URL scheme of its targets ("nfs" for nfs://server/export),
     * NULL for a directory path: a job that names no backend gets the
     * one its target's form asks for, and one that names another is
     * refused (backend_for_target). */
    const char *scheme;
    /* The client library it is built on ("libnfs", "libsmbclient") and
     * that library's version as this herd was built or runs with, for the
     * results (IOR's get_version); NULL for none (posix, fault). */
    const char *library;
    const char *(*version)(void);
    /* version() is the library's version when herd was built (pkg-config's):
     * the library cannot say at run time (libnfs 4). */
    bool version_at_build;
    /* Every call must come from the thread that connected (libsmbclient's
     * contexts are not thread-safe): no read-ahead thread uses it. */
    bool one_thread;
    /* Each rank's files are its own (a store in the rank's memory: nothing
     * is shared between ranks): the other ranks do not look for the run
     * directory rank 0 made (rundir_seen), which only a shared target
     * shows them. false for every backend of a file system or server. */
    bool rank_private;
    /* The job-file keys this backend owns (as fio's engines' .options):
     * rows of the key table whose offsets are into the phase's
     * backend_opts block (JOB_OPTS_MEMBER of the backend's own options
     * struct); the table names the backend in each. A key of one backend
     * set in a job for another is refused ("applies to backend X"). */
    const struct job_key *keys;
    size_t nkeys;
    /* What is wrong with running phase ph on this backend (a job-file key
     * and why, written into why), or NULL. Called by `herd check` and run
     * before anything starts. */
    const char *(*check)(const struct phase *ph, char *why, size_t len);
    /* Optional: what is wrong with phase ph's calls naming directories
     * up to `below` components beneath its target (the run directory,
     * the fileset's, a tree's: workload.h's dir_depth + 1), for a backend
     * whose server caps a path's depth: the key at fault, with why
     * written; NULL when nothing. Called where check is. */
    const char *(*check_depth)(const struct phase *ph, int below, char *why, size_t len);
    /* Connect to target (a directory path or URL). *ctx is the backend's.
     * ph is the first phase: run-wide options come from it. client: the
     * name this connection presents to the server as its client (one of
     * a rank's clients_per_rank: "HOST-r3-c17"), NULL for the host's own;
     * a backend with `clients` keeps it for every identity the protocol
     * has (AUTH_SYS machine name, NFSv4 client id, NLM caller name). */
    int (*connect)(const char *target, const struct phase *ph, const char *client, void **ctx);
    /* Several contexts of it may live in one process as independent
     * clients of the server (clients_per_rank), their calls interleaved
     * on one thread: every wait goes through fiber_poll (fiber.h). */
    bool clients;
    /* Optional, with clients: the most memory one client holds in phase
     * i of job (its buffers in flight, for the RPC window it reaches by
     * then, and its own state), with tune's settings instead of the
     * phase's where tune sets them (tune NULL: none); and the most
     * descriptors one client holds over the job. For `herd check` and
     * the rules that the clients of a host's ranks fit its memory and a
     * rank's fit its descriptor limit (clientfit.h). */
    uint64_t (*client_memory)(const struct job *job, int i, const struct client_tune *tune);
    unsigned (*client_fds)(const struct job *job);
    /* Apply a phase's per-phase options (sizes, timeouts) before it runs;
     * reconnect first if the connection was lost. ph NULL: no phase runs
     * (the run's clean-up): defaults. 0 or -errno. NULL if nothing to do. */
    int (*configure)(void *ctx, const struct phase *ph);
    /* Optional: fault in the memory phase ph's calls will take, so that
     * its clock does not pay for first touches (IOR and fio allocate their
     * buffers before theirs). Called after configure and after the
     * workload placed its own buffers, before the start barrier; nothing
     * on the target changes. NULL: nothing to do. */
    void (*prime)(void *ctx, const struct phase *ph);
    void (*disconnect)(void *ctx);
    int (*open)(void *ctx, const char *path, int flags, struct backend_file **f);
    ssize_t (*pread)(void *ctx, struct backend_file *f, void *buf, size_t len, uint64_t offset);
    /* Optional: a pread that may lend its bytes instead of copying them.
     * On success *data points at the bytes read: either buf (copied there,
     * as pread does) or the backend's own memory, which stays valid and
     * unchanged until the next call on f. NULL: callers use pread. */
    ssize_t (*pread_lend)(void *ctx, struct backend_file *f, void *buf, size_t len, uint64_t offset,
                          const void **data);
    /* Optional: a buffer of the backend's own that the next pwrite on f
     * (buf = it, len <= the len asked) sends without copying, for the
     * caller to fill; NULL: none now (or len too long), write from your
     * own memory. *note points at a word kept with the buffer: what the
     * caller last stored there, or 0 when the backend changed the bytes
     * since (or never had them), so that a caller that names what it
     * wrote may rewrite only what differs. A buffer whose note is want
     * is given first. Valid until the next call on f. NULL: no buffers. */
    void *(*pwrite_buffer)(void *ctx, struct backend_file *f, size_t len, uint64_t want,
                           uint64_t **note);
    ssize_t (*pwrite)(void *ctx, struct backend_file *f, const void *buf, size_t len,
                      uint64_t offset);
    /* Optional: a paced client's reads and writes of one file kept in
     * flight together, as several processes on one mount keep theirs.
     * queue_depth: how many phase ph lets be outstanding at once (1: one
     * at a time, pread and pwrite). submit sends a read of len bytes at
     * offset into buf (write: of buf) without waiting, named tag; buf
     * stays the caller's to keep untouched until the call is reaped. 0,
     * or -errno when nothing was sent. reap waits until a call of f ends
     * (1: *done says which, its result as pread's or pwrite's, and when
     * it ended), or until clock_mono() reads until (0; at once when none
     * is outstanding); -errno when the wait failed, which ends every call
     * outstanding. All of f's calls are reaped before any other call on
     * f. NULL: none. */
    unsigned (*queue_depth)(const struct phase *ph);
    int (*submit)(void *ctx, struct backend_file *f, bool write, void *buf, size_t len,
                  uint64_t offset, uint64_t tag);
    int (*reap)(void *ctx, struct backend_file *f, double until, struct backend_done *done);
    int (*fsync)(void *ctx, struct backend_file *f);
    int (*close)(void *ctx, struct backend_file *f);
    /* lstat: a symbolic link is reported as one (S_ISLNK), never followed. */
    int (*stat)(void *ctx, const char *path, struct stat *st);
    /* Optional: a mix phase's calls (NULL: the backend has none, and herd
     * check refuses a mix that names them), each one call of the
     * protocol where it has one. fstat: the attributes of the open file
     * f (NFS GETATTR). fsetattr: f's mode (mode >= 0) or its size (size
     * >= 0; the bytes up to it stay), NFS SETATTR. faccess: whether this
     * user may read and write f, 0 or -EACCES (NFS ACCESS). readdir: the
     * directory path listed whole, never through a link (-ELOOP,
     * -ENOTDIR), the names in it other than . and .. into *entries (NFS
     * READDIRPLUS, as many as it takes). */
    int (*fstat)(void *ctx, struct backend_file *f, struct stat *st);
    int (*fsetattr)(void *ctx, struct backend_file *f, int mode, int64_t size);
    int (*faccess)(void *ctx, struct backend_file *f);
    int (*readdir)(void *ctx, const char *path, uint64_t *entries);
    int (*unlink)(void *ctx, const char *path);
    int (*mkdir)(void *ctx, const char *path);
    int (*rmdir)(void *ctx, const char *path);
    int (*rename)(void *ctx, const char *from, const char *to);
    /* Byte-range lock (POSIX record-lock semantics; len 0 = to the end of
     * the file). wait: block until granted (-EINTR if a signal cut the wait
     * short); otherwise -EAGAIN or -EACCES when another holder conflicts.
     * NULL when the backend cannot lock. */
    int (*lock)(void *ctx, struct backend_file *f, enum backend_lock kind, bool wait,
                uint64_t start, uint64_t len);
    /* The protocol's own name for why the last failed call failed
     * ("NLM4_DENIED_GRACE_PERIOD", "NFS4ERR_GRACE", ...), kept beside the
     * errno in the error table; NULL when the protocol said nothing more
     * (or the backend has no protocol: posix). Valid until the next call. */
    const char *(*status)(void *ctx);
    /* Where the backend times the RPCs it keeps in flight on its own
     * (OP_RPC_READ, OP_RPC_WRITE: each one's round trip, beside the
     * caller's read and write calls): the running phase's arrays of
     * OP_COUNT histograms, call counts and seconds, all NULL between
     * phases. NULL when the backend has no RPCs of its own. */
    void (*observe)(void *ctx, struct hist *hist, uint64_t *count, double *seconds);
    /* Optional, after a phase that moved data: the READ and WRITE RPCs
     * the backend kept in flight in it (its window, fixed or as probed),
     * 0 for a direction it sent none of. NULL: no RPCs of its own. */
    void (*window)(void *ctx, uint32_t *read, uint32_t *write);
    /* Optional, with clients: whether ctx's connection to the server is
     * open now: made, not found lost by a call since, and not closed by
     * the server (its socket looked at without waiting). For the count
     * of the connections a server kept (a phase's connections_open).
     * NULL: not known. */
    bool (*connected)(void *ctx);
    /* The caller will read [offset, offset + length) of f in order: the
     * backend may read ahead within that range, never beyond it (a
     * posix_fadvise(SEQUENTIAL) with bounds). NULL when it does not. */
    void (*advise)(void *ctx, struct backend_file *f, uint64_t offset, uint64_t length);
    /* What the connection negotiated, for the run's /hosts table: a file
     * system type ("libnfs", "smb") and mount-option-like text
     * ("vers=3,rsize=1048576", "dialect=SMB3_11,signing=on"). NULL: the
     * kernel mount's entry says it (posix). */
    void (*describe)(void *ctx, char *fstype, size_t flen, char *options, size_t olen);
    /* A descriptor on this host (O_PATH; the caller closes it) of the
     * directory path beneath the target, resolved like every path
     * (safepath.h), "" for the target itself; or a negative errno. For the
     * run's check that its own outputs (results, --json) do not land in
     * its run directory, and for a kernel client's cached view of the
     * target to be refreshed before a rank looks for the run directory
     * (rundir_seen). NULL where the target is not a local directory
     * (libnfs, smb). */
    int (*local_dir)(void *ctx, const char *path);
};

/* The backend a job runs with: `named` (the job's backend key, NULL when
 * it gives none) when target's form is that backend's (its scheme, or a
 * path for one of none), else (named NULL) the first built-in backend of
 * target's form; NULL, with why (naming both), when named is another
 * form's, or no backend of this herd takes target (one the build left
 * out: its CMake setting). A name of no backend is returned as it is:
 * job/ refuses it. */
const char *backend_for_target(const char *named, const char *target, char *why, size_t len);

/* The backend called `name`, or NULL. */
const struct backend_ops *backend_find(const char *name);
/* The version of client library `library` of a backend built into this
 * herd, or NULL when none is built on it. */
const char *backend_library_version(const char *library);

/* The i-th backend built into this herd (registry order), NULL past the
 * last: for the key table. */
const struct backend_ops *backend_at(size_t i);

/* The plain POSIX backend, which others may wrap (fault). */
extern const struct backend_ops backend_posix;

#endif
