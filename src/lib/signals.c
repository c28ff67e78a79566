/* signals.c — turn SIGINT/SIGTERM into a flag polled between operations,
 * and SIGALRM into EINTR for a blocking call with a time limit. These
 * flags (the first stop signal, how many came, whether the alarm fired)
 * and the installed stop check (how a wait hears another rank's stop) are
 * herd's only process-wide mutable state besides the parsed job and the
 * test hooks that clock.c reads once. */
#include "signals.h"

#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <unistd.h>

static volatile sig_atomic_t caught_signal;
static volatile sig_atomic_t caught_count;
static volatile sig_atomic_t alarm_fired;
static bool (*stop_check)(void *arg);
static void *stop_check_arg;

static void signals_on_stop(int sig)
{
    if (!caught_signal)
        caught_signal = sig; /* the first one names the stop */
    caught_count++;
}

static void signals_on_alarm(int sig)
{
    (void)sig;
    alarm_fired = 1;
}

/* No SA_RESTART: a blocked read, lock or sleep returns EINTR. */
static void signals_handle(int sig, void (*handler)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

void signals_install(void)
{
    signals_handle(SIGINT, signals_on_stop);
    signals_handle(SIGTERM, signals_on_stop);
    signals_handle(SIGALRM, signals_on_alarm);
    /* A closed stdout or stderr (the launcher gone) or a reset socket is
     * an EPIPE to handle, never a reason to die before the results are
     * written. */
    signal(SIGPIPE, SIG_IGN);
}

void signals_follow_parent(void)
{
    pid_t parent = getppid();
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) /* it died before the line above */
        raise(SIGTERM);
}

int signals_caught(void)
{
    return caught_signal;
}

unsigned signals_count(void)
{
    return (unsigned)caught_count;
}

void signals_stop_check(bool (*check)(void *arg), void *arg)
{
    stop_check = check;
    stop_check_arg = arg;
}

bool signals_stop_requested(void)
{
    return stop_check ? stop_check(stop_check_arg) : caught_signal != 0;
}

/* After the first alarm, it repeats every ALARM_REPEAT_US until disarmed:
 * an alarm that fires before the call starts to block (the rank was
 * preempted in between) must not let the call wait forever. */
#define ALARM_REPEAT_US 10000

void signals_alarm_arm(double seconds)
{
    alarm_fired = 0;
    struct itimerval it = {
        {0, ALARM_REPEAT_US},
        {(time_t)seconds, (suseconds_t)((seconds - (double)(time_t)seconds) * 1e6)}};
    if (it.it_value.tv_sec == 0 && it.it_value.tv_usec == 0)
        it.it_value.tv_usec = 1;
    setitimer(ITIMER_REAL, &it, NULL);
}

bool signals_alarm_fired(void)
{
    return alarm_fired != 0;
}

bool signals_alarm_disarm(void)
{
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    return alarm_fired != 0;
}
