/* libnfs_ctx.h — the libnfs backend's own state and the calls its files
 * share, lowest first: libnfs_ctx.c (failures, errnos, deadlines),
 * libnfs_call.c and libnfs_rpc.c (libnfs's calls and herd's own),
 * libnfs_dirs.c (directories kept by handle), libnfs_data4.c (the
 * READs, WRITEs and COMMITs of herd's own NFSv4 opens), libnfs_open4.c
 * (NFSv4 opens), libnfs_mount.c (the connection), libnfs_io.c (a file's stream
 * calls), libnfs_lock.c (byte-range locks over NLM and NFSv4),
 * libnfs_path.c (the ops that name a path), libnfs_file.c (opens, reads,
 * writes, closes) and backend_libnfs.c (the ops table, the checks, the
 * connection's set-up);
 * libnfs_budget.c (what a client takes: its window's ceiling, memory and
 * descriptors) calls none of them. Each calls only files before it.
 * Nothing outside the backend includes it; the rest of herd sees
 * backend.h. */
#ifndef HERD_LIBNFS_CTX_H
#define HERD_LIBNFS_CTX_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/time.h> /* before libnfs.h, which needs struct timeval */

#include <nfsc/libnfs.h>

#include "backend.h"
#include "job.h"
#include "libnfs_nlm.h"
#include "libnfs_stream.h"

/* What nfs_get_fh() returns: libnfs 4.0 exports the function but not the
 * type (lib/libnfs-private.h). */
struct nfs_fh {
    int len;
    char *val;
};

#define LIBNFS_PATH_MAX 1400
#define LIBNFS_DEFAULT_XFER (1u << 20)
#define LIBNFS_V4_MAX_HOLD 30 /* seconds: below the shortest common lease */

/* The libnfs backend's job-file options (backend_libnfs.c's rows), in
 * the phase's backend_opts block. */
struct libnfs_opts {
    uint64_t rsize;   /* nfs_rsize: readmax; 0 = what the server offers */
    uint64_t wsize;   /* nfs_wsize: writemax; 0 = what the server offers */
    int64_t inflight; /* nfs_inflight: READ/WRITE RPCs in flight per rank, 0 = auto */
    int64_t version;  /* nfs_version: 3 or 4; 0 = the URL's or 3 */
};

/* A directory kept by its file handle (libnfs_dirs.c): path is
 * export-absolute ("" for the export's root); fh_len 0: empty. */
#define LIBNFS_DIRS 4
#define LIBNFS_FH_MAX 128 /* NFS4_FHSIZE, the larger of NFSv3's and NFSv4's */
/* A file's handle as the server sent it (NFSv3 or NFSv4); len 0: none. */
struct libnfs_handle {
    unsigned len;
    char val[LIBNFS_FH_MAX];
};

struct libnfs_dir {
    char path[LIBNFS_PATH_MAX];
    unsigned fh_len;
    char fh[LIBNFS_FH_MAX];
    uint64_t used;
};

/* NFSv4: herd's own client and open owner (libnfs_open4.c), for the
 * files it creates itself; clientid valid once client_ok. */
struct libnfs_owner4 {
    bool client_ok;
    uint64_t clientid;
    char verifier[8];
    unsigned id;    /* this context's number in its client name */
    unsigned owner; /* the open owner's number: a new one after NFS4ERR_BAD_SEQID */
    uint32_t seqid; /* the open owner's next seqid */
};

#define LIBNFS_CLIENT_MAX 96

