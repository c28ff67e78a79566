/* monitor_sources.h — what the sampler thread (monitor.c) reads from, one
 * static ops table per source as backends have: this host's /proc
 * (monitor_proc.c) and a node_exporter URL (monitor_scrape.c). Each source
 * keeps its previous reading; its first sample is the baseline and gives
 * no rows. Rows go into a batch through the monitor_add_* calls
 * (monitor_batch.h); a source that cannot read something adds one note
 * and goes on. A new source: its file with its table, and one line in
 * monitor.c's list. */
#ifndef HERD_MONITOR_SOURCES_H
#define HERD_MONITOR_SOURCES_H

#include <stdbool.h>
#include <stddef.h>

#include "clock.h"
#include "monitor_batch.h"

/* What the monitor samples (the job's monitor_* keys). */
struct monitor_config {
    double interval;       /* seconds between samples */
    bool local;            /* sample this host's /proc */
    const char *processes; /* comma-separated comm names ("" = none) */
    const char *scope;     /* monitor_scope: which of them count (NULL = "host") */
    const char *disks;     /* comma-separated device names or paths ("" = none) */
    const char *url;       /* node_exporter metrics URL ("" = none) */
    const char *hostname;  /* host column of local rows */
    const struct clock *clock;
};

struct monitor_source_ops {
    const char *name; /* the rows' source column */
    /* The client library it is built on ("libcurl") and that library's
     * version at run time, for herd version; NULL for none (proc). */
    const char *library;
    const char *(*version)(void);
    /* Whether cfg asks for this source. */
    bool (*wanted)(const struct monitor_config *cfg);
    /* The source's state for cfg; NULL with one line in err when it cannot
     * be used at all (the monitor then does not start). */
    void *(*open)(const struct monitor_config *cfg, char *err, size_t errlen);
    /* One reading at common time t covering dt seconds (0: the baseline,
     * no rows); rows are appended to out. True when the reading was
     * taken (the next one has a start to count from), false when it
     * failed (its note is in out). */
    bool (*sample)(void *state, double t, double dt, struct monitor_batch *out);
    void (*close)(void *state); /* NULL state: nothing */
};

extern const struct monitor_source_ops monitor_source_proc;   /* "proc" */
extern const struct monitor_source_ops monitor_source_scrape; /* "node_exporter" */

/* The host column of a node_exporter's rows: HOST:PORT of its URL. */
void monitor_url_host(const char *url, char *host, size_t len);

#endif
