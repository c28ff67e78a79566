/* test_monitor_scope.c — unit tests for monitor_scope: the value's parse
 * (host, ns:PATH, cgroup:PATH; relative paths and other words refused
 * with the value in the message); a cgroup directory's place found in
 * mountinfo text (a v1 hierarchy, cgroup2 in a hybrid layout and alone, a
 * mount of a subtree, an escaped space, a directory on the tmpfs above
 * the hierarchies, a later mount hiding an earlier one); membership from
 * /proc/PID/cgroup text (the cgroup itself and below, not a sibling whose
 * name starts alike, a hierarchy of two controllers, named hierarchies,
 * the root); and scopes opened on this host: this process's own network
 * namespace holds it, a missing file, a regular file and a directory
 * outside any cgroup file system are refused with one line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "monitor_scope.h"

static void test_parse(void **state)
{
    (void)state;
    const char *path;
    char why[256];
    assert_int_equal(monitor_scope_parse("host", &path, why, sizeof why), SCOPE_HOST);
    assert_null(path);
    assert_int_equal(monitor_scope_parse("ns:/proc/42/ns/net", &path, why, sizeof why), SCOPE_NS);
    assert_string_equal(path, "/proc/42/ns/net");
    assert_int_equal(monitor_scope_parse("cgroup:/sys/fs/cgroup/a b", &path, why, sizeof why),
                     SCOPE_CGROUP);
    assert_string_equal(path, "/sys/fs/cgroup/a b");
    assert_null(monitor_scope_check("ns:/run/netns/srv", why, sizeof why));

    const char *refused[] = {"",
                             "Host",
                             "hosts",
                             "pid:/proc/1/ns/pid",
                             "/proc/1/ns/net",
                             "ns",
                             "ns:",
                             "ns:proc/1/ns/net",
                             "cgroup:",
                             "cgroup:system.slice",
                             " ns:/x"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        why[0] = '\0';
        assert_int_equal(monitor_scope_parse(refused[i], &path, why, sizeof why), -1);
        assert_null(path);
        char quoted[64];
        snprintf(quoted, sizeof quoted, "'%s'", refused[i]);
        assert_non_null(strstr(why, quoted));
        assert_null(strchr(why, '\n'));
        if (refused[i][0]) /* "" is the key unset: monitor_scope_effective's */
            assert_ptr_equal(monitor_scope_check(refused[i], why, sizeof why), why);
    }
    monitor_scope_parse("ns:relative", &path, why, sizeof why);
    assert_non_null(strstr(why, "must be absolute"));
}

/* The key unset means the whole host, or beside an embedded server
 * (nfs-server.sh exec exports HERD_SERVER) that server's namespace; a
 * value set is itself either way. */
static void test_effective_scope(void **state)
{
    (void)state;
    char why[256];
    assert_null(monitor_scope_check("", why, sizeof why));
    unsetenv("HERD_SERVER");
    assert_string_equal(monitor_scope_effective(""), "host");
    assert_string_equal(monitor_scope_effective("cgroup:/x"), "cgroup:/x");
    setenv("HERD_SERVER", "ganesha", 1);
    assert_string_equal(monitor_scope_effective(""), "ns:/proc/self/ns/net");
    assert_string_equal(monitor_scope_effective("host"), "host");
    setenv("HERD_SERVER", "", 1);
    assert_string_equal(monitor_scope_effective(""), "host");
    unsetenv("HERD_SERVER");
}

/* This machine's layout: cgroup v1 hierarchies with cgroup2 beside them. */
static const char hybrid[] =
    "23 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup "
    "rw,cpu,cpuacct\n"
    "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup "
    "rw,xattr,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate\n"
    "42 31 0:39 /docker/abc /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
    "43 31 0:40 / /mnt/cg\\040two rw - cgroup2 cgroup2 rw";

