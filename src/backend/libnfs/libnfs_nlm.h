/* libnfs_nlm.h — a minimal synchronous NLM v4 client (the NFSv3 lock
 * manager, RPC program 100021) over libnfs's raw RPC layer, for the
 * libnfs backend's byte-range locks over NFSv3. One client per rank: its
 * own rpc_context, connected through the server's portmapper, one lock
 * owner (owner handle + svid) per client.
 *
 * Only non-blocking requests are sent (block = 0): a blocked NLM lock is
 * granted later through a GRANTED callback the client would have to serve
 * as an RPC server, which this client is not. Waiting is the caller's
 * loop of tries. Every call returns 0 or a negative errno; the NLM status
 * of the last refusal is kept (nlm_status). */
#ifndef HERD_LIBNFS_NLM_H
#define HERD_LIBNFS_NLM_H

#include <stdbool.h>
#include <stdint.h>

struct nlm_client;

/* Connect to the NLM service of `server` (host name or address) through
 * its portmapper, by deadline (a clock_mono() time, rpcwait.h; 0: no
 * limit), as client (its caller name; NULL or "": this host's name).
 * 0 or -errno. */
int nlm_open(const char *server, const char *client, double deadline, struct nlm_client **out);
void nlm_close(struct nlm_client *cl);
/* The deadline of the calls that follow: the backend call's. */
void nlm_set_deadline(struct nlm_client *cl, double deadline);
/* A call gave up on its RPC (timeout, stop signal, lost connection): the
 * client must not be used again; close it and open a new one. */
bool nlm_broken(const struct nlm_client *cl);

/* One non-blocking LOCK (exclusive or shared) of [start, start+len) of
 * the file whose NFSv3 handle is fh/fhlen (len 0: to the end of the
 * file). 0 granted; -EAGAIN held by another owner (NLM4_DENIED); other
 * refusals as mapped in libnfs_nlm.c. */
int nlm_lock(struct nlm_client *cl, const void *fh, unsigned fhlen, bool exclusive, uint64_t start,
             uint64_t len);
int nlm_unlock(struct nlm_client *cl, const void *fh, unsigned fhlen, uint64_t start, uint64_t len);

/* The NLM name of the last refusal ("NLM4_DENIED_GRACE_PERIOD"), or of the
 * RPC failure ("RPC_TIMEOUT"); NULL after a call that succeeded. */
const char *nlm_status(const struct nlm_client *cl);

#endif
