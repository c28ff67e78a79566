/* prefetch.h — read a file range ahead of its consumer in a second
 * thread, so that digesting block i overlaps reading block i+1 (the md5
 * phase then costs about max(read, digest) instead of their sum, and over
 * NFS the network wait hides behind the digest).
 *
 * The reader thread does the backend calls exactly as the workload would:
 * each read is timed into the phase's histograms and the row, failures are
 * counted, the watchdog sees them in flight. The consumer only takes filled
 * buffers in file order. While a prefetch runs, only its thread may use
 * the backend context. A backend marked one_thread (libsmbclient) is never
 * called from a second thread: its reads happen inside prefetch_next, in
 * the consumer's thread, and digesting no longer overlaps reading. */
#ifndef HERD_PREFETCH_H
#define HERD_PREFETCH_H

#include <sys/types.h>

#include "workload.h"

struct prefetch;

/* Start reading [offset, offset + length) of f in blocks of ph->block_size,
 * counting into row r. NULL if the thread cannot start (ENOMEM). */
struct prefetch *prefetch_start(struct phase_ctx *c, struct backend_file *f, struct rank_record *r,
                                const char *path, uint64_t offset, uint64_t length);

/* Fault in (prefault.h) the ring a prefetch_start for blocks of block
 * bytes will allocate: for a phase's prepare, before its clock. */
void prefetch_prime(size_t block);

/* The next piece in file order (whole blocks, about 1 MiB): its bytes in
 * *data, its length returned;
 * 0 at the end, or -errno when reading stopped early (a failed or short
 * read, already counted; or a stop request: -EINTR). The piece stays valid
 * until the next call. */
ssize_t prefetch_next(struct prefetch *p, const void **data);

/* Stop reading (if not done), wait for the thread, free everything. */
void prefetch_finish(struct prefetch *p);

#endif
