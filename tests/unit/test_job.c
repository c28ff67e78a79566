/* test_job.c — job-file parsing: inheritance, overrides, defaults, and
 * one-line errors that name the file, the line and the key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "job.h"
#include "jobtext.h"
#include "pace.h"
#include "record.h"

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

/* --set KEY beats the file in every phase (as fio's command line does);
 * --set PHASE.KEY one phase; a key of some kinds only phases of those. */
static void test_set_overrides_every_phase(void **state)
{
    (void)state;
    const char *text = "[global]\ntarget = /a\nfile_size = 8M\n"
                       "[w]\nkind = write\n"
                       "[w2]\nkind = write\nfile_size = 4M\n"
                       "[r.1]\nkind = read\n";
    char *sets[] = {"file_size=1M", "target=/b", "w2.block_size=64K", "verify=yes",
                    "r.1.iterations=3"};
    struct job job;
    assert_int_equal(load(text, sets, 5, &job), 0);
    assert_int_equal(job.phases[0].file_size, 1u << 20);
    assert_int_equal(job.phases[1].file_size, 1u << 20);
    assert_string_equal(job.phases[1].target, "/b");
    assert_int_equal(job.phases[1].block_size, 64u << 10);
    assert_int_equal(job.phases[0].block_size, 1u << 20);
    assert_false(job.phases[0].verify); /* verify reaches read phases only */
    assert_true(job.phases[2].verify);
    assert_int_equal(job.phases[2].iterations, 3);
    assert_int_equal(job.phases[0].iterations, 1);
    job_free(&job);
    char *nophase[] = {"w3.file_size=1M"};
    assert_int_equal(load(text, nophase, 1, &job), -1);
    assert_non_null(strstr(err, "--set file_size: no phase [w3] in the job"));
    char *perphase_global[] = {"w.target=/c"};
    assert_int_equal(load(text, perphase_global, 1, &job), -1);
    assert_non_null(strstr(err, "--set target: describes the whole run"));
    char *unused[] = {"lock_hold=1s"};
    assert_int_equal(load(text, unused, 1, &job), -1);
    assert_non_null(strstr(err, "--set lock_hold: applies to lock phases, and the job has none"));
}

/* A key of some kinds (duration: idle, lock, storm; verify: read;
 * read_from: read, md5; count: lock, storm) given in [global] or by a
 * plain --set is the default of the phases of those kinds only, every
 * other phase keeping the key's own default; given in a phase's own
 * section or by --set PHASE.KEY for another kind it is refused, with the
 * key's hint. */
static void test_kind_keys_reach_their_kinds(void **state)
{
    (void)state;
    const char *text = "[global]\ntarget = /x\nduration = 2s\nverify = yes\n"
                       "read_from = neighbor\ncount = 7\n"
                       "[w]\nkind = write\n[r]\nkind = read\n[m]\nkind = md5\n"
                       "[l]\nkind = lock\n[s]\nkind = storm\n[i]\nkind = idle\n";
    struct job job;
    assert_int_equal(load(text, NULL, 0, &job), 0);
    const struct phase *w = &job.phases[0], *r = &job.phases[1], *m = &job.phases[2],
                       *l = &job.phases[3], *i = &job.phases[5];
    assert_true(w->duration == 0 && !w->verify && w->read_from == READ_SELF && w->count == 100);
    assert_true(r->duration == 0 && r->verify && r->read_from == READ_NEIGHBOR);
    assert_true(m->duration == 0 && !m->verify && m->read_from == READ_NEIGHBOR);
    assert_true(l->duration == 2 && l->count == 7 && !l->verify);
    assert_true(i->duration == 2);
    job_free(&job);
    /* --set reaches the same phases: the one-line job of --phase idle,write */
    char *sets[] = {"target=/x", "duration=1s"};
    assert_int_equal(load("[idle]\nkind = idle\n[write]\nkind = write\n", sets, 2, &job), 0);
    assert_true(job.phases[0].duration == 1 && job.phases[1].duration == 0);
    job_free(&job);
    expect_error(
        "[global]\ntarget = /x\n[w]\nkind = write\nduration = 1s\n",
        "test.ini:5: key 'duration': applies to idle, lock, storm and mix phases only, not to "
        "write (use deadline to bound others)");
    expect_error(
        "[global]\ntarget = /x\n[m]\nkind = md5\nverify = yes\n",
        "test.ini:5: key 'verify': applies to read and mix phases only, not to md5 (md5 phases "
        "always check)");
    expect_error("[global]\ntarget = /x\n[w]\nkind = write\nread_from = neighbor\n",
                 "test.ini:5: key 'read_from': applies to read and md5 phases only, not to write");
    char *own[] = {"w.duration=1s"};
    assert_int_equal(load("[global]\ntarget = /x\n[w]\nkind = write\n", own, 1, &job), -1);
    assert_non_null(
        strstr(err, "--set duration: applies to idle, lock, storm and mix phases only"));
    char *none[] = {"duration=1s"};
    assert_int_equal(load("[global]\ntarget = /x\n[w]\nkind = write\n", none, 1, &job), -1);
    assert_non_null(strstr(err,
                           "--set duration: applies to idle, lock, storm and mix phases, and the "
                           "job has none"));
}

/* A value a phase inherits ([global], a plain --set) reaches the phases
 * whose kind's rule takes it: a phase whose kind refuses it keeps the
 * key's default (its value's source: the default), and the job's notes
 * say so, one line per key, which herd check and herd run print once;
 * given in the phase's own section or by --set PHASE.KEY, or taken by
 * no phase at all, it is refused as ever. */
