/* results_phase.h — the contents of a phase's group in the results file
 * (HDF5 side; results.c owns the file, makes the group and saves).
 * Layout: docs/results-format.md. */
#ifndef HERD_RESULTS_PHASE_H
#define HERD_RESULTS_PHASE_H

#include <hdf5.h>

#include "h5util.h"
#include "job.h"
#include "model.h"

/* Fill the new group g of phase ph: attributes, tables and histograms,
 * the status attribute last (a group without it was cut short). Returns
 * 0 or -1 with one line in err. */
int results_phase_fill(const struct h5_types *ty, hid_t g, const struct phase *ph,
                       const struct phase_summary *sum, const struct phase_data *d, char *err,
                       size_t errlen);

/* The errors table (a phase's, or /cleanup's) of n entries under g. */
int results_errors_write(hid_t g, const struct err_entry *errors, size_t n, char *err,
                         size_t errlen);

#endif
