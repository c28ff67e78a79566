/* pace_peer.c — the plainest open-loop client, the reference for herd's
 * rate schedule in bench/rate_accuracy.sh: one thread offers RATE calls
 * per second for SECONDS, fixed (every 1/RATE from a random offset within
 * the first 1/RATE) or Poisson (exponential gaps of mean 1/RATE), as
 * herd's `arrivals`; it waits for each instant with clock_nanosleep
 * (CLOCK_MONOTONIC, absolute) at a timer slack of 1 ns, as herd's pacing
 * thread does, and then makes the call: one pread of BS bytes of FILE
 * (the next block, wrapping at the end; with FILE "-" no call, the timer
 * alone). A call whose instant came while the previous one was still
 * running is sent at once and counted late, never dropped.
 * Measured as herd defines them (docs/results-format.md, "Offered load"):
 *   lag      send - max(intended instant, end of the previous call): the
 *            wake-up delay of the timer (the machine's own jitter);
 *   service  end - send (the pread);
 *   due      the instants up to the end of the run; calls / due = the
 *            share of the calls due that were sent;
 *   achieved calls / (end of the last call - start).
 * Exact quantiles (every sample sorted), not histogram buckets.
 * SIGTERM or SIGINT ends the run early, with its figures (the scripts run
 * it with FILE "-" beside herd and fio as a probe of the machine's own
 * wake-up delays in the same seconds, and stop it when they are done).
 * Prints one line of KEY=VALUE (seconds). Built by rate_accuracy.sh and
 * rate_vs_fio.sh with cc.
 *   pace_peer RATE fixed|poisson SECONDS FILE|- BS [SEED] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static volatile sig_atomic_t stopped;

static void on_stop(int sig)
{
    (void)sig;
    stopped = 1;
}

static void sleep_until(double t)
{
    struct timespec ts = {.tv_sec = (time_t)t, .tv_nsec = (long)((t - (double)(time_t)t) * 1e9)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0 && !stopped)
        ;
}

static uint64_t rng_state;

/* xorshift64*: a uniform in (0, 1). */
static double uniform(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    uint64_t x = rng_state * 0x2545F4914F6CDD1DULL;
    return ((double)(x >> 11) + 0.5) / 9007199254740992.0;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double quantile(double *v, size_t n, double q)
{
    if (n == 0)
        return NAN;
    size_t i = (size_t)ceil(q * (double)n);
    return v[i == 0 ? 0 : i - 1];
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: pace_peer RATE fixed|poisson SECONDS FILE|- BS [SEED]\n");
        return 2;
    }
    double rate = atof(argv[1]), secs = atof(argv[3]);
    int poisson = strcmp(argv[2], "poisson") == 0;
    size_t bs = (size_t)atol(argv[5]);
    rng_state = argc > 6 ? strtoull(argv[6], NULL, 10) : 88172645463325252ULL;
    if (rng_state == 0)
        rng_state = 1;
    if (rate <= 0 || secs <= 0 || bs == 0 || (!poisson && strcmp(argv[2], "fixed") != 0)) {
        fprintf(stderr, "pace_peer: bad arguments\n");
        return 2;
    }
    int fd = -1;
    off_t size = 0;
    char *buf = malloc(bs);
    if (strcmp(argv[4], "-") != 0) {
        struct stat st;
        fd = open(argv[4], O_RDONLY);
        if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < (off_t)bs) {
            perror(argv[4]);
            return 1;
        }
        size = st.st_size / (off_t)bs * (off_t)bs;
    }
    size_t cap = (size_t)(rate * secs * 1.5) + 1024, n = 0;
    double *lag = malloc(cap * sizeof *lag), *svc = malloc(cap * sizeof *svc);
    if (!buf || !lag || !svc)
        return 1;
    struct sigaction sa = {.sa_handler = on_stop};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    double start = now(), stop = start + secs;
    double next = start + (poisson ? -log(uniform()) / rate : uniform() / rate);
    double ready = start, end = start;
    uint64_t late = 0, due = 0;
    off_t off = 0;
    while (next < stop && n < cap) {
        double intended = next;
        next += poisson ? -log(uniform()) / rate : 1.0 / rate;
        if (intended > ready)
            sleep_until(intended);
        else
            late++;
        if (stopped)
            break;
        double sent = now();
        if (fd >= 0) {
            if (pread(fd, buf, bs, off) != (ssize_t)bs) {
                perror("pread");
                return 1;
            }
            off = off + (off_t)bs >= size ? 0 : off + (off_t)bs;
        }
        end = now();
        lag[n] = sent - (intended > ready ? intended : ready);
        svc[n] = end - sent;
        n++;
        ready = end;
    }
    /* the instants up to the end: those taken, and the ones after them */
    due = n;
    for (double t = next; t <= end; t += poisson ? -log(uniform()) / rate : 1.0 / rate)
        due++;
    qsort(lag, n, sizeof *lag, cmp);
    qsort(svc, n, sizeof *svc, cmp);
    printf("offered_per_s=%.6g achieved_per_s=%.6g calls=%zu due=%llu late=%llu "
           "lag_p50_s=%.9f lag_p99_s=%.9f lag_max_s=%.9f service_p50_s=%.9f service_p99_s=%.9f\n",
           rate, (double)n / (end - start), n, (unsigned long long)due, (unsigned long long)late,
           quantile(lag, n, 0.5), quantile(lag, n, 0.99), n ? lag[n - 1] : NAN,
           quantile(svc, n, 0.5), quantile(svc, n, 0.99));
    return 0;
}