struct libnfs_ctx {
    struct nfs_context *nfs;
    char target[JOB_PATH_MAX];
    /* The client this context is (backend.h's connect: "HOST-r3-c17"),
     * "" for the host's own: its AUTH_SYS machine name, in its NFSv4
     * client names and its NLM caller name. Its lock contexts share it. */
    char client[LIBNFS_CLIENT_MAX];
    int version;    /* 0 = the URL's */
    int timeout_ms; /* -1 = none */
    /* When the backend call under way must end (clock_mono; 0: never):
     * op_timeout after it began (libnfs_call_begin). Every wait of the
     * call, herd's and libnfs's own calls (libnfs_call.h), ends by then. */
    double deadline;
    uint64_t server_rmax, server_wmax;
    uint64_t rchunk, wchunk; /* bytes per READ / WRITE call (one RPC each) */
    unsigned inflight;       /* READ / WRITE RPCs in flight per file at most (nfs_inflight) */
    struct stream_window rwin, wwin; /* the READ / WRITE windows, up to inflight */
    uint64_t rwin_chunk, wwin_chunk; /* the RPC sizes they were tried at; 0: fixed windows */
    struct rpc_observer obs;         /* the phase's RPC round trips (backend observe op) */
    bool broken;
    bool v4;                /* NFSv4 (URL or nfs_version): open checks the dirs first */
    bool lock_phase;        /* the phase configured last is a lock phase */
    struct nlm_client *nlm; /* NFSv3 locks: made on the first one */
    unsigned lock_ctxs;     /* NFSv4 lock contexts made (their client names) */
    char status[64];        /* the protocol's name of the call's failure, or "" */
    struct libnfs_dir dirs[LIBNFS_DIRS]; /* parents held by handle */
    uint64_t dir_tick;
    struct libnfs_owner4 own4;
};

/* lk: NFSv4, opened during a lock phase: the file's own context (path:
 * the export-absolute name it was opened by), where its locks, reads and
 * writes go; NULL otherwise. fh belongs to lk when lk is set. */
struct backend_file {
    struct nfsfh *fh;
    struct libnfs_ctx *lk;
    bool own_ctx;              /* lk's file: lk and fh NULL after a failed rebuild */
    bool lk_owner;             /* lk's lock owner is established (its first LOCK granted) */
    struct nfs_stream *stream; /* its READs and WRITEs in flight */
    struct nfs_queue *queue;   /* a paced client's calls in flight (submit), made on the first */
    char path[LIBNFS_PATH_MAX];
    /* Made by a CREATE on its parent's handle outside a lock phase: fh is
     * opened (O_NOFOLLOW, oflags) on the first read, write or fsync, so a
     * file created and closed costs the CREATE alone; open_rc: that
     * open's result, kept for the calls after it. */
    bool unopened;
    int oflags, open_rc;
    /* The file's handle as herd made it (NFSv4: its own OPEN) or looked
     * it up in the kept parent (a name that existed); len 0: not known
     * (NFSv3 creates: libnfs's walk refuses links by itself). Every open
     * of the file by name (libnfs's, a lock context's) must find it. */
    struct libnfs_handle id;
    /* NFSv4: open by herd's own open owner (libnfs_open4.c) since the
     * create or open, until the close (its CLOSE goes to id): its
     * stateid. Its READs and WRITEs are herd's own too (libnfs_data4.c),
     * sent to id with that stateid. dirty: UNSTABLE4 WRITEs not
     * committed yet; own4_verf: their verifier (verf_changed: they did
     * not all have the same). */
    bool own4;
    uint32_t own4_seqid;
    char own4_other[12];
    bool own4_dirty, own4_verf_changed;
    char own4_verf[8];
};

/* libnfs_ctx.c: what every file of the backend uses. */

/* Keep the protocol's name of the last failure (the status op's answer). */
void libnfs_note(struct libnfs_ctx *c, const char *status);
/* The NFS4ERR_x / NFS3ERR_x name in a libnfs message (copied into c's
 * status), or "" when it names none. */
const char *libnfs_note_msg(struct libnfs_ctx *c, const char *msg);
/* The errno of a failed libnfs call rc on c (a lost connection marks c
 * broken). */
int libnfs_errno(struct libnfs_ctx *c, int rc);

/* A backend call on c (and on f's lock context, f not NULL) begins now:
 * its waits end op_timeout from now (c->deadline), and c's status is
 * cleared, so that the status op names this call's failure or none. */
