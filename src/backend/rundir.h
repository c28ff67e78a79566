/* rundir.h — the run directory target/herd-<run id>/: herd's only place
 * on the target. Rank 0 makes it at start (or, for a job with a fixed
 * run_id, takes over one an earlier run of the same user kept), and holds
 * a lock file in it for the run so that two runs never share it. Works
 * through a backend only, so the same rules hold for every backend. */
#ifndef HERD_RUNDIR_H
#define HERD_RUNDIR_H

#include <stdbool.h>
#include <stddef.h>

#include "backend.h"

#define RUNDIR_LOCK ".herd-run.lock"

/* Make rundir, or with reuse accept an existing one that is a real
 * directory (not a link) owned by this user. Then create the lock file
 * exclusively and write `owner` (one line: run id, host, pid) into it.
 * *created tells whether this run made the directory. Returns 0 (made or
 * taken over, locked), RUNDIR_REFUSED (it exists and may not be used, or
 * another run holds it) or -errno (it or its lock file could not be made:
 * a read-only or full target): the run must not start; err gets one line.
 * RUNDIR_UNLOCKED: made or taken over, but the server refuses new files
 * for now (ENOLCK, EAGAIN, EBUSY: its grace period after a restart, or
 * NFS4ERR_DELAY), so no lock file: the run may start (its phases count
 * what the server refuses), unguarded against a second run; err says so. */
/* What a run that takes over a kept run directory (a fixed run_id) must
 * be told, after "its data files are an earlier run's": herd checks what
 * the server answers, and a server with an attribute cache answers for a
 * file replaced behind its back (docs/architecture.md, "All of this
 * checks what the server answers"). */
#define RUNDIR_REUSE_CAVEAT                                                                        \
    "a data file replaced on the server's own disk (by a link or a FIFO) is seen only when "       \
    "the server looks again: within its attribute cache time (nfs-ganesha: "                       \
    "Attr_Expiration_Time, 60 s by default) it writes the file it still holds open and "           \
    "answers success"
#define RUNDIR_REFUSED 1
#define RUNDIR_UNLOCKED 2
int rundir_open(const struct backend_ops *be, void *ctx, const char *rundir, bool reuse,
                const char *owner, bool *created, char *err, size_t errlen);

/* The owner text for rundir_open, into buf: who holds the lock (a first
 * line: run id, host, pid) and a random token (a second line), so that a
 * rank that reads it back (rundir_seen) knows it looks at the directory
 * this run made, not at one of the same name elsewhere. */
#define RUNDIR_OWNER_MAX 512
void rundir_owner(char *buf, size_t len, const char *run_id, const char *host);

/* On a rank other than the one that opened it: whether this rank's view
 * of the target holds that run directory (a target that is a local
 * directory on one host, the export on another, is not the same place).
 * The target and then rundir are refreshed first: a kernel NFS client
 * answers a look from its cached view of a directory (ENOENT for a name
 * another host has just made) until its attributes expire, and a GETATTR
 * forced on the directory makes it look the name up again. Then rundir
 * must be a directory whose lock file holds exactly owner, rundir_open's
 * text; owner "" (RUNDIR_UNLOCKED: no lock file) asks only for the
 * directory. 0, or -errno with one line in err. */
int rundir_seen(const struct backend_ops *be, void *ctx, const char *rundir, const char *owner,
                char *err, size_t errlen);

/* Remove the lock file (locked: rundir_open made it; else it is not
 * ours), then (remove_dir) the directory itself. A
 * directory still holding entries is left, and said so in err (returns
 * -ENOTEMPTY): as entries this run did not make when the clean-up removed
 * all it made (cleaned), else as the clean-up's leftovers; 0 when all
 * went as asked. */
int rundir_close(const struct backend_ops *be, void *ctx, const char *rundir, bool locked,
                 bool remove_dir, bool cleaned, char *err, size_t errlen);

#endif
