/* test_summary.c — unit tests for summary.c's per-client figures: with
 * clients_per_rank = K the rows are one per client and iteration, so a lock
 * phase's waits are a share of the clients' time (never of the ranks'),
 * and a meta phase's files are per client; the server table's legend
 * says what srv cpu covers (the host's CPU shared with the client ranks on
 * it) and how the sampled host is found. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "job.h"
#include "summary.h"

enum { RANKS = 2, K = 4, CLIENTS = RANKS * K };

/* A one-phase job of kind (its keys in extra), loaded as herd loads it,
 * with clients_per_rank set to k (as libnfs jobs set it). */
static void job_of(struct job *job, const char *kind, const char *extra, int64_t k)
{
    char text[512], err[JOB_ERR_MAX];
    snprintf(text, sizeof text, "[global]\ntarget = /tmp\n[p]\nkind = %s\n%s", kind, extra);
    if (job_load("test.ini", text, NULL, 0, job, err, sizeof err) < 0)
        fail_msg("job refused: %s", err);
    job->phases[0].clients_per_rank = k;
}

/* The summary's text for one phase line l (its two lines, and the
 * server's table when l has its CPU), srv cpu of cpu_host. */
static char *printed_of(const struct summary_line *l, const struct summary_cpu_host *cpu_host)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    summary_print(f, l, 1, false, cpu_host);
    fclose(f);
    return buf;
}

static char *printed(const struct summary_line *l)
{
    return printed_of(l, NULL);
}

/* RANKS x K clients contend for one lock: client i's row runs from the
 * phase's start for 1 + i/4 s (15 s in all), and one idle row (a client
 * with no work) has no time. The waits (12 s) are 80 % of the clients'
 * time; over the ranks' (2 ranks x the last 2.75 s) they would be 218 %. */
static void test_lock_waits_are_a_share_of_the_clients_time(void **state)
{
    (void)state;
    struct job job;
    job_of(&job, "lock", "count = 3\n", K);
    struct rank_record rows[CLIENTS + 1];
    memset(rows, 0, sizeof rows);
    for (int i = 0; i < CLIENTS; i++) {
        rows[i].rank = i / K;
        rows[i].client = i % K;
        rows[i].t_start = 10.0;
        rows[i].t_end = 10.0 + 1.0 + 0.25 * i;
        rows[i].ops = 6;
        rows[i].grants = 3;
    }
    rows[CLIENTS].rank = RANKS - 1; /* did no work: no time of the clients' */
    rows[CLIENTS].client = K;
    struct phase_summary sum = {.t_start = 10.0,
                                .t_end = 13.0,
                                .status = "ok",
                                .active_ranks = RANKS,
                                .active_clients = CLIENTS};
    sum.overlap.wait_seconds = 12.0;
    sum.overlap.waited = 20;
    struct summary_line l;
    summary_compute(&job.phases[0], &sum, rows, CLIENTS + 1, 0, &l);
    assert_true(fabs(l.client_seconds - 15.0) < 1e-9);
    assert_true(fabs(summary_wait_share(&l) - 0.8) < 1e-12);
    char *text = printed(&l);
    if (!strstr(text, "12.000 s waiting (80% of the clients' time)"))
        fail_msg("no share of the clients' time in:\n%s", text);
    free(text);

    /* No row did work: no share, '-'. */
    summary_compute(&job.phases[0], &sum, rows + CLIENTS, 1, 0, &l);
    assert_true(isnan(summary_wait_share(&l)));
    text = printed(&l);
    assert_non_null(strstr(text, "s waiting (- of the clients' time)"));
    free(text);
    job_free(&job);
}

/* A rank of its own clients (K = 1): the same rule, each rank one client. */
static void test_one_client_per_rank(void **state)
{
    (void)state;
    struct job job;
    job_of(&job, "lock", "count = 3\n", 1);
    struct rank_record rows[RANKS];
    memset(rows, 0, sizeof rows);
    for (int i = 0; i < RANKS; i++) {
        rows[i].rank = i;
        rows[i].t_start = 5.0;
        rows[i].t_end = 7.0;
        rows[i].ops = 2;
        rows[i].grants = 1;
    }
    struct phase_summary sum = {.t_start = 5.0, .t_end = 7.5, .status = "ok"};
    sum.overlap.wait_seconds = 1.0;
    struct summary_line l;
    summary_compute(&job.phases[0], &sum, rows, RANKS, 0, &l);
    assert_true(fabs(summary_wait_share(&l) - 0.25) < 1e-12);
    job_free(&job);
}

