/* test_cli.c — unit tests for cli.c, the command-line table: each
 * command takes exactly its options, in both forms (`--set K=V` and
 * `--set=K=V`, an alias too), values point into argv, a refusal is one
 * line naming the word, and the help forms agree. The help text itself is
 * held to the parser by tests/integration/test_cli.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cli.h"

#define ARGC(v) ((int)(sizeof(v) / sizeof((v)[0])))

static int parse(int argc, char **argv, struct cli_args *a, char *err)
{
    return cli_parse(argc, argv, 1000, a, err, 256);
}

static void test_run_options(void **state)
{
    (void)state;
    char *argv[] = {"herd",          "run",
                    "j.ini",         "-o",
                    "out.h5",        "--json=s.json",
                    "--force",       "--set",
                    "block_size=1M", "--set=w.file_size=4M"};
    struct cli_args a;
    char err[256];
    assert_int_equal(parse(ARGC(argv), argv, &a, err), 0);
    assert_int_equal(a.command, CLI_RUN);
    assert_string_equal(a.job, "j.ini");
    assert_ptr_equal(a.output, argv[4]);
    assert_string_equal(a.json, "s.json");
    assert_ptr_equal(a.json, argv[5] + strlen("--json="));
    assert_true(a.force);
    assert_false(a.help);
    assert_int_equal(a.nsets, 2);
    assert_string_equal(a.sets[0], "block_size=1M");
    assert_string_equal(a.sets[1], "w.file_size=4M");
}

static void test_check_options(void **state)
{
    (void)state;
    char *argv[] = {"herd", "check", "--ranks=7", "j.ini", "--strict"};
    struct cli_args a;
    char err[256];
    assert_int_equal(parse(ARGC(argv), argv, &a, err), 0);
    assert_int_equal(a.command, CLI_CHECK);
    assert_int_equal(a.ranks, 7);
    assert_true(a.strict);
    char *alias[] = {"herd", "check", "j.ini", "-n", "12"};
    assert_int_equal(parse(ARGC(alias), alias, &a, err), 0);
    assert_int_equal(a.ranks, 12);
    char *plain[] = {"herd", "check", "j.ini"};
    assert_int_equal(parse(ARGC(plain), plain, &a, err), 0);
    assert_int_equal(a.ranks, 1);
}

/* argv refused, with err holding `want`. */
static void refused(int argc, char **argv, const char *want)
{
    struct cli_args a;
    char err[256] = "";
    assert_int_equal(parse(argc, argv, &a, err), -1);
    assert_non_null(strstr(err, want));
    assert_null(strchr(err, '\n'));
}

static void test_refusals(void **state)
{
    (void)state;
    char *strict_on_run[] = {"herd", "run", "j.ini", "--strict"};
    refused(ARGC(strict_on_run), strict_on_run, "unknown option '--strict' (see herd run --help)");
    char *force_on_check[] = {"herd", "check", "j.ini", "--force"};
    refused(ARGC(force_on_check), force_on_check, "unknown option '--force'");
    char *no_value[] = {"herd", "run", "j.ini", "--json"};
    refused(ARGC(no_value), no_value, "'--json' needs a value");
    char *flag_value[] = {"herd", "check", "j.ini", "--strict=1"};
    refused(ARGC(flag_value), flag_value, "'--strict=1' takes no value");
    char *ranks[] = {"herd", "check", "j.ini", "-n", "1001"};
    refused(ARGC(ranks), ranks, "-n 1001: expected a number of ranks (1-1000)");
    char *ranks_text[] = {"herd", "check", "j.ini", "-n", "7x"};
    refused(ARGC(ranks_text), ranks_text, "-n 7x");
    char *two_jobs[] = {"herd", "check", "a.ini", "b.ini"};
    refused(ARGC(two_jobs), two_jobs, "unexpected argument 'b.ini'");
    char *no_job[] = {"herd", "run"};
    refused(ARGC(no_job), no_job, "run needs a job file");
    char *unknown[] = {"herd", "frob\033[31m"};
    refused(ARGC(unknown), unknown, "unknown command 'frob\\x1b[31m'");
    char *none[] = {"herd"};
    refused(ARGC(none), none, "usage:");
    char *keys_arg[] = {"herd", "keys", "x"};
    refused(ARGC(keys_arg), keys_arg, "unexpected argument 'x'");
}

static void test_too_many_sets(void **state)
{
    (void)state;
    char *argv[3 + 2 * (CLI_SETS_MAX + 1)];
    int n = 0;
    argv[n++] = "herd";
    argv[n++] = "check";
    argv[n++] = "j.ini";
    for (int i = 0; i <= CLI_SETS_MAX; i++) {
        argv[n++] = "--set";
        argv[n++] = "seed=1";
    }
    refused(n, argv, "too many --set options");
}

static void test_help_forms(void **state)
{
    (void)state;
    struct cli_args a;
    char err[256];
    char *overview[] = {"herd", "--help"};
    assert_int_equal(parse(ARGC(overview), overview, &a, err), 0);
    assert_true(a.help);
    assert_int_equal(a.help_on, CLI_NONE);
    char *word[] = {"herd", "help"};
    assert_int_equal(parse(ARGC(word), word, &a, err), 0);
    assert_int_equal(a.help_on, CLI_NONE);
    char *of_run[] = {"herd", "help", "run"};
    assert_int_equal(parse(ARGC(of_run), of_run, &a, err), 0);
    assert_int_equal(a.help_on, CLI_RUN);
    char *run_h[] = {"herd", "run", "-h"};
    assert_int_equal(parse(ARGC(run_h), run_h, &a, err), 0);
    assert_true(a.help);
    assert_int_equal(a.help_on, CLI_RUN);
    char *after[] = {"herd", "check", "j.ini", "-n", "3", "--help"};
    assert_int_equal(parse(ARGC(after), after, &a, err), 0);
    assert_int_equal(a.help_on, CLI_CHECK);
    char *help_h[] = {"herd", "help", "--help"};
    assert_int_equal(parse(ARGC(help_h), help_h, &a, err), 0);
    assert_int_equal(a.help_on, CLI_HELP);
    char *version[] = {"herd", "-V"};
    assert_int_equal(parse(ARGC(version), version, &a, err), 0);
    assert_int_equal(a.command, CLI_VERSION);
}

static void test_help_text(void **state)
{
    (void)state;
    char buf[8192];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    assert_non_null(f);
    cli_help(f, CLI_CHECK);
    fclose(f);
    assert_non_null(strstr(buf, "usage: herd check JOB.ini"));
    assert_non_null(strstr(buf, "-n, --ranks N"));
    assert_non_null(strstr(buf, "--strict"));
    assert_null(strstr(buf, "--force"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_options), cmocka_unit_test(test_check_options),
        cmocka_unit_test(test_refusals),    cmocka_unit_test(test_too_many_sets),
        cmocka_unit_test(test_help_forms),  cmocka_unit_test(test_help_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
