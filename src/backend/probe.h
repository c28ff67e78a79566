/* probe.h — herd check --probe: what the checking host can see of a target
 * before any rank starts: a directory that exists, is one, is writable by
 * this user and has room for the bytes the job writes; or, for nfs:// and
 * smb:// targets, a server name that resolves and a port that answers
 * (2049, or the URL's; 445 for SMB). Only looks: it creates nothing, and
 * a connection is closed as soon as it is made. */
#ifndef HERD_PROBE_H
#define HERD_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Probe target for backend (posix, fault, libnfs, smb), the job writing at
 * most `writes` bytes there; one line per finding on out ("probe: TARGET:
 * ..."). Returns the number of problems found (0: every check passed). */
int probe_target(const char *backend, const char *target, uint64_t writes, FILE *out);

/* A connection to the server of an nfs:// or smb:// URL failed: true when
 * its name does not resolve, with "server name 'X' does not resolve: WHY"
 * in why (a failed lookup is not an errno: backends report it as
 * EHOSTUNREACH, and this tells the user which it was). */
bool probe_name_unresolved(const char *url, char *why, size_t len);

#endif
