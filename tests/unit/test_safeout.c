/* test_safeout.c — unit tests for safeout.c's later commits, the path the
 * results file takes after every phase: a second commit of the same output
 * replaces the file the first put in place, only while the entry still
 * holds that file; whatever else someone put there is left alone; an entry
 * removed meanwhile is made again; no private file is left behind. */
#include <dirent.h>
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

#include "safeout.h"

static char dir[64];
static char out[128];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/herd-test-safeout-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(out, sizeof out, "%s/run.h5", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void write_text(FILE *f, const void *arg)
{
    fputs(arg, f);
}

static const char *read_text(const char *path)
{
    static char buf[64];
    memset(buf, 0, sizeof buf);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return "(missing)";
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n >= 0 ? buf : "(unreadable)";
}

/* A file of someone else's at dir/name, holding text; its path. */
static const char *plant_file(const char *name, const char *text)
{
    static char path[160];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* Hidden names in the directory: private files left behind (none). */
static int others_in_dir(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        n += e->d_name[0] == '.' && strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    if (d)
        closedir(d);
    return n;
}

static void prepare(struct safeout *o)
{
    char err[512];
    *o = (struct safeout)SAFEOUT_NONE;
    assert_int_equal(safeout_prepare(o, out, out, false, NULL, "a file", err, sizeof err), 0);
}

static void test_second_commit_replaces_the_first(void **state)
{
    (void)state;
    struct safeout o;
    prepare(&o);
    char err[512];
    assert_int_equal(safeout_write(&o, write_text, "one", err, sizeof err), 0);
    struct stat first;
    assert_int_equal(stat(out, &first), 0);
    assert_int_equal(safeout_write(&o, write_text, "two", err, sizeof err), 0);
    assert_string_equal(read_text(out), "two");
    struct stat second;
    assert_int_equal(stat(out, &second), 0);
    assert_true(second.st_ino != first.st_ino); /* a new file, not one written over */
    assert_int_equal(others_in_dir(), 0);
    safeout_remove_made(&o);
    assert_int_equal(access(out, F_OK), -1);
    safeout_close(&o);
}

static void test_a_file_put_there_by_someone_else_stays(void **state)
{
    (void)state;
    struct safeout o;
    prepare(&o);
    char err[512];
    assert_int_equal(safeout_write(&o, write_text, "one", err, sizeof err), 0);
    assert_int_equal(rename(plant_file("theirs", "theirs"), out), 0);
    assert_int_equal(safeout_write(&o, write_text, "two", err, sizeof err), -1);
    assert_non_null(strstr(err, "replaced by something else"));
    assert_string_equal(read_text(out), "theirs");
    assert_int_equal(others_in_dir(), 0);
    safeout_remove_made(&o); /* not ours: stays */
    assert_string_equal(read_text(out), "theirs");
    safeout_close(&o);
}

static void test_a_link_put_there_is_not_followed(void **state)
{
    (void)state;
    struct safeout o;
    prepare(&o);
    char err[512];
    assert_int_equal(safeout_write(&o, write_text, "one", err, sizeof err), 0);
    const char *victim = plant_file("victim", "victim");
    assert_int_equal(unlink(out), 0);
    assert_int_equal(symlink(victim, out), 0);
    assert_int_equal(safeout_write(&o, write_text, "two", err, sizeof err), -1);
    assert_string_equal(read_text(victim), "victim");
    struct stat st;
    assert_int_equal(lstat(out, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(others_in_dir(), 0);
    safeout_close(&o);
}

static void test_a_removed_file_is_made_again(void **state)
{
    (void)state;
    struct safeout o;
    prepare(&o);
    char err[512];
    assert_int_equal(safeout_write(&o, write_text, "one", err, sizeof err), 0);
    assert_int_equal(unlink(out), 0);
    assert_int_equal(safeout_write(&o, write_text, "two", err, sizeof err), 0);
    assert_string_equal(read_text(out), "two");
    /* and it is ours again: the next commit replaces it */
    assert_int_equal(safeout_write(&o, write_text, "three", err, sizeof err), 0);
    assert_string_equal(read_text(out), "three");
    safeout_close(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_second_commit_replaces_the_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_file_put_there_by_someone_else_stays, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_link_put_there_is_not_followed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_removed_file_is_made_again, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
