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

int rpcwait_until(struct rpc_context *rpc, volatile bool *done, double until, double deadline,
                  const char **status)
{
    *status = NULL;
    while (!*done) {
        if (signals_stop_requested()) {
            *status = "RPC_INTERRUPTED";
            return -EINTR;
        }
        double now = clock_mono();
        if (deadline > 0 && now >= deadline) {
            *status = "RPC_TIMEOUT";
            return -ETIMEDOUT;
        }
        if (until > 0 && now >= until)
            return 1;
        double wake = now + RPCWAIT_SLICE_MS / 1000.0;
        wake = deadline > 0 && deadline < wake ? deadline : wake;
        wake = until > 0 && until < wake ? until : wake;
        struct pollfd pfd = {.fd = rpc_get_fd(rpc), .events = (short)rpc_which_events(rpc)};
        int n = fiber_poll_until(&pfd, wake); /* other clients run meanwhile */
        if (n < 0 && errno != EINTR)
            return -errno;
        if (rpc_service(rpc, n > 0 ? pfd.revents : 0) < 0) {
            *status = "RPC_CONNECTION_LOST";
            return -ECONNRESET;
        }
    }
    return 0;
}

int rpcwait(struct rpc_context *rpc, volatile bool *done, double deadline, const char **status)
{
    return rpcwait_until(rpc, done, 0, deadline, status);
}
