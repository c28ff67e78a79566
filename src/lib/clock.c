/* clock.c — local monotonic time and the common clock built on it.
 *
 * Test hook: HERD_TEST_CLOCK_SHIFT=SECONDS in the environment (read once,
 * at the first reading) adds SECONDS to every CLOCK_MONOTONIC reading of
 * this process, as if its clock were that far ahead of the other ranks'.
 * The integration tests (tests/integration/test_clock.py) use it to inject
 * a known offset between ranks on one host; it is not for production use.
 * Waits outside this file that convert to the real clock themselves (the
 * monitor's sampler) wait SECONDS too long under it: do not combine the
 * hook with monitor ranks.
 * Invariant: clock_mono() - clock_shift is the real CLOCK_MONOTONIC. */
#include "clock.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static double clock_shift; /* seconds; 0 unless the test hook is set */
static pthread_once_t clock_shift_once = PTHREAD_ONCE_INIT;

static void clock_read_shift(void)
{
    const char *s = getenv("HERD_TEST_CLOCK_SHIFT");
    char *end;
    if (s && *s) {
        double v = strtod(s, &end);
        if (*end == '\0')
            clock_shift = v;
    }
}

double clock_mono(void)
{
    pthread_once(&clock_shift_once, clock_read_shift);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + clock_shift;
}

double clock_now(const struct clock *c)
{
    return clock_mono() - c->base;
}

void clock_sleep_until(const struct clock *c, double t)
{
    double local = t + c->base;
    if (local <= clock_mono())
        return;
    local -= clock_shift; /* clock_nanosleep wants the real clock */
    struct timespec ts;
    ts.tv_sec = (time_t)local;
    ts.tv_nsec = (long)((local - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}