/* A meta phase's files are each client's: the echo says per what. */
static void test_meta_files_per_client(void **state)
{
    (void)state;
    for (int64_t k = 1; k <= K; k += K - 1) {
        struct job job;
        job_of(&job, "meta", "files = 7\n", k);
        struct phase_summary sum = {.status = "ok"};
        struct summary_line l;
        summary_compute(&job.phases[0], &sum, NULL, 0, 0, &l);
        char *text = printed(&l);
        const char *want = k > 1 ? "files/client 7" : "files/rank 7";
        if (!strstr(text, want))
            fail_msg("'%s' not in:\n%s", want, text);
        free(text);
        job_free(&job);
    }
}

/* Hosts c01 (I/O ranks 0-2) and srv (I/O ranks 3-4). */
static const struct host_info two_hosts[] = {{.hostname = "c01"}, {.hostname = "srv"}};
static const struct rank_info five_ranks[] = {
    {.rank = 0, .host = 0}, {.rank = 1, .host = 0}, {.rank = 2, .host = 0},
    {.rank = 3, .host = 1}, {.rank = 4, .host = 1},
};

/* The sampled host and its I/O ranks: a monitor rank's host (one without
 * I/O ranks has 0); a node_exporter on a loopback address is on I/O rank
 * 0's host (hosts[0]), one named as a run's host (by short name too) is on
 * it, any other one is not known (-1), whatever the monitor rank. */
static void test_cpu_host_counts_the_client_ranks_on_it(void **state)
{
    (void)state;
    static const struct {
        const char *url, *sampler, *name;
        int client_ranks;
    } cases[] = {
        {"", "srv", "srv", 2},
        {"", "c01", "c01", 3},
        {"", "mon", "mon", 0},
        {"", "", "", -1},
        {"http://127.0.0.1:9100/metrics", "", "c01", 3},
        {"http://127.3.4.5:9100/metrics", "", "c01", 3},
        {"http://LocalHost:9100/metrics", "srv", "c01", 3},
        {"https://[::1]:9100/metrics", "", "c01", 3},
        {"http://srv.example.org:9100/metrics", "", "srv", 2},
        {"http://srv/metrics", "", "srv", 2},
        {"http://10.1.2.3:9100/metrics", "srv", "", -1},
        {"http://fileserver:9100/metrics", "srv", "", -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct summary_cpu_host h;
        summary_cpu_host_find(cases[i].url, cases[i].sampler, two_hosts, 2, five_ranks, 5, &h);
        if (strcmp(h.name, cases[i].name) != 0 || h.client_ranks != cases[i].client_ranks)
            fail_msg("url '%s', sampler '%s': host '%s' with %d client ranks, want '%s' with %d",
                     cases[i].url, cases[i].sampler, h.name, h.client_ranks, cases[i].name,
                     cases[i].client_ranks);
    }
}

/* The server table's legend: srv cpu is the host's CPU shared with N
 * client ranks when N > 0, the server's CPUs otherwise (0, or not known). */
static void test_cpu_legend_says_what_srv_cpu_covers(void **state)
{
    (void)state;
    struct job job;
    job_of(&job, "write", "", 1);
    struct phase_summary sum = {.t_start = 1.0, .t_end = 2.0, .status = "ok"};
    struct summary_line l;
    summary_compute(&job.phases[0], &sum, NULL, 0, 0, &l);
    l.server = (struct phase_server){.cpu_mean = 0.5,
                                     .cpu_max = 0.75,
                                     .nfsd_threads = NAN,
                                     .proc_cpu = NAN,
                                     .proc_thread_max = NAN,
                                     .nfsd_packets_per_s = NAN,
                                     .nfsd_woken_share = NAN,
                                     .covered = 1};
    static const struct {
        struct summary_cpu_host host;
        const char *want;
    } cases[] = {
        {{"srv", 2},
         "srv cpu = busy share of all the CPUs of host srv, shared with 2 client "
         "ranks\nof this run (the server's alone only where no client runs on its "
         "host);\n"},
        {{"srv", 1}, "shared with 1 client rank\n"},
        {{"srv", 0}, "srv cpu = busy share of all the server's CPUs;"},
        {{"", -1}, "srv cpu = busy share of all the server's CPUs;"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *text = printed_of(&l, &cases[i].host);
        if (!strstr(text, cases[i].want) || !strstr(text, "50.0%") ||
            (cases[i].host.client_ranks <= 0) != !strstr(text, "shared with"))
            fail_msg("'%s' not in:\n%s", cases[i].want, text);
        free(text);
    }
    char *text = printed(&l);
    assert_non_null(strstr(text, "srv cpu = busy share of all the server's CPUs;"));
    free(text);
    job_free(&job);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lock_waits_are_a_share_of_the_clients_time),
        cmocka_unit_test(test_one_client_per_rank),
        cmocka_unit_test(test_meta_files_per_client),
        cmocka_unit_test(test_cpu_host_counts_the_client_ranks_on_it),
        cmocka_unit_test(test_cpu_legend_says_what_srv_cpu_covers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
