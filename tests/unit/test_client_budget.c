/* test_client_budget.c — what a libnfs client takes and the rules built
 * on it: the memory estimate for fixed and probed windows
 * (libnfs_budget.c), the refusal that names settings that fit and that do
 * fit when tried (clientfit.c), and a connect that finds no descriptor
 * left failing with EMFILE, this host's error, not the server's
 * ECONNREFUSED (localerr.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "backend.h"
#include "clientfit.h"
#include "job.h"
#include "localerr.h"

#define KIB 1024ull
#define MIB (1024ull * 1024)
/* libnfs_budget.c's own state per client, and libnfs's room per WRITE. */
#define STATE (164 * KIB)
#define PDU (4 * KIB)

static struct job job;

static void load(const char *text)
{
    char err[JOB_ERR_MAX];
    if (job_load("test.ini", text, NULL, 0, &job, err, sizeof err) < 0)
        fail_msg("%s", err);
}

static int teardown(void **state)
{
    (void)state;
    job_free(&job);
    return 0;
}

static uint64_t memory(int phase, const struct client_tune *tune)
{
    return backend_find("libnfs")->client_memory(&job, phase, tune);
}

#define GLOBAL "[global]\nbackend = libnfs\ntarget = nfs://127.0.0.1/export\nclients_per_rank = 8\n"

/* A fixed window: the stream's window + 1 slots and libnfs's copy of each
 * WRITE in flight; reads: 2 x window + 1 READs of rsize ahead and the
 * caller's block. */
static void test_fixed_window(void **state)
{
    (void)state;
    load(GLOBAL "nfs_inflight = 1\n[w]\nkind = write\nfile_size = 16M\n"
                "[r]\nkind = read\nfile_size = 16M\nverify = yes\n");
    assert_int_equal(memory(0, NULL), STATE + 2 * MIB + (MIB + PDU));
    assert_int_equal(memory(1, NULL), STATE + 3 * MIB + MIB);
    struct client_tune four = {.inflight = 4};
    assert_int_equal(memory(0, &four), STATE + 5 * MIB + 4 * (MIB + PDU));
    assert_int_equal(memory(1, &four), STATE + 9 * MIB + MIB);
    struct client_tune small = {.block_size = 64 * KIB};
    assert_int_equal(memory(0, &small), STATE + 2 * 64 * KIB + (64 * KIB + PDU));
}

/* A window never holds more RPCs than the file has; a meta phase of empty
 * files holds the client's state only. */
static void test_file_and_kind_bound_it(void **state)
{
    (void)state;
    load(GLOBAL "nfs_inflight = 8\n[w]\nkind = write\nfile_size = 2M\n"
                "[m]\nkind = meta\nfiles = 100\n");
    assert_int_equal(memory(0, NULL), STATE + 2 * MIB + 2 * (MIB + PDU));
    assert_int_equal(memory(1, NULL), STATE);
}

/* nfs_inflight = 0: the probe's window grows with the replies, across
 * phases (1 MiB RPCs: a ceiling of 4). 8 WRITEs stay at window 1. */
static void test_probed_window_grows_with_the_run(void **state)
{
    (void)state;
    load(GLOBAL "[a]\nkind = write\nfile_size = 8M\n[b]\nkind = write\nfile_size = 64M\n");
    assert_int_equal(memory(0, NULL), STATE + 2 * MIB + (MIB + PDU));
    assert_int_equal(memory(1, NULL), STATE + 5 * MIB + 4 * (MIB + PDU));
}

