/* test_job.c — job-file parsing: inheritance, overrides, defaults, and
 * one-line errors that name the file, the line and the key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "job.h"

static char err[JOB_ERR_MAX];

static int load(const char *text, char *const *sets, int nsets, struct job *job)
{
    return job_load("test.ini", text, sets, nsets, job, err, sizeof err);
}

/* Load text that must fail; the message must contain `expect`. */
static void expect_error(const char *text, const char *expect)
{
    struct job job;
    assert_int_equal(load(text, NULL, 0, &job), -1);
    if (!strstr(err, expect))
        fail_msg("error '%s' lacks '%s'", err, expect);
    assert_null(strchr(err, '\n'));
}

static void test_inheritance_and_override(void **state)
{
    (void)state;
    const char *text = "[global]\n"
                       "target = /tmp/x\n"
                       "file_size = 32M\n"
                       "[w]\n"
                       "kind = write\n"
                       "[r]\n"
                       "kind = read\n"
                       "file_size = 16M\n"
                       "block_size = 64K\n"
                       "verify = yes\n";
    struct job job;
    assert_int_equal(load(text, NULL, 0, &job), 0);
    assert_int_equal(job.nphases, 2);
    assert_string_equal(job.phases[0].name, "w");
    assert_int_equal(job.phases[0].kind, KIND_WRITE);
    assert_int_equal(job.phases[0].file_size, 32u << 20);
    assert_int_equal(job.phases[0].block_size, 1u << 20); /* default */
    assert_string_equal(job.phases[0].fileset, "unique-32M");
    assert_int_equal(job.phases[1].file_size, 16u << 20);
    assert_int_equal(job.phases[1].block_size, 64u << 10);
    assert_true(job.phases[1].verify);
    assert_string_equal(job.phases[1].target, "/tmp/x");
    assert_int_equal(job.phases[0].line, 4);
    assert_int_equal(job.phases[1].line, 6);
    job_free(&job);
}

static void test_set_overrides_global_not_phase(void **state)
{
    (void)state;
    const char *text = "[global]\ntarget = /a\nfile_size = 8M\n"
                       "[w]\nkind = write\n"
                       "[w2]\nkind = write\nfile_size = 4M\n";
    char *sets[] = {"file_size=1M", "target=/b"};
    struct job job;
    assert_int_equal(load(text, sets, 2, &job), 0);
    assert_int_equal(job.phases[0].file_size, 1u << 20);
    assert_int_equal(job.phases[1].file_size, 4u << 20);
    assert_string_equal(job.phases[1].target, "/b");
    job_free(&job);
}

static void test_set_without_global_section(void **state)
{
    (void)state;
    char *sets[] = {"target=/c"};
    struct job job;
    assert_int_equal(load("[w]\nkind = write\n", sets, 1, &job), 0);
    assert_string_equal(job.phases[0].target, "/c");
    job_free(&job);
}

static void test_errors_name_line_and_key(void **state)
{
    (void)state;
    expect_error("[global]\ntarget = /x\n[w]\nkind = write\nblock_sise = 1M\n",
                 "test.ini:5: key 'block_sise': unknown key");
    expect_error("[global]\ntarget = /x\nfile_size = 16Q\n[w]\nkind = write\n",
                 "test.ini:3: key 'file_size'");
    expect_error("[global]\ntarget = /x\n[w]\nkind = writ\n", "test.ini:4: key 'kind'");
    expect_error("[global]\ntarget = /x\n[w]\nfile_size = 1M\n", "test.ini:3: key 'kind'");
    expect_error("[global]\ntarget = /x\n[w]\nkind = write\nkind = read\n",
                 "test.ini:5: key 'kind': given twice");
    expect_error("[global]\ntarget = /x\n[w]\nkind = write\nfile_size = 1M\nblock_size = 2M\n",
                 "test.ini:6: key 'block_size'");
    expect_error("[global]\ntarget = /x\n[w]\nkind = write\nverify = yes\n",
                 "test.ini:5: key 'verify'");
    expect_error("[global]\ntarget = /x\n[w]\nkind = write\nthis line is wrong\n",
                 "test.ini:5: syntax error");
    expect_error("[global]\ntarget = /x\n[w]\nkind = write\ntarget = /y\n",
                 "test.ini:5: key 'target': can only be set in [global]");
    expect_error("[global]\ntarget = /x\n", "no phases");
    expect_error("[global]\ntarget = /x\n[w]\n[r]\nkind = read\n",
                 "test.ini:3: section has no keys");
    expect_error("", "no phases");
    expect_error("[w]\nkind = write\n", "key 'target': missing");
    expect_error("[global]\ntarget = /x\n[w]\nkind = read\nread_from = neighbor\n"
                 "sharing = shared\n",
                 "test.ini:5: key 'read_from'");
    expect_error("[global]\ntarget = /x\n[w]\nkind = write\n[r]\nkind = read\n[w]\nkind = md5\n",
                 "test.ini:7: section [w] appears twice");
    expect_error("[global]\ntarget = /x\n[a/b]\nkind = write\n", "test.ini:3: section name");
    expect_error("[global]\ntarget = /x\n[w]\nkind = write\ndirect = yes\nblock_size = 1000\n"
                 "file_size = 1M\n",
                 "key 'direct'");
    expect_error("[global]\ntarget = /x\nrun_id = ../up\n[w]\nkind = write\n",
                 "test.ini:3: key 'run_id'");
}

