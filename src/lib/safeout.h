/* safeout.h — the one rule for every file herd writes outside the target:
 * the results file (-o), the --json summary, a lost phase's CSV, and
 * herd-linkdelay's pid file. herd is often run as root in directories
 * other users can write, so a planted link, hard link, FIFO or device at
 * an output's name, or a directory swapped under it, must never make herd
 * write, truncate or remove anything it did not make.
 *
 * The rule:
 * - The output's directory is opened once, as the user named it; every
 *   later step is relative to that descriptor.
 * - A file is made under a fresh private name beside the output
 *   (O_CREAT | O_EXCL | O_NOFOLLOW: never an existing entry, never through
 *   a link) and written there; then it is put in place by rename, which
 *   replaces a directory entry and never writes through it.
 * - Without force the rename goes only where nothing is (RENAME_NOREPLACE,
 *   or link + unlink where the file system lacks it, e.g. NFS).
 * - With force, an existing entry is replaced only when it passed the
 *   checks when the output was prepared (a regular file of this user, one
 *   link, accepted by the caller's content check, e.g. "an HDF5 file") and
 *   is still that same file (device, inode, owner) when it is replaced:
 *   RENAME_EXCHANGE, then the displaced entry is checked before it is
 *   removed (and swapped back if it is not the checked file).
 * - Only a private name this module made, still holding the file it made,
 *   is ever removed.
 *
 * Every function returns 0 or -1 with one line in err (the path as the
 * user gave it, escaped); nothing here aborts. */
#ifndef HERD_SAFEOUT_H
#define HERD_SAFEOUT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* Whether an existing file (open read-only on fd, never a link, FIFO or
 * device: those are refused before this is asked) holds what force may
 * replace: NULL if so, else what it is not ("not an HDF5 file"). It may
 * read the file from offset 0. */
typedef const char *(*safeout_accept_fn)(int fd, off_t size);

struct safeout {
    int dirfd;               /* the output's directory; -1: not prepared */
    char leaf[NAME_MAX + 1]; /* the output's name in it */
    char shown[320];         /* "what path" for messages, escaped */
    bool replace;            /* an earlier file passed the checks: force may replace it */
    dev_t old_dev;           /* that file */
    ino_t old_ino;
    char tmp[NAME_MAX + 1]; /* the private name of the file being made; "" none */
    dev_t tmp_dev;          /* the file made there */
    ino_t tmp_ino;
    dev_t made_dev; /* the file the last commit put in place; 0, 0: none */
    ino_t made_ino;
};

/* An output not prepared yet (safeout_close does nothing to it). */
#define SAFEOUT_NONE                                                                               \
    {                                                                                              \
        .dirfd = -1                                                                                \
    }

/* Check path as an output (shown: how messages name it, e.g. the path
 * escaped, or "--json PATH"): its directory exists and is writable, its
 * name is a plain name, and either nothing is there, or force is set and
 * what is there is a regular file of this user with one link that accept()
 * takes (kind names what it takes in a refusal: "a results file"). Keeps
 * the directory open (safeout_close). */
int safeout_prepare(struct safeout *o, const char *shown, const char *path, bool force,
                    safeout_accept_fn accept, const char *kind, char *err, size_t errlen);

/* An output named leaf in the directory dirfd (duplicated), made only
 * where nothing is (no force). */
int safeout_prepare_at(struct safeout *o, int dirfd, const char *leaf, const char *shown, char *err,
                       size_t errlen);

/* Make the file under a private name; *fd is open for writing (mode 0644
 * under the umask; the caller closes it). */
int safeout_create(struct safeout *o, int *fd, char *err, size_t errlen);

/* Put the file made by safeout_create in place (see the rule above). A
 * later commit of the same output is a new version of herd's own file
 * (the results file after each phase): it replaces the file the last
 * commit put there only while the entry still holds it, as force does,
 * and leaves anything else there alone. On failure the private file is
 * removed. */
int safeout_commit(struct safeout *o, char *err, size_t errlen);

/* The whole file at once: safeout_create, write(f, arg) on a stdio stream,
 * flush, fsync, safeout_commit (so a second write replaces the first). A write error (a full disk)
 * leaves nothing behind. */
int safeout_write(struct safeout *o, void (*write)(FILE *f, const void *arg), const void *arg,
                  char *err, size_t errlen);

/* Remove the private file, if it is still the one this module made. */
void safeout_abandon(struct safeout *o);

/* The earlier file that force was allowed to replace, removed (it is
 * stale: e.g. an earlier run's summary when this run's could not be
 * written). 0 when there was none or it was removed. */
int safeout_remove_old(struct safeout *o, char *err, size_t errlen);

/* The file safeout_commit put in place, removed when it is still there
 * (a pid file at the end of its process): never what replaced it. */
void safeout_remove_made(struct safeout *o);

/* Whether path names o's entry (the same directory, the same name). */
bool safeout_names(const struct safeout *o, const char *path);

/* Whether the output's directory is dirfd's directory or beneath it. */
bool safeout_beneath(const struct safeout *o, int dirfd);

/* The directory's descriptor (for fstatvfs and safeout_prepare_at). */
int safeout_dirfd(const struct safeout *o);

void safeout_close(struct safeout *o);

#endif
