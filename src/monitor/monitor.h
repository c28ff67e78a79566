/* monitor.h — the server-side sampler: a thread that, every interval on
 * herd's common clock, reads this host's /proc (CPU by mode, load, memory,
 * the kernel NFS server's counters, named processes, disks) and/or scrapes
 * a node_exporter URL, and keeps the samples as rows of the /monitor
 * tables until the runner takes them. It calls no MPI and never blocks the
 * caller for longer than a mutex hold. A source that cannot be read is
 * noted once (a row in notes) and left out from then on, or until it
 * answers again for a URL.
 *
 * Counters are stored as deltas over the sample's interval dt (divide by
 * dt for rates); gauges as read; NaN where a source does not give a value. */
#ifndef HERD_MONITOR_H
#define HERD_MONITOR_H

#include <stdbool.h>
#include <stddef.h>

#include "monitor_batch.h"

#include "monitor_sources.h"

struct monitor;

/* The i-th client library the monitor's sources are built on (i from 0,
 * in source order), with its version at run time in *version; NULL past
 * the last. For herd version. */
const char *monitor_library_at(size_t i, const char **version);

/* Start sampling: a baseline read at common time t_first (or at once when
 * that is past), then one sample every interval after it. NULL (and err)
 * when the thread cannot start or the config is unusable. */
struct monitor *monitor_start(const struct monitor_config *cfg, double t_first, char *err,
                              size_t errlen);
/* True once every source has taken a reading (a scrape that failed is
 * none): from then on each source's rows count from a reading already
 * taken. Never blocks longer than a mutex hold. */
bool monitor_baseline_in(struct monitor *m);
/* Move every row sampled so far into out (appending to what it holds). */
void monitor_take(struct monitor *m, struct monitor_batch *out);
/* Take one last sample covering the time since the previous one (taken
 * after this call began, at least 20 ms after the previous one: it may
 * wait that long), stop the thread, move the remaining rows into out and
 * free the monitor. */
void monitor_stop(struct monitor *m, struct monitor_batch *out);

#endif
