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
#include "fiber.h"
#include "signals.h"

#define RPCWAIT_SLICE_MS 100 /* rpc_service runs at least this often (its timeouts) */

double rpcwait_deadline(int timeout_ms)
{
    return timeout_ms > 0 ? clock_mono() + timeout_ms / 1000.0 : 0;
}

/* How long the next poll may sleep: a slice, or less to meet the deadline. */
static int rpcwait_slice_ms(double deadline)
{
    if (deadline <= 0)
        return RPCWAIT_SLICE_MS;
    double left_ms = (deadline - clock_mono()) * 1000.0 + 1;
    return left_ms < RPCWAIT_SLICE_MS ? (left_ms > 0 ? (int)left_ms : 0) : RPCWAIT_SLICE_MS;
}

int rpcwait(struct rpc_context *rpc, volatile bool *done, double deadline, const char **status)
{
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
        int n = fiber_poll(&pfd, rpcwait_slice_ms(deadline)); /* other clients run meanwhile */
        if (n < 0 && errno != EINTR)
            return -errno;
        if (rpc_service(rpc, n > 0 ? pfd.revents : 0) < 0) {
            *status = "RPC_CONNECTION_LOST";
            return -ECONNRESET;
        }
    }
    return 0;
}
