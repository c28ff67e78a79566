/* rpcwait.c — waiting for one libnfs RPC's reply (rpcwait.h). */
#include "rpcwait.h"

#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/time.h> /* before libnfs.h */

#include <nfsc/libnfs.h> /* before the raw header, which needs its types */

#include <nfsc/libnfs-raw.h>

#include "clock.h"
#include "signals.h"

#define RPCWAIT_SLICE_MS 100 /* rpc_service runs at least this often (its timeouts) */

int rpcwait(struct rpc_context *rpc, volatile bool *done, int timeout_ms, const char **status)
{
    double deadline = timeout_ms > 0 ? clock_mono() + timeout_ms / 1000.0 : 0;
    *status = NULL;
    while (!*done) {
        if (signals_stop_requested()) {
            *status = "RPC_INTERRUPTED";
            return -EINTR;
        }
        if (deadline > 0 && clock_mono() >= deadline) {
            *status = "RPC_TIMEOUT";
            return -ETIMEDOUT;
        }
        struct pollfd pfd = {.fd = rpc_get_fd(rpc), .events = (short)rpc_which_events(rpc)};
        int n = poll(&pfd, 1, RPCWAIT_SLICE_MS);
        if (n < 0 && errno != EINTR)
            return -errno;
        if (rpc_service(rpc, n > 0 ? pfd.revents : 0) < 0) {
            *status = "RPC_CONNECTION_LOST";
            return -ECONNRESET;
        }
    }
    return 0;
}
