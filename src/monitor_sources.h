/* monitor_sources.h — what the sampler thread (monitor.c) reads from: this
 * host's /proc (monitor_proc.c) and a node_exporter URL (monitor_scrape.c).
 * Each source keeps its previous reading; its first sample is the baseline
 * and gives no rows. Rows go into a batch through the monitor_add_* calls;
 * a source that cannot read something adds one note and goes on. */
#ifndef HERD_MONITOR_SOURCES_H
#define HERD_MONITOR_SOURCES_H

#include "monitor.h"

/* Append one row (a copy) to the batch; on allocation failure the row is
 * dropped (the batch stays valid). */
void monitor_add_sample(struct monitor_batch *b, const struct monitor_sample *row);
void monitor_add_metric(struct monitor_batch *b, const struct monitor_metric *row);
void monitor_add_process(struct monitor_batch *b, const struct monitor_process *row);
void monitor_add_disk(struct monitor_batch *b, const struct monitor_disk *row);
void monitor_add_note(struct monitor_batch *b, double t, const char *host, const char *source,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* A sample row with every value NaN but the identity columns. */
void monitor_sample_init(struct monitor_sample *s, double t, double dt, const char *host,
                         const char *source);


struct proc_source;
struct proc_source *proc_source_open(const struct monitor_config *cfg);
/* Sample at common time t; dt = 0 on the baseline (no rows). */
void proc_source_sample(struct proc_source *s, double t, double dt, struct monitor_batch *out);
void proc_source_close(struct proc_source *s);

struct scrape_source;
/* NULL and err when the URL cannot be used at all (no libcurl, bad URL). */
struct scrape_source *scrape_source_open(const char *url, double timeout, char *err, size_t errlen);
void scrape_source_sample(struct scrape_source *s, double t, double dt, struct monitor_batch *out);
void scrape_source_close(struct scrape_source *s);

#endif
