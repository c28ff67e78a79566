/* signals.h — SIGINT/SIGTERM become a flag that workloads poll between
 * operations, so a stop request ends the run cleanly with results kept;
 * and a one-shot alarm that cuts a blocking call short (lock_timeout). */
#ifndef HERD_SIGNALS_H
#define HERD_SIGNALS_H

#include <stdbool.h>

void signals_install(void);
/* A rank must not outlive its launcher: when the parent process (mpirun,
 * orted, slurmstepd) dies, this process gets SIGTERM and stops as on any
 * stop signal (results written, run directory given back). */
void signals_follow_parent(void);
int signals_caught(void);     /* the first stop signal caught, or 0 */
unsigned signals_count(void); /* how many stop signals were caught */

/* Whether a waiting call (rpcwait, a libnfs mount) should give up: as the
 * check installed with signals_stop_check says (runner_stop's: a stop,
 * here or from another rank, in the run's current stage, so that the
 * clean-up after a stop still gets its calls through); without one, a
 * stop signal caught here. NULL removes the check. The check runs on
 * whichever thread asks. */
void signals_stop_check(bool (*check)(void *arg), void *arg);
bool signals_stop_requested(void);

/* Interrupt the calling process's next blocking call (it returns EINTR)
 * after `seconds`; disarm returns whether the alarm went off. */
void signals_alarm_arm(double seconds);
bool signals_alarm_disarm(void);
bool signals_alarm_fired(void); /* the armed alarm went off (still armed) */

#endif
