/* fiber.h — many clients on one thread: fibers (each on a stack of its
 * own) and the event loop that runs them. A rank that drives K clients
 * runs each client's calls on a fiber; a call that waits for a reply
 * waits in fiber_poll, which hands the thread to the other fibers and
 * returns when its descriptor is ready (one epoll for all of them), its
 * timeout passed, or a signal came. Outside a fiber every call here is
 * the plain one (poll, nanosleep), so code written for one client runs
 * unchanged inside and outside.
 *
 * Invariants: fibers run one at a time, only on the thread that called
 * fiber_run, and switch only inside fiber_poll, fiber_sleep, fiber_yield
 * and fiber_park; a fiber never waits on another's descriptor. */
#ifndef HERD_FIBER_H
#define HERD_FIBER_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>

/* The stack every fiber gets (virtual: only the pages it touches cost
 * memory), and the most fibers one fiber_run takes. */
#define FIBER_STACK (256u << 10)
#define FIBER_MAX 4096

/* Run fn(arg, i) for every i in [0, n), each on a fiber of its own, on
 * this thread, until every one has returned. n == 1 runs fn on this
 * stack, as a plain call (no fiber: a lone client pays nothing). 0, or
 * -ENOMEM/-EINVAL when the fibers could not be made (nothing ran). */
int fiber_run(int n, void (*fn)(void *arg, int i), void *arg);

/* The index of the fiber running now, -1 outside any. */
int fiber_index(void);

/* poll() of one descriptor; inside a fiber, the others run meanwhile.
 * Same results as poll(): 1 with pfd->revents set, 0 on timeout, -1 with
 * errno EINTR when a signal came while it waited. timeout_ms < 0: none. */
int fiber_poll(struct pollfd *pfd, int timeout_ms);

/* fiber_poll until clock_mono() reads wake_at (> 0), to the nanosecond
 * the kernel's timer gives, not the next millisecond. */
int fiber_poll_until(struct pollfd *pfd, double wake_at);

/* Sleep seconds (<= 0: none); inside a fiber, the others run meanwhile.
 * Returns early, false, when a signal came (as nanosleep with EINTR). */
bool fiber_sleep(double seconds);

/* Sleep until clock_mono() reads mono (to the nanosecond the kernel's
 * timer gives; at once when it is past), as fiber_sleep. */
bool fiber_sleep_until(double mono);

/* Give the other fibers a turn (nothing outside one). */
void fiber_yield(void);

/* Park the running fiber until fiber_unpark(its index); outside a fiber
 * returns at once. For waits on the other fibers (a barrier). */
void fiber_park(void);
void fiber_unpark(int index);

#endif
