/* backend_libnfs.c — NFS over the wire from user space with libnfs: no
 * kernel mount needed, one NFS client (context and TCP connection) per
 * rank, rsize/wsize and the NFS version chosen per run or phase.
 *
 * target = nfs://server/export[?version=3&nfsport=2049&mountport=...]; the
 * URL's path is the export, herd's relative paths resolve inside it.
 * rsize/wsize: libnfs 4 has no setter for its readmax/writemax, so this
 * backend issues one nfs_pread_async/nfs_pwrite_async (one READ/WRITE
 * RPC) per nfs_rsize/nfs_wsize bytes, capped at what the server offers,
 * up to nfs_inflight of them at a time per file (libnfs_stream.h: read-
 * ahead within the range the workload advised, write-behind). Over
 * NFSv4 a file opened to be written is opened by herd's own OPEN and its
 * READs, WRITEs and COMMITs are herd's own COMPOUNDs in the same window
 * (libnfs_data4.c: libnfs 4.0 cannot WRITE over NFSv4).
 * A connection that fails (server killed, timed out) is marked broken; the
 * next open or phase reconnects, so a restarted server serves later work.
 * nfs://server:port/export means nfsport=port (libnfs 4.0 cannot parse a
 * port there; later libnfs reads it the same way).
 *
 * Paths (safepath.h): the same syntax check as every backend, and no
 * symbolic link is followed. libnfs resolves a path component by component
 * from the export's root, following links; so a plain open asks O_NOFOLLOW
 * (libnfs 4.0 over NFSv3 then refuses a link at any component, checked on
 * the attributes of each LOOKUP it walks: no race). Every other call
 * goes to the parent directory's file handle, kept from one walk that
 * refuses a link at any component (libnfs_dirs.c; over NFSv4 COMPOUNDs
 * of herd's own, and its own OPEN to create: libnfs_open4.c), with the
 * leaf's name: no path is resolved by name again. Over NFSv4 an open of
 * an existing file goes by name and must find the handle herd looked up
 * (libnfs_open_named). A call whose parent cannot be kept (NFSv3: an
 * export root the user may not read) first checks the directory
 * components and acts by name on a leaf it lstat()ed too; what remains
 * there: between the check and the call another client can swap a
 * directory for a link (within the export: the server never follows
 * links, so nothing outside the export can be reached). A create is
 * GUARDED so that it never reuses what it did not make; a name that was
 * there is opened only when it is a regular file.
 *
 * Byte-range locks: libnfs_lock.c. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h> /* before libnfs.h, which needs struct timeval */
#include <time.h>
#include <unistd.h>

#include <nfsc/libnfs.h> /* before the raw headers, which need its types */

#include <nfsc/libnfs-raw.h> /* nfs_get_fh */

#include <nfsc/libnfs-raw-nfs.h>
#include <nfsc/libnfs-raw-nfs4.h>

#include "libnfs_budget.h"
#include "libnfs_call.h"
#include "libnfs_ctx.h"
#include "libnfs_rpc.h"
#include "mixspec.h"
#include "nfsurl.h"
#include "prefault.h"
#include "rpcwait.h"
#include "safepath.h"
#include "signals.h"

/* The export-absolute form of a herd path, after the common check. */
static int libnfs_path(const char *path, char *buf, size_t len)
{
    int rc = safepath_check(path);
    if (rc < 0)
        return rc;
    return (size_t)snprintf(buf, len, "/%s", path) < len ? 0 : -ENAMETOOLONG;
}

static int libnfs_ready(struct libnfs_ctx *c);

/* Every call that names a path starts here: the path rule, then a live
 * connection. 0 or -errno. */
static int libnfs_begin(struct libnfs_ctx *c, const char *path, char *buf, size_t len)
{
    libnfs_call_begin(c, NULL);
    int rc = libnfs_path(path, buf, len);
    return rc < 0 ? rc : libnfs_ready(c);
}

static int timeout_ms(double seconds)
{
    if (seconds <= 0)
        return -1;
    int s = (int)(seconds + 0.999); /* libnfs counts whole seconds */
    return s * 1000;
}

static bool libnfs_url_says_v4(const char *target)
{
    const char *q = strchr(target, '?');
    return q && (strstr(q, "version=4") != NULL);
}

JOB_OPTS_FIT(struct libnfs_opts);
#define LIBNFS_INFLIGHT_MAX 256

JOB_KEY_ROWS_BEGIN
static const struct job_key libnfs_keys[] = {
    {"nfs_rsize", KEY_SIZE, JOB_OPTS_MEMBER(struct libnfs_opts, rsize), NULL, "0",
     "libnfs: bytes per READ RPC (readmax), 0 = the server's maximum"},
    {"nfs_wsize", KEY_SIZE, JOB_OPTS_MEMBER(struct libnfs_opts, wsize), NULL, "0",
     "libnfs: bytes per WRITE RPC (writemax), 0 = the server's maximum"},
    {"nfs_inflight", KEY_INT, JOB_OPTS_MEMBER(struct libnfs_opts, inflight), NULL, "0",
     "libnfs: READ/WRITE RPCs each rank keeps in flight (1..256): sequential reads read "
     "ahead, writes return before their RPCs are answered, as a Linux client's "
     "read-ahead and write-behind do; 1 = one call at a time, each waited for; "
     "0 = each rank tries 1, 2, 4, ... up to a ceiling of 16 (a Linux client's RPC "
     "slot table; fewer when 16 RPCs would carry more than 4 MiB: 4 MiB / the larger "
     "of rsize and wsize, at least 2) and back down, and keeps the largest window "
     "within 10% of the fastest, once per run, direction and RPC size: later "
     "phases go on with it (the ranks' rpc_window_read/write); under rate, N > 1: "
     "each client of a write or read phase keeps up to N paced calls outstanding",
     .bounds = KEY_MIN | KEY_MAX, .min = 0, .max = LIBNFS_INFLIGHT_MAX},
    {"nfs_version", KEY_INT, JOB_OPTS_MEMBER(struct libnfs_opts, version), NULL, "0",
     "[global] only, libnfs: NFS protocol version 3 or 4 (0 = the URL's, else 3)",
     .scope = KEY_GLOBAL_ONLY},
};
JOB_KEY_ROWS_END

