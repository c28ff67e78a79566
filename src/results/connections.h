/* connections.h — what a phase says of the connections the server kept:
 * its note when the server dropped or refused some of the run's clients'
 * connections (a kernel nfsd past its connection limit closes its
 * oldest as each new one comes; ganesha past RPC_Max_Connections refuses
 * new ones), so that a limit of the server is a finding of the run. */
#ifndef HERD_CONNECTIONS_H
#define HERD_CONNECTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "errtab.h"

/* The phase's note into note (len bytes), when at least one client
 * counted a lost or refused connection (errtab_connection_lost) in errs
 * (n entries, each naming its rank and client) and the server kept some
 * connections but not all: 0 < open < clients (clients: the run's,
 * ranks x clients_per_rank; open: those whose connection was open at
 * the phase's end). It names open as the count the server dropped
 * connections at, and the clients that lost one and that were refused,
 * each counted once. Returns whether it wrote one (else note is ""). */
bool connections_note(const struct err_entry *errs, size_t n, int clients_per_rank, int64_t clients,
                      int64_t open, char *note, size_t len);

#endif
