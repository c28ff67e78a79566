/* libnfs_file.c — the libnfs backend's ops on a file (backend.h): open
 * (a create GUARDED; an existing name only when it is a regular file,
 * never through a link), reads and writes through the file's stream
 * (libnfs_stream.h; a paced client's calls: libnfs_queue.h), fsync,
 * close, and a mix's GETATTR, SETATTR and ACCESS of the open file.
 * backend_libnfs.c lists them in its ops table and says how paths are
 * kept safe. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h> /* before libnfs.h, which needs struct timeval */

#include <nfsc/libnfs.h>

#include "libnfs_call.h"
#include "libnfs_ctx.h"

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
    int oflags = O_RDONLY;
    if (flags & BACKEND_WRITE)
        oflags = (flags & BACKEND_READ) ? O_RDWR : O_WRONLY;
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

int libnfs_open(void *ctx, const char *path, int flags, struct backend_file **f)
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
    ssize_t rc;
    if (lend)
        rc = stream_pread_lend(f->stream, &io, rbuf, len, offset, lend);
    else if (rbuf)
        rc = stream_pread(f->stream, &io, rbuf, len, offset);
    else
        rc = stream_pwrite(f->stream, &io, wbuf, len, offset);
    libnfs_io_done(f, ctx, why);
    return rc;
}

ssize_t libnfs_pread(void *ctx, struct backend_file *f, void *buf, size_t len, uint64_t offset)
{
    return libnfs_transfer(ctx, f, buf, NULL, len, offset, NULL);
}

ssize_t libnfs_pread_lend(void *ctx, struct backend_file *f, void *buf, size_t len, uint64_t offset,
                          const void **data)
{
    return libnfs_transfer(ctx, f, buf, NULL, len, offset, data);
}

void libnfs_advise(void *ctx, struct backend_file *f, uint64_t offset, uint64_t length)
{
    (void)ctx;
    stream_advise(f->stream, offset, length);
}

ssize_t libnfs_pwrite(void *ctx, struct backend_file *f, const void *buf, size_t len,
                      uint64_t offset)
{
    return libnfs_transfer(ctx, f, NULL, buf, len, offset, NULL);
}

void *libnfs_pwrite_buffer(void *ctx, struct backend_file *f, size_t len, uint64_t want,
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

int libnfs_submit(void *ctx, struct backend_file *f, bool write, void *buf, size_t len,
                  uint64_t offset, uint64_t tag)
{
    struct libnfs_ctx *c;
    int rc = libnfs_file_begin(ctx, f, &c);
    return rc < 0 ? rc : libnfs_submit_io(ctx, f, write, buf, len, offset, tag);
}

int libnfs_reap(void *ctx, struct backend_file *f, double until, struct backend_done *done)
{
    libnfs_note(f->lk ? f->lk : ctx, NULL); /* the status names this wait's failure or none */
    return libnfs_reap_io(ctx, f, until, done);
}

int libnfs_fsync(void *ctx, struct backend_file *f)
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

int libnfs_close(void *ctx, struct backend_file *f)
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

int libnfs_fstat(void *ctx, struct backend_file *f, struct stat *st)
{
    memset(st, 0, sizeof *st);
    int rc = libnfs_file_call(ctx, f);
    return rc < 0 ? rc : libnfs_attr_get(ctx, f);
}

/* A size set while WRITEs are in flight could be undone by them: they
 * end first, as a kernel client flushes before a truncate. */
int libnfs_fsetattr(void *ctx, struct backend_file *f, int mode, int64_t size)
{
    int rc = libnfs_file_call(ctx, f);
    if (rc == 0 && size >= 0)
        rc = libnfs_drain(ctx, f);
    return rc < 0 ? rc : libnfs_attr_set(ctx, f, mode, size);
}

int libnfs_faccess(void *ctx, struct backend_file *f)
{
    int rc = libnfs_file_call(ctx, f);
    return rc < 0 ? rc : libnfs_attr_access(ctx, f);
}
