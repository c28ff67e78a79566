/* results_fallback.h — where a phase goes when the results file cannot
 * take it (full or failing file system): its summary, every rank's rows
 * and its error table as CSV, in a file of its own beside the results
 * file or, when that cannot be written either, on a stream with each line
 * prefixed "herd-lost,". The work of a phase is never just dropped. */
#ifndef HERD_RESULTS_FALLBACK_H
#define HERD_RESULTS_FALLBACK_H

#include <stddef.h>
#include <stdio.h>

#include "model.h"

/* Longest "<results>.<phase>.lost.csv". */
#define RESULTS_FALLBACK_PATH_MAX (JOB_PATH_MAX + 2 * JOB_NAME_MAX)

/* Write phase ph to "<results>.<phase>.lost.csv" in the results file's
 * directory dirfd (a new file, made by the safe-output rule, safeout.h:
 * an existing entry is never replaced) or else to stream. results_leaf is
 * the results file's name in dirfd, results_shown its path for messages.
 * *where gets the file's path or "stderr". Returns 0 (file), 1 (stream)
 * or -1 (neither). */
int results_fallback_phase(int dirfd, const char *results_leaf, const char *results_shown,
                           const struct phase *ph, const struct phase_summary *sum,
                           const struct phase_data *d, FILE *stream, char *where, size_t wherelen);

#endif
