/* rpcwait.h — wait for one asynchronous libnfs RPC on an rpc_context: the
 * one loop every wait of the libnfs backend goes through (its mount,
 * libnfs's own calls and herd's in libnfs_call.c and libnfs_rpc.c, the
 * NLM client, the NFSv4 lock calls, the READs and WRITEs in flight of
 * libnfs_stream.c). It serves the context's socket until the caller's
 * callback sets *done, the deadline passes, a stop is requested (a signal
 * here or a peer rank's stop: signals_stop_requested) or the connection
 * is lost. The deadline is the backend call's, not the wait's: every wait
 * of one call ends by the same instant, op_timeout after the call began,
 * however many RPCs it waits for (libnfs 4.0's own timeout is per RPC,
 * from when the RPC was queued). The lock_timeout alarm does not cut a
 * call short: a LOCK the server granted must not be forgotten. */
#ifndef HERD_RPCWAIT_H
#define HERD_RPCWAIT_H

#include <stdbool.h>

struct rpc_context;

/* 0 once *done; else -EINTR (signal), -ETIMEDOUT (deadline, a
 * clock_mono() time, passed; 0: none),
 * -ECONNRESET (connection lost) or -errno (poll failed), with *status the
 * name of why ("RPC_INTERRUPTED", "RPC_TIMEOUT", "RPC_CONNECTION_LOST";
 * NULL for a poll failure). After a failure the RPC is still queued in the
 * context, with the caller's callback data: the context must never be
 * serviced again. */
int rpcwait(struct rpc_context *rpc, volatile bool *done, double deadline, const char **status);

/* Like rpcwait, but also returns 1, with nothing wrong and the context
 * still to be serviced, once the instant until (clock_mono; 0: none)
 * passes first: a caller that has something to do then (a paced call to
 * send) and its RPCs still in flight. */
int rpcwait_until(struct rpc_context *rpc, volatile bool *done, double until, double deadline,
                  const char **status);

/* The deadline of a call that begins now and may last timeout_ms (<= 0:
 * none, 0). */
double rpcwait_deadline(int timeout_ms);

#endif
