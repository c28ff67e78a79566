/* clock.c — local monotonic time and the common clock built on it. */
#include "clock.h"

#include <errno.h>
#include <time.h>

double clock_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
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
