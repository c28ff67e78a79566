/* localerr.h — a connection that failed on this host, not at the server:
 * no descriptor or no memory left for its socket. libnfs 4.0 says "Failed
 * to open socket" where socket() failed (and its callers then EIO, which
 * reads as a server that did not answer), "Out of memory" or "Failed to
 * allocate" where malloc did; such a failure is the client's own and is
 * counted with its own errno, never as the server's refusal. */
#ifndef HERD_LOCALERR_H
#define HERD_LOCALERR_H

/* The local errno (negative) of a failure whose message is msg: for a
 * socket that could not be opened, what socket() says now (EMFILE,
 * ENFILE, ENOBUFS, ENOMEM), or EMFILE when it succeeds now (a descriptor
 * was freed since); -ENOMEM for an allocation; 0 when msg (NULL: none)
 * names neither. */
int localerr_of(const char *msg);

#endif
