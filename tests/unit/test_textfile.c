/* test_textfile.c — unit tests for textfile.c: a regular file is read
 * whole into a reusable buffer, at most its limit; a FIFO, a directory or
 * a device is refused at once (no wait for a writer); a descriptor the
 * caller opened (a pipe on standard input) is read to its end. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "textfile.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/herd-test-textfile-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *make_file(const char *name, size_t size)
{
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (size_t i = 0; i < size; i++)
        fputc('a' + (int)(i % 26), f);
    assert_int_equal(fclose(f), 0);
    return path;
}

static void test_reads_whole_files_into_one_buffer(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t cap = 0;
    assert_int_equal(textfile_read(make_file("empty", 0), 100, &buf, &cap), 0);
    assert_string_equal(buf, "");
    /* larger than the first allocation: the buffer grows */
    assert_int_equal(textfile_read(make_file("big", 100000), 100000, &buf, &cap), 100000);
    assert_int_equal(strlen(buf), 100000);
    assert_true(buf[99999] == 'a' + 99999 % 26);
    size_t grown = cap;
    /* the same buffer again, no growth for a smaller file */
    assert_int_equal(textfile_read(make_file("small", 5), 100, &buf, &cap), 5);
    assert_string_equal(buf, "abcde");
    assert_int_equal(cap, grown);
    /* /proc texts have st_size 0 but content */
    assert_true(textfile_read("/proc/self/stat", TEXTFILE_PROC_MAX, &buf, &cap) > 0);
    free(buf);
}

static void test_limit(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t cap = 0;
    assert_int_equal(textfile_read(make_file("ten", 10), 10, &buf, &cap), 10);
    assert_int_equal(textfile_read(make_file("eleven", 11), 10, &buf, &cap), -EFBIG);
    free(buf);
    buf = NULL;
    cap = 0;
    /* a /proc text longer than its limit, whose st_size says 0 */
    assert_int_equal(textfile_read("/proc/self/maps", 8, &buf, &cap), -EFBIG);
    assert_true(cap <= 10);
    free(buf);
}

static void test_refuses_what_is_not_a_regular_file(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t cap = 0;
    char fifo[128];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(textfile_read(fifo, 100, &buf, &cap), -ENOTSUP); /* no wait */
    assert_int_equal(textfile_read(dir, 100, &buf, &cap), -EISDIR);
    assert_int_equal(textfile_read("/dev/zero", 100, &buf, &cap), -ENOTSUP);
    char missing[128];
    snprintf(missing, sizeof missing, "%s/missing", dir);
    assert_int_equal(textfile_read(missing, 100, &buf, &cap), -ENOENT);
    assert_null(buf);
}

/* textfile_read_fd: a pipe (a job on standard input) read to its end,
 * across several writes, and its limit. */
static void test_reads_a_pipe(void **state)
{
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    assert_int_equal(write(fds[1], "[global]\n", 9), 9);
    assert_int_equal(write(fds[1], "target = /x\n", 12), 12);
    close(fds[1]);
    char *buf = NULL;
    size_t cap = 0;
    assert_int_equal(textfile_read_fd(fds[0], 100, &buf, &cap), 21);
    assert_string_equal(buf, "[global]\ntarget = /x\n");
    close(fds[0]);
    assert_int_equal(pipe(fds), 0);
    assert_int_equal(write(fds[1], "0123456789ab", 12), 12);
    close(fds[1]);
    assert_int_equal(textfile_read_fd(fds[0], 10, &buf, &cap), -EFBIG);
    close(fds[0]);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_whole_files_into_one_buffer),
        cmocka_unit_test(test_limit),
        cmocka_unit_test(test_refuses_what_is_not_a_regular_file),
        cmocka_unit_test(test_reads_a_pipe),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