static void test_place(void **state)
{
    (void)state;
    const struct {
        const char *dir, *options, *path; /* options NULL: cgroup2 */
    } found[] = {
        {"/sys/fs/cgroup/pids/herd-1/sub", "rw,pids", "/herd-1/sub"},
        {"/sys/fs/cgroup/pids", "rw,pids", "/"},
        {"/sys/fs/cgroup/unified/system.slice", NULL, "/system.slice"},
        {"/sys/fs/cgroup/cpu,cpuacct/x", "rw,cpu,cpuacct", "/x"},
        {"/sys/fs/cgroup/systemd/user.slice", "rw,xattr,name=systemd", "/user.slice"},
        /* A subtree mounted: /proc/PID/cgroup paths start at the hierarchy's root. */
        {"/sys/fs/cgroup/memory/job", "rw,memory", "/docker/abc/job"},
        {"/mnt/cg two/a", NULL, "/a"},
    };
    struct cgroup_place p;
    size_t n = strlen(hybrid);
    for (size_t i = 0; i < sizeof found / sizeof found[0]; i++) {
        assert_int_equal(monitor_cgroup_place(hybrid, n, found[i].dir, &p), 0);
        assert_int_equal(p.v2, found[i].options == NULL);
        if (found[i].options)
            assert_string_equal(p.options, found[i].options);
        assert_string_equal(p.path, found[i].path);
    }
    /* Not on a cgroup file system: the tmpfs above them, the root, a
     * name that only starts like a hierarchy's mount point. */
    assert_int_equal(monitor_cgroup_place(hybrid, n, "/sys/fs/cgroup", &p), -1);
    assert_int_equal(monitor_cgroup_place(hybrid, n, "/etc", &p), -1);
    assert_int_equal(monitor_cgroup_place(hybrid, n, "/sys/fs/cgroup/pidsx", &p), -1);
    assert_int_equal(monitor_cgroup_place("", 0, "/sys/fs/cgroup/pids", &p), -1);

    /* Only cgroup2, at /sys/fs/cgroup; then a tmpfs mounted over a subtree hides it. */
    const char v2[] = "23 1 254:0 / / rw - ext4 /dev/vda rw\n"
                      "30 23 0:27 / /sys/fs/cgroup rw shared:4 - cgroup2 cgroup2 rw\n";
    assert_int_equal(monitor_cgroup_place(v2, strlen(v2), "/sys/fs/cgroup/a.slice/b.service", &p),
                     0);
    assert_true(p.v2);
    assert_string_equal(p.path, "/a.slice/b.service");
    char hidden[256];
    snprintf(hidden, sizeof hidden, "%s50 30 0:50 / /sys/fs/cgroup/a.slice rw - tmpfs none rw\n",
             v2);
    assert_int_equal(monitor_cgroup_place(hidden, strlen(hidden), "/sys/fs/cgroup/a.slice/b", &p),
                     -1);
    /* Lines cut short are skipped, not read past. */
    const char cut[] = "30 23 0:27 / /sys/fs/cgroup rw - cgroup2\n"
                       "31 23 0:27 / /sys/fs/cgroup";
    assert_int_equal(monitor_cgroup_place(cut, strlen(cut), "/sys/fs/cgroup/a", &p), -1);
}

static void test_member(void **state)
{
    (void)state;
    const char proc[] = "9:name=systemd:/user.slice\n"
                        "8:pids:/herd-1/sub\n"
                        "2:cpu,cpuacct:/batch:x\n"
                        "bad line\n"
                        "0::/system.slice/ganesha.service\n";
    size_t n = strlen(proc);
    struct cgroup_place p = {.v2 = false};
    snprintf(p.options, sizeof p.options, "rw,pids");
    const char *inside[] = {"/", "/herd-1", "/herd-1/sub"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(p.path, sizeof p.path, "%s", inside[i]);
        assert_true(monitor_cgroup_member(proc, n, &p));
    }
    const char *outside[] = {"/herd", "/herd-1/su", "/herd-1/sub/deeper", "/other"};
    for (size_t i = 0; i < 4; i++) {
        snprintf(p.path, sizeof p.path, "%s", outside[i]);
        assert_false(monitor_cgroup_member(proc, n, &p));
    }
    snprintf(p.options, sizeof p.options, "rw,cpu,cpuacct");
    snprintf(p.path, sizeof p.path, "/batch:x");
    assert_true(monitor_cgroup_member(proc, n, &p));
    snprintf(p.options, sizeof p.options, "rw,xattr,name=systemd");
    snprintf(p.path, sizeof p.path, "/user.slice");
    assert_true(monitor_cgroup_member(proc, n, &p));
    snprintf(p.options, sizeof p.options, "rw,memory"); /* a hierarchy the process is not in */
    snprintf(p.path, sizeof p.path, "/");
    assert_false(monitor_cgroup_member(proc, n, &p));
    p.v2 = true;
    snprintf(p.path, sizeof p.path, "/system.slice");
    assert_true(monitor_cgroup_member(proc, n, &p));
    snprintf(p.path, sizeof p.path, "/user.slice");
    assert_false(monitor_cgroup_member(proc, n, &p));
    const char v1_only[] = "8:pids:/\n";
    snprintf(p.path, sizeof p.path, "/");
    assert_false(monitor_cgroup_member(v1_only, strlen(v1_only), &p));
}

static void test_open_here(void **state)
{
    (void)state;
    char why[256], pid[32];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    struct monitor_scope *s = monitor_scope_open("ns:/proc/self/ns/net", why, sizeof why);
    assert_non_null(s);
    assert_int_equal(monitor_scope_has(s, pid), 1);
    assert_true(monitor_scope_has(s, "999999999") < 0); /* no such process */
    monitor_scope_close(s);
    s = monitor_scope_open("host", why, sizeof why);
    assert_non_null(s);
    assert_int_equal(monitor_scope_has(s, pid), 1);
    monitor_scope_close(s);

    const struct {
        const char *scope, *why;
    } refused[] = {
        {"ns:/no/such/file", "monitor_scope 'ns:/no/such/file': No such file or directory"},
        {"ns:/proc/self/stat", "monitor_scope 'ns:/proc/self/stat': not a namespace file"},
        {"ns:/proc/self", "not a namespace file"},
        {"cgroup:/proc", "monitor_scope 'cgroup:/proc': not a directory of a cgroup file system"},
        {"cgroup:/proc/self/stat", "not a directory"},
        {"pid:1", "'pid:1' is not host"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        why[0] = '\0';
        assert_null(monitor_scope_open(refused[i].scope, why, sizeof why));
        assert_non_null(strstr(why, refused[i].why));
        assert_null(strchr(why, '\n'));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),     cmocka_unit_test(test_effective_scope),
        cmocka_unit_test(test_place),     cmocka_unit_test(test_member),
        cmocka_unit_test(test_open_here),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
