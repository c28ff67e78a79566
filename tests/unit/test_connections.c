/* test_connections.c — unit tests for connections.c: a phase's note on
 * the connections the server dropped or refused: each client counted
 * once per kind, whatever its rows; no note when no client lost one, when
 * the server kept none or all, or for errors of other kinds; and which
 * errnos errtab_connection_lost takes. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "connections.h"
#include "errtab.h"
#include "model.h"

static struct err_entry entry(int rank, int client, enum op op, int err)
{
    return (struct err_entry){.rank = rank, .client = client, .op = op, .err = err, .count = 3};
}

static void test_dropped_counts_each_client_once(void **state)
{
    (void)state;
    /* 2 ranks x 4 clients: client 1 of rank 0 lost its connection on a
     * write and a close, client 3 of rank 1 on a write; an EIO is no
     * connection's. */
    struct err_entry e[] = {entry(0, 1, OP_WRITE, ECONNRESET), entry(0, 1, OP_CLOSE, ECONNRESET),
                            entry(1, 3, OP_WRITE, EPIPE), entry(1, 0, OP_READ, EIO)};
    char note[PHASE_NOTES_MAX];
    assert_true(connections_note(e, 4, 4, 8, 6, note, sizeof note));
    assert_string_equal(note, "the server dropped connections at about 6: 6 of the 8 clients' "
                              "connections were open at the phase's end; 2 clients lost theirs "
                              "(ECONNRESET and the like), 0 were refused (ECONNREFUSED)");
}

static void test_refused_and_both(void **state)
{
    (void)state;
    struct err_entry refused[] = {entry(0, 0, OP_CONNECT, ECONNREFUSED),
                                  entry(1, 0, OP_CONNECT, ECONNREFUSED)};
    char note[PHASE_NOTES_MAX];
    assert_true(connections_note(refused, 2, 1, 3, 1, note, sizeof note));
    assert_non_null(strstr(note, "the server refused connections at about 1: 1 of the 3 "));
    assert_non_null(strstr(note, "0 clients lost theirs (ECONNRESET and the like), 2 were "
                                 "refused"));
    struct err_entry both[] = {entry(0, 0, OP_CONNECT, ECONNREFUSED),
                               entry(0, 0, OP_WRITE, ECONNRESET)};
    assert_true(connections_note(both, 2, 1, 3, 2, note, sizeof note));
    assert_non_null(strstr(note, "the server dropped and refused connections at about 2: "));
    assert_non_null(strstr(note, "1 clients lost theirs (ECONNRESET and the like), 1 were "));
}

static void test_no_note(void **state)
{
    (void)state;
    struct err_entry lost[] = {entry(0, 0, OP_WRITE, ECONNRESET)};
    struct err_entry other[] = {entry(0, 0, OP_WRITE, EIO), entry(0, 1, OP_OPEN, ETIMEDOUT)};
    char note[PHASE_NOTES_MAX] = "x";
    assert_false(connections_note(other, 2, 2, 4, 2, note, sizeof note)); /* no lost one */
    assert_string_equal(note, "");
    assert_false(connections_note(lost, 1, 2, 4, 0, note, sizeof note));  /* kept none: gone */
    assert_false(connections_note(lost, 1, 2, 4, 4, note, sizeof note));  /* kept all */
    assert_false(connections_note(lost, 1, 2, 4, -1, note, sizeof note)); /* not counted */
    assert_false(connections_note(NULL, 0, 2, 4, 2, note, sizeof note));
    /* an entry naming no client of the run is not counted */
    struct err_entry stray[] = {entry(5, 0, OP_WRITE, ECONNRESET), entry(0, 7, OP_WRITE, EPIPE)};
    assert_false(connections_note(stray, 2, 2, 4, 2, note, sizeof note));
    assert_string_equal(note, "");
}

static void test_connection_lost_errnos(void **state)
{
    (void)state;
    const int lost[] = {ECONNRESET, EPIPE, ENOTCONN, ECONNABORTED, ESHUTDOWN, ECONNREFUSED};
    for (size_t i = 0; i < sizeof lost / sizeof lost[0]; i++) {
        assert_true(errtab_connection_lost(lost[i]));
        assert_true(errtab_connection_lost(-lost[i]));
    }
    const int other[] = {0, EIO, ETIMEDOUT, EHOSTUNREACH, ENOENT, EINTR};
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
        assert_false(errtab_connection_lost(-other[i]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dropped_counts_each_client_once),
        cmocka_unit_test(test_refused_and_both),
        cmocka_unit_test(test_no_note),
        cmocka_unit_test(test_connection_lost_errnos),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