static const struct libnfs_opts *opts_of(const struct phase *ph)
{
    return job_backend_opts(ph);
}

/* Window w of RPCs of chunk bytes, tried at *tried (0: fixed), for the
 * next phase: a probe at the same RPC size and ceiling goes on (the
 * server and link are the same, and the phases of a run then put the
 * same load on them); anything else starts afresh. */
static void libnfs_window_next(struct stream_window *w, uint64_t *tried, uint64_t chunk,
                               unsigned max, bool probe)
{
    if (probe && *tried == chunk && w->max == max) {
        stream_window_resume(w);
        return;
    }
    stream_window_init(w, max, probe);
    *tried = probe ? chunk : 0;
}

/* c's RPCs in flight for phase ph (NULL: the defaults): at most
 * libnfs_inflight, probed from 1 when nfs_inflight is 0, once per run. */
static void libnfs_windows(struct libnfs_ctx *c, const struct phase *ph)
{
    c->inflight = libnfs_inflight(ph ? opts_of(ph)->inflight : 0, c->rchunk, c->wchunk);
    bool probe = !ph || opts_of(ph)->inflight == 0;
    libnfs_window_next(&c->rwin, &c->rwin_chunk, c->rchunk, c->inflight, probe);
    libnfs_window_next(&c->wwin, &c->wwin_chunk, c->wchunk, c->inflight, probe);
}

/* Whether phase ph speaks NFSv4: nfs_version, else the URL. */
static bool phase_wants_v4(const struct phase *ph)
{
    int64_t v = opts_of(ph)->version;
    return v == 4 || (v == 0 && libnfs_url_says_v4(ph->target));
}

/* A mix over NFSv4: no lock (an NFSv4 lock needs a context of its own
 * per file, made in lock phases only), and READs, WRITEs or SETATTRs of
 * its open files (which renew the lease; nothing else a mix sends does)
 * at least every LIBNFS_V4_MAX_HOLD seconds on average. */
static const char *libnfs_check_mix4(const struct phase *ph, char *why, size_t len)
{
    struct mix_spec spec;
    if (mixspec_parse(ph->mix, &spec, why, len))
        return "mix";
    if (mixspec_locks(&spec)) {
        snprintf(why, len,
                 "lock in a mix needs NFSv3 (NLM) with libnfs: over NFSv4 each locked "
                 "file needs a client of its own; leave lock out or use nfs_version = 3");
        return "mix";
    }
    double share = mixspec_data_share(&spec);
    if (share == 0 || (ph->rate > 0 && 1.0 / (ph->rate * share) >= LIBNFS_V4_MAX_HOLD)) {
        snprintf(why, len,
                 "over NFSv4 a mix's open files keep the client's lease only through its reads, "
                 "writes, appends and truncates, which come every %.0f s here: give them weight "
                 "or rate enough for one every %d s at least",
                 share > 0 && ph->rate > 0 ? 1.0 / (ph->rate * share) : INFINITY,
                 LIBNFS_V4_MAX_HOLD);
        return "mix";
    }
    return NULL;
}

/* The most operations an NFSv4.0 COMPOUND may carry: RFC 7530 sets no
 * bound, servers do, with NFS4ERR_RESOURCE (measured: Linux 6.1's nfsd
 * takes 50, NFSD_MAX_OPS_PER_COMPOUND; ganesha 4.3 100, "A COMPOUND with
 * too many operations (101)"); herd keeps to the smaller. A directory's
 * walk over NFSv4 (libnfs_dirs.c, and libnfs 4.0's mount) is one
 * COMPOUND: PUTROOTFH, a LOOKUP a component counted from the server's
 * root, GETATTR and GETFH. */
#define LIBNFS_V4_COMPOUND_OPS 50
#define LIBNFS_V4_WALK_OPS 3 /* beside the LOOKUPs */

/* backend.h's check_depth: over NFSv4 every directory walked, the URL's
 * path and `below` more components, fits one COMPOUND. */
