/* results.h — the results file (HDF5, chunked + deflate): the writer of
 * model.h's records. Only this module knows HDF5. Rank 0 creates the file
 * at start, appends each phase as soon as it ends and saves the whole file
 * by rename (h5image.h), so a crash at any instant loses at most the
 * running phase. Layout: docs/results-format.md. */
#ifndef HERD_RESULTS_H
#define HERD_RESULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "errtab.h"
#include "job.h"
#include "model.h"
#include "safeout.h"

struct results;

/* What --force may replace with a results file (a safeout_accept_fn):
 * NULL for an HDF5 file (its signature where HDF5 puts it), else "not an
 * HDF5 file". Reads fd from the start. */
const char *results_file_check(int fd, off_t size);

/* The HDF5 library's version at run time ("1.10.8"; "?" when it cannot
 * say), and that of zlib, which compresses the file's tables. For the
 * root attribute hdf5_version and herd version. */
void results_hdf5_version(char *buf, size_t len);
const char *results_zlib_version(void);

/* Write a new results file to the output out (prepared, kept open by the
 * caller until results_close; every save goes through it, safeout.h),
 * named path in messages: root attributes with status "partial", /hosts
 * and /ranks. Returns NULL and writes one line into err on failure; then
 * nothing was put in place. */
struct results *results_create(struct safeout *out, const char *path, const struct run_info *run,
                               const struct host_info *hosts, int nhosts,
                               const struct rank_info *ranks, int nranks, char *err, size_t errlen);

/* Append /phases/<ph->name>: attributes (kind, index, status, t_start,
 * t_end, start_skew and every job key's resolved value), the ranks,
 * errors, stuck and ops tables, for lock phases the holds table and its
 * overlap, and the latency histograms (ops with no samples skipped). Saves the file; when it cannot
 * be saved the phase is not in it. Returns 0 or -1 (with err). */
int results_write_phase(struct results *r, const struct phase *ph, const struct phase_summary *sum,
                        const struct phase_data *d, char *err, size_t errlen);

/* Append to the /monitor tables and save (rows a failed save could not take go with the next one).
 * Returns 0 or -1 (with err). */
int results_write_monitor(struct results *r, const struct monitor_append *a, char *err,
                          size_t errlen);

/* Where herd's own time went in a phase (rank 0): gathering the ranks'
 * data, and writing the phase. Set as the phase's attributes
 * gather_seconds and write_seconds; saved with the next write. */
int results_phase_timing(struct results *r, const char *phase, double gather_seconds,
                         double write_seconds, char *err, size_t errlen);

/* Set the phase's summary_* attributes of s, and monitor_covered when the
 * run sampled the server (s->covered >= 0). 0 or -1 (with err). */
int results_phase_server(struct results *r, const char *phase, const struct phase_server *s,
                         char *err, size_t errlen);

/* Write /phases/<ladder>/steps (a group of kind "ladder" holding the
 * table; attributes ladder and steps) and save. Rows whose phase is not in
 * the file (lost) are left out. 0 or -1 (with err). */
int results_write_steps(struct results *r, const char *ladder, const struct step_row *rows,
                        size_t n, char *err, size_t errlen);

int results_write_usage(struct results *r, const struct usage_row *rows, size_t n, char *err,
                        size_t errlen);

/* What the clean-up could not remove (keep = no): /cleanup/errors, the
 * phases' error-table layout. Saved. Returns 0 or -1. */
int results_write_cleanup(struct results *r, const struct err_entry *left, size_t n, char *err,
                          size_t errlen);

/* Set root attributes status (complete | incomplete | interrupted |
 * partial; docs/results-format.md), end_utc, exit_code and
 * startup_seconds (MPI_Init to the first phase's start, -1 when no phase
 * started) and save: what the file says if the run dies before
 * results_close. Returns 0 or -1 with one line in err. */
int results_status(struct results *r, const char *status, const char *end_utc, int exit_code,
                   double startup_seconds, char *err, size_t errlen);
/* The same, then close the file. Returns 0 or -1. */
int results_close(struct results *r, const char *status, const char *end_utc, int exit_code,
                  double startup_seconds, char *err, size_t errlen);

#endif
