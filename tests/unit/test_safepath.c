/* test_safepath.c — unit tests for safepath.c and the POSIX backend's use
 * of it. safepath_check: the syntax every backend applies (relative, no
 * empty, "." or ".." component, no control byte, not too long). Then, on
 * a fresh temporary tree per test with links planted under the target
 * (a leaf link and an absolute leaf link to an outside canary file, an
 * intermediate directory link to the outside directory, a link to ".."),
 * every path call of backend_find("posix") — open, create, exclusive
 * create, unlink, mkdir, rmdir, rename, stat — fails with -ELOOP (or
 * -EXDEV) through a link, leaves the canary and the links as they were,
 * and still works on real files and directories. Each case runs twice:
 * with openat2 (where the kernel has it) and with the forced fallback walk.
 * test_own_dirs: in a directory the backend made itself, unlink and
 * rename act with no lstat (a link planted there by this same user is
 * removed as a link, its target untouched), and in one it did not make,
 * or that it made but somebody opened to group writes, a link stays.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
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
#include "job.h"
#include "safepath.h"

#define CANARY "canary: must never change\n"

/* The tree of one test: top/root is the target, top/outside is not. */
struct fixture {
    char top[PATH_MAX];
    char root[PATH_MAX + 16];
    char outside[PATH_MAX + 16];
    const struct backend_ops *be;
    void *ctx;
};

static void path_of(char *buf, size_t len, const char *dir, const char *rel)
{
    snprintf(buf, len, "%s/%s", dir, rel);
}