static void test_global_reaches_phases_it_fits(void **state)
{
    (void)state;
    struct job job;
    const char *text = "[global]\ntarget = /x\niterations = 2\n[w]\nkind = write\n"
                       "[tree]\nkind = meta\n";
    assert_int_equal(load(text, NULL, 0, &job), 0);
    size_t it = (size_t)(job_key_lookup("iterations") - job_key_at(0));
    assert_int_equal(job.phases[0].iterations, 2);
    assert_int_equal(job.phases[0].key_line[it], 3);
    assert_int_equal(job.phases[1].iterations, 1);
    assert_int_equal(job.phases[1].key_line[it], 0);
    assert_string_equal(job.notes,
                        "note: [global] iterations = 2 does not apply to meta phase [tree] "
                        "(meta phases run their steps once; use several phases): that phase "
                        "keeps 1\n");
    char *printed = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&printed, &size);
    assert_non_null(out);
    assert_int_equal(job_lint_print(&job, 2, out), 0); /* a note is no warning */
    fclose(out);
    assert_non_null(strstr(printed, "herd: note: [global] iterations = 2 does not apply to meta"));
    assert_null(strstr(strstr(printed, "note:") + 1, "note:")); /* once */
    free(printed);
    job_free(&job);
    /* one line per key, however many phases keep the default */
    assert_int_equal(load("[global]\ntarget = /x\n[w]\nkind = write\n[a]\nkind = meta\n"
                          "[b]\nkind = meta\n",
                          (char *[]){"iterations=3"}, 1, &job),
                     0);
    assert_true(job.phases[0].iterations == 3 && job.phases[1].iterations == 1 &&
                job.phases[2].iterations == 1);
    assert_string_equal(job.notes, "note: --set iterations=3 does not apply to meta phase [a], "
                                   "meta phase [b] (meta phases run their steps once; use "
                                   "several phases): those phases keep 1\n");
    job_free(&job);
    /* a lock phase of block ranges keeps its block_size, the write takes 8 */
    assert_int_equal(load("[global]\ntarget = /x\nblock_size = 8\nlock_range = block\n"
                          "[w]\nkind = write\n[l]\nkind = lock\n",
                          NULL, 0, &job),
                     0);
    assert_true(job.phases[0].block_size == 8 && job.phases[1].block_size == 1u << 20);
    assert_non_null(strstr(job.notes, "note: [global] block_size = 8 does not apply to lock "
                                      "phase [l] (lock ranges of block_size bytes must hold"));
    assert_non_null(strstr(job.notes, "that phase keeps 1M\n"));
    job_free(&job);
    /* a value that no phase takes is a mistake: refused, on its line */
    expect_error("[global]\ntarget = /x\niterations = 2\n[tree]\nkind = meta\n[t2]\n"
                 "kind = meta\n",
                 "test.ini:3: key 'iterations': meta phases run their steps once; use several "
                 "phases");
    assert_int_equal(
        load("[tree]\nkind = meta\n", (char *[]){"target=/x", "meta_ops=creat"}, 2, &job), -1);
    assert_string_equal(err, "test.ini: --set meta_ops: 'creat' is not a list of create, stat, "
                             "rename, unlink, rmdir");
    /* no value refused: no note */
    assert_int_equal(load("[global]\ntarget = /x\n[w]\nkind = write\niterations = 2\n"
                          "[tree]\nkind = meta\n",
                          NULL, 0, &job),
                     0);
    assert_string_equal(job.notes, "");
    job_free(&job);
    /* the phase's own value is refused, with today's one line */
    expect_error("[global]\ntarget = /x\n[w]\nkind = write\n[tree]\nkind = meta\n"
                 "iterations = 2\n",
                 "test.ini:7: key 'iterations': meta phases run their steps once; use several "
                 "phases");
    assert_int_equal(load(text, (char *[]){"tree.iterations=2"}, 1, &job), -1);
    assert_string_equal(err, "test.ini: --set iterations: meta phases run their steps once; use "
                             "several phases");
}

/* Integers are decimal digits only, as sizes and durations are: no
 * sign, no space. A job file's values come trimmed (libinih), so spaces
 * around one there are fine; a --set value is taken as written, so the
 * same spaces there are refused, as for a size or a duration. */
