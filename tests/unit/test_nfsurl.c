/* test_nfsurl.c — unit tests for nfsurl.c: nfs:// URLs as libnfs 4.0
 * reads them (server, port, path, options with their values), one line
 * for each URL that is wrong (a port out of range or not a number, a
 * version libnfs does not speak, an unknown or repeated option, an
 * option without a value, a port given twice, no path), and the URL
 * written back for libnfs: SERVER:PORT as nfsport=, an IPv6 server
 * without brackets, everything else as given. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "nfsurl.h"

static char why[512];

static struct nfsurl parse_ok(const char *url)
{
    struct nfsurl u;
    if (nfsurl_parse(url, &u, why, sizeof why) != 0)
        fail_msg("'%s' refused: %s", url, why);
    return u;
}

static void check_bad(const char *url, const char *expect)
{
    struct nfsurl u;
    why[0] = '\0';
    if (nfsurl_parse(url, &u, why, sizeof why) != -1)
        fail_msg("'%s' accepted", url);
    if (!strstr(why, expect))
        fail_msg("'%s': '%s' lacks '%s'", url, why, expect);
    assert_null(strchr(why, '\n'));
}

/* url written back for libnfs must be want. */
static void check_libnfs(const char *url, const char *want)
{
    struct nfsurl u = parse_ok(url);
    char buf[256];
    assert_int_equal(nfsurl_format_libnfs(&u, buf, sizeof buf), (int)strlen(want));
    assert_string_equal(buf, want);
}

static void test_parts(void **state)
{
    (void)state;
    struct nfsurl u = parse_ok("nfs://server/export/scratch");
    assert_string_equal(u.server.host, "server");
    assert_int_equal(u.path_len, strlen("/export/scratch"));
    assert_memory_equal(u.path, "/export/scratch", u.path_len);
    assert_null(u.options);
    assert_int_equal(u.nfsport, 0);
    assert_int_equal(u.version, 0);
    u = parse_ok("nfs://10.0.0.2:2050/srv?version=4&mountport=20048&uid=1000&gid=0");
    assert_int_equal(u.nfsport, 2050);
    assert_int_equal(u.server.port, 2050);
    assert_int_equal(u.mountport, 20048);
    assert_int_equal(u.version, 4);
    assert_int_equal(u.options_len, strlen("version=4&mountport=20048&uid=1000&gid=0"));
    u = parse_ok("nfs://h/?nfsport=2049&version=3");
    assert_int_equal(u.nfsport, 2049);
    assert_int_equal(u.server.port, 0);
    assert_int_equal(u.version, 3);
    assert_int_equal(u.path_len, 1);
    parse_ok("nfs://h/x?tcp-syncnt=3&readahead=1048576&pagecache=0&debug=2&dircache=0"
             "&auto-traverse-mounts=1&if=eth0.1");
    parse_ok("nfs://h/a b/%41&c");
}

static void test_bad_urls(void **state)
{
    (void)state;
    /* the server part: urlserver.h's rules */
    check_bad("nfs://h:99999/x", "port 99999 is not 1 to 65535");
    check_bad("nfs://h:65536/x", "port 65536 is not 1 to 65535");
    check_bad("nfs://h:-5/x", "port '-5' is not a number");
    check_bad("nfs://h:2049x/x", "port '2049x' is not a number");
    check_bad("nfs://::1/x", "an IPv6 address goes in brackets");
    check_bad("nfs:///x", "no server name");
    check_bad("smb://h/x", "not an nfs:// URL");
    check_bad("NFS://h/x", "not an nfs:// URL");
    /* the path */
    check_bad("nfs://h", "no export path");
    check_bad("nfs://h?version=3", "no export path");
    check_bad("nfs://h/a\001b", "control byte 0x01 in the path");
    /* the options */
    check_bad("nfs://h/x?version=9", "option version=9 must be 3 or 4");
    check_bad("nfs://h/x?version=4.1", "option version='4.1' is not a number");
    check_bad("nfs://h/x?version=04", "option version='04' is not a number");
    check_bad("nfs://h/x?version=", "option version needs a value (version=VALUE)");
    check_bad("nfs://h/x?version", "option version needs a value");
    check_bad("nfs://h/x?nfsport=0", "option nfsport=0 must be 1 to 65535");
    check_bad("nfs://h/x?nfsport=99999", "option nfsport=99999 must be 1 to 65535");
    check_bad("nfs://h/x?mountport=-1", "option mountport='-1' is not a number");
    check_bad("nfs://h/x?uid=2147483648", "option uid=2147483648 must be 0 to 2147483647");
    check_bad("nfs://h/x?uid= 5", "option uid=' 5' is not a number");
    check_bad("nfs://h/x?tcp-syncnt=0", "must be 1 to 127");
    check_bad("nfs://h/x?dircache=2", "option dircache=2 must be 0 or 1");
    check_bad("nfs://h/x?if=eth0/1", "option if='eth0/1' is not an interface name");
    check_bad("nfs://h/x?if=abcdefghijklmnop", "is not an interface name");
    check_bad("nfs://h/x?vers=4", "unknown option 'vers' (libnfs reads version, nfsport, ");
    check_bad("nfs://h/x?Version=4", "unknown option 'Version'");
    check_bad("nfs://h/x?autoreconnect=1", "option autoreconnect: herd turns libnfs's reconnects");
    check_bad("nfs://h/x?version=3&version=4", "option version given twice");
    check_bad("nfs://h/x?", "an empty option");
    check_bad("nfs://h/x?version=3&", "an empty option");
    check_bad("nfs://h/x?&version=3", "an empty option");
    check_bad("nfs://h/x?version=3&&uid=0", "an empty option");
    check_bad("nfs://h:2049/x?nfsport=2049", "the port is given twice");
}

static void test_written_for_libnfs(void **state)
{
    (void)state;
    check_libnfs("nfs://server/export", "nfs://server/export");
    check_libnfs("nfs://server/export?version=3&uid=0", "nfs://server/export?version=3&uid=0");
    check_libnfs("nfs://server:2050/export", "nfs://server/export?nfsport=2050");
    check_libnfs("nfs://server:2050/export?version=3&mountport=20048",
                 "nfs://server/export?version=3&mountport=20048&nfsport=2050");
    check_libnfs("nfs://[::1]/export", "nfs://::1/export");
    check_libnfs("nfs://[fd00::2]:2049/e?version=4", "nfs://fd00::2/e?version=4&nfsport=2049");
    struct nfsurl u = parse_ok("nfs://server:2050/export");
    char small[16];
    assert_int_equal(nfsurl_format_libnfs(&u, small, sizeof small), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parts),
        cmocka_unit_test(test_bad_urls),
        cmocka_unit_test(test_written_for_libnfs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