static void put_file(const char *dir, const char *rel, const char *text)
{
    char p[PATH_MAX * 2];
    path_of(p, sizeof p, dir, rel);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void put_link(const char *dir, const char *rel, const char *target)
{
    char p[PATH_MAX * 2];
    path_of(p, sizeof p, dir, rel);
    assert_int_equal(symlink(target, p), 0);
}

static void put_dir(const char *dir, const char *rel)
{
    char p[PATH_MAX * 2];
    path_of(p, sizeof p, dir, rel);
    assert_int_equal(mkdir(p, 0755), 0);
}

/* Text of dir/rel ("" when missing). */
static const char *contents(const char *dir, const char *rel)
{
    static char buf[256];
    char p[PATH_MAX * 2];
    path_of(p, sizeof p, dir, rel);
    buf[0] = '\0';
    FILE *f = fopen(p, "r");
    if (!f)
        return buf;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static bool exists(const char *dir, const char *rel)
{
    char p[PATH_MAX * 2];
    struct stat st;
    path_of(p, sizeof p, dir, rel);
    return lstat(p, &st) == 0;
}

static bool is_link(const char *dir, const char *rel)
{
    char p[PATH_MAX * 2];
    struct stat st;
    path_of(p, sizeof p, dir, rel);
    return lstat(p, &st) == 0 && S_ISLNK(st.st_mode);
}

/* Everything outside and every planted link is as the setup left it. */
static void assert_untouched(const struct fixture *fx)
{
    assert_string_equal(contents(fx->outside, "canary"), CANARY);
    assert_string_equal(contents(fx->outside, "sub/keep"), CANARY);
    assert_true(is_link(fx->root, "leaflink"));
    assert_true(is_link(fx->root, "abslink"));
    assert_true(is_link(fx->root, "dirlink"));
    assert_true(is_link(fx->root, "uplink"));
    assert_true(is_link(fx->root, "d/dirlink"));
    assert_false(exists(fx->outside, "new"));
    assert_false(exists(fx->outside, "newdir"));
    assert_false(exists(fx->outside, "moved"));
}

#define assert_escape(rc)                                                                          \
    do {                                                                                           \
        int rc_ = (rc);                                                                            \
        if (rc_ != -ELOOP && rc_ != -EXDEV)                                                        \
            fail_msg("%s = %d (%s), want -ELOOP or -EXDEV", #rc, rc_, strerror(-rc_));             \
    } while (0)

static int setup(void **state, bool walk)
{
    struct fixture *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    snprintf(fx->top, sizeof fx->top, "%s/herd-safepath-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    assert_non_null(mkdtemp(fx->top));
    path_of(fx->root, sizeof fx->root, fx->top, "root");
    path_of(fx->outside, sizeof fx->outside, fx->top, "outside");
    put_dir(fx->top, "root");
    put_dir(fx->top, "outside");
    put_dir(fx->outside, "sub");
    put_file(fx->outside, "canary", CANARY);
    put_file(fx->outside, "sub/keep", CANARY);
    put_dir(fx->root, "d");
    put_dir(fx->root, "d/empty");
    put_file(fx->root, "d/f", "inside\n");
    char abs[PATH_MAX * 2];
    path_of(abs, sizeof abs, fx->outside, "canary");
    put_link(fx->root, "leaflink", "../outside/canary");
    put_link(fx->root, "abslink", abs);
    put_link(fx->root, "dirlink", "../outside");
    put_link(fx->root, "uplink", "..");
    put_link(fx->root, "d/dirlink", fx->outside);

    safepath_force_walk(walk);
    fx->be = backend_find("posix");
    assert_non_null(fx->be);
    struct phase ph;
    memset(&ph, 0, sizeof ph);
    assert_int_equal(fx->be->connect(fx->root, &ph, NULL, &fx->ctx), 0);
    *state = fx;
    return 0;
}

static int setup_openat2(void **state)
{
    return setup(state, false);
}

static int setup_walk(void **state)
{
    return setup(state, true);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(p);
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    fx->be->disconnect(fx->ctx);
    safepath_force_walk(false);
    nftw(fx->top, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(fx);
    return 0;
}

/* ------------------------------------------------------------ syntax */

static void test_check(void **state)
{
    (void)state;
    static const char *good[] = {
        "a", "herd-x/unique-1M/r000000.dat", "a/b/c", ".hidden", "..a", "a..", "a/...", "x y"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        if (safepath_check(good[i]) != 0)
            fail_msg("'%s' refused", good[i]);
    static const char *bad[] = {"",     "/",   "/etc/passwd", "..",    "../x", "a/../b",
                                "a/..", ".",   "./a",         "a/./b", "a/.",  "a//b",
                                "a/",   "//a", "a\nb",        "a\tb",  "\x1f"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (safepath_check(bad[i]) != -EINVAL)
            fail_msg("'%s' accepted (%d)", bad[i], safepath_check(bad[i]));
    assert_int_equal(safepath_check(NULL), -EINVAL);
    char longp[HERD_PATH_MAX + 1];
    memset(longp, 'a', sizeof longp - 1);
    longp[HERD_PATH_MAX] = '\0';
    assert_int_equal(safepath_check(longp), -ENAMETOOLONG);
    longp[HERD_PATH_MAX - 1] = '\0'; /* HERD_PATH_MAX - 1 bytes: fits with its NUL */
    assert_int_equal(safepath_check(longp), 0);
}

/* The backend refuses bad syntax before touching anything. */
static void test_backend_syntax(void **state)
{
    struct fixture *fx = *state;
    struct backend_file *f = NULL;
    struct stat st;
    assert_int_equal(fx->be->open(fx->ctx, "../outside/canary", BACKEND_READ, &f), -EINVAL);
    assert_int_equal(
        fx->be->open(fx->ctx, "d/../../outside/new", BACKEND_WRITE | BACKEND_CREATE, &f), -EINVAL);
    assert_int_equal(fx->be->unlink(fx->ctx, "../outside/canary"), -EINVAL);
    assert_int_equal(fx->be->stat(fx->ctx, "/etc/hostname", &st), -EINVAL);
    assert_int_equal(fx->be->mkdir(fx->ctx, "../outside/newdir"), -EINVAL);
    assert_int_equal(fx->be->rename(fx->ctx, "d/f", "../outside/moved"), -EINVAL);
    assert_untouched(fx);
}

/* ------------------------------------------------------------ links */

static void test_open(void **state)
{
    struct fixture *fx = *state;
    struct backend_file *f = NULL;
    const int w = BACKEND_WRITE | BACKEND_CREATE;
    /* Leaf links, relative and absolute: not read, not written. */
    assert_escape(fx->be->open(fx->ctx, "leaflink", BACKEND_READ, &f));
    assert_escape(fx->be->open(fx->ctx, "leaflink", w, &f));
    assert_escape(fx->be->open(fx->ctx, "abslink", BACKEND_WRITE, &f));
    int rc = fx->be->open(fx->ctx, "abslink", w | BACKEND_EXCL, &f);
    if (rc != -EEXIST) /* O_EXCL on an existing link: EEXIST is a refusal too */
        assert_escape(rc);
    /* Intermediate links: to the outside directory, to "..", deeper. */
    assert_escape(fx->be->open(fx->ctx, "dirlink/canary", BACKEND_READ, &f));
    assert_escape(fx->be->open(fx->ctx, "dirlink/canary", w, &f));
    assert_escape(fx->be->open(fx->ctx, "dirlink/new", w, &f));
    assert_escape(fx->be->open(fx->ctx, "dirlink/new", w | BACKEND_EXCL, &f));
    assert_escape(fx->be->open(fx->ctx, "uplink/outside/canary", w, &f));
    assert_escape(fx->be->open(fx->ctx, "uplink/outside/new", w, &f));
    assert_escape(fx->be->open(fx->ctx, "d/dirlink/canary", w, &f));
    assert_escape(fx->be->open(fx->ctx, "d/dirlink/sub/keep", BACKEND_READ, &f));
    assert_untouched(fx);

    /* Real files still open; a new file is created where it belongs. */
    assert_int_equal(fx->be->open(fx->ctx, "d/f", BACKEND_READ, &f), 0);
    char buf[16] = {0};
    assert_int_equal(fx->be->pread(fx->ctx, f, buf, 7, 0), 7);
    assert_string_equal(buf, "inside\n");
    assert_int_equal(fx->be->close(fx->ctx, f), 0);
    assert_int_equal(fx->be->open(fx->ctx, "d/new", w, &f), 0);
    assert_int_equal(fx->be->pwrite(fx->ctx, f, "x", 1, 0), 1);
    assert_int_equal(fx->be->close(fx->ctx, f), 0);
    assert_string_equal(contents(fx->root, "d/new"), "x");
    /* BACKEND_EXCL: an existing file is -EEXIST, a new one is made. */
    assert_int_equal(fx->be->open(fx->ctx, "d/f", w | BACKEND_EXCL, &f), -EEXIST);
    assert_int_equal(fx->be->open(fx->ctx, "d/excl", w | BACKEND_EXCL, &f), 0);
    assert_int_equal(fx->be->close(fx->ctx, f), 0);
    assert_true(exists(fx->root, "d/excl"));
    /* A directory component that is a file: not a directory. */
    assert_int_equal(fx->be->open(fx->ctx, "d/f/x", BACKEND_READ, &f), -ENOTDIR);
    assert_untouched(fx);
}

static void test_unlink(void **state)
{
    struct fixture *fx = *state;
    /* The planted links themselves are never removed, nor their targets. */
    assert_escape(fx->be->unlink(fx->ctx, "leaflink"));
    assert_escape(fx->be->unlink(fx->ctx, "abslink"));
    assert_escape(fx->be->unlink(fx->ctx, "dirlink"));
    assert_escape(fx->be->unlink(fx->ctx, "dirlink/canary"));
    assert_escape(fx->be->unlink(fx->ctx, "uplink/outside/canary"));
    assert_escape(fx->be->unlink(fx->ctx, "d/dirlink/sub/keep"));
    assert_int_equal(fx->be->unlink(fx->ctx, "d/empty"), -EISDIR);
    assert_true(exists(fx->root, "d/empty"));
    assert_untouched(fx);
    assert_int_equal(fx->be->unlink(fx->ctx, "d/f"), 0);
    assert_false(exists(fx->root, "d/f"));
    assert_int_equal(fx->be->unlink(fx->ctx, "d/f"), -ENOENT);
}

static void test_mkdir_rmdir(void **state)
{
    struct fixture *fx = *state;
    assert_escape(fx->be->mkdir(fx->ctx, "dirlink/newdir"));
    assert_escape(fx->be->mkdir(fx->ctx, "uplink/outside/newdir"));
    assert_escape(fx->be->mkdir(fx->ctx, "d/dirlink/newdir"));
    /* mkdir over a link does not follow it: it exists. */
    assert_int_equal(fx->be->mkdir(fx->ctx, "dirlink"), -EEXIST);
    assert_escape(fx->be->rmdir(fx->ctx, "dirlink/sub"));
    assert_escape(fx->be->rmdir(fx->ctx, "uplink/outside/sub"));
    assert_escape(fx->be->rmdir(fx->ctx, "dirlink"));
    assert_escape(fx->be->rmdir(fx->ctx, "d/dirlink"));
    assert_true(exists(fx->outside, "sub"));
    assert_untouched(fx);
    assert_int_equal(fx->be->mkdir(fx->ctx, "d/newdir"), 0);
    assert_int_equal(fx->be->rmdir(fx->ctx, "d/newdir"), 0);
    assert_int_equal(fx->be->rmdir(fx->ctx, "d/empty"), 0);
    assert_false(exists(fx->root, "d/empty"));
}

static void test_rename(void **state)
{
    struct fixture *fx = *state;
    assert_escape(fx->be->rename(fx->ctx, "dirlink/canary", "d/stolen"));
    assert_escape(fx->be->rename(fx->ctx, "d/f", "dirlink/moved"));
    assert_escape(fx->be->rename(fx->ctx, "d/f", "uplink/outside/moved"));
    assert_escape(fx->be->rename(fx->ctx, "leaflink", "d/moved"));
    assert_escape(fx->be->rename(fx->ctx, "d/f", "abslink")); /* would replace the link */
    assert_escape(fx->be->rename(fx->ctx, "d/dirlink/sub", "d/moved"));
    assert_false(exists(fx->root, "d/stolen"));
    assert_false(exists(fx->root, "d/moved"));
    assert_true(exists(fx->root, "d/f"));
    assert_untouched(fx);
    assert_int_equal(fx->be->rename(fx->ctx, "d/f", "d/g"), 0);
    assert_string_equal(contents(fx->root, "d/g"), "inside\n");
}

static void test_stat(void **state)
{
    struct fixture *fx = *state;
    struct stat st;
    /* lstat: a leaf link is reported as a link, not as its target. */
    assert_int_equal(fx->be->stat(fx->ctx, "leaflink", &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(fx->be->stat(fx->ctx, "dirlink", &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_escape(fx->be->stat(fx->ctx, "dirlink/canary", &st));
    assert_escape(fx->be->stat(fx->ctx, "uplink/outside/canary", &st));
    assert_escape(fx->be->stat(fx->ctx, "d/dirlink/sub", &st));
    assert_int_equal(fx->be->stat(fx->ctx, "d/f", &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_size, 7);
    assert_untouched(fx);
}

/* ------------------------------------------------------ own dirs */

static void create_file(const struct fixture *fx, const char *path)
{
    struct backend_file *f = NULL;
    assert_int_equal(fx->be->open(fx->ctx, path, BACKEND_WRITE | BACKEND_CREATE | BACKEND_EXCL, &f),
                     0);
    assert_int_equal(fx->be->close(fx->ctx, f), 0);
}

/* A directory the backend made (mkdir returned 0) is the run's own: its
 * names are removed and moved in one call. Only this user or root can
 * plant there, and what is planted is at worst removed as a link, never
 * followed. A directory it did not make (EEXIST), one it made but that
 * somebody opened to group writes, and one it removed and that was made
 * again by another hand are checked name by name as before. */
static void test_own_dirs(void **state)
{
    struct fixture *fx = *state;
    assert_int_equal(fx->be->mkdir(fx->ctx, "own"), 0);
    assert_int_equal(fx->be->mkdir(fx->ctx, "own/a"), 0);
    assert_int_equal(fx->be->mkdir(fx->ctx, "own/b"), 0);
    create_file(fx, "own/a/f");
    assert_int_equal(fx->be->rename(fx->ctx, "own/a/f", "own/b/f"), 0);
    assert_true(exists(fx->root, "own/b/f"));
    assert_int_equal(fx->be->unlink(fx->ctx, "own/b/f"), 0);
    assert_false(exists(fx->root, "own/b/f"));
    /* A subdirectory is still not unlinked. */
    assert_int_equal(fx->be->unlink(fx->ctx, "own/a"), -EISDIR);
    /* Planted by this same user: removed as a link, the canary kept. */
    char canary[PATH_MAX * 2];
    path_of(canary, sizeof canary, fx->outside, "canary");
    put_link(fx->root, "own/b/planted", canary);
    assert_int_equal(fx->be->unlink(fx->ctx, "own/b/planted"), 0);
    assert_false(exists(fx->root, "own/b/planted"));
    assert_untouched(fx);

    /* d existed before (EEXIST): not the run's own. */
    assert_int_equal(fx->be->mkdir(fx->ctx, "d"), -EEXIST);
    assert_escape(fx->be->unlink(fx->ctx, "d/dirlink"));
    assert_escape(fx->be->rename(fx->ctx, "d/f", "d/dirlink"));
    assert_untouched(fx);

    /* Made here, then opened to group writes (before its first use, as
     * the mode is read when an unlink or rename first asks). */
    assert_int_equal(fx->be->mkdir(fx->ctx, "open"), 0);
    char p[PATH_MAX * 2];
    path_of(p, sizeof p, fx->root, "open");
    assert_int_equal(chmod(p, 0775), 0);
    put_link(fx->root, "open/planted", canary);
    assert_escape(fx->be->unlink(fx->ctx, "open/planted"));
    assert_true(is_link(fx->root, "open/planted"));

    /* Removed by the backend, then made again by another hand. */
    assert_int_equal(fx->be->rmdir(fx->ctx, "own/a"), 0);
    put_dir(fx->root, "own/a");
    put_link(fx->root, "own/a/planted", canary);
    assert_escape(fx->be->unlink(fx->ctx, "own/a/planted"));
    /* Into own/b from a directory that is not: the source is checked. */
    assert_escape(fx->be->rename(fx->ctx, "own/a/planted", "own/b/moved"));
    assert_true(is_link(fx->root, "own/a/planted"));
    assert_false(exists(fx->root, "own/b/moved"));
    assert_untouched(fx);
}

/* The helpers directly: the descriptor they return is beneath the root. */
static void test_helpers(void **state)
{
    struct fixture *fx = *state;
    int rootfd = open(fx->root, O_PATH | O_DIRECTORY);
    assert_true(rootfd >= 0);
    const char *leaf = NULL;
    int fd = safepath_parent(rootfd, "d/f", &leaf);
    assert_true(fd >= 0);
    assert_string_equal(leaf, "f");
    struct stat a, b;
    assert_int_equal(fstatat(fd, leaf, &a, AT_SYMLINK_NOFOLLOW), 0);
    char p[PATH_MAX * 2];
    path_of(p, sizeof p, fx->root, "d/f");
    assert_int_equal(lstat(p, &b), 0);
    assert_int_equal(a.st_ino, b.st_ino);
    close(fd);
    fd = safepath_parent(rootfd, "top", &leaf);
    assert_true(fd >= 0);
    assert_string_equal(leaf, "top");
    close(fd);
    assert_escape(safepath_parent(rootfd, "dirlink/x", &leaf));
    assert_escape(safepath_parent(rootfd, "d/dirlink/sub/x", &leaf));
    assert_int_equal(safepath_parent(rootfd, "a/../x", &leaf), -EINVAL);
    assert_escape(safepath_open(rootfd, "leaflink", O_RDONLY, 0));
    assert_escape(safepath_open(rootfd, "abslink", O_WRONLY | O_CREAT | O_TRUNC, 0644));
    fd = safepath_open(rootfd, "d/f", O_RDONLY, 0);
    assert_true(fd >= 0);
    close(fd);
    close(rootfd);
    assert_untouched(fx);
}

#define BOTH(fn)                                                                                   \
    cmocka_unit_test_setup_teardown(fn, setup_openat2, teardown),                                  \
        cmocka_unit_test_setup_teardown(fn, setup_walk, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check),
        BOTH(test_backend_syntax),
        BOTH(test_open),
        BOTH(test_unlink),
        BOTH(test_mkdir_rmdir),
        BOTH(test_rename),
        BOTH(test_stat),
        BOTH(test_own_dirs),
        BOTH(test_helpers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
