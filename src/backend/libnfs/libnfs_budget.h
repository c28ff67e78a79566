/* libnfs_budget.h — what one libnfs client takes: the ceiling of its RPC
 * window, the memory it holds in a job's phase and the descriptors it
 * holds over a job (backend.h's client_memory and client_fds), from what
 * it allocates: its streams' slots and libnfs's encoded WRITEs for the
 * window it reaches, its read buffer, its own state. bench/client_memory.sh
 * compares the estimate with the RSS of real runs. */
#ifndef HERD_LIBNFS_BUDGET_H
#define HERD_LIBNFS_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "job.h"

/* The RPCs in flight for nfs_inflight = set with chunks of rchunk and
 * wchunk bytes: set, or for 0 the rule in its key row (16, but no more
 * than 4 MiB in flight, at least 2). On a fast link more bytes in
 * flight than that did not pay (docs/performance.md: at 1 MiB RPCs on
 * loopback 2-4 in flight moved 1.3-1.6x what 16 did; at 64K and 256K,
 * 16 was best). */
unsigned libnfs_inflight(int64_t set, uint64_t rchunk, uint64_t wchunk);

/* Whether phase ph sends WRITEs: a kind that writes its files, one that
 * mixes writes in (rwmix_read), one that makes a tree of files with data. */
bool libnfs_phase_writes_data(const struct phase *ph);

uint64_t libnfs_client_memory(const struct job *job, int i, const struct client_tune *tune);
unsigned libnfs_client_fds(const struct job *job);

#endif
