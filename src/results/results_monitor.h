/* results_monitor.h — the /monitor tables of the results file (HDF5
 * side; called by results.c, which owns the file). */
#ifndef HERD_RESULTS_MONITOR_H
#define HERD_RESULTS_MONITOR_H

#include <hdf5.h>

#include "model.h"

/* Append every row of a to the tables under group (creating them on first
 * use). Returns 0 or -1 with err. */
int results_monitor_append(hid_t group, const struct monitor_append *a, char *err, size_t errlen);

#endif
