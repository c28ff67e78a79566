/* test_summary.c — unit tests for summary.c's per-client figures: with
 * clients_per_rank = K the rows are one per client and iteration, so a lock
 * phase's waits are a share of the clients' time (never of the ranks'),
 * and a meta phase's files are per client. */
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
#include "registry.h"
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

/* The summary's text for one phase line l (its two lines). */
static char *printed(const struct summary_line *l)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    summary_print(f, l, 1, false);
    fclose(f);
    return buf;
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

int main(void)
{
    registry_install();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lock_waits_are_a_share_of_the_clients_time),
        cmocka_unit_test(test_one_client_per_rank),
        cmocka_unit_test(test_meta_files_per_client),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