static void test_set_errors(void **state)
{
    (void)state;
    struct job job;
    char *bad_key[] = {"nosuch=1"};
    assert_int_equal(load("[global]\ntarget=/x\n[w]\nkind=write\n", bad_key, 1, &job), -1);
    assert_non_null(strstr(err, "test.ini: --set nosuch: unknown key"));
    char *no_eq[] = {"file_size"};
    assert_int_equal(load("[global]\ntarget=/x\n[w]\nkind=write\n", no_eq, 1, &job), -1);
    assert_non_null(strstr(err, "expected key=value"));
    char *too_big[] = {"block_size=32M"};
    assert_int_equal(load("[global]\ntarget=/x\nfile_size=1M\n[w]\nkind=write\n", too_big, 1, &job),
                     -1);
    assert_non_null(strstr(err, "test.ini: --set block_size: is larger than file_size"));
    expect_error("[global]\ntarget = /x\n[w]\nkind = write\n[w]\nseed = 2\n",
                 "test.ini:5: section [w] appears twice");
}

static void test_pattern_and_format(void **state)
{
    (void)state;
    const char *text = "[global]\ntarget = /x\npattern = compressible:40\n[w]\nkind = write\n"
                       "[z]\nkind = write\npattern = zero\n";
    struct job job;
    assert_int_equal(load(text, NULL, 0, &job), 0);
    assert_int_equal(job.phases[0].pattern, PATTERN_COMPRESSIBLE);
    assert_int_equal(job.phases[0].zero_percent, 40);
    assert_int_equal(job.phases[1].pattern, PATTERN_ZERO);
    char buf[64];
    for (size_t i = 0; i < job_nkeys; i++) {
        if (strcmp(job_keys[i].name, "pattern") == 0) {
            job_key_format(&job_keys[i], &job.phases[0], buf, sizeof buf);
            assert_string_equal(buf, "compressible:40");
        }
        if (strcmp(job_keys[i].name, "file_size") == 0) {
            job_key_format(&job_keys[i], &job.phases[0], buf, sizeof buf);
            assert_string_equal(buf, "16M");
        }
    }
    assert_int_equal(job_phase_bytes_per_rank(&job.phases[0]), 16u << 20);
    job_free(&job);
    expect_error("[global]\ntarget = /x\npattern = compressible:101\n[w]\nkind = write\n",
                 "test.ini:3: key 'pattern'");
}

static void test_missing_file(void **state)
{
    (void)state;
    struct job job;
    assert_int_equal(job_load("/nonexistent/job.ini", NULL, NULL, 0, &job, err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/job.ini: cannot read job file"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inheritance_and_override),
        cmocka_unit_test(test_set_overrides_global_not_phase),
        cmocka_unit_test(test_set_without_global_section),
        cmocka_unit_test(test_errors_name_line_and_key),
        cmocka_unit_test(test_set_errors),
        cmocka_unit_test(test_pattern_and_format),
        cmocka_unit_test(test_missing_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
