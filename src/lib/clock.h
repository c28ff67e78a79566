/* clock.h — herd's common clock: seconds on rank 0's monotonic clock since
 * the run's epoch. Each rank holds the base that maps its own monotonic
 * clock onto it (measured by clocksync.c at start-up). */
#ifndef HERD_CLOCK_H
#define HERD_CLOCK_H

struct clock {
    double base;  /* common = local monotonic - base */
    double error; /* bound on |offset error|, seconds (half the best RTT) */
};

double clock_mono(void);                 /* local CLOCK_MONOTONIC, s */
double clock_now(const struct clock *c); /* common clock, s */
/* Sleep until the common clock reads t; returns at once if already past. */
void clock_sleep_until(const struct clock *c, double t);

#endif