static void test_numbers_are_plain(void **state)
{
    (void)state;
    const char *head = "[global]\ntarget = /x\n[w]\nkind = write\n";
    char text[256];
    const char *bad_int[] = {"+5", "-0", "-5", "5x", "0x10", "1e3", "5 5", "9223372036854775808"};
    for (size_t i = 0; i < sizeof bad_int / sizeof bad_int[0]; i++) {
        snprintf(text, sizeof text, "%siterations = %s\n", head, bad_int[i]);
        char want[128];
        snprintf(want, sizeof want,
                 "test.ini:5: key 'iterations': '%s' is not a non-negative integer (decimal "
                 "digits only)",
                 bad_int[i]);
        expect_error(text, want);
    }
    struct job job;
    snprintf(text, sizeof text,
             "%siterations =   5  \nseed = 9223372036854775807\n"
             "file_size =  16M \ndeadline =\t1s\t\n",
             head);
    assert_int_equal(load(text, NULL, 0, &job), 0);
    assert_int_equal(job.phases[0].iterations, 5);
    assert_int_equal(job.phases[0].seed, INT64_MAX);
    assert_int_equal(job.phases[0].file_size, 16u << 20);
    assert_true(job.phases[0].deadline == 1);
    job_free(&job);
    /* --set: as written; spaces on either side are refused alike */
    const char *bad_set[] = {
        "iterations= 5",  "iterations=5 ",          "iterations=+5", "seed=-0",
        "file_size= 16M", "file_size=16M ",         "deadline= 1s",  "deadline=1s ",
        "deadline=-0s",   "pattern=compressible:+5"};
    for (size_t i = 0; i < sizeof bad_set / sizeof bad_set[0]; i++) {
        char *sets[] = {(char *)bad_set[i]};
        if (load(head, sets, 1, &job) != -1)
            fail_msg("--set %s accepted", bad_set[i]);
        assert_non_null(strstr(err, "test.ini: --set "));
    }
    char *good[] = {"iterations=5", "seed=007", "file_size=16M", "deadline=1s"};
    assert_int_equal(load(head, good, 4, &job), 0);
    assert_int_equal(job.phases[0].iterations, 5);
    assert_int_equal(job.phases[0].seed, 7);
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
    assert_non_null(strstr(err, "expected KEY=VALUE or PHASE.KEY=VALUE"));
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
    for (size_t i = 0; i < job_key_count(); i++) {
        if (strcmp(job_key_at(i)->name, "pattern") == 0) {
            job_key_format(job_key_at(i), &job.phases[0], buf, sizeof buf);
            assert_string_equal(buf, "compressible:40");
        }
        if (strcmp(job_key_at(i)->name, "file_size") == 0) {
            job_key_format(job_key_at(i), &job.phases[0], buf, sizeof buf);
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

/* Load text that must load; then the scale rule for nranks must fail with
 * a message containing expect (or pass when expect is NULL). */
static void expect_scale(const char *text, char *const *sets, int nsets, int64_t nranks,
                         const char *expect)
{
    struct job job;
    if (load(text, sets, nsets, &job) != 0)
        fail_msg("load failed: %s", err);
    int rc = job_check_scale(&job, nranks, err, sizeof err);
    job_free(&job);
    if (!expect) {
        if (rc != 0)
            fail_msg("scale refused %lld ranks: %s", (long long)nranks, err);
        return;
    }
    assert_int_equal(rc, -EOVERFLOW);
    if (!strstr(err, expect))
        fail_msg("error '%s' lacks '%s'", err, expect);
    assert_null(strchr(err, '\n'));
}

static void test_scale_records(void **state)
{
    (void)state;
    /* Per rank: 16000000 x sizeof(struct rank_record) > INT_MAX already. */
    assert_true(16000000.0 * sizeof(struct rank_record) > INT_MAX);
    expect_error("[global]\ntarget = /x\n[w]\nkind = write\niterations = 16000000\n",
                 "test.ini:5: key 'iterations': 16000000 iterations need, even for one rank,");
    expect_error("[global]\ntarget = /x\n[w]\nkind = write\niterations = 100000000000\n",
                 "more than MPI's int count (2147483647 bytes)");
    /* 4000000 rows fit one rank, not 4 ranks on rank 0. */
    const char *text = "[global]\ntarget = /x\n[w]\nkind = write\nfile_size = 4K\n"
                       "block_size = 4K\niterations = 4000000\n";
    int64_t fit = INT_MAX / (4000000 * (int64_t)sizeof(struct rank_record));
    expect_scale(text, NULL, 0, fit, NULL);
    expect_scale(text, NULL, 0, fit + 1, "test.ini:7: key 'iterations': 4000000 iterations x");
    expect_scale(text, NULL, 0, fit + 1, "of records on rank 0, more than MPI's int count");
    /* A --set value is named as such. */
    char *sets[] = {"iterations=4000000"};
    expect_scale("[global]\ntarget = /x\n[w]\nkind = write\nfile_size = 4K\nblock_size = 4K\n",
                 sets, 1, 4, "test.ini: --set iterations: 4000000 iterations x 4 ranks need");
    /* Lock records: count x iterations holds per rank. */
    expect_error(
        "[global]\ntarget = /x\n[l]\nkind = lock\ncount = 1000000000\n",
        "test.ini:5: key 'count': 1000000000 locks x 1 iterations need, even for one rank,");
    expect_scale("[global]\ntarget = /x\n[l]\nkind = lock\ncount = 10000000\n", NULL, 0, 1, NULL);
    expect_scale("[global]\ntarget = /x\n[l]\nkind = lock\ncount = 10000000\n", NULL, 0, 8,
                 "test.ini:5: key 'count'");
}

static void test_scale_counts_and_bytes(void **state)
{
    (void)state;
    expect_error("[global]\ntarget = /x\n[m]\nkind = meta\nfiles = 1000000000000\n",
                 "test.ini:5: key 'files': 1000000000000 is more than 10000000 per rank");
    expect_error("[global]\ntarget = /x\n[m]\nkind = meta\ndirs = 10000001\n",
                 "test.ini:5: key 'dirs'");
    /* 1000000T x 100 = 1.1e20 bytes: wraps a uint64. */
    expect_error("[global]\ntarget = /x\n[w]\nkind = write\nfile_size = 1000000T\n"
                 "iterations = 100\n",
                 "test.ini:6: key 'iterations': 1099511627776000000 bytes x 100 = 1.1e+20 bytes "
                 "per rank, more than 2^64");
    expect_error("[global]\ntarget = /x\n[m]\nkind = meta\nfile_size = 10000T\n"
                 "files = 10000000\n",
                 "key 'files'");
    expect_error("[global]\ntarget = /x\n[s]\nkind = storm\nfile_size = 1000000T\n"
                 "block_size = 1G\ncount = 9000000000000000000\n",
                 "test.ini:7: key 'count'");
    /* Per rank fits, 2 ranks do not. */
    const char *text = "[global]\ntarget = /x\n[w]\nkind = write\nfile_size = 1000000T\n"
                       "iterations = 10\n";
    expect_scale(text, NULL, 0, 1, NULL);
    expect_scale(text, NULL, 0, 2,
                 "test.ini:6: key 'iterations': 10995116277760000000 bytes "
                 "per rank x 2 ranks");
    /* File offsets: signed 64 bits. */
    expect_error("[global]\ntarget = /x\n[w]\nkind = write\nfile_size = 9000000T\n",
                 "test.ini:5: key 'file_size': 9000000T = 9.896e+18 bytes is past the largest "
                 "file offset");
    const char *seg = "[global]\ntarget = /x\n[w]\nkind = write\nsharing = shared\n"
                      "shared_mode = segmented\nfile_size = 4000000T\n";
    expect_scale(seg, NULL, 0, 2, NULL);
    expect_scale(seg, NULL, 0, 3, "test.ini:7: key 'file_size': 4000000T x 3 ranks (segmented)");
    /* The bytes helper says overflow instead of wrapping. */
    struct job job;
    assert_int_equal(load(text, NULL, 0, &job), 0);
    uint64_t b;
    assert_int_equal(job_phase_bytes(&job.phases[0], &b), 0);
    assert_true(b == 10ull * (1000000ull << 40));
    job.phases[0].iterations = 100;
    assert_int_equal(job_phase_bytes(&job.phases[0], &b), -EOVERFLOW);
    assert_true(job_phase_bytes_per_rank(&job.phases[0]) == UINT64_MAX);
    job_free(&job);
    /* Durations: at most a week. */
    expect_error("[global]\ntarget = /x\ndeadline = 99999999999h\n[w]\nkind = write\n",
                 "test.ini:3: key 'deadline': '99999999999h' is more than a week");
    assert_true(job_host_memory() > 0);
}

static void test_names(void **state)
{
    (void)state;
    const char *good[] = {"a", "seed-001", "x.y_z", "A9", "write_16M.v2"};
    const char *bad[] = {"",
                         ".",
                         "..",
                         ".hidden",
                         "-x",
                         "a/b",
                         "a b",
                         "$(id)",
                         "`id`",
                         "<b>",
                         "a\nb",
                         "caf\xc3\xa9",
                         "0123456789012345678901234567890123456789012345678901234567890123"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        if (!job_name_ok(good[i]))
            fail_msg("'%s' refused", good[i]);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (job_name_ok(bad[i]))
            fail_msg("'%s' accepted", bad[i]);
    expect_error("[global]\ntarget = /x\n[w]\nkind = write\nfileset = $(id)\n",
                 "test.ini:5: key 'fileset': '$(id)' must be");
    expect_error("[global]\ntarget = /x\n[w]\nkind = write\nfileset = .x\n",
                 "test.ini:5: key 'fileset'");
    expect_error("[global]\ntarget = /x\nrun_id = -rf\n[w]\nkind = write\n",
                 "test.ini:3: key 'run_id'");
    expect_error("[global]\ntarget = /x\n[.w]\nkind = write\n", "test.ini:3: section name");
    expect_error("[global]\ntarget = /x\n[<b>]\nkind = write\n", "test.ini:3: section name");
    struct job job;
    assert_int_equal(load("[global]\ntarget = /x\nrun_id = r.1\n[w.1]\nkind = write\n"
                          "fileset = a.b\n",
                          NULL, 0, &job),
                     0);
    assert_string_equal(job.phases[0].name, "w.1");
    job_free(&job);
    /* A target may be any legal path: stored as given. */
    const char *odd = "/tmp/$(touch x)/`id`/<b>/caf\xc3\xa9";
    char text[256];
    snprintf(text, sizeof text, "[global]\ntarget = %s\n[w]\nkind = write\n", odd);
    assert_int_equal(load(text, NULL, 0, &job), 0);
    assert_string_equal(job.phases[0].target, odd);
    job_free(&job);
}

static void test_bytes_in_values(void **state)
{
    (void)state;
    /* In the file, through --set, in any key type: one escaped line. */
    expect_error("[global]\ntarget = /x\xff\n[w]\nkind = write\n",
                 "test.ini:2: key 'target': byte 0xff at byte 3 is not valid UTF-8");
    expect_error("[global]\ntarget = /x\n[w]\nkind = write\nfile_size = 1\x01M\n",
                 "test.ini:5: key 'file_size': control byte 0x01");
    char *sets[] = {"target=/tmp/a\nb"};
    struct job job;
    assert_int_equal(load("[w]\nkind = write\n", sets, 1, &job), -1);
    assert_non_null(strstr(err, "test.ini: --set target: control byte 0x0a at byte 7"));
    char *run_ids[] = {"run_id=a\nb"};
    assert_int_equal(load("[global]\ntarget=/x\n[w]\nkind = write\n", run_ids, 1, &job), -1);
    assert_null(strchr(err, '\n'));
    /* An unknown key's bytes are shown escaped. */
    expect_error("[global]\ntarget = /x\n[w]\nkind = write\nk\x1b[31m = 1\n",
                 "test.ini:5: key 'k\\x1b[31m': unknown key");
}

static void test_fault_probability(void **state)
{
    (void)state;
    const char *bad[] = {"nan", "inf",    "-inf", "-0.5",  "0",   "1.5",
                         "",    "0x1p-2", " 0.5", "1e-3x", "+0.5"};
    char text[256];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text,
                 "[global]\ntarget = /x\nbackend = fault\nfaults = write=EIO@%s\n"
                 "[w]\nkind = write\n",
                 bad[i]);
        expect_error(text, "test.ini:4: key 'faults'");
        assert_non_null(strstr(err, "probability must be a number in (0, 1]"));
    }
    const char *good[] = {"1", "0.5", ".01", "1.0", "1e-3"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        struct job job;
        snprintf(text, sizeof text,
                 "[global]\ntarget = /x\nbackend = fault\nfaults = write=EIO@%s\n"
                 "[w]\nkind = write\n",
                 good[i]);
        if (load(text, NULL, 0, &job) != 0)
            fail_msg("EIO@%s refused: %s", good[i], err);
        job_free(&job);
    }
    expect_error("[global]\ntarget = /x\nbackend = fault\nfaults = open=delay:9999h\n"
                 "[w]\nkind = write\n",
                 "test.ini:4: key 'faults'");
}

static void test_read_not_a_job_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/herd-test-job-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *text = NULL;
    assert_int_equal(jobtext_read(dir, &text, NULL, 0), -EISDIR);
    struct job job;
    assert_int_equal(job_load(dir, NULL, NULL, 0, &job, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot read job file: is a directory"));
    assert_int_equal(jobtext_read("/dev/zero", &text, NULL, 0), -ENOTSUP);
    assert_int_equal(job_load("/dev/zero", NULL, NULL, 0, &job, err, sizeof err), -1);
    assert_non_null(strstr(err, "/dev/zero: cannot read job file: not a regular file"));

    char big[64];
    snprintf(big, sizeof big, "%s/big.ini", dir);
    FILE *f = fopen(big, "w");
    assert_non_null(f);
    for (int i = 0; i < (JOB_FILE_MAX / 15) + 1; i++)
        fputs("; comment line\n", f); /* 15 bytes */
    fclose(f);
    assert_int_equal(jobtext_read(big, &text, NULL, 0), -EFBIG);
    assert_int_equal(job_load(big, NULL, NULL, 0, &job, err, sizeof err), -1);
    assert_non_null(strstr(err, "larger than 1 MiB: not a job file"));
    assert_int_equal(truncate(big, JOB_FILE_MAX), 0);       /* exactly 1 MiB is read */
    assert_int_equal(jobtext_read(big, &text, NULL, 0), 0); /* one source line, then the file */
    size_t body = strlen(text) - strcspn(text, "\n") - 1;
    assert_true(body == JOB_FILE_MAX || body == JOB_FILE_MAX + 1); /* + a final newline */
    free(text);
    unlink(big);
    rmdir(dir);
}

/* Write path with text. */
static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* jobtext.h through job_load: include (relative, errors naming the
 * included file and line, a missing file, a cycle), ${VAR}, # comments. */
static void test_include_vars_comments(void **state)
{
    (void)state;
    char dir[] = "/tmp/herd-test-jobtext-XXXXXX", main_ini[64], common[64], sub[64];
    assert_non_null(mkdtemp(dir));
    snprintf(main_ini, sizeof main_ini, "%s/main.ini", dir);
    snprintf(common, sizeof common, "%s/common.ini", dir);
    snprintf(sub, sizeof sub, "%s/sub", dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    setenv("HERD_TEST_TARGET", "/tmp/from-env", 1);
    unsetenv("HERD_TEST_UNSET");
    write_file(common, "[global]\ntarget = ${HERD_TEST_TARGET}/x#y  # where\n");
    write_file(main_ini, "include common.ini\n[w]\nkind = write\nfile_size = 2M ; size\n");
    struct job job;
    assert_int_equal(job_load(main_ini, NULL, NULL, 0, &job, err, sizeof err), 0);
    assert_string_equal(job.phases[0].target,
                        "/tmp/from-env/x#y"); /* '#' ends only after a space */
    assert_int_equal(job.phases[0].file_size, 2u << 20);
    job_free(&job);
    /* errors name the file and line they are on, included or not */
    write_file(common, "[global]\ntarget = /x\nblock_size = 1Q\n");
    assert_int_equal(job_load(main_ini, NULL, NULL, 0, &job, err, sizeof err), -1);
    assert_non_null(strstr(err, "common.ini:3: key 'block_size'"));
    write_file(common, "[global]\ntarget = /x\n");
    write_file(main_ini, "include common.ini\n[w]\nkind = write\nbogus = 1\n");
    assert_int_equal(job_load(main_ini, NULL, NULL, 0, &job, err, sizeof err), -1);
    assert_non_null(strstr(err, "main.ini:4: key 'bogus': unknown key"));
    write_file(main_ini, "[w]\nkind = write\ninclude nosuch.ini\n");
    assert_int_equal(job_load(main_ini, NULL, NULL, 0, &job, err, sizeof err), -1);
    assert_non_null(strstr(err, "main.ini:3: include "));
    assert_non_null(strstr(err, "nosuch.ini: No such file or directory"));
    write_file(main_ini, "include main.ini\n");
    assert_int_equal(job_load(main_ini, NULL, NULL, 0, &job, err, sizeof err), -1);
    assert_non_null(strstr(err, "nested more than 8 deep"));
    write_file(main_ini, "[global]\ntarget = ${HERD_TEST_UNSET}\n[w]\nkind = write\n");
    assert_int_equal(job_load(main_ini, NULL, NULL, 0, &job, err, sizeof err), -1);
    assert_non_null(strstr(err, "main.ini:2: ${HERD_TEST_UNSET} is not set in the environment"));
    write_file(main_ini, "[global]\ntarget = ${HERD_TEST_TARGET\n[w]\nkind = write\n");
    assert_int_equal(job_load(main_ini, NULL, NULL, 0, &job, err, sizeof err), -1);
    assert_non_null(strstr(err, "main.ini:2: '${' without a closing '}'"));
    /* a value from the environment is not read for comments or variables again */
    setenv("HERD_TEST_TARGET", "/tmp/a #b ${X}", 1);
    write_file(main_ini, "[global]\ntarget = ${HERD_TEST_TARGET}\n[w]\nkind = write\n");
    assert_int_equal(job_load(main_ini, NULL, NULL, 0, &job, err, sizeof err), 0);
    assert_string_equal(job.phases[0].target, "/tmp/a #b ${X}");
    job_free(&job);
    unlink(main_ini);
    unlink(common);
    rmdir(sub);
    rmdir(dir);
}

/* herd check's warnings: a meta phase that writes gigabytes with a
 * file_size from a plain --set (never [global]'s: it does not reach meta
 * phases), a read of a fileset nobody wrote (not with a fixed run_id); a
 * clean job has none. */
static void test_lint(void **state)
{
    (void)state;
    struct job job;
    char out[2048];
    const char *text = "[global]\ntarget = /x\nfile_size = 64M\n[w]\nkind = write\n"
                       "[r]\nkind = read\n[m]\nkind = meta\nfiles = 100\n"
                       "[r2]\nkind = md5\nsharing = shared\n";
    assert_int_equal(load(text, NULL, 0, &job), 0);
    assert_int_equal(job_lint(&job, 4, out, sizeof out), 1);
    assert_non_null(strstr(out, "warning: md5 phase [r2] reads fileset 'shared-64M'"));
    job_free(&job);
    char *big[] = {"file_size=64M"};
    assert_int_equal(load(text, big, 1, &job), 0);
    assert_int_equal(job_lint(&job, 4, out, sizeof out), 2);
    assert_non_null(strstr(out, "test.ini: --set file_size: warning: meta phase [m] writes"));
    assert_non_null(strstr(out, "100 files x 4 ranks"));
    assert_int_equal(job_lint(&job, 1, out, sizeof out), 2); /* 6.25 GiB at 1 rank: still */
    job_free(&job);
    assert_int_equal(
        load("[global]\ntarget = /x\nrun_id = kept\n[r]\nkind = read\n", NULL, 0, &job), 0);
    assert_int_equal(job_lint(&job, 4, out, sizeof out), 0);
    assert_string_equal(out, "");
    job_free(&job);
    /* a verifying read or an md5 of another seed than the writer's */
    assert_int_equal(load("[global]\ntarget = /x\n[w]\nkind = write\n[r]\nkind = read\n"
                          "verify = yes\nseed = 2\n[m]\nkind = md5\nseed = 3\n"
                          "[plain]\nkind = read\nseed = 2\n[same]\nkind = md5\n",
                          NULL, 0, &job),
                     0);
    assert_int_equal(job_lint(&job, 2, out, sizeof out), 2);
    assert_non_null(strstr(out, "test.ini:8: key 'seed': warning: read phase [r] checks fileset "
                                "'unique-16M' against seed 2, but [w] writes it with seed 1"));
    assert_non_null(strstr(out, "test.ini:11: key 'seed': warning: md5 phase [m]"));
    job_free(&job);
}

/* A meta phase's files are empty unless its own section or the command
 * line gives file_size: [global]'s and the key's default do not reach it
 * (nor its fileset's name), while every other kind inherits as ever. */
static void test_meta_file_size_own_default(void **state)
{
    (void)state;
    struct job job;
    const char *text = "[global]\ntarget = /x\nfile_size = 64M\n[w]\nkind = write\n"
                       "[m]\nkind = meta\n[m4]\nkind = meta\nfile_size = 4K\n";
    assert_int_equal(load(text, NULL, 0, &job), 0);
    assert_int_equal(job.phases[0].file_size, 64u << 20);
    assert_int_equal(job.phases[1].file_size, 0);
    assert_string_equal(job.phases[1].fileset, "unique-0");
    size_t fs = (size_t)(job_key_lookup("file_size") - job_key_at(0));
    assert_int_equal(job.phases[1].key_line[fs], 0); /* its value: the kind's default */
    assert_int_equal(job.phases[2].file_size, 4096);
    assert_string_equal(job.phases[2].fileset, "unique-4K");
    job_free(&job);
    assert_int_equal(load("[global]\ntarget = /x\n[m]\nkind = meta\n", NULL, 0, &job), 0);
    assert_int_equal(job.phases[0].file_size, 0); /* not the key's 16M */
    job_free(&job);
    char *every[] = {"file_size=1M"}, *one[] = {"m.file_size=8K"};
    assert_int_equal(load(text, every, 1, &job), 0);
    assert_int_equal(job.phases[0].file_size, 1u << 20);
    assert_int_equal(job.phases[1].file_size, 1u << 20);
    assert_int_equal(job.phases[2].file_size, 1u << 20);
    job_free(&job);
    assert_int_equal(load(text, one, 1, &job), 0);
    assert_int_equal(job.phases[0].file_size, 64u << 20);
    assert_int_equal(job.phases[1].file_size, 8192);
    assert_int_equal(job.phases[2].file_size, 4096);
    job_free(&job);
}

/* Every bounded key is numeric, and the one bound rule refuses values on
 * the wrong side of each bound, on the key's own line, while a [global]
 * value out of bounds that every phase overrides is no error (the
 * resolved phase is checked). */
static void test_key_bounds(void **state)
{
    (void)state;
    for (size_t i = 0; i < job_key_count(); i++) {
        const struct job_key *k = job_key_at(i);
        if (k->bounds && k->type != KEY_INT && k->type != KEY_SIZE && k->type != KEY_DURATION &&
            k->type != KEY_RATE)
            fail_msg("key '%s' has bounds but is not a number", k->name);
        if ((k->bounds & KEY_MAX) && (k->bounds & (KEY_MIN | KEY_ABOVE)) && k->max < k->min)
            fail_msg("key '%s': max below min", k->name);
    }
    expect_error("[global]\ntarget = /x\n[w]\nkind = write\nblock_size = 0\n",
                 "test.ini:5: key 'block_size': must be greater than 0");
    expect_error("[global]\ntarget = /x\nfile_size = 4G\n[w]\nkind = write\nblock_size = 2G\n",
                 "test.ini:6: key 'block_size': must be at most 1G");
    expect_error("[global]\ntarget = /x\n[w]\nkind = write\niterations = 0\n",
                 "key 'iterations': must be at least 1");
    expect_error("[global]\ntarget = /x\n[w]\nkind = write\nfiles_per_rank = 10000001\n",
                 "key 'files_per_rank': must be 1 to 10000000");
    expect_error("[global]\ntarget = /x\nmonitor_interval = 9ms\n[w]\nkind = write\n",
                 "test.ini:3: key 'monitor_interval': must be at least 10ms");
    expect_error("[global]\ntarget = /x\n[w]\nkind = write\nstuck_after = 0\n",
                 "key 'stuck_after': must be greater than 0");
    expect_error("[global]\ntarget = /x\n[w]\nkind = write\nrate = 2000000\n",
                 "test.ini:5: key 'rate': must be at most 1000000");
    struct job job;
    const char *overridden = "[global]\ntarget = /x\niterations = 0\n[w]\nkind = write\n"
                             "iterations = 2\n";
    assert_int_equal(load(overridden, NULL, 0, &job), 0);
    assert_int_equal(job.phases[0].iterations, 2);
    job_free(&job);
    /* at the bound itself: accepted */
    const char *edge = "[global]\ntarget = /x\nfile_size = 1G\n[w]\nkind = write\n"
                       "block_size = 1G\n";
    assert_int_equal(load(edge, NULL, 0, &job), 0);
    job_free(&job);
}

/* A backend's own rules come from its check op: libnfs's nfs_version. */
static void test_backend_owns_its_rules(void **state)
{
    (void)state;
#ifdef HERD_HAVE_LIBNFS
    expect_error("[global]\ntarget = nfs://127.0.0.1/x\nbackend = libnfs\nnfs_version = 5\n"
                 "[r]\nkind = read\n",
                 "test.ini:4: key 'nfs_version': must be 3 or 4");
#else
    skip();
#endif
}

/* A job without a backend key gets its target's (nfs:// libnfs, smb://
 * smb, a path posix); a build without libnfs or libsmbclient says so, by
 * the setting that builds it in, for such a target or backend. */
static void test_backend_of_the_target(void **state)
{
    (void)state;
    struct job job;
    assert_int_equal(load("[global]\ntarget = /x\n[w]\nkind = write\n", NULL, 0, &job), 0);
    assert_string_equal(job.phases[0].backend, "posix");
    job_free(&job);
    const char *nfs = "[global]\ntarget = nfs://127.0.0.1/x\n[w]\nkind = write\n";
    const char *smb = "[global]\ntarget = smb://127.0.0.1/s\nsmb_guest = yes\nfsync = no\n"
                      "[w]\nkind = write\n";
#ifdef HERD_HAVE_LIBNFS
    assert_int_equal(load(nfs, NULL, 0, &job), 0);
    assert_string_equal(job.phases[0].backend, "libnfs");
    job_free(&job);
#else
    expect_error(nfs, "test.ini:2: key 'target': target 'nfs://127.0.0.1/x': nfs:// is libnfs's, "
                      "which this herd was built without: build it with libnfs: "
                      "HERD_WITH_LIBNFS=ON");
    char *named[] = {"backend=libnfs"};
    assert_int_equal(load(nfs, named, 1, &job), -1);
    assert_non_null(strstr(err, "--set backend: this herd was built without the libnfs backend"));
#endif
#ifdef HERD_HAVE_SMB
    assert_int_equal(load(smb, NULL, 0, &job), 0);
    assert_string_equal(job.phases[0].backend, "smb");
    job_free(&job);
#else
    /* (smb_guest, a key of the smb backend's, is unknown to this build) */
    expect_error("[global]\ntarget = smb://127.0.0.1/s\n[w]\nkind = write\n",
                 "test.ini:2: key 'target': target 'smb://127.0.0.1/s': smb:// is smb's, which "
                 "this herd was built without: build it with libsmbclient");
    (void)smb;
#endif
}

/* The value of key `name` in phase ph, as `herd check` and the results
 * file print it. */
static const char *key_text(const struct phase *ph, const char *name)
{
    static char buf[256];
    for (size_t i = 0; i < job_key_count(); i++)
        if (strcmp(job_key_at(i)->name, name) == 0) {
            job_key_format(job_key_at(i), ph, buf, sizeof buf);
            return buf;
        }
    fail_msg("no key '%s'", name);
    return NULL;
}

/* A backend's keys live in its options block: their defaults fill it
 * whatever the order of the lines, [global] and the phase's own values
 * and --set land there, a job for another backend reports the defaults
 * and refuses the keys, and the fault backend's rules reach it. */
static void test_backend_options_block(void **state)
{
    (void)state;
    struct job job;
    const char *plain = "[global]\ntarget = /x\n[w]\nkind = write\n";
    assert_int_equal(load(plain, NULL, 0, &job), 0);
    assert_string_equal(key_text(&job.phases[0], "faults"), "");
    job_free(&job);
    expect_error("[global]\ntarget = /x\nfaults = write=EIO@1\n[w]\nkind = write\n",
                 "test.ini:3: key 'faults': applies to backend = fault only, not to posix");
    const char *fault = "[global]\nfaults = write=EIO@0.5\ntarget = /x\nbackend = fault\n"
                        "[w]\nkind = write\n[r]\nkind = read\nfaults = read=EIO@0.25\n";
    assert_int_equal(load(fault, NULL, 0, &job), 0);
    assert_string_equal(key_text(&job.phases[0], "faults"), "write=EIO@0.5");
    assert_string_equal(key_text(&job.phases[1], "faults"), "read=EIO@0.25");
    job_free(&job);
#ifdef HERD_HAVE_LIBNFS
    assert_int_equal(load(plain, NULL, 0, &job), 0);
    assert_string_equal(key_text(&job.phases[0], "nfs_inflight"), "0");
    job_free(&job);
    const char *nfs = "[global]\nnfs_rsize = 64K\ntarget = nfs://127.0.0.1/x\n"
                      "backend = libnfs\n[w]\nkind = write\nnfs_inflight = 4\n[r]\nkind = read\n";
    assert_int_equal(load(nfs, NULL, 0, &job), 0);
    assert_string_equal(key_text(&job.phases[0], "nfs_rsize"), "64K");
    assert_string_equal(key_text(&job.phases[0], "nfs_inflight"), "4");
    assert_string_equal(key_text(&job.phases[1], "nfs_inflight"), "0");
    assert_string_equal(key_text(&job.phases[1], "nfs_version"), "0");
    job_free(&job);
    char *set[] = {"backend=libnfs", "target=nfs://127.0.0.1/x", "r.nfs_inflight=2"};
    assert_int_equal(load(nfs, set, 3, &job), 0);
    assert_string_equal(key_text(&job.phases[1], "nfs_inflight"), "2");
    job_free(&job);
    expect_error("[global]\ntarget = /x\n[w]\nkind = write\nnfs_inflight = 300\n",
                 "test.ini:5: key 'nfs_inflight': applies to backend = libnfs only, not to posix");
    expect_error("[global]\ntarget = nfs://127.0.0.1/x\nbackend = libnfs\n[w]\nkind = write\n"
                 "nfs_inflight = 300\n",
                 "test.ini:6: key 'nfs_inflight': must be 0 to 256");
#endif
}

/* --set arguments split at the '=' and at the last '.' before it; a
 * phase name may hold dots, a value may hold both. */
static void test_set_split(void **state)
{
    (void)state;
    struct job_set_arg a;
    assert_true(job_set_split("file_size=16M", &a));
    assert_null(a.phase);
    assert_int_equal(a.key_len, 9);
    assert_memory_equal(a.key, "file_size", 9);
    assert_string_equal(a.value, "16M");
    assert_true(job_set_split("step.1.block_size=a.b=c", &a));
    assert_int_equal(a.phase_len, 6);
    assert_memory_equal(a.phase, "step.1", 6);
    assert_int_equal(a.key_len, 10);
    assert_memory_equal(a.key, "block_size", 10);
    assert_string_equal(a.value, "a.b=c");
    assert_true(job_set_split(".k=v", &a)); /* an empty phase name: refused by job_load */
    assert_non_null(a.phase);
    assert_int_equal(a.phase_len, 0);
    assert_true(job_set_split("k=", &a));
    assert_string_equal(a.value, "");
    assert_false(job_set_split("=v", &a));
    assert_false(job_set_split("novalue", &a));
}

/* rate: calls per second (or per minute, hour), its arrivals, the kinds
 * it applies to, and not together with think_time. */
static void test_rate(void **state)
{
    (void)state;
    struct job job;
    assert_int_equal(load("[global]\ntarget = /x\nrate = 30/m\n[w]\nkind = write\n[r]\nkind = "
                          "read\nrate = 2.5\narrivals = fixed\n",
                          NULL, 0, &job),
                     0);
    assert_true(job.phases[0].rate == 0.5);
    assert_int_equal(job.phases[0].arrivals, PACE_POISSON); /* the default */
    assert_true(job.phases[1].rate == 2.5);
    assert_int_equal(job.phases[1].arrivals, PACE_FIXED);
    job_free(&job);
    assert_int_equal(load("[global]\ntarget = /x\n[m]\nkind = meta\nrate = 50/s\n", NULL, 0, &job),
                     0);
    assert_true(job.phases[0].rate == 50);
    job_free(&job);
    expect_error("[global]\ntarget = /x\n[w]\nkind = write\nrate = fast\n",
                 "test.ini:5: key 'rate': 'fast' is not a rate: calls per second, as 50, 2.5, "
                 "30/m, 90/h");
    expect_error("[global]\ntarget = /x\n[w]\nkind = write\nrate = -5\n", "is not a rate");
    expect_error("[global]\ntarget = /x\n[w]\nkind = write\narrivals = bursty\n",
                 "'bursty' is not one of fixed | poisson");
    expect_error("[global]\ntarget = /x\n[w]\nkind = write\nrate = 5\nthink_time = 1ms\n",
                 "test.ini:5: key 'rate': rate offers calls on a schedule and think_time pauses "
                 "after each: set one of them");
    expect_error("[global]\ntarget = /x\n[i]\nkind = idle\nduration = 1\nrate = 5\n",
                 "key 'rate': applies to");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inheritance_and_override),
        cmocka_unit_test(test_set_overrides_every_phase),
        cmocka_unit_test(test_backend_of_the_target),
        cmocka_unit_test(test_meta_file_size_own_default),
        cmocka_unit_test(test_kind_keys_reach_their_kinds),
        cmocka_unit_test(test_global_reaches_phases_it_fits),
        cmocka_unit_test(test_numbers_are_plain),
        cmocka_unit_test(test_set_without_global_section),
        cmocka_unit_test(test_errors_name_line_and_key),
        cmocka_unit_test(test_set_errors),
        cmocka_unit_test(test_pattern_and_format),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_scale_records),
        cmocka_unit_test(test_scale_counts_and_bytes),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_bytes_in_values),
        cmocka_unit_test(test_fault_probability),
        cmocka_unit_test(test_read_not_a_job_file),
        cmocka_unit_test(test_include_vars_comments),
        cmocka_unit_test(test_lint),
        cmocka_unit_test(test_key_bounds),
        cmocka_unit_test(test_rate),
        cmocka_unit_test(test_backend_owns_its_rules),
        cmocka_unit_test(test_backend_options_block),
        cmocka_unit_test(test_set_split),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
