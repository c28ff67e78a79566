/* summary_json.h — the end-of-run summary as JSON (herd run --json FILE):
 * the numbers of summary.c's table, per phase and per op, with the run's
 * id, status, exit code and versions, for readers without HDF5 or Python.
 * Schema: docs/results-format.md ("The summary as JSON"). */
#ifndef HERD_SUMMARY_JSON_H
#define HERD_SUMMARY_JSON_H

#include <stddef.h>
#include <sys/types.h>

#include "safeout.h"
#include "summary.h"

#define SUMMARY_JSON_SCHEMA 1

struct summary_json_run {
    const char *run_id;
    const char *status; /* complete | incomplete | interrupted | partial */
    int exit_code;
    const char *results_file;
    const char *job_path;
    int nranks;           /* I/O ranks */
    int clients_per_rank; /* NFS clients each rank ran (1: itself) */
    /* I/O ranks on the host srv cpu is of; -1: not known (null) */
    int monitor_client_ranks;
    /* The job's label and HERD_SERVER_FS ("" for none). */
    const char *label, *server_fs, *server_disk;
};

/* What --force may replace with a summary (a safeout_accept_fn): NULL
 * for an earlier herd JSON summary (it starts as this writer starts one),
 * else "not a herd JSON summary". Reads fd from the start. */
const char *summary_json_file_check(int fd, off_t size);

/* Write the summary to the prepared output out (safeout.h: a private
 * file, fsync, renamed into place). 0, or -1 with one line in err
 * (nothing left behind). */
int summary_json_write(struct safeout *out, const struct summary_json_run *run,
                       const struct summary_line *lines, int n, char *err, size_t errlen);

/* The same summary onto a stream (--json -: standard output); the
 * caller checks the stream. */
void summary_json_print(FILE *f, const struct summary_json_run *run,
                        const struct summary_line *lines, int n);

#endif
