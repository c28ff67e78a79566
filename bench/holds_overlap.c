/* holds_overlap.c — times holds_overlap (src/workload/holds.c), the check
 * rank 0 runs on a lock phase's holds, on made-up holds of two kinds:
 *   block  CLIENTS clients (two ranks' worth) each locking a block of its
 *          own, exclusive, for 100 ms (+-10 %) again and again: all of
 *          them hold at once, none clashes (clients_per_rank = 500,
 *          lock_range = block, lock_hold = 100ms of issue 61);
 *   whole  CLIENTS clients queueing for one exclusive whole-file lock,
 *          1 ms each, in turn: one holder at a time, every grant waited.
 * Usage: holds_overlap CASE N CLIENTS REPEAT. Prints one line: the case,
 * each run's wall seconds, the medians of the wall and of the process's
 * CPU seconds (the steadier of the two on a busy machine), and the
 * figures (the same for every build of the check: bench/holds_overlap.sh
 * compares them). Built by
 * bench/holds_overlap.sh against the working tree's check and an older
 * one; it uses only what both have. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "holds.h"

static double now(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double uniform(double lo, double hi)
{
    return lo + (hi - lo) * ((double)rand() / RAND_MAX);
}

static void make_block(struct hold *h, size_t n, size_t clients)
{
    size_t k = 0;
    for (size_t c = 0; c < clients; c++) {
        double t = uniform(0, 0.1);
        for (size_t i = c; i < n; i += clients, k++) {
            double granted = t + uniform(0, 0.001);
            h[k] = (struct hold){.rank = (int32_t)(c % 2),
                                 .client = (int32_t)(c / 2),
                                 .exclusive = 1,
                                 .asked = t,
                                 .granted = granted,
                                 .released = granted + 0.1 * uniform(0.9, 1.1),
                                 .start = 4096 * (uint64_t)c,
                                 .len = 4096};
            t = h[k].released + uniform(0, 0.002);
        }
    }
}

static void make_whole(struct hold *h, size_t n, size_t clients)
{
    double t = 0;
    for (size_t i = 0; i < n; i++) {
        size_t c = i % clients;
        h[i] = (struct hold){.rank = (int32_t)(c % 2),
                             .client = (int32_t)(c / 2),
                             .exclusive = 1,
                             .asked = i >= clients ? h[i - clients].released : 0,
                             .granted = t + 1e-5,
                             .released = t + 1e-5 + 0.001};
        t = h[i].released;
    }
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc != 5 || (strcmp(argv[1], "block") != 0 && strcmp(argv[1], "whole") != 0)) {
        fprintf(stderr, "usage: %s block|whole N CLIENTS REPEAT\n", argv[0]);
        return 2;
    }
    size_t n = strtoull(argv[2], NULL, 10), clients = strtoull(argv[3], NULL, 10);
    int repeat = atoi(argv[4]);
    struct hold *h = calloc(n ? n : 1, sizeof *h);
    double *took = calloc(repeat > 0 ? (size_t)repeat : 1, sizeof *took);
    double *cpu = calloc(repeat > 0 ? (size_t)repeat : 1, sizeof *cpu);
    if (!h || !took || !cpu || clients == 0 || repeat < 1) {
        fprintf(stderr, "%s: bad arguments or no memory\n", argv[0]);
        return 2;
    }
    srand(61);
    (argv[1][0] == 'b' ? make_block : make_whole)(h, n, clients);
    struct holds_overlap o;
    printf("case=%s n=%zu clients=%zu runs=", argv[1], n, clients);
    for (int r = 0; r < repeat; r++) {
        double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
        holds_overlap(h, n, 2 * 50e-6, &o); /* slack: 50 us of clock error */
        took[r] = now(CLOCK_MONOTONIC) - t0;
        cpu[r] = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
        printf("%s%.4f", r ? "," : "", took[r]);
    }
    qsort(took, (size_t)repeat, sizeof *took, by_value);
    qsort(cpu, (size_t)repeat, sizeof *cpu, by_value);
    printf(" median_s=%.4f cpu_s=%.4f together=%.6f clash=%.6f max_holders=%d waited=%llu\n",
           took[repeat / 2], cpu[repeat / 2], o.together, o.exclusive_clash, o.max_holders,
           (unsigned long long)o.waited);
    free(h);
    free(took);
    free(cpu);
    return 0;
}
