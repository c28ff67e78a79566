/* monitor_keys.h — the monitor's part of the job model: its job-file
 * keys (monitor_host, monitor_rank, monitor_interval, monitor_processes,
 * monitor_scope, monitor_disks, monitor_url; [global] only, stored in
 * struct phase) and the rules between them, which the registry
 * (plugins/registry.c) adds to the key table and to every phase's check. */
#ifndef HERD_MONITOR_KEYS_H
#define HERD_MONITOR_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#include "job.h"

extern const struct job_key monitor_keys[];
extern const size_t monitor_nkeys;

/* The first monitor rule ph breaks (both monitor_host and monitor_rank, a
 * rank that is no number, a URL that is no http(s) URL or one a herd
 * without libcurl cannot scrape): the key, with why written; NULL: none. */
const char *monitor_phase_check(const struct phase *ph, char *why, size_t len);

/* Whether a host name matches monitor_host's want: exactly or by short
 * name ("srv" for "srv.example.org", either way round). */
bool monitor_host_matches(const char *hostname, const char *want);

#endif