void libnfs_call_begin(struct libnfs_ctx *c, struct backend_file *f);
/* The errno of a failed status (NFSv3's or, v4, NFSv4's), its name noted
 * on c as libnfs's own calls note it; an unknown one: EIO. Positive. */
int libnfs_status_errno(struct libnfs_ctx *c, int st, bool v4);

/* The errno of a status by its name ("NFS3ERR_INVAL"), 0 for one not
 * known here. */
int libnfs_status_name_errno(const char *name);

/* Whether libnfs's fh is the file of handle want (true when want is
 * empty: nothing to compare). */
bool libnfs_handle_is(struct nfsfh *fh, const struct libnfs_handle *want);

/* Why a leaf of these attributes may not be removed or moved: -ELOOP for
 * a link (never followed, never removed), and with file_only (unlink)
 * -EISDIR for a directory, -EPERM for anything but a regular file; 0. */
int libnfs_leaf_refused(const struct nfs_stat_64 *st, bool file_only);

/* libnfs_mount.c: the connection. */

/* Forget c's connection (without destroying a context that died mid-call). */
void libnfs_drop(struct libnfs_ctx *c);
/* Mount c->target on a new context; 0 or -errno. */
int libnfs_mount(struct libnfs_ctx *c);
/* Drop c's connection and mount again; 0 or -errno. */
int libnfs_reconnect(struct libnfs_ctx *c);

/* libnfs_io.c: a file's stream calls. */

/* The stream call's view of file f: its context (the lock context when
 * it has one), chunk sizes, windows and the phase's observer (top's);
 * *why is set to the reason of a failed wait. */
struct stream_io libnfs_io(struct libnfs_ctx *top, struct backend_file *f, const char **why);
/* After a stream call: a failed wait names its reason. */
void libnfs_io_done(struct backend_file *f, struct libnfs_ctx *top, const char *why);
/* Wait for f's RPCs in flight: 0, a WRITE's error not reported yet, or
 * -errno of the wait. */
int libnfs_drain(struct libnfs_ctx *top, struct backend_file *f);

/* A paced call on f sent (libnfs_queue.h; f's queue made on the first,
 * depth c->inflight): 0 or -errno. */
int libnfs_submit_io(struct libnfs_ctx *top, struct backend_file *f, bool write, void *buf,
                     size_t len, uint64_t offset, uint64_t tag);
/* The next of f's paced calls to end (backend.h's reap). */
int libnfs_reap_io(struct libnfs_ctx *top, struct backend_file *f, double until,
                   struct backend_done *done);
/* Before f closes: wait for its paced calls still outstanding (their
 * results are dropped), then free its queue. */
void libnfs_queue_end(struct libnfs_ctx *top, struct backend_file *f);

/* libnfs_dirs.c: NFSv3 calls on p's leaf sent to the handle of p's
 * parent, which is walked once (a LOOKUP a component, no link at any) and
 * kept. Each: 0, -errno, or LIBNFS_DIR_BY_PATH when the walk could not
 * start or go on by handle (an export root the user may not read, a
 * server whose LOOKUP sent no attributes): then the caller checks the
 * path and calls by name. lstat: the leaf's attributes
 * (a link's own) and, h not NULL, its handle; create: a new regular file, GUARDED (-EEXIST for any
 * name that exists), 0644, not opened; unlink: a regular file only
 * (-ELOOP, -EISDIR, -EPERM); rmdir: never a link (-ELOOP). */
#define LIBNFS_DIR_BY_PATH 1
int libnfs_dir_lstat(struct libnfs_ctx *c, const char *p, struct nfs_stat_64 *st,
                     struct libnfs_handle *h);
int libnfs_dir_create(struct libnfs_ctx *c, const char *p);
int libnfs_dir_unlink(struct libnfs_ctx *c, const char *p);
int libnfs_dir_mkdir(struct libnfs_ctx *c, const char *p);
int libnfs_dir_rmdir(struct libnfs_ctx *c, const char *p);
/* rename: one RENAME from from's parent's handle to to's (no check of the
 * leaves: the caller's); the kept handles stay (the caller forgets those
 * at and below both names). */
