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
 * This file: the ops table, the job keys and their checks, and the
 * connection's set-up per phase. The ops that name a path: libnfs_path.c;
 * on an open file: libnfs_file.c; byte-range locks: libnfs_lock.c. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h> /* before libnfs.h, which needs struct timeval */

#include <nfsc/libnfs.h>

#include "libnfs_budget.h"
#include "libnfs_call.h"
#include "libnfs_ctx.h"
#include "libnfs_rpc.h"
#include "mixspec.h"
#include "nfsurl.h"
#include "prefault.h"

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

/* Under a rate, nfs_inflight = N > 1 lets a client keep N calls of a
 * file outstanding (libnfs_queue.h); otherwise one at a time. */
static unsigned libnfs_queue_depth(const struct phase *ph)
{
    int64_t set = ph->rate > 0 ? opts_of(ph)->inflight : 0;
    return set > 1 ? (unsigned)set : 1;
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
