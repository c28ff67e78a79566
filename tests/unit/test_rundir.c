/* test_rundir.c — unit tests for rundir.c's check that a rank sees the
 * run directory another rank made (rundir_owner, rundir_seen), on the
 * POSIX backend over two temporary targets, "here" and "elsewhere" (the
 * same target path on a host where it is another directory): the run
 * directory made here is seen here (its lock file's token read back);
 * elsewhere, a missing one is ENOENT, one of the same name made by
 * another run (another token) is ESTALE, a file at its name ENOTDIR;
 * with no lock file (a run that started unlocked) only the directory
 * is asked for. Each refusal's line names the run directory. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend.h"
#include "rundir.h"

#define RUNDIR "herd-t"

struct fixture {
    char top[64];
    char here[96];
    char elsewhere[96];
    const struct backend_ops *be;
    void *ctx_here;
    void *ctx_elsewhere;
    char owner[RUNDIR_OWNER_MAX];
    char err[512];
};

static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    snprintf(fx->top, sizeof fx->top, "/tmp/herd-test-rundir-XXXXXX");
    assert_non_null(mkdtemp(fx->top));
    snprintf(fx->here, sizeof fx->here, "%s/here", fx->top);
    snprintf(fx->elsewhere, sizeof fx->elsewhere, "%s/elsewhere", fx->top);
    assert_int_equal(mkdir(fx->here, 0755), 0);
    assert_int_equal(mkdir(fx->elsewhere, 0755), 0);
    fx->be = backend_find("posix");
    assert_non_null(fx->be);
    assert_int_equal(fx->be->connect(fx->here, NULL, NULL, &fx->ctx_here), 0);
    assert_int_equal(fx->be->connect(fx->elsewhere, NULL, NULL, &fx->ctx_elsewhere), 0);
    rundir_owner(fx->owner, sizeof fx->owner, "t", "node1");
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    fx->be->disconnect(fx->ctx_here);
    fx->be->disconnect(fx->ctx_elsewhere);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx->top);
    assert_int_equal(system(cmd), 0);
    free(fx);
    return 0;
}

/* rundir_open of RUNDIR under ctx with owner: made and locked. */
static void open_rundir(struct fixture *fx, void *ctx, const char *owner)
{
    bool created;
    assert_int_equal(
        rundir_open(fx->be, ctx, RUNDIR, false, owner, &created, fx->err, sizeof fx->err), 0);
    assert_true(created);
}

static void test_owner_has_a_fresh_token(void **state)
{
    struct fixture *fx = *state;
    char other[RUNDIR_OWNER_MAX];
    rundir_owner(other, sizeof other, "t", "node1");
    char first_line[128];
    snprintf(first_line, sizeof first_line, "run t, host node1, pid %ld\ntoken ", (long)getpid());
    assert_memory_equal(fx->owner, first_line, strlen(first_line));
    assert_int_equal(strlen(fx->owner), strlen(first_line) + 16 + 1);
    assert_string_not_equal(fx->owner, other);
}

static void test_seen_where_it_was_made(void **state)
{
    struct fixture *fx = *state;
    open_rundir(fx, fx->ctx_here, fx->owner);
    assert_int_equal(rundir_seen(fx->be, fx->ctx_here, RUNDIR, fx->owner, fx->err, sizeof fx->err),
                     0);
}

static void test_missing_elsewhere(void **state)
{
    struct fixture *fx = *state;
    open_rundir(fx, fx->ctx_here, fx->owner);
    assert_int_equal(
        rundir_seen(fx->be, fx->ctx_elsewhere, RUNDIR, fx->owner, fx->err, sizeof fx->err),
        -ENOENT);
    assert_string_equal(fx->err, RUNDIR ": No such file or directory");
}

static void test_another_of_that_name_elsewhere(void **state)
{
    struct fixture *fx = *state;
    open_rundir(fx, fx->ctx_here, fx->owner);
    char theirs[RUNDIR_OWNER_MAX];
    rundir_owner(theirs, sizeof theirs, "t", "node1");
    open_rundir(fx, fx->ctx_elsewhere, theirs); /* the same run id, host, pid: another token */
    assert_int_equal(
        rundir_seen(fx->be, fx->ctx_elsewhere, RUNDIR, fx->owner, fx->err, sizeof fx->err),
        -ESTALE);
    assert_non_null(strstr(fx->err, RUNDIR " is another directory of that name"));
}

static void test_a_file_at_its_name_elsewhere(void **state)
{
    struct fixture *fx = *state;
    struct backend_file *f;
    assert_int_equal(
        fx->be->open(fx->ctx_elsewhere, RUNDIR, BACKEND_WRITE | BACKEND_CREATE | BACKEND_EXCL, &f),
        0);
    assert_int_equal(fx->be->close(fx->ctx_elsewhere, f), 0);
    assert_int_equal(
        rundir_seen(fx->be, fx->ctx_elsewhere, RUNDIR, fx->owner, fx->err, sizeof fx->err),
        -ENOTDIR);
}

static void test_unlocked_asks_for_the_directory_only(void **state)
{
    struct fixture *fx = *state;
    assert_int_equal(fx->be->mkdir(fx->ctx_here, RUNDIR), 0);
    assert_int_equal(rundir_seen(fx->be, fx->ctx_here, RUNDIR, "", fx->err, sizeof fx->err), 0);
    assert_int_equal(rundir_seen(fx->be, fx->ctx_elsewhere, RUNDIR, "", fx->err, sizeof fx->err),
                     -ENOENT);
    /* with a lock file expected, a directory without one is not seen */
    assert_int_equal(rundir_seen(fx->be, fx->ctx_here, RUNDIR, fx->owner, fx->err, sizeof fx->err),
                     -ENOENT);
    assert_string_equal(fx->err, RUNDIR "/" RUNDIR_LOCK ": No such file or directory");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_owner_has_a_fresh_token, setup, teardown),
        cmocka_unit_test_setup_teardown(test_seen_where_it_was_made, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_elsewhere, setup, teardown),
        cmocka_unit_test_setup_teardown(test_another_of_that_name_elsewhere, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_file_at_its_name_elsewhere, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unlocked_asks_for_the_directory_only, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