/* The refusal names the nearest settings that fit, and each does. */
static void test_refusal_names_settings_that_fit(void **state)
{
    (void)state;
    load(GLOBAL "nfs_inflight = 16\n[w]\nkind = write\nfile_size = 64M\n");
    uint64_t each = memory(0, NULL); /* 33 RPCs' buffers */
    uint64_t mem = 2 * 8 * 10 * MIB; /* half: 8 clients of 10 MiB */
    char err[JOB_ERR_MAX];
    assert_int_equal(clientfit_memory(&job, 1, mem, "this host", err, sizeof err), -ENOMEM);
    if (!strstr(err, "key 'clients_per_rank'") || !strstr(err, "more than half"))
        fail_msg("%s", err);
    char *at = strstr(err, "nfs_inflight = ");
    assert_non_null(at);
    struct client_tune tune = {.inflight = strtoll(at + strlen("nfs_inflight = "), NULL, 10)};
    assert_true(tune.inflight >= 1 && tune.inflight < 16);
    assert_true(8 * memory(0, &tune) <= mem / 2);
    tune.inflight *= 2; /* the nearest: twice as many no longer fits */
    assert_true(8 * memory(0, &tune) > mem / 2);
    at = strstr(err, "clients_per_rank = ");
    assert_non_null(at);
    long long k = strtoll(at + strlen("clients_per_rank = "), NULL, 10);
    assert_true(k >= 2 && k < 8 && (uint64_t)k * each <= mem / 2);
    assert_true((uint64_t)(k + 1) * each > mem / 2);
    /* Two ranks on the host need twice the memory: 1 rank of it fits. */
    assert_int_equal(clientfit_memory(&job, 1, 2 * 8 * each, "this host", err, sizeof err), 0);
    assert_int_equal(clientfit_memory(&job, 2, 2 * 8 * each, "this host", err, sizeof err),
                     -ENOMEM);
    assert_non_null(strstr(err, "x 2 ranks on this host"));
}

/* Descriptors: a socket a client, two where a lock phase runs. */
static void test_descriptors(void **state)
{
    (void)state;
    load(GLOBAL "[w]\nkind = write\n");
    assert_int_equal(clientfit_fds_need(&job, 10), 10 + CLIENTFIT_FDS_LATER + 8);
    job_free(&job);
    load(GLOBAL "[l]\nkind = lock\n");
    assert_int_equal(clientfit_fds_need(&job, 10), 10 + CLIENTFIT_FDS_LATER + 16);
}

/* No descriptor left: the mount's socket cannot be opened, and the
 * connect says EMFILE (libnfs 4.0 says EIO, which read as a server that
 * did not answer: ECONNREFUSED). */
static void test_no_descriptor_is_local(void **state)
{
    (void)state;
    load(GLOBAL "[w]\nkind = write\n");
    const struct backend_ops *be = backend_find("libnfs");
    struct rlimit was, now;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &was), 0);
    int lowest = open("/dev/null", O_RDONLY); /* the next descriptor's number */
    assert_true(lowest >= 0);
    close(lowest);
    now = was;
    now.rlim_cur = (rlim_t)lowest; /* a descriptor's number must lie below the limit */
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &now), 0);
    void *ctx = NULL;
    int rc = be->connect(job.phases[0].target, &job.phases[0], "test-c0", &ctx);
    int again = localerr_of("Failed to open socket");
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &was), 0);
    assert_int_equal(rc, -EMFILE);
    assert_int_equal(again, -EMFILE);
}

static void test_local_messages(void **state)
{
    (void)state;
    assert_int_equal(localerr_of(NULL), 0);
    assert_int_equal(localerr_of("RPC error: Connection refused"), 0);
    assert_int_equal(localerr_of("Out of memory: Failed to allocate pdu structure"), -ENOMEM);
    /* A socket opens now: the failure that was is taken for EMFILE. */
    assert_int_equal(localerr_of("Failed to start connection. Failed to open socket"), -EMFILE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_fixed_window, teardown),
        cmocka_unit_test_teardown(test_file_and_kind_bound_it, teardown),
        cmocka_unit_test_teardown(test_probed_window_grows_with_the_run, teardown),
        cmocka_unit_test_teardown(test_refusal_names_settings_that_fit, teardown),
        cmocka_unit_test_teardown(test_descriptors, teardown),
        cmocka_unit_test_teardown(test_no_descriptor_is_local, teardown),
        cmocka_unit_test(test_local_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
