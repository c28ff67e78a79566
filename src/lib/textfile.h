/* textfile.h — the one way herd reads a whole small file into memory: job
 * files and their includes, /proc and /sys texts. Only a regular file is
 * read (a FIFO, device or directory is refused without blocking: the open
 * does not wait for a writer), at most a given size, into a buffer the
 * caller keeps and may reuse. */
#ifndef HERD_TEXTFILE_H
#define HERD_TEXTFILE_H

#include <stddef.h>

#define TEXTFILE_PROC_MAX (64u << 20) /* a /proc or /sys text, at most */

/* Read the file at path into *buf (malloc'd, grown as needed; *cap is its
 * size, 0 with *buf NULL for a new one), NUL-terminated. Returns its length
 * or -errno: -EISDIR (a directory), -ENOTSUP (not a regular file), -EFBIG
 * (more than max bytes, also when it grew while read), -ENOMEM, or what
 * open/read said. On an error *buf keeps its old content or is the grown
 * buffer, still the caller's to free. */
long textfile_read(const char *path, size_t max, char **buf, size_t *cap);

/* The same, also taking an anonymous pipe (a shell's `<(...)`, whose
 * /dev/fd/N the user named) and reading it to its end; a FIFO with a name
 * in a file system is still refused (nothing may be waiting to write it).
 * For the file a user names on the command line, never for one a file
 * names (an include). */
long textfile_read_given(const char *path, size_t max, char **buf, size_t *cap);

/* The same from an open descriptor the caller chose to read whatever it
 * is (a job on standard input: a pipe, a terminal): to its end, at most
 * max bytes, fd left open. */
long textfile_read_fd(int fd, size_t max, char **buf, size_t *cap);

#endif