static const char *libnfs_check_depth(const struct phase *ph, int below, char *why, size_t len)
{
    struct nfsurl url;
    char bad[256];
    if (!phase_wants_v4(ph) || nfsurl_parse(ph->target, &url, bad, sizeof bad) < 0)
        return NULL;
    int target = 0;
    for (size_t i = 0; i < url.path_len; i++)
        target += url.path[i] != '/' && (i == 0 || url.path[i - 1] == '/');
    int most = LIBNFS_V4_COMPOUND_OPS - LIBNFS_V4_WALK_OPS;
    if (target + below <= most)
        return NULL;
    snprintf(why, len,
             "over NFSv4 this phase's deepest directory is %d components below the server's "
             "root (the target's %d, herd's %d: herd-<id>/...), and herd and libnfs 4.0 walk a "
             "directory in one COMPOUND of a LOOKUP per component (%d operations); NFSv4 "
             "servers cap a COMPOUND (Linux 6.1's nfsd at %d operations, ganesha 4.3 at 100): "
             "at most %d components, "
             "so a target at most %d deep here; use NFSv3 (nfs_version = 3: one LOOKUP per "
             "call) or a shallower target",
             target + below, target, below, target + below + LIBNFS_V4_WALK_OPS,
             LIBNFS_V4_COMPOUND_OPS, most, most - below);
    return "target";
}

static const char *libnfs_check(const struct phase *ph, char *why, size_t len)
{
    struct nfsurl url;
    char bad[256];
    if (strncmp(ph->target, "nfs://", 6) != 0) {
        snprintf(why, len, "the libnfs backend needs an nfs://server/export URL, not '%s'",
                 ph->target);
        return "target";
    }
    if (nfsurl_parse(ph->target, &url, bad, sizeof bad) < 0) {
        snprintf(why, len, "'%s': %s", ph->target, bad);
        return "target";
    }
    const struct libnfs_opts *o = opts_of(ph);
    if (o->version != 0 && o->version != 3 && o->version != 4) {
        snprintf(why, len, "must be 3 or 4");
        return "nfs_version";
    }
    if (phase_wants_v4(ph) && libnfs_phase_writes_data(ph) && !libnfs_compound_payload_ok()) {
        snprintf(why, len,
                 "this libnfs (%s) cannot write over NFSv4 (its WRITE COMPOUND fails to "
                 "encode above ~3.9 KiB, and its call buffer is not where herd's own WRITEs "
                 "find libnfs 4.0's): write with nfs_version = 3 (NFSv4 reads work%s)",
                 HERD_LIBNFS_VERSION,
                 (job_kind_caps(ph->kind) & JOB_KIND_TREE) ? "; or file_size = 0 for empty files"
                                                           : "");
        return "nfs_version";
    }
    if ((job_kind_caps(ph->kind) & JOB_KIND_LOCKS) && phase_wants_v4(ph) &&
        ph->lock_hold >= LIBNFS_V4_MAX_HOLD) {
        snprintf(why, len,
                 "an NFSv4 lock held %g s may outlive the client's lease (libnfs renews no "
                 "lease while a rank sleeps; servers' leases are commonly 60 s, some 30 s): "
                 "hold below %d s",
                 ph->lock_hold, LIBNFS_V4_MAX_HOLD);
        return "lock_hold";
    }
    if (ph->kind == KIND_MIX && phase_wants_v4(ph))
        return libnfs_check_mix4(ph, why, len);
    if (phase_wants_v4(ph) && libnfs_phase_writes_data(ph) &&
        ph->think_time >= LIBNFS_V4_MAX_HOLD) {
        snprintf(why, len,
                 "an NFSv4 file open %g s between two calls may outlive the client's lease "
                 "(herd's READs and WRITEs renew it, nothing does while a rank thinks; "
                 "servers' leases are commonly 60 s, some 30 s): think below %d s",
                 ph->think_time, LIBNFS_V4_MAX_HOLD);
        return "think_time";
    }
    return NULL;
}

static int libnfs_connect(const char *target, const struct phase *ph, const char *client,
                          void **ctx)
{
    struct libnfs_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    snprintf(c->target, sizeof c->target, "%s", target);
    snprintf(c->client, sizeof c->client, "%s", client ? client : "");
    c->version = (int)opts_of(ph)->version;
    c->v4 = c->version == 4 || (c->version == 0 && libnfs_url_says_v4(target));
    c->timeout_ms = timeout_ms(ph->op_timeout);
    libnfs_call_begin(c, NULL);
    int rc = libnfs_mount(c);
    if (rc < 0) {
        free(c);
        return rc;
    }
    c->rchunk = c->server_rmax;
    c->wchunk = c->server_wmax;
    libnfs_windows(c, ph);
    *ctx = c;
    return 0;
}

/* backend.h's prime: fault in the memory a data phase's RPCs will take,
 * a stream's 2 x inflight + 1 slots (answered READs wait in theirs beside
 * a full window) and libnfs's encoded WRITE or READ reply per RPC in
 * flight, each a chunk (prefault.h's slack holds libnfs's own header
 * room: 132 bytes on a READ reply, 4 KiB on a WRITE). */
static void libnfs_prime(void *ctx, const struct phase *ph)
{
    const struct libnfs_ctx *c = ctx;
    if (job_kind_caps(ph->kind) & JOB_KIND_BLOCKS)
        prefault_heap(c->rchunk > c->wchunk ? c->rchunk : c->wchunk, 3 * (size_t)c->inflight + 1);
}

