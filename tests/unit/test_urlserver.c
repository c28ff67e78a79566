/* test_urlserver.c — unit tests for urlserver.c, HOST[:PORT] of a URL:
 * names, IPv4 and [IPv6] hosts with and without a port, where the part
 * ends ('/', '?', the end), and one line for every port that is not 1 to
 * 65535 in plain digits, every host that is not a name or an address,
 * and an IPv6 address without brackets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "urlserver.h"

static char why[256];

static void check_ok(const char *text, const char *host, bool ipv6, unsigned port, int len)
{
    struct urlserver s;
    int n = urlserver_parse(text, &s, why, sizeof why);
    if (n < 0)
        fail_msg("'%s' refused: %s", text, why);
    assert_int_equal(n, len);
    assert_string_equal(s.host, host);
    assert_int_equal(s.ipv6, ipv6);
    assert_int_equal(s.port, port);
}

static void check_bad(const char *text, const char *expect)
{
    struct urlserver s;
    why[0] = '\0';
    if (urlserver_parse(text, &s, why, sizeof why) != -1)
        fail_msg("'%s' accepted", text);
    if (!strstr(why, expect))
        fail_msg("'%s': '%s' lacks '%s'", text, why, expect);
    assert_null(strchr(why, '\n'));
}

static void test_hosts_and_ports(void **state)
{
    (void)state;
    check_ok("server/export", "server", false, 0, 6);
    check_ok("server", "server", false, 0, 6);
    check_ok("server?version=3", "server", false, 0, 6);
    check_ok("nfs-1.lab.example.org:2049/x", "nfs-1.lab.example.org", false, 2049, 26);
    check_ok("host_a.:1/", "host_a.", false, 1, 9);
    check_ok("192.168.1.10:65535/x", "192.168.1.10", false, 65535, 18);
    check_ok("[::1]/x", "::1", true, 0, 5);
    check_ok("[fd00::2]:2050/x", "fd00::2", true, 2050, 14);
    check_ok("[::ffff:10.0.0.1]", "::ffff:10.0.0.1", true, 0, 17);
}

static void test_bad_ports(void **state)
{
    (void)state;
    check_bad("h:99999/x", "port 99999 is not 1 to 65535");
    check_bad("h:65536/x", "port 65536 is not 1 to 65535");
    check_bad("h:0/x", "port 0 is not 1 to 65535");
    check_bad("h:18446744073709551617/x", "is not 1 to 65535");
    check_bad("h:-5/x", "port '-5' is not a number");
    check_bad("h:+5/x", "port '+5' is not a number");
    check_bad("h:2049x/x", "port '2049x' is not a number");
    check_bad("h: 2049/x", "port ' 2049' is not a number");
    check_bad("h:02049/x", "port '02049' is not a number (decimal digits, no leading zero)");
    check_bad("h:/x", "':' without a port number");
    check_bad("[::1]:/x", "':' without a port number");
    check_bad("[::1]:70000", "port 70000 is not 1 to 65535");
}

static void test_bad_hosts(void **state)
{
    (void)state;
    check_bad("/x", "no server name");
    check_bad("", "no server name");
    check_bad(":2049/x", "no server name");
    check_bad("::1/x", "an IPv6 address goes in brackets: [::1]");
    check_bad("fe80::1:2049/x", "goes in brackets");
    check_bad("[::1/x", "'[' without ']'");
    check_bad("[::1]x/x", "after [::1] comes ':PORT', '/' or '?', not 'x'");
    check_bad("[]/x", "no server name");
    check_bad("[nope]/x", "'[nope]' is not an IPv6 address");
    check_bad("[fe80::1%eth0]/x", "is not an IPv6 address");
    check_bad("1.2.3.999/x", "'1.2.3.999' is not an IPv4 address");
    check_bad("10.1/x", "is not an IPv4 address");
    check_bad("user@host/x", "'user@host' is not a host name");
    check_bad("a..b/x", "is not a host name");
    check_bad(".a/x", "is not a host name");
    check_bad("-a/x", "is not a host name");
    check_bad("a b/x", "is not a host name");
    check_bad("h\xc3\xa9te/x", "is not a host name");
    char longname[400];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    check_bad(longname, "longer than 255 bytes");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hosts_and_ports),
        cmocka_unit_test(test_bad_ports),
        cmocka_unit_test(test_bad_hosts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
