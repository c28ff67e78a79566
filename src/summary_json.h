/* summary_json.h — the end-of-run summary as JSON (herd run --json FILE):
 * the numbers of summary.c's table, per phase and per op, with the run's
 * id, status, exit code and versions, for readers without HDF5 or Python.
 * Schema: docs/results-format.md ("The summary as JSON"). */
#ifndef HERD_SUMMARY_JSON_H
#define HERD_SUMMARY_JSON_H

#include <stddef.h>

#include "summary.h"

#define SUMMARY_JSON_SCHEMA 1

struct summary_json_run {
    const char *run_id;
    const char *status; /* complete | incomplete | interrupted | partial */
    int exit_code;
    const char *results_file;
    const char *job_path;
    int nranks; /* I/O ranks */
};

/* May the run write its JSON to path? Yes when its directory exists and
 * is writable and path is not something other than a regular file (a
 * directory, a device, a FIFO, a link). Touches nothing. 0, or -1 with
 * one line in err. */
int summary_json_check(const char *path, char *err, size_t errlen);

/* Write path.tmp, fsync, rename onto path. 0, or -errno with one line in
 * err (path.tmp removed). */
int summary_json_write(const char *path, const struct summary_json_run *run,
                       const struct summary_line *lines, int n, char *err, size_t errlen);

#endif
