/* runner.h — run a loaded job on all ranks (after MPI_Init). */
#ifndef HERD_RUNNER_H
#define HERD_RUNNER_H

#include <stdbool.h>

#include "job.h"

struct runner_opts {
    const char *output;       /* results path; NULL = herd-<run id>.h5 */
    bool force;               /* overwrite an existing results file */
    const char *command_line; /* as typed, for the results file */
    double t_init;            /* clock_mono() right after MPI_Init */
    const char *json; /* --json: rank 0 writes the summary there ("-": stdout); NULL = none */
    bool quiet;       /* -q: no progress lines, no legend under the table */
};

/* Returns the exit code, the same on every rank: 0 clean, 2 bad input
 * (target unreachable, results file not writable), 3 I/O errors or verify
 * failures recorded, 128+N stopped by signal N, 1 internal failure. */
int runner_run(const struct job *job, const struct runner_opts *opts);

#endif