static int libnfs_configure(void *ctx, const struct phase *ph)
{
    struct libnfs_ctx *c = ctx;
    if (ph)
        c->timeout_ms = timeout_ms(ph->op_timeout);
    c->lock_phase = ph && (job_kind_caps(ph->kind) & JOB_KIND_LOCKS);
    libnfs_call_begin(c, NULL); /* the checks and reconnects below: one call */
    if (c->broken || !c->nfs) {
        int rc = libnfs_reconnect(c);
        if (rc < 0)
            return rc;
    }
    nfs_set_timeout(c->nfs, c->timeout_ms);
    /* A server restarted while this rank was idle leaves a dead connection
     * that nothing has noticed yet: ask the root's attributes to find out. */
    struct nfs_stat_64 st;
    if (libnfs_call_lstat(c, "/", &st) < 0 && c->broken) {
        int rc = libnfs_reconnect(c);
        if (rc < 0)
            return rc;
        nfs_set_timeout(c->nfs, c->timeout_ms);
    }
    uint64_t rsize = ph ? opts_of(ph)->rsize : 0, wsize = ph ? opts_of(ph)->wsize : 0;
    c->rchunk = rsize && rsize < c->server_rmax ? rsize : c->server_rmax;
    c->wchunk = wsize && wsize < c->server_wmax ? wsize : c->server_wmax;
    libnfs_windows(c, ph);
    return 0;
}

static void libnfs_describe(void *ctx, char *fstype, size_t flen, char *options, size_t olen)
{
    struct libnfs_ctx *c = ctx;
    snprintf(fstype, flen, "libnfs");
    snprintf(options, olen, "vers=%d,rsize=%llu,wsize=%llu,inflight=%u", c->v4 ? 4 : 3,
             (unsigned long long)c->rchunk, (unsigned long long)c->wchunk, c->inflight);
}

static void libnfs_observe(void *ctx, struct hist *hist, uint64_t *count, double *seconds)
{
    struct libnfs_ctx *c = ctx;
    c->obs = (struct rpc_observer){hist, count, seconds};
}

static void libnfs_window(void *ctx, uint32_t *read, uint32_t *write)
{
    const struct libnfs_ctx *c = ctx;
    *read = stream_window_kept(&c->rwin);
    *write = stream_window_kept(&c->wwin);
}

/* Open: a context not found broken whose socket has seen neither the
 * server's close (POLLRDHUP: a FIN) nor a reset (POLLHUP, POLLERR). */
