/* test_jobtext.c — a job file's text before parsing (jobtext.c, through
 * job_load): ${VAR} is a value and never new lines, keys or comments,
 * comments are the same inside and outside include lines, and errors name
 * the physical line of the file that has them; a job path naming a
 * descriptor is the process's own only where the shell gave it. */
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
#include <unistd.h>

#include "job.h"
#include "jobtext.h"

static char dir[] = "/tmp/herd-test-jobtext-XXXXXX";
static char err[JOB_ERR_MAX];
static struct job job;

static int dir_make(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int dir_remove(void **state)
{
    (void)state;
    char path[128];
    for (const char *const *name = (const char *const[]){"v.ini", "site.ini", NULL}; *name;
         name++) {
        snprintf(path, sizeof path, "%s/%s", dir, *name);
        unlink(path);
    }
    return rmdir(dir);
}

/* DIR/name holds text; its path, in a static buffer. */
static const char *file_put(const char *name, const char *text)
{
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
    return path;
}

/* Load DIR/v.ini holding text, with --set arguments. */
static int load_sets(const char *text, char *const *sets, int nsets)
{
    return job_load(file_put("v.ini", text), NULL, sets, nsets, &job, err, sizeof err);
}

static int load(const char *text)
{
    return load_sets(text, NULL, 0);
}

/* The load of text fails with one line that holds every expected piece. */
static void load_refused(const char *text, const char *where, const char *what)
{
    assert_int_equal(load(text), -1);
    assert_null(strchr(err, '\n'));
    if (!strstr(err, where) || !strstr(err, what))
        fail_msg("error '%s' lacks '%s' or '%s'", err, where, what);
}

/* A variable that holds a new section and keys is refused: no phase, no
 * keep, no run_id comes from it, and the error names it and its line. */
static void test_value_adds_no_lines(void **state)
{
    (void)state;
    const char *text = "[global]\ntarget = ${HERD_TEST_T}\n[w]\nkind = write\n";
    setenv("HERD_TEST_T", "/x\n[evil]\nkind = write\nfile_size = 8M", 1);
    load_refused(text, "v.ini:2: ", "${HERD_TEST_T}: control byte 0x0a at byte 3");
    setenv("HERD_TEST_T", "/x\nkeep = yes\nrun_id = victim", 1);
    load_refused(text, "v.ini:2: ", "${HERD_TEST_T}: control byte 0x0a");
    /* a carriage return, an escape, DEL: any control byte */
    const char *bad[] = {"/x\rkeep = yes", "/x\x1b[31m", "/x\x7f", "/x\t"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("HERD_TEST_T", bad[i], 1);
        load_refused(text, "v.ini:2: ", "${HERD_TEST_T}: control byte");
    }
    setenv("HERD_TEST_T", "/x", 1);
    assert_int_equal(load(text), 0);
    assert_int_equal(job.nphases, 1);
    assert_false(job.settings.keep);
    job_free(&job);
}

/* Errors name the physical line that has them: the last line of a file,
 * a line of an included file, and never a line a comment claims. */
static void test_error_lines_are_true(void **state)
{
    (void)state;
    setenv("HERD_TEST_T", "8M\nbogus = 1", 1);
    load_refused("[global]\ntarget = /x\n[w]\nkind = write\nfile_size = ${HERD_TEST_T}\n",
                 "v.ini:5: ", "${HERD_TEST_T}");
    file_put("site.ini", "[global]\ntarget = ${HERD_TEST_T}\n");
    load_refused("include site.ini\n[w]\nkind = write\n", "site.ini:2: ", "${HERD_TEST_T}");
    file_put("site.ini", "[global]\ntarget = /x\n");
    load_refused("include site.ini\n[w]\nkind = write\nfile_size = 1Q\n",
                 "v.ini:4: ", "key 'file_size'");
    /* a comment of the file that looks like jobtext's source line */
    load_refused("[global]\n;@source 0 40 /etc/passwd\ntarget = /x\n[w]\nkind = write\nbogus = 1\n",
                 "v.ini:6: ", "key 'bogus'");
}

/* ';' and '#' from a variable are the value's; ${...} in a comment is not
 * replaced (unset is no error there); include lines lose their comment. */
static void test_comments(void **state)
{
    (void)state;
    unsetenv("HERD_TEST_UNSET");
    setenv("HERD_TEST_T", "/a ;b #c", 1);
    assert_int_equal(load("[global] ; ${HERD_TEST_UNSET}\n"
                          "target = ${HERD_TEST_T}/f;g#h ; ${HERD_TEST_UNSET}\n"
                          "# ${HERD_TEST_UNSET}\n"
                          "; ${HERD_TEST_UNSET}\n"
                          "[w] # ${HERD_TEST_UNSET}\n"
                          "kind = write # ${HERD_TEST_UNSET}\n"),
                     0);
    assert_string_equal(job.phases[0].target, "/a ;b #c/f;g#h");
    job_free(&job);
    file_put("site.ini", "[global]\ntarget = /site\n");
    const char *includes[] = {"include site.ini ; the site\n", "include site.ini # the site\n",
                              "include site.ini\t#\n"};
    for (size_t i = 0; i < sizeof includes / sizeof includes[0]; i++) {
        char text[128];
        snprintf(text, sizeof text, "%s[w]\nkind = write\n", includes[i]);
        if (load(text) != 0)
            fail_msg("'%s' refused: %s", includes[i], err);
        assert_string_equal(job.phases[0].target, "/site");
        job_free(&job);
    }
}

/* ${...} in a section or key name is an error of its own; --set values
 * are taken as given. */
static void test_variables_in_values_only(void **state)
{
    (void)state;
    setenv("HERD_TEST_T", "w", 1);
    load_refused("[global]\ntarget = /x\n[${HERD_TEST_T}]\nkind = write\n",
                 "v.ini:3: ", "section name: variables are replaced in values only");
    load_refused("[global]\ntarget = /x\n[w]\nkind = write\n${HERD_TEST_T}x = 1\n",
                 "v.ini:5: ", "key name: variables are replaced in values only");
    load_refused("[global]\ntarget = /x\n[w]\nkind = write\nfile${HERD_TEST_T}: 1\n",
                 "v.ini:5: ", "key name");
    char set[] = "target=/x/${HERD_TEST_T}";
    assert_int_equal(load_sets("[global]\ntarget = /y\n[w]\nkind = write\n", (char *[]){set}, 1),
                     0);
    assert_string_equal(job.phases[0].target, "/x/${HERD_TEST_T}");
    job_free(&job);
}

/* The text the results keep: comment lines as written (a would-be source
 * line disarmed), values replaced, a comment after a value gone. */
static void test_text_as_run(void **state)
{
    (void)state;
    setenv("HERD_TEST_T", "/a ;b", 1);
    char *text;
    assert_int_equal(jobtext_read(file_put("v.ini", ";@source 3 9 x\n# note\n[global]\n"
                                                    "target = ${HERD_TEST_T} # where\n"),
                                  &text, err, sizeof err),
                     0);
    assert_non_null(strstr(text, "\n; @source 3 9 x\n# note\n[global]\ntarget = /a ;b \n"));
    free(text);
}

/* A job path that names one of the process's descriptors (/dev/fd/N,
 * /proc/self/fd/N, /proc/thread-self/fd/N, /proc/PID/fd/N, a link to
 * one): fine while open in a process no launcher started; above 2 under
 * a launcher (any of its variables set) refused, open or not; not open,
 * refused. Plain paths, standard input and names that are no
 * descriptor's are left to the read. */
static void test_given_descriptor(void **state)
{
    (void)state;
    static const char *const launcher[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK",
                                           "PMI_FD"};
    for (size_t v = 0; v < 4; v++)
        unsetenv(launcher[v]);
    char file[128], link[128], names[5][64], want[512];
    snprintf(file, sizeof file, "%s", file_put("v.ini", "[w]\nkind = write\n"));
    int fd = open(file, O_RDONLY);
    assert_true(fd > 2);
    snprintf(names[0], sizeof names[0], "/dev/fd/%d", fd);
    snprintf(names[1], sizeof names[1], "/proc/self/fd/%d", fd);
    snprintf(names[2], sizeof names[2], "/proc/thread-self/fd/%d", fd);
    snprintf(names[3], sizeof names[3], "/proc/%d/fd/%d", (int)getpid(), fd);
    snprintf(names[4], sizeof names[4], "%s/link.ini", dir);
    snprintf(link, sizeof link, "%s", names[4]);
    assert_int_equal(symlink(names[0], link), 0);
    for (int i = 0; i < 5; i++)
        if (jobtext_check_given(names[i], err, sizeof err) != 0)
            fail_msg("%s refused: %s", names[i], err);
    for (size_t v = 0; v < 4; v++) {
        setenv(launcher[v], "0", 1);
        for (int i = 0; i < 5; i++) {
            assert_int_equal(jobtext_check_given(names[i], err, sizeof err), -EBADF);
            snprintf(want, sizeof want,
                     "%s: cannot read job file: a rank that a launcher started reads no "
                     "descriptor above 2 (mpirun and srun pass on only 0-2 of your shell's: "
                     "herd run - < FILE)",
                     names[i]);
            assert_string_equal(err, want);
        }
        assert_int_equal(jobtext_check_given(file, err, sizeof err), 0);
        assert_int_equal(jobtext_check_given(JOBTEXT_STDIN, err, sizeof err), 0);
        if (fcntl(STDIN_FILENO, F_GETFD) >= 0)
            assert_int_equal(jobtext_check_given("/dev/stdin", err, sizeof err), 0);
        unsetenv(launcher[v]);
    }
    close(fd);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(jobtext_check_given(names[i], err, sizeof err), -EBADF);
        snprintf(want, sizeof want, "%s: cannot read job file: not open in this process", names[i]);
        if (strncmp(err, want, strlen(want)) != 0)
            fail_msg("'%s' is not '%s...'", err, want);
    }
    assert_int_equal(jobtext_check_given("/dev/fd/07", err, sizeof err), 0);
    assert_int_equal(jobtext_check_given("/nonexistent/job.ini", err, sizeof err), 0);
    assert_int_equal(jobtext_check_given(file, err, sizeof err), 0);
    unlink(link);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_value_adds_no_lines),
        cmocka_unit_test(test_error_lines_are_true),
        cmocka_unit_test(test_comments),
        cmocka_unit_test(test_variables_in_values_only),
        cmocka_unit_test(test_text_as_run),
        cmocka_unit_test(test_given_descriptor),
    };
    return cmocka_run_group_tests(tests, dir_make, dir_remove);
}
