/* clientfit.h — whether a job's clients (clients_per_rank > 1) fit where
 * they run: the clients of every rank on one host within half of its
 * memory, by the backend's estimate of what one client holds (backend.h's
 * client_memory), and a rank's descriptors within its limit
 * (RLIMIT_NOFILE; the soft limit is raised to the hard one where that is
 * enough). A refusal is one line that names the numbers and the nearest
 * settings that fit. herd check counts the ranks its --ranks-per-host
 * says share a host (all of -n's without it) and its own shell's limit;
 * the run, the ranks MPI placed on each host and each rank's own limit. */
#ifndef HERD_CLIENTFIT_H
#define HERD_CLIENTFIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "job.h"

/* Descriptors a rank opens after the check beside its clients' (the
 * results file, --json, the /proc files it reads, MPI's later sockets);
 * and, for herd check, which runs without MPI, what MPI_Init opens (15
 * with Open MPI 4.1 here). */
#define CLIENTFIT_FDS_LATER 32
#define CLIENTFIT_FDS_MPI 16

/* What one client of job holds at most: its memory (bytes) in the phase
 * that needs most (phase: its index), its descriptors. Zeros without
 * clients or without the backend's estimate. */
struct clientfit_client {
    uint64_t memory;
    int phase;
    unsigned fds;
};
void clientfit_client(const struct job *job, struct clientfit_client *out);

/* Whether the clients of ranks_on_host ranks of job fit half of mem bytes
 * (0: unknown, they do): 0, or -ENOMEM with the refusal "FILE:LINE: key
 * 'clients_per_rank': ..." into err, naming `host` ("this host", "host
 * n3") and the nearest settings that fit (a smaller nfs_inflight or
 * block_size, fewer clients). */
int clientfit_memory(const struct job *job, int64_t ranks_on_host, uint64_t mem, const char *host,
                     char *err, size_t len);

/* Descriptors open in this process now (0: unknown). */
long clientfit_fds_open(void);
/* The descriptors one rank of job needs: in_use (those open, and for
 * herd check CLIENTFIT_FDS_MPI), CLIENTFIT_FDS_LATER and its clients'. */
long clientfit_fds_need(const struct job *job, long in_use);
/* Whether a rank's need (clientfit_fds_need) fits this process's limit:
 * 0, with raise the soft limit raised to the hard one first where it is
 * below need; or -EMFILE with the refusal "FILE:LINE: key
 * 'clients_per_rank': ..." into err, naming `who` ("this shell", "rank 3
 * on n3"), the limit, `ulimit -n` and the clients that fit. */
int clientfit_fds(const struct job *job, long in_use, bool raise, const char *who, char *err,
                  size_t len);

#endif