static bool libnfs_connected(void *ctx)
{
    const struct libnfs_ctx *c = ctx;
    if (!c || c->broken || !c->nfs)
        return false;
    struct pollfd pfd = {.fd = nfs_get_fd(c->nfs), .events = POLLIN | POLLRDHUP};
    if (pfd.fd < 0 || poll(&pfd, 1, 0) < 0)
        return false;
    return !(pfd.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

static void libnfs_disconnect(void *ctx)
{
    struct libnfs_ctx *c = ctx;
    if (!c)
        return;
    nlm_close(c->nlm);
    libnfs_drop(c);
    free(c);
}

/* A broken connection is retried once per call that names a path. */
static int libnfs_ready(struct libnfs_ctx *c)
{
    if (!c->broken && c->nfs)
        return 0;
    return libnfs_reconnect(c);
}

/* The leaf's lstat, and its handle (h->len 0 where the server's LOOKUP
 * cannot be used: NFSv3 where the parent's walk cannot go by handle): a
 * LOOKUP in its parent's kept handle; else its directories checked
 * first, then by name. */
static int libnfs_leaf_id(struct libnfs_ctx *c, const char *p, struct nfs_stat_64 *st,
                          struct libnfs_handle *h)
{
    int rc;
    h->len = 0;
    if ((rc = libnfs_dir_lstat(c, p, st, h)) != LIBNFS_DIR_BY_PATH)
        return rc;
    rc = libnfs_dirs_ok(c, p);
    if (rc < 0)
        return rc;
    return libnfs_call_lstat(c, p, st);
}

static int libnfs_leaf(struct libnfs_ctx *c, const char *p, struct nfs_stat_64 *st)
{
    struct libnfs_handle h;
    return libnfs_leaf_id(c, p, st, &h);
}

/* f opened by libnfs by its name p, O_NOFOLLOW. When herd knows the
 * file's handle (f->id), the file opened must be that one: a name
 * swapped since, at any component (a directory replaced by a link:
 * libnfs 4.0's NFSv4 open follows links in the directories), is closed
 * again unread and unwritten, -ELOOP. */
static int libnfs_open_named(struct libnfs_ctx *c, const char *p, int oflags,
                             struct backend_file *f)
{
    int rc = libnfs_call_open(c, p, oflags | O_NOFOLLOW, 0644, &f->fh);
    if (rc < 0)
        return rc;
    if (libnfs_handle_is(f->fh, &f->id))
        return 0;
    libnfs_call_close(c, f->fh);
    f->fh = NULL;
    return -ELOOP;
}

/* A name that exists (found where a file was to be created, or read):
 * opened only when it is a regular file, as the POSIX backend's open; a
 * FIFO or device is never opened (-ENOTSUP), a link never followed
 * (-ELOOP), a file with another name (a hard link: herd makes none)
 * never written (-EMLINK). The leaf is looked up in its kept parent
 * (f->id: its handle) and the file opened must be that: libnfs's open
 * by name, or over NFSv4 for writing (outside lock phases, whose locks
 * need libnfs's open) herd's own OPEN in that parent (libnfs 4.0 cannot
 * write over NFSv4: libnfs_data4.c). */
static int libnfs_open_found(struct libnfs_ctx *c, const char *p, int oflags,
                             struct backend_file *f)
{
    struct nfs_stat_64 st;
    int rc = libnfs_leaf_id(c, p, &st, &f->id);
    if (rc < 0)
        return rc;
    if (!S_ISREG(st.nfs_mode))
        return S_ISLNK(st.nfs_mode) ? -ELOOP : -ENOTSUP;
    if ((oflags & O_ACCMODE) != O_RDONLY && st.nfs_nlink > 1)
        return -EMLINK;
    if (c->v4 && (oflags & O_ACCMODE) != O_RDONLY && !c->lock_phase)
        return libnfs_open4_existing(c, p, oflags, f);
    return libnfs_open_named(c, p, oflags, f);
}

/* One attempt at open. Without BACKEND_CREATE: a file to read over
 * NFSv3 by libnfs's walk alone (O_NOFOLLOW: it refuses a link at any
 * component; the server refuses a READ of anything but a file), else
 * (NFSv4, whose open follows links in the directories; a mixed phase's
 * file to write) as one found. With BACKEND_CREATE the file is first
 * created new, never over an existing name: on the parent's kept
 * handle, over NFSv3 by a CREATE GUARDED (libnfs_dirs.c), opened by
 * libnfs only on its first read, write or fsync (backend_file:
 * unopened); over NFSv4 by herd's own OPEN GUARDED4 (libnfs_open4.c),
 * which stays the file's open: its READs and WRITEs are herd's own
 * (libnfs_data4.c). An NFSv4 lock phase's file is closed by herd's own
 * owner at once (its locks need libnfs's open). An existing name (EEXIST, not under BACKEND_EXCL)
 * is opened as one found. Where the parent cannot be kept (LIBNFS_DIR_BY_PATH: NFSv3, an export
 * root the user may not read) the create goes by name, GUARDED, after the directories' check. */
static int libnfs_open_once(struct libnfs_ctx *c, const char *p, int flags, struct backend_file *f)
{
    int oflags = (flags & BACKEND_WRITE) ? ((flags & BACKEND_READ) ? O_RDWR : O_WRONLY) : O_RDONLY;
    if (flags & BACKEND_DIRECT)
        oflags |= O_SYNC; /* no client cache to bypass: ask for stable writes */
    bool create = flags & BACKEND_CREATE, excl = create && (flags & BACKEND_EXCL);
    f->oflags = oflags;
    f->id.len = 0;
    int rc;
    if (!create)
        return c->v4 || (oflags & O_ACCMODE) != O_RDONLY ? libnfs_open_found(c, p, oflags, f)
                                                         : libnfs_open_named(c, p, oflags, f);
    rc = c->v4 ? libnfs_open4_create(c, p, oflags, f) : libnfs_dir_create(c, p);
    if (rc == 0 && !c->lock_phase) {
        f->unopened = !c->v4; /* NFSv3: opened on first use */
        return 0;
    }
    if (rc == 0) {
        rc = libnfs_open4_close(c, f);
        return rc < 0 ? rc : libnfs_open_named(c, p, oflags, f);
    }
    if (rc == -EEXIST && !excl)
        return libnfs_open_found(c, p, oflags, f);
    if (rc != LIBNFS_DIR_BY_PATH)
        return rc;
    rc = libnfs_dirs_ok(c, p);
    if (rc < 0)
        return rc;
    rc = libnfs_call_create(c, p, oflags | O_EXCL, 0644, &f->fh);
    if (rc == -EEXIST && !excl)
        rc = libnfs_open_found(c, p, oflags, f);
    return rc;
}

/* Whether a call failed (rc) because the server no longer knows libnfs's
 * NFSv4 client: its lease ran out while herd's own calls, which renew
 * only herd's own client (libnfs_open4.c), did the work (a long write
 * phase before a read), or the server restarted. libnfs 4.0 does not set
 * its client up again; a new context does. */
static bool libnfs_client_lost(const struct libnfs_ctx *c, int rc)
{
    return c->v4 && rc == -ESTALE &&
           (strcmp(c->status, "NFS4ERR_EXPIRED") == 0 ||
            strcmp(c->status, "NFS4ERR_STALE_CLIENTID") == 0);
}

static int libnfs_open(void *ctx, const char *path, int flags, struct backend_file **f)
{
    struct libnfs_ctx *c = ctx;
    char p[LIBNFS_PATH_MAX];
    int rc = libnfs_begin(c, path, p, sizeof p);
    if (rc < 0)
        return rc;
    struct backend_file *bf = calloc(1, sizeof *bf);
    if (!bf)
        return -ENOMEM;
    snprintf(bf->path, sizeof bf->path, "%s", p);
    rc = libnfs_open_once(c, p, flags, bf);
    if ((rc == -ECONNRESET || (libnfs_client_lost(c, rc) && !(flags & BACKEND_CREATE))) &&
        libnfs_reconnect(c) == 0) {
        /* The connection died since the last call, or the server forgot
         * libnfs's NFSv4 client: one retry on a new one. */
        rc = libnfs_open_once(c, p, flags, bf);
    }
    if (rc < 0) {
        free(bf);
        return rc;
    }
    bf->stream = stream_new(c->inflight);
    if (!bf->stream) {
        if (bf->fh)
            libnfs_call_close(c, bf->fh);
        libnfs_open4_close(c, bf);
        free(bf);
        return -ENOMEM;
    }
    bf->own_ctx = c->lock_phase && c->v4;
    if (c->lock_phase && c->v4) {
        /* The file is made (or found) and checked: now its own context. */
        libnfs_call_close(c, bf->fh);
        bf->fh = NULL;
        rc = libnfs_lock_ctx_make(c, bf);
        if (rc < 0) {
            stream_free(bf->stream);
            free(bf);
            return rc;
        }
    }
    *f = bf;
    return 0;
}

/* f opened, if it was created unopened (backend_file): 0 or the open's
 * -errno, each time asked. */
static int libnfs_file_ready(struct libnfs_ctx *c, struct backend_file *f)
{
    if (f->unopened) {
        f->unopened = false;
        f->open_rc = c->broken ? -ENOTCONN : libnfs_open_named(c, f->path, f->oflags, f);
    }
    return f->open_rc;
}

/* A call on the open file f begins (its deadline; f opened first when it
 * was created unopened): 0, or why it cannot go on (the open's -errno,
 * -ENOTCONN); the context f lives on into *on. */
static int libnfs_file_begin(void *ctx, struct backend_file *f, struct libnfs_ctx **on)
{
    struct libnfs_ctx *c = f->lk ? f->lk : ctx;
    libnfs_call_begin(ctx, f);
    int ready = libnfs_file_ready(c, f);
    if (ready < 0)
        return ready;
    if (c->broken || (!f->fh && !f->own4))
        return -ENOTCONN;
    *on = c;
    return 0;
}

/* A read into rbuf (lend set: or lent, stream_pread_lend), or (rbuf NULL)
 * a write of wbuf, through f's stream on the context the file lives on. */
static ssize_t libnfs_transfer(void *ctx, struct backend_file *f, void *rbuf, const void *wbuf,
                               size_t len, uint64_t offset, const void **lend)
{
    struct libnfs_ctx *c;
    int began = libnfs_file_begin(ctx, f, &c);
    if (began < 0)
        return began;
    const char *why;
    struct stream_io io = libnfs_io(ctx, f, &why);
    ssize_t rc = lend   ? stream_pread_lend(f->stream, &io, rbuf, len, offset, lend)
                 : rbuf ? stream_pread(f->stream, &io, rbuf, len, offset)
                        : stream_pwrite(f->stream, &io, wbuf, len, offset);
    libnfs_io_done(f, ctx, why);
    return rc;
}

static ssize_t libnfs_pread(void *ctx, struct backend_file *f, void *buf, size_t len,
                            uint64_t offset)
{
    return libnfs_transfer(ctx, f, buf, NULL, len, offset, NULL);
}

static ssize_t libnfs_pread_lend(void *ctx, struct backend_file *f, void *buf, size_t len,
                                 uint64_t offset, const void **data)
{
    return libnfs_transfer(ctx, f, buf, NULL, len, offset, data);
}

static void libnfs_advise(void *ctx, struct backend_file *f, uint64_t offset, uint64_t length)
{
    (void)ctx;
    stream_advise(f->stream, offset, length);
}

static ssize_t libnfs_pwrite(void *ctx, struct backend_file *f, const void *buf, size_t len,
                             uint64_t offset)
{
    return libnfs_transfer(ctx, f, NULL, buf, len, offset, NULL);
}

static void *libnfs_pwrite_buffer(void *ctx, struct backend_file *f, size_t len, uint64_t want,
                                  uint64_t **note)
{
    struct libnfs_ctx *c = f->lk ? f->lk : ctx;
    libnfs_call_begin(ctx, f); /* a failed WRITE taken here may ask statvfs */
    if (libnfs_file_ready(c, f) < 0 || c->broken || (!f->fh && !f->own4))
        return NULL; /* the pwrite that follows says why */
    const char *why;
    struct stream_io io = libnfs_io(ctx, f, &why);
    return stream_write_buffer(f->stream, &io, len, want, note); /* never waits: no why */
}

/* Under a rate, nfs_inflight = N > 1 lets a client keep N calls of a
 * file outstanding (libnfs_queue.h); otherwise one at a time. */
static unsigned libnfs_queue_depth(const struct phase *ph)
{
    int64_t set = ph->rate > 0 ? opts_of(ph)->inflight : 0;
    return set > 1 ? (unsigned)set : 1;
}

static int libnfs_submit(void *ctx, struct backend_file *f, bool write, void *buf, size_t len,
                         uint64_t offset, uint64_t tag)
{
    struct libnfs_ctx *c;
    int rc = libnfs_file_begin(ctx, f, &c);
    return rc < 0 ? rc : libnfs_submit_io(ctx, f, write, buf, len, offset, tag);
}

static int libnfs_reap(void *ctx, struct backend_file *f, double until, struct backend_done *done)
{
    libnfs_note(f->lk ? f->lk : ctx, NULL); /* the status names this wait's failure or none */
    return libnfs_reap_io(ctx, f, until, done);
}

static int libnfs_fsync(void *ctx, struct backend_file *f)
{
    struct libnfs_ctx *c;
    int rc = libnfs_file_begin(ctx, f, &c);
    if (rc < 0)
        return rc;
    rc = libnfs_drain(ctx, f);
    if (rc < 0)
        return rc;
    return f->fh ? libnfs_call_fsync(c, f->fh) : libnfs_data4_commit(c, f);
}

static int libnfs_close(void *ctx, struct backend_file *f)
{
    struct libnfs_ctx *c = ctx;
    libnfs_call_begin(c, f);
    /* Its RPCs in flight end first (a WRITE's late error is this close's,
     * as a kernel client's close reports write-back errors); a failed wait
     * breaks the context, which is then never serviced again, so the
     * stream's memory can go. */
    libnfs_queue_end(c, f);
    int rc = libnfs_drain(c, f);
    stream_free(f->stream);
    f->stream = NULL;
    if (f->own_ctx) {
        /* CLOSE after LOCK may fail NFS4ERR_BAD_SEQID in libnfs 4.0 (its
         * seqid bookkeeping, not the server's state): the context goes
         * away with its open and lock owners, which the server drops when
         * their lease ends; no lock is held here any more. */
        if (f->lk && !f->lk->broken && f->fh)
            libnfs_call_close(f->lk, f->fh);
        libnfs_lock_ctx_free(f->lk);
        free(f);
        return rc;
    }
    /* On a broken connection the handle belongs to a dead context: only
     * free our side. */
    if (!c->broken && c->nfs && f->fh) { /* none: created, never opened */
        int closed = libnfs_call_close(c, f->fh);
        if (closed < 0 && rc == 0)
            rc = closed;
    }
    int closed = libnfs_open4_close(c, f); /* herd's own open (its COMMIT), if the file has one */
    if (closed < 0 && rc == 0)
        rc = closed;
    free(f);
    return rc;
}

static int libnfs_stat(void *ctx, const char *path, struct stat *st)
{
    struct libnfs_ctx *c = ctx;
    char p[LIBNFS_PATH_MAX];
    int rc = libnfs_begin(c, path, p, sizeof p);
    if (rc < 0)
        return rc;
    struct nfs_stat_64 s;
    rc = libnfs_leaf(c, p, &s);
    if (rc < 0)
        return rc;
    memset(st, 0, sizeof *st);
    st->st_dev = s.nfs_dev;
    st->st_ino = s.nfs_ino;
    st->st_mode = s.nfs_mode;
    st->st_nlink = s.nfs_nlink;
    st->st_uid = s.nfs_uid;
    st->st_gid = s.nfs_gid;
    st->st_size = (off_t)s.nfs_size;
    st->st_blocks = (blkcnt_t)s.nfs_blocks;
    st->st_mtim.tv_sec = (time_t)s.nfs_mtime;
    st->st_mtim.tv_nsec = (long)s.nfs_mtime_nsec;
    return 0;
}

/* A mix's call on the open file f: opened first (a file created
 * unopened), then the one RPC. */
static int libnfs_file_call(struct libnfs_ctx *c, struct backend_file *f)
{
    libnfs_call_begin(c, f);
    int ready = libnfs_file_ready(c, f);
    if (ready < 0)
        return ready;
    return c->broken || (!f->fh && !f->own4) ? -ENOTCONN : 0;
}

static int libnfs_fstat(void *ctx, struct backend_file *f, struct stat *st)
{
    memset(st, 0, sizeof *st);
    int rc = libnfs_file_call(ctx, f);
    return rc < 0 ? rc : libnfs_attr_get(ctx, f);
}

/* A size set while WRITEs are in flight could be undone by them: they
 * end first, as a kernel client flushes before a truncate. */
static int libnfs_fsetattr(void *ctx, struct backend_file *f, int mode, int64_t size)
{
    int rc = libnfs_file_call(ctx, f);
    if (rc == 0 && size >= 0)
        rc = libnfs_drain(ctx, f);
    return rc < 0 ? rc : libnfs_attr_set(ctx, f, mode, size);
}

static int libnfs_faccess(void *ctx, struct backend_file *f)
{
    int rc = libnfs_file_call(ctx, f);
    return rc < 0 ? rc : libnfs_attr_access(ctx, f);
}

/* The directory path itself kept by handle (the parent of a name in it,
 * walked without following a link), then listed. */
static int libnfs_readdir(void *ctx, const char *path, uint64_t *entries)
{
    struct libnfs_ctx *c = ctx;
    char p[LIBNFS_PATH_MAX];
    int rc = libnfs_begin(c, path, p, sizeof p);
    if (rc < 0)
        return rc;
    size_t n = strlen(p);
    if (n + 3 > sizeof p)
        return -ENAMETOOLONG;
    memcpy(p + n, "/_", 3); /* a name in it: never looked up */
    struct libnfs_dir *d;
    const char *leaf;
    rc = libnfs_dir_get(c, p, &d, &leaf);
    if (rc == LIBNFS_DIR_BY_PATH)
        return -EACCES; /* an export root this user may not read: no handle to list */
    return rc < 0 ? rc : libnfs_attr_list(c, d, entries);
}

/* The path-only calls share their shape: check, (re)connect; over NFSv3
 * the call on the parent's kept handle (by_handle, libnfs_dirs.c) unless
 * it says LIBNFS_DIR_BY_PATH; else check the directories (and the leaf's
 * type), call by name (libnfs_call.h). */
#define LIBNFS_PATH_CALL(by_handle, leaf_check, call)                                              \
    struct libnfs_ctx *c = ctx;                                                                    \
    char p[LIBNFS_PATH_MAX];                                                                       \
    int rc = libnfs_begin(c, path, p, sizeof p);                                                   \
    if (rc < 0)                                                                                    \
        return rc;                                                                                 \
    if ((rc = (by_handle)) != LIBNFS_DIR_BY_PATH)                                                  \
        return rc;                                                                                 \
    rc = (leaf_check);                                                                             \
    if (rc < 0)                                                                                    \
        return rc;                                                                                 \
    rc = (call);                                                                                   \
    return rc < 0 ? rc : 0;

/* The leaf's lstat and libnfs_leaf_refused. */
static int libnfs_leaf_ok(struct libnfs_ctx *c, const char *p, bool file_only)
{
    struct nfs_stat_64 st;
    int rc = libnfs_leaf(c, p, &st);
    return rc < 0 ? rc : libnfs_leaf_refused(&st, file_only);
}

/* rename's destination: checked directories, and no link to replace. */
static int libnfs_dest_leaf(struct libnfs_ctx *c, const char *p)
{
    struct nfs_stat_64 st;
    int rc = libnfs_leaf(c, p, &st);
    if (rc == -ENOENT)
        return 0; /* no leaf; libnfs_leaf checked the directories either way */
    if (rc < 0)
        return rc;
    return S_ISLNK(st.nfs_mode) ? -ELOOP : 0;
}

static int libnfs_rename_check(struct libnfs_ctx *c, const char *from, const char *to)
{
    int rc = libnfs_leaf_ok(c, from, false);
    return rc < 0 ? rc : libnfs_dest_leaf(c, to);
}

/* A directory removed by name: its kept handle (if any) goes too. */
static int libnfs_rmdir_forget(struct libnfs_ctx *c, const char *p, int rc)
{
    if (rc == 0)
        libnfs_dirs_forget(c, p);
    return rc;
}

/* rename on the parents' kept handles: neither name may be a link (a
 * LOOKUP of each in its parent), then one RENAME from handle to handle,
 * and the kept handles at or below both names go (a renamed directory
 * is walked again under its new name). LIBNFS_DIR_BY_PATH: a parent
 * that cannot be kept; the call goes by name, checked, its handles
 * dropped first. */
static int libnfs_rename_by_handle(struct libnfs_ctx *c, const char *from, const char *to)
{
    int rc = libnfs_rename_check(c, from, to);
    if (rc == 0)
        rc = libnfs_dir_rename(c, from, to);
    if (rc == 0 || rc == LIBNFS_DIR_BY_PATH) {
        libnfs_dirs_forget(c, from);
        libnfs_dirs_forget(c, to);
    }
    return rc;
}

static int libnfs_unlink(void *ctx, const char *path)
{
    LIBNFS_PATH_CALL(libnfs_dir_unlink(c, p), libnfs_leaf_ok(c, p, true), libnfs_call_unlink(c, p))
}

static int libnfs_mkdir(void *ctx, const char *path)
{
    LIBNFS_PATH_CALL(libnfs_dir_mkdir(c, p), libnfs_dirs_ok(c, p), libnfs_call_mkdir(c, p, 0755))
}

static int libnfs_rmdir(void *ctx, const char *path)
{
    LIBNFS_PATH_CALL(libnfs_dir_rmdir(c, p), libnfs_leaf_ok(c, p, false),
                     libnfs_rmdir_forget(c, p, libnfs_call_rmdir(c, p)))
}

static int libnfs_rename(void *ctx, const char *from, const char *to)
{
    char q[LIBNFS_PATH_MAX];
    int qrc = libnfs_path(to, q, sizeof q);
    if (qrc < 0)
        return qrc;
    const char *path = from;
    LIBNFS_PATH_CALL(libnfs_rename_by_handle(c, p, q), libnfs_rename_check(c, p, q),
                     libnfs_call_rename(c, p, q))
}

static const char *libnfs_status(void *ctx)
{
    struct libnfs_ctx *c = ctx;
    return c->status[0] ? c->status : NULL;
}

static const char *libnfs_version(void)
{
    return HERD_LIBNFS_VERSION; /* pkg-config's, at build time: libnfs 4 cannot say */
}

const struct backend_ops backend_libnfs = {
    .name = "libnfs",
    .scheme = "nfs",
    .library = "libnfs",
    .version_at_build = true,
    .version = libnfs_version,
    .keys = libnfs_keys,
    .nkeys = sizeof libnfs_keys / sizeof libnfs_keys[0],
    .check = libnfs_check,
    .check_depth = libnfs_check_depth,
    .connect = libnfs_connect,
    .clients = true,
    .client_memory = libnfs_client_memory,
    .client_fds = libnfs_client_fds,
    .configure = libnfs_configure,
    .prime = libnfs_prime,
    .disconnect = libnfs_disconnect,
    .open = libnfs_open,
    .pread = libnfs_pread,
    .pread_lend = libnfs_pread_lend,
    .pwrite_buffer = libnfs_pwrite_buffer,
    .pwrite = libnfs_pwrite,
    .queue_depth = libnfs_queue_depth,
    .submit = libnfs_submit,
    .reap = libnfs_reap,
    .fsync = libnfs_fsync,
    .close = libnfs_close,
    .stat = libnfs_stat,
    .fstat = libnfs_fstat,
    .fsetattr = libnfs_fsetattr,
    .faccess = libnfs_faccess,
    .readdir = libnfs_readdir,
    .unlink = libnfs_unlink,
    .mkdir = libnfs_mkdir,
    .rmdir = libnfs_rmdir,
    .rename = libnfs_rename,
    .lock = libnfs_lock,
    .status = libnfs_status,
    .observe = libnfs_observe,
    .describe = libnfs_describe,
    .window = libnfs_window,
    .connected = libnfs_connected,
    .advise = libnfs_advise,
};
