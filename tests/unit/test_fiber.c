/* test_fiber.c — unit tests for fiber.c: every fiber runs to its end; a
 * fiber waiting on its socket lets the others run and wakes on exactly
 * its own bytes, in the order they come; a timeout and a sleep end a
 * wait; parked fibers wake when unparked (a barrier of many); outside a
 * fiber the calls are the plain ones. */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "fiber.h"

#define PAIRS 300

struct echo {
    int fds[PAIRS][2];
    int got[PAIRS];   /* the byte each fiber read */
    int order[PAIRS]; /* fiber index in the order their reads completed */
    int norder;
    int ran[PAIRS];
};

/* Fiber i waits for one byte on its own socket. */
static void echo_wait(void *arg, int i)
{
    struct echo *e = arg;
    assert_int_equal(fiber_index(), i);
    struct pollfd p = {.fd = e->fds[i][0], .events = POLLIN};
    int n;
    do
        n = fiber_poll(&p, 5000);
    while (n < 0 && errno == EINTR);
    assert_int_equal(n, 1);
    assert_true(p.revents & POLLIN);
    char c;
    assert_int_equal(read(e->fds[i][0], &c, 1), 1);
    e->got[i] = (unsigned char)c;
    e->order[e->norder++] = i;
}

/* The last fiber writes to every other's socket, last first, after they
 * all wait. */
static void echo_main(void *arg, int i)
{
    struct echo *e = arg;
    e->ran[i] = 1;
    if (i < PAIRS - 1) {
        echo_wait(arg, i);
        return;
    }
    fiber_yield(); /* the others reach their waits */
    for (int k = PAIRS - 2; k >= 0; k--) {
        char c = (char)(k & 0x7f);
        assert_int_equal(write(e->fds[k][1], &c, 1), 1);
        if (k % 50 == 0)
            assert_true(fiber_sleep(0.001)); /* those written to wake first */
    }
}

static void test_many_waits(void **state)
{
    (void)state;
    struct echo *e = calloc(1, sizeof *e);
    assert_non_null(e);
    for (int i = 0; i < PAIRS; i++)
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, e->fds[i]), 0);
    assert_int_equal(fiber_run(PAIRS, echo_main, e), 0);
    assert_int_equal(e->norder, PAIRS - 1);
    for (int i = 0; i < PAIRS - 1; i++) {
        assert_int_equal(e->ran[i], 1);
        assert_int_equal(e->got[i], i & 0x7f);
    }
    /* The first 49 written (298 down to 250) were read before any later. */
    for (int k = 0; k < 49; k++)
        assert_true(e->order[k] >= 250);
    for (int i = 0; i < PAIRS; i++) {
        close(e->fds[i][0]);
        close(e->fds[i][1]);
    }
    assert_int_equal(fiber_index(), -1);
    free(e);
}

struct timing {
    int fd;
    int polled, slept;
    double waited;
};

static void timing_main(void *arg, int i)
{
    struct timing *t = arg;
    if (i == 0) { /* nobody ever writes: the poll times out */
        struct pollfd p = {.fd = t->fd, .events = POLLIN};
        double t0 = clock_mono();
        t->polled = fiber_poll(&p, 30);
        t->waited = clock_mono() - t0;
    } else {
        t->slept = fiber_sleep(0.01);
    }
}

static void test_timeouts(void **state)
{
    (void)state;
    int fds[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    struct timing t = {.fd = fds[0], .polled = -2};
    assert_int_equal(fiber_run(2, timing_main, &t), 0);
    assert_int_equal(t.polled, 0);
    assert_true(t.waited >= 0.029);
    assert_int_equal(t.slept, 1);
    close(fds[0]);
    close(fds[1]);
}

#define BARRIER 1000
struct barrier {
    int arrived, passed, rounds[BARRIER];
    int gen;
};

/* A barrier of BARRIER fibers, three rounds: the last to arrive wakes
 * the parked ones; nobody passes a round before all arrived. */
static void barrier_main(void *arg, int i)
{
    struct barrier *b = arg;
    for (int round = 0; round < 3; round++) {
        int gen = b->gen;
        if (++b->arrived == BARRIER) {
            b->arrived = 0;
            b->gen++;
            for (int k = 0; k < BARRIER; k++)
                if (k != i)
                    fiber_unpark(k);
        } else {
            while (b->gen == gen)
                fiber_park();
        }
        assert_int_equal(b->arrived < BARRIER, 1);
        b->rounds[i]++;
        if (i % 7 == 0)
            fiber_yield();
    }
}

static void test_barrier(void **state)
{
    (void)state;
    struct barrier *b = calloc(1, sizeof *b);
    assert_non_null(b);
    assert_int_equal(fiber_run(BARRIER, barrier_main, b), 0);
    assert_int_equal(b->gen, 3);
    for (int i = 0; i < BARRIER; i++)
        assert_int_equal(b->rounds[i], 3);
    free(b);
}

static void plain_main(void *arg, int i)
{
    int *calls = arg;
    assert_int_equal(i, 0);
    assert_int_equal(fiber_index(), -1); /* one: a plain call, no fiber */
    struct pollfd p = {.fd = -1};
    assert_int_equal(fiber_poll(&p, 1), 0);
    assert_true(fiber_sleep(0.001));
    fiber_yield();
    fiber_park(); /* returns at once outside a fiber */
    (*calls)++;
}

static void test_one_is_plain(void **state)
{
    (void)state;
    int calls = 0;
    assert_int_equal(fiber_run(1, plain_main, &calls), 0);
    assert_int_equal(calls, 1);
    assert_int_equal(fiber_run(0, plain_main, &calls), -EINVAL);
    assert_int_equal(fiber_run(FIBER_MAX + 1, plain_main, &calls), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_waits),
        cmocka_unit_test(test_timeouts),
        cmocka_unit_test(test_barrier),
        cmocka_unit_test(test_one_is_plain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
