/* jobtext.h — a job file's text as the parser sees it, made on the rank
 * that reads the file (rank 0) and broadcast as it is:
 *
 *   - a comment starts at a `;` or `#` that begins a line or follows a
 *     space or tab; a comment line stays (for the record, a ";@source" of
 *     the file's own made "; @source"), any other comment goes, so that
 *     libinih, which job.c runs without inline comments, never sees one;
 *   - a line `include PATH` (comment gone) is replaced by that file's text
 *     (PATH relative to the including file; nested at most JOBTEXT_DEPTH
 *     deep);
 *   - after that, `${NAME}` in the value of a `key = value` line is
 *     replaced by the environment variable NAME, which must be set and one
 *     line of valid UTF-8 (no byte below 0x20, nor 0x7f): a value can add
 *     no line, key or comment. `${` in a section or key name is an error.
 *
 * Where lines come from is kept in the text itself: a comment line
 * ";@source INDEX LINE PATH" before the lines of each file (and again after
 * an include, for the rest of the including file), so that job.c's errors
 * name the file and line of the original even on ranks that never saw the
 * files. Every file is read with the same rules as a job file (regular,
 * at most JOB_FILE_MAX, no NUL byte); so is the whole result. */
#ifndef HERD_JOBTEXT_H
#define HERD_JOBTEXT_H

#include <stddef.h>

#include "joblimits.h"

#define JOBTEXT_DEPTH 8            /* include nesting, at most */
#define JOBTEXT_SOURCES 16         /* files in one job (the main one and includes) */
#define JOBTEXT_MARKER ";@source " /* starts a source line */
/* The longest result: a job file's limit for the text itself, plus its
 * source lines (two per file at most, each a marker, two numbers and a
 * path). */
#define JOBTEXT_MAX (JOB_FILE_MAX + 2 * JOBTEXT_SOURCES * (JOB_PATH_MAX + 40))

/* The job read from standard input: path "-" (herd run -, herd check -),
 * named so in messages; its includes are relative to the current
 * directory. */
#define JOBTEXT_STDIN "-"
#define JOBTEXT_STDIN_NAME "<stdin>"

/* The job of `--phase KINDS` (no job file): its name in messages, and at
 * most this many phases. */
#define JOBTEXT_PHASES_NAME "--phase"
#define JOBTEXT_PHASES_MAX 64

/* The job text --phase KINDS stands for: one section per comma-separated
 * kind, in order, named by the kind (KIND-2, KIND-3 for repeats) and
 * holding `kind = KIND`; whether each is a kind is job_load's to say. 0,
 * or -EINVAL with one line in err (an empty item, one that is not a
 * lowercase word, too many). */
int jobtext_from_kinds(const char *kinds, char **text, char *err, size_t errlen);

/* Whether path, the job file the user named, is this process's to read,
 * asked before it opens descriptors of its own: before MPI_Init, which
 * opens pipes and sockets (a read of one waits forever) and, in a
 * singleton, sets a launcher's environment. A path that names one of
 * the process's descriptors through /proc (/dev/fd/N, /proc/self/fd/N,
 * /proc/PID/fd/N, /proc/thread-self/fd/N, /dev/stdin, or a link to one)
 * must name one it holds now, and above 2 only in a process that no
 * launcher started: mpirun (orted, prterun), srun, hydra and every PMI or
 * PMIx launcher give a rank 0-2 of the user's shell and nothing else of
 * it (told by PMIX_RANK, PMI_RANK, PMI_FD or OMPI_COMM_WORLD_SIZE in the
 * environment), so anything higher there is the launcher's. Any other
 * path (JOBTEXT_STDIN too) is jobtext_read's to judge. 0, or -EBADF
 * with one line "PATH: cannot read job file: why" in err. */
int jobtext_check_given(const char *path, char *err, size_t errlen);

/* The text of path (JOBTEXT_STDIN: standard input; an anonymous pipe
 * such as `<(...)` is read too, a named FIFO refused) with includes,
 * comments and variables done, into *text (malloc'd). 0, or -errno with
 * one line "FILE:LINE: why" (or "FILE: why") in err (err may be NULL).
 * The path the user named is jobtext_check_given's first. */
int jobtext_read(const char *path, char **text, char *err, size_t errlen);

#endif