int libnfs_dir_rename(struct libnfs_ctx *c, const char *from, const char *to);
/* The kept handle of p's parent, walked when missing; *leaf: p's last
 * component. 0, -errno, or LIBNFS_DIR_BY_PATH (NFSv3, as above). */
int libnfs_dir_get(struct libnfs_ctx *c, const char *p, struct libnfs_dir **d, const char **leaf);
/* NFSv3: p's parent is kept by handle (walked when it was not): 0,
 * -errno, or -EACCES where the walk could not go by handle. */
int libnfs_dirs_check3(struct libnfs_ctx *c, const char *p);
/* NFSv4: every directory component of p is a directory, not a link, in
 * one COMPOUND (PUTROOTFH, a LOOKUP of each component of the export's
 * path and of p, the leaf's last: its NOENT is no failure); 0 or -errno. */
int libnfs_dirs_check4(struct libnfs_ctx *c, const char *p);
/* NFSv4: the largest READ and WRITE the export's server takes (its
 * maxread and maxwrite; 0: not said); 0 or -errno. */
int libnfs_dirs_limits4(struct libnfs_ctx *c, uint64_t *rmax, uint64_t *wmax);
/* Close the kept directories at dir or below it (NULL: all): before a
 * rename moves them, and before the context goes. */
void libnfs_dirs_forget(struct libnfs_ctx *c, const char *dir);
/* Every directory component of p (export-absolute) is a directory, not a
 * link; 0 or -errno. */
int libnfs_dirs_ok(struct libnfs_ctx *c, const char *p);

/* libnfs_attr.c: a mix phase's calls, one RPC each, on the handle of the
 * open file f (opened: libnfs_file_ready first) or of the kept directory
 * d: GETATTR; SETATTR of the mode (mode >= 0) or the size (size >= 0;
 * NFSv4: with f's open stateid when herd opened it); ACCESS (read and
 * modify asked); the directory listed whole (READDIRPLUS / READDIR, one
 * RPC a page), the names other than . and .. into *entries. 0 or
 * -errno. */
int libnfs_attr_get(struct libnfs_ctx *c, struct backend_file *f);
int libnfs_attr_set(struct libnfs_ctx *c, struct backend_file *f, int mode, int64_t size);
int libnfs_attr_access(struct libnfs_ctx *c, struct backend_file *f);
int libnfs_attr_list(struct libnfs_ctx *c, const struct libnfs_dir *d, uint64_t *entries);

/* libnfs_data4.c: the READs, WRITEs and COMMITs of a file herd opened
 * itself over NFSv4 (f->own4), to its handle (f->id) with its open
 * stateid. send: the stream's (libnfs_stream.h, struct stream_io) for
 * file f: one COMPOUND of PUTFH and a READ (buf NULL) or a WRITE
 * (FILE_SYNC4 for O_SYNC, else UNSTABLE4); 0 or -errno when not sent.
 * errno: the stream's rpc_errno for those (arg: the context): a
 * status's errno with its name noted, or the RPC's failure (which
 * breaks the context). verified: whether a COMMIT's verifier (verf)
 * matches every UNSTABLE4 WRITE's of f since the last (-EIO, noted, if
 * not: the server restarted and lost them); f is clean then. commit:
 * the COMMIT of fsync (one COMPOUND: PUTFH, COMMIT); 0 or -errno. */
int libnfs_data4_send(void *f, struct nfs_context *nfs, bool write, uint64_t offset, size_t len,
                      const void *buf, nfs_cb cb, void *priv);
int libnfs_data4_errno(void *c, int rc, bool write, size_t len);
int libnfs_data4_verified(struct libnfs_ctx *c, struct backend_file *f, const char *verf);
int libnfs_data4_commit(struct libnfs_ctx *c, struct backend_file *f);

