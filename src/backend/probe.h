/* probe.h — herd check --probe: what the checking host can see of a target
 * before any rank starts: a directory that exists, is one, is writable by
 * this user and has room for the bytes the job writes; or, for nfs:// and
 * smb:// targets, a server name that resolves and a port that answers
 * (2049, or the URL's; 445 for SMB), and an nfs:// export that mounts
 * from the ports the run's clients will use (reserved ones, or ordinary
 * ones with clients_per_rank > 1: srcport.h). It creates nothing: a
 * connection is closed, and a mount dropped, as soon as it is made.
 * After a failed connect, herd run asks here too whether the server's
 * name resolves and whether an export that refused ordinary ports serves
 * a reserved one, so that its message names the cause. */
#ifndef HERD_PROBE_H
#define HERD_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct phase; /* job.h */

/* Probe phase ph's target for its backend (posix, fault, libnfs, smb),
 * the job writing at most `writes` bytes there; one line per finding on
 * out ("probe: TARGET: ..."). Returns the number of problems found (0:
 * every check passed). */
int probe_target(const struct phase *ph, uint64_t writes, FILE *out);

/* A connection to the server of an nfs:// or smb:// URL failed: true when
 * its name does not resolve, with "server name 'X' does not resolve: WHY"
 * in why (a failed lookup is not an errno: backends report it as
 * EHOSTUNREACH, and this tells the user which it was). */
bool probe_name_unresolved(const char *url, char *why, size_t len);

/* A connection to phase ph's target failed with rc from an ordinary port
 * (clients_per_rank > 1): true when the server refused it (-EACCES) and
 * serves the same connection from a reserved port, with the line that
 * says so in why: the reserved-port rule, clients_per_rank, and where
 * herd can run. Reserved ports stay given up afterwards. */
bool probe_port_refused(const struct phase *ph, int rc, char *why, size_t len);

#endif
