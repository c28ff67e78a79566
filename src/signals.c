/* signals.c — turn SIGINT/SIGTERM into a flag polled between operations.
 * The flag is the one piece of process-wide mutable state herd keeps. */
#include "signals.h"

#include <signal.h>
#include <string.h>

static volatile sig_atomic_t caught_signal;

static void signals_on_stop(int sig)
{
    caught_signal = sig;
}

void signals_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = signals_on_stop;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: a blocked read returns EINTR */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int signals_caught(void)
{
    return caught_signal;
}