/* libnfs_open4.c: NFSv4 files herd opens itself, by its own client and
 * open owner: create p new (GUARDED4: -EEXIST for any name that exists,
 * a link included; mode 0644) in its parent's kept handle and keep it
 * open for oflags (f->own4): one OPEN, no lookup of the path by name.
 * 0, -errno or LIBNFS_DIR_BY_PATH (as libnfs_dir_get). close: the CLOSE
 * of that open, after a COMMIT of WRITEs not stable yet (none on a
 * broken context); 0 or -errno. */
int libnfs_open4_create(struct libnfs_ctx *c, const char *p, int oflags, struct backend_file *f);
/* existing: p, which exists, opened for oflags the same way (no
 * create); f->id, its handle as its LOOKUP found it, must be what the
 * OPEN opens (else the open is closed again: -ELOOP). */
int libnfs_open4_existing(struct libnfs_ctx *c, const char *p, int oflags, struct backend_file *f);
int libnfs_open4_close(struct libnfs_ctx *c, struct backend_file *f);

/* libnfs_lock.c */

/* Give an NFSv4 file opened in a lock phase a context of its own (f->lk),
 * its lock owner established; 0 or -errno. */
int libnfs_lock_ctx_make(struct libnfs_ctx *c, struct backend_file *f);
/* Free a file's lock context (NULL: nothing). */
void libnfs_lock_ctx_free(struct libnfs_ctx *lk);
/* The backend's lock op (backend.h). */
int libnfs_lock(void *ctx, struct backend_file *f, enum backend_lock kind, bool wait,
                uint64_t start, uint64_t len);

/* libnfs_path.c: the backend's ops that name a path (backend.h), and
 * what opens share with them. */

/* Every call that names a path starts here: the path rule (safepath.h),
 * its export-absolute form into buf, then a live connection (a broken one
 * is retried once). 0 or -errno. */
int libnfs_begin(struct libnfs_ctx *c, const char *path, char *buf, size_t len);
/* The leaf's lstat, and its handle (h->len 0 where the server's LOOKUP
 * cannot be used): a LOOKUP in its parent's kept handle; else its
 * directories checked first, then by name. 0 or -errno. */
int libnfs_leaf_id(struct libnfs_ctx *c, const char *p, struct nfs_stat_64 *st,
                   struct libnfs_handle *h);
int libnfs_stat(void *ctx, const char *path, struct stat *st);
int libnfs_readdir(void *ctx, const char *path, uint64_t *entries);
int libnfs_unlink(void *ctx, const char *path);
int libnfs_mkdir(void *ctx, const char *path);
int libnfs_rmdir(void *ctx, const char *path);
int libnfs_rename(void *ctx, const char *from, const char *to);

/* libnfs_file.c: the backend's ops on a file (backend.h). */

int libnfs_open(void *ctx, const char *path, int flags, struct backend_file **f);
ssize_t libnfs_pread(void *ctx, struct backend_file *f, void *buf, size_t len, uint64_t offset);
ssize_t libnfs_pread_lend(void *ctx, struct backend_file *f, void *buf, size_t len, uint64_t offset,
                          const void **data);
void libnfs_advise(void *ctx, struct backend_file *f, uint64_t offset, uint64_t length);
ssize_t libnfs_pwrite(void *ctx, struct backend_file *f, const void *buf, size_t len,
                      uint64_t offset);
void *libnfs_pwrite_buffer(void *ctx, struct backend_file *f, size_t len, uint64_t want,
                           uint64_t **note);
int libnfs_submit(void *ctx, struct backend_file *f, bool write, void *buf, size_t len,
                  uint64_t offset, uint64_t tag);
int libnfs_reap(void *ctx, struct backend_file *f, double until, struct backend_done *done);
int libnfs_fsync(void *ctx, struct backend_file *f);
int libnfs_close(void *ctx, struct backend_file *f);
int libnfs_fstat(void *ctx, struct backend_file *f, struct stat *st);
int libnfs_fsetattr(void *ctx, struct backend_file *f, int mode, int64_t size);
int libnfs_faccess(void *ctx, struct backend_file *f);

#endif
