/* safepath.h — the one rule every backend applies to a path herd names:
 * it is relative to the backend's root (the target), and it is resolved
 * beneath that root without following any symbolic link. A link planted
 * on a shared export (by another user, or while the run is going) makes
 * the call fail with -ELOOP (or -EXDEV where the kernel reports an escape)
 * and nothing outside the run directory is touched.
 *
 * Invariants of a path that passes safepath_check: not empty, shorter
 * than HERD_PATH_MAX, relative, no empty, "." or ".." component, no byte
 * below 0x20. */
#ifndef HERD_SAFEPATH_H
#define HERD_SAFEPATH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Longest path (with its NUL) herd builds below the target: run
 * directory, fileset, meta tree and file names. */
#define HERD_PATH_MAX 512

/* 0 if path is well formed (see above), else -EINVAL (-ENAMETOOLONG when
 * too long). Pure. */
int safepath_check(const char *path);

/* POSIX resolution beneath a root directory descriptor. Every component
 * is resolved inside rootfd and none may be a symbolic link: openat2(2)
 * with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS where the kernel has it,
 * else a walk of the components, each opened O_PATH | O_NOFOLLOW and
 * checked to be a directory through its own descriptor (so a component
 * swapped for a link between two steps is caught, not followed). A link
 * anywhere gives -ELOOP; -EXDEV where the kernel reports an escape.
 *
 * Open path (open(2) flags; O_NOFOLLOW and O_CLOEXEC are added; mode is
 * used with O_CREAT). Returns the descriptor or a negative errno. */
int safepath_open(int rootfd, const char *path, int flags, mode_t mode);

/* Open path's parent directory (O_PATH, resolved as above) for the *at()
 * calls that act on the last component; *leaf points at that component
 * inside path. Returns the descriptor (the caller closes it) or a
 * negative errno. */
int safepath_parent(int rootfd, const char *path, const char **leaf);

/* Tests only: true forces the component walk even where openat2 works. */
void safepath_force_walk(bool on);

#endif
