/* test_errtab.c — unit tests for errtab.c: counting by (op, errno), sign
 * of errno ignored, first path and time kept, long paths truncated, and
 * growth past the first allocation. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "errtab.h"

static void test_counts(void **state)
{
    (void)state;
    struct errtab t;
    errtab_init(&t);
    assert_int_equal(errtab_count(&t, OP_WRITE, EIO), 0);
    errtab_add(&t, 0, OP_WRITE, EIO, "/a", 1.0);
    errtab_add(&t, 0, OP_WRITE, EIO, "/b", 2.0);
    errtab_add(&t, 0, OP_WRITE, ENOSPC, "/c", 3.0);
    errtab_add(&t, 0, OP_OPEN, EIO, "/d", 4.0);
    assert_int_equal(errtab_count(&t, OP_WRITE, EIO), 2);
    assert_int_equal(errtab_count(&t, OP_WRITE, ENOSPC), 1);
    assert_int_equal(errtab_count(&t, OP_OPEN, EIO), 1);
    assert_int_equal(errtab_count(&t, OP_OPEN, ENOSPC), 0);
    assert_int_equal(errtab_count(&t, OP_READ, EIO), 0);
    assert_int_equal(t.n, 3);
    assert_int_equal(t.total, 4);

    errtab_clear(&t);
    assert_int_equal(t.n, 0);
    assert_int_equal(t.total, 0);
    assert_int_equal(errtab_count(&t, OP_WRITE, EIO), 0);
    errtab_add(&t, 0, OP_WRITE, EIO, "/e", 5.0);
    assert_int_equal(errtab_count(&t, OP_WRITE, EIO), 1);
    assert_string_equal(t.entries[0].first_path, "/e");
    errtab_free(&t);
    assert_null(t.entries);
    assert_int_equal(t.n, 0);
    errtab_free(&t); /* twice is harmless */
}

static void test_sign(void **state)
{
    (void)state;
    struct errtab t;
    errtab_init(&t);
    errtab_add(&t, 1, OP_FSYNC, -EIO, "/x", 1.0);
    errtab_add(&t, 1, OP_FSYNC, EIO, "/y", 2.0);
    assert_int_equal(t.n, 1);
    assert_int_equal(t.entries[0].err, EIO);
    assert_int_equal(errtab_count(&t, OP_FSYNC, EIO), 2);
    assert_int_equal(errtab_count(&t, OP_FSYNC, -EIO), 2);
    errtab_free(&t);
}

static void test_first_kept(void **state)
{
    (void)state;
    struct errtab t;
    errtab_init(&t);
    errtab_add(&t, 7, OP_READ, ESTALE, "/run/first", 10.5);
    errtab_add(&t, 7, OP_READ, ESTALE, "/run/second", 11.5);
    errtab_add(&t, 7, OP_READ, ESTALE, NULL, 12.5);
    assert_int_equal(t.n, 1);
    const struct err_entry *e = &t.entries[0];
    assert_int_equal(e->rank, 7);
    assert_int_equal(e->op, OP_READ);
    assert_int_equal(e->err, ESTALE);
    assert_int_equal(e->count, 3);
    assert_string_equal(e->first_path, "/run/first");
    assert_true(e->first_time == 10.5);

    errtab_add(&t, 7, OP_STAT, ENOENT, NULL, 1.0); /* no path: empty */
    assert_string_equal(t.entries[1].first_path, "");
    errtab_free(&t);
}

static void test_long_path(void **state)
{
    (void)state;
    struct errtab t;
    char path[3 * ERRTAB_PATH_MAX];
    memset(path, 'p', sizeof(path) - 1);
    path[sizeof(path) - 1] = '\0';
    errtab_init(&t);
    errtab_add(&t, 0, OP_MKDIR, EACCES, path, 0.0);
    const struct err_entry *e = &t.entries[0];
    assert_int_equal(strlen(e->first_path), ERRTAB_PATH_MAX - 1);
    assert_memory_equal(e->first_path, path, ERRTAB_PATH_MAX - 1);

    /* exactly fitting */
    path[ERRTAB_PATH_MAX - 1] = '\0';
    errtab_add(&t, 0, OP_RMDIR, EACCES, path, 0.0);
    assert_string_equal(t.entries[1].first_path, path);
    errtab_free(&t);
}

/* The protocol's status is part of the key: one errno from two statuses
 * is two entries; errtab_count sums them; a long status is cut. */
static void test_status(void **state)
{
    (void)state;
    struct errtab t;
    errtab_init(&t);
    errtab_add_status(&t, 2, OP_LOCK, ENOLCK, "NLM4_DENIED_NOLOCKS", "/l", 1.0);
    errtab_add_status(&t, 2, OP_LOCK, ENOLCK, "NLM4_DENIED_GRACE_PERIOD", "/l", 2.0);
    errtab_add_status(&t, 2, OP_LOCK, ENOLCK, "NLM4_DENIED_GRACE_PERIOD", "/l", 3.0);
    errtab_add(&t, 2, OP_LOCK, ENOLCK, "/l", 4.0);
    assert_int_equal(t.n, 3);
    assert_int_equal(errtab_count(&t, OP_LOCK, ENOLCK), 4);
    assert_string_equal(t.entries[0].status, "NLM4_DENIED_NOLOCKS");
    assert_string_equal(t.entries[1].status, "NLM4_DENIED_GRACE_PERIOD");
    assert_int_equal(t.entries[1].count, 2);
    assert_true(t.entries[1].first_time == 2.0);
    assert_string_equal(t.entries[2].status, "");
    char longer[100];
    memset(longer, 'S', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    errtab_add_status(&t, 2, OP_LOCK, EIO, longer, NULL, 5.0);
    assert_int_equal(strlen(t.entries[3].status), ERRTAB_STATUS_MAX - 1);
    errtab_add_status(&t, 2, OP_LOCK, EIO, longer, NULL, 6.0); /* same, cut the same way */
    assert_int_equal(t.n, 4);
    errtab_free(&t);
}

static void test_growth(void **state)
{
    (void)state;
    struct errtab t;
    char path[64];
    errtab_init(&t);
    for (int round = 0; round < 3; round++)
        for (int op = 0; op < OP_COUNT; op++)
            for (int err = 1; err <= 40; err++) {
                snprintf(path, sizeof(path), "/f/%d/%d/%d", round, op, err);
                errtab_add(&t, 3, (enum op)op, round % 2 ? -err : err, path, round * 100.0 + op);
            }
    assert_int_equal(t.n, OP_COUNT * 40);
    assert_true(t.cap >= t.n);
    assert_int_equal(t.total, 3 * OP_COUNT * 40);
    for (int op = 0; op < OP_COUNT; op++)
        for (int err = 1; err <= 40; err++)
            assert_int_equal(errtab_count(&t, (enum op)op, err), 3);
    /* first path and time survive the reallocations */
    for (size_t i = 0; i < t.n; i++) {
        const struct err_entry *e = &t.entries[i];
        snprintf(path, sizeof(path), "/f/0/%d/%d", e->op, e->err);
        assert_string_equal(e->first_path, path);
        assert_true(e->first_time == (double)e->op);
        assert_int_equal(e->count, 3);
    }
    errtab_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),     cmocka_unit_test(test_sign),
        cmocka_unit_test(test_first_kept), cmocka_unit_test(test_long_path),
        cmocka_unit_test(test_growth),     cmocka_unit_test(test_status),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
