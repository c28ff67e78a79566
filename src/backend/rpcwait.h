/* rpcwait.h — wait for one asynchronous libnfs RPC on an rpc_context: the
 * one loop the NLM client (libnfs_nlm.c), the NFSv4 lock calls
 * (backend_libnfs.c) and the READs and WRITEs in flight (libnfs_stream.c)
 * share. It serves the context's socket until the
 * caller's callback sets *done, op_timeout passes, a stop is requested
 * (a signal here or a peer rank's stop: signals_stop_requested) or the
 * connection is lost. The lock_timeout alarm does not cut a
 * call short: a LOCK the server granted must not be forgotten. */
#ifndef HERD_RPCWAIT_H
#define HERD_RPCWAIT_H

#include <stdbool.h>

struct rpc_context;

/* 0 once *done; else -EINTR (signal), -ETIMEDOUT (timeout_ms > 0 passed),
 * -ECONNRESET (connection lost) or -errno (poll failed), with *status the
 * name of why ("RPC_INTERRUPTED", "RPC_TIMEOUT", "RPC_CONNECTION_LOST";
 * NULL for a poll failure). After a failure the RPC is still queued in the
 * context, with the caller's callback data: the context must never be
 * serviced again. */
int rpcwait(struct rpc_context *rpc, volatile bool *done, int timeout_ms, const char **status);

#endif
