/* fiber.c — fibers on ucontext stacks and their event loop (fiber.h):
 * one epoll set for every descriptor a fiber waits on (armed one-shot per
 * wait), a queue of fibers ready to run, and the waits' timeouts (a
 * heap: timeheap.h). */
#include "fiber.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "clock.h"
#include "timeheap.h"

#if defined(__SANITIZE_ADDRESS__)
#define FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FIBER_ASAN 1
#endif
#endif
#ifdef FIBER_ASAN
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom, size_t size);
void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old,
                                     size_t *size_old);
#endif

enum fiber_state { FIBER_READY, FIBER_RUNNING, FIBER_WAITING, FIBER_PARKED, FIBER_DONE };

struct fiber {
    ucontext_t uc;
    char *map; /* a guard page, then the stack */
    enum fiber_state state;
    int fd;         /* the descriptor waited on, -1: none (a sleep) */
    short revents;  /* what the wait saw */
    bool signalled; /* the wait ended by a signal */
};

struct fiber_loop {
    ucontext_t main;
    struct fiber *f;
    int n, left, current;
    void (*fn)(void *arg, int i);
    void *arg;
    int epfd;
    int *queue; /* ready fibers, a ring of n */
    int qhead, qlen;
    int nwaiting;           /* fibers in FIBER_WAITING */
    struct timeheap timers; /* by fiber: when its wait times out (clock_mono) */
    int *owner;             /* by descriptor: the waiting fiber + 1, 0: none */
    bool *registered;       /* by descriptor: in the epoll set (maybe disarmed) */
    int nfds;
    size_t page;
#ifdef FIBER_ASAN
    const void *main_bottom;
    size_t main_size;
#endif
};

static _Thread_local struct fiber_loop *fiber_loop_now;

int fiber_index(void)
{
    return fiber_loop_now ? fiber_loop_now->current : -1;
}

static void fiber_enqueue(struct fiber_loop *l, int i)
{
    l->nwaiting -= l->f[i].state == FIBER_WAITING;
    l->f[i].state = FIBER_READY;
    l->queue[(l->qhead + l->qlen++) % l->n] = i;
}

/* From a fiber to the loop, until the loop switches back. */
static void fiber_to_loop(struct fiber_loop *l)
{
    struct fiber *f = &l->f[l->current];
#ifdef FIBER_ASAN
    void *fake = NULL;
    __sanitizer_start_switch_fiber(&fake, l->main_bottom, l->main_size);
    swapcontext(&f->uc, &l->main);
    __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#else
    swapcontext(&f->uc, &l->main);
#endif
}

static void fiber_from_loop(struct fiber_loop *l, int i)
{
    l->current = i;
    l->f[i].state = FIBER_RUNNING;
#ifdef FIBER_ASAN
    void *fake = NULL;
    __sanitizer_start_switch_fiber(&fake, l->f[i].map + l->page, FIBER_STACK);
    swapcontext(&l->main, &l->f[i].uc);
    __sanitizer_finish_switch_fiber(fake, &l->main_bottom, &l->main_size);
#else
    swapcontext(&l->main, &l->f[i].uc);
#endif
    l->current = -1;
}

static void fiber_start(void)
{
    struct fiber_loop *l = fiber_loop_now;
#ifdef FIBER_ASAN
    __sanitizer_finish_switch_fiber(NULL, &l->main_bottom, &l->main_size);
#endif
    int i = l->current;
    l->fn(l->arg, i);
    l->f[i].state = FIBER_DONE;
    l->left--;
#ifdef FIBER_ASAN
    __sanitizer_start_switch_fiber(NULL, l->main_bottom, l->main_size);
#endif
    /* returns to uc_link: the loop */
}

/* Room in the descriptor tables for fd; false without memory. */
static bool fiber_fd_room(struct fiber_loop *l, int fd)
{
    if (fd < l->nfds)
        return true;
    int n = l->nfds ? l->nfds : 64;
    while (n <= fd)
        n *= 2;
    int *owner = realloc(l->owner, (size_t)n * sizeof *owner);
    if (!owner)
        return false;
    l->owner = owner;
    bool *reg = realloc(l->registered, (size_t)n * sizeof *reg);
    if (!reg)
        return false;
    l->registered = reg;
    memset(owner + l->nfds, 0, (size_t)(n - l->nfds) * sizeof *owner);
    memset(reg + l->nfds, 0, (size_t)(n - l->nfds) * sizeof *reg);
    l->nfds = n;
    return true;
}

/* Arm fd for one report of events (EPOLLONESHOT): MOD when it is in the
 * set (a closed descriptor left it: then ADD), else ADD. 0 or -errno. */
static int fiber_arm(struct fiber_loop *l, int fd, short events)
{
    struct epoll_event ev = {.events = EPOLLONESHOT, .data.fd = fd};
    if (events & POLLIN)
        ev.events |= EPOLLIN;
    if (events & POLLOUT)
        ev.events |= EPOLLOUT;
    int op = l->registered[fd] ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    if (epoll_ctl(l->epfd, op, fd, &ev) != 0) {
        if (errno == ENOENT)
            op = EPOLL_CTL_ADD;
        else if (errno == EEXIST)
            op = EPOLL_CTL_MOD;
        else
            return -errno;
        if (epoll_ctl(l->epfd, op, fd, &ev) != 0)
            return -errno;
    }
    l->registered[fd] = true;
    return 0;
}

/* The running fiber waits for fd (or only the time, fd < 0) and returns
 * as fiber_poll does. */
static int fiber_wait(struct fiber_loop *l, int fd, short events, double wake_at, short *revents)
{
    struct fiber *f = &l->f[l->current];
    *revents = 0;
    if (fd >= 0) {
        if (!fiber_fd_room(l, fd)) {
            errno = ENOMEM;
            return -1;
        }
        int rc = fiber_arm(l, fd, events);
        if (rc < 0) {
            errno = -rc;
            return -1;
        }
        l->owner[fd] = l->current + 1;
    }
    f->fd = fd;
    f->revents = 0;
    f->signalled = false;
    if (wake_at > 0)
        timeheap_set(&l->timers, l->current, wake_at);
    f->state = FIBER_WAITING;
    l->nwaiting++;
    fiber_to_loop(l);
    timeheap_remove(&l->timers, l->current); /* an event or a signal came first */
    if (fd >= 0 && fd < l->nfds && l->owner[fd] == l->current + 1)
        l->owner[fd] = 0;
    if (f->signalled) {
        errno = EINTR;
        return -1;
    }
    *revents = f->revents;
    return f->revents ? 1 : 0;
}

int fiber_poll(struct pollfd *pfd, int timeout_ms)
{
    struct fiber_loop *l = fiber_loop_now;
    if (!l || l->current < 0)
        return poll(pfd, 1, timeout_ms);
    if (timeout_ms == 0)
        return poll(pfd, 1, 0); /* a look, no wait */
    return fiber_wait(l, pfd->fd, pfd->events,
                      timeout_ms >= 0 ? clock_mono() + timeout_ms / 1000.0 : 0, &pfd->revents);
}

int fiber_poll_until(struct pollfd *pfd, double wake_at)
{
    struct fiber_loop *l = fiber_loop_now;
    if (l && l->current >= 0)
        return fiber_wait(l, pfd->fd, pfd->events, wake_at, &pfd->revents);
    double left = wake_at - clock_mono();
    left = left > 0 ? left : 0;
    struct timespec ts = {.tv_sec = (time_t)left,
                          .tv_nsec = (long)((left - (double)(time_t)left) * 1e9)};
    return ppoll(pfd, 1, &ts, NULL);
}

/* Outside a fiber: a plain relative sleep (clock_mono may be shifted,
 * clock.c); false when a signal cut it short. */
static bool fiber_nanosleep(double seconds)
{
    struct timespec ts = {.tv_sec = (time_t)seconds,
                          .tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9)};
    return nanosleep(&ts, NULL) == 0;
}

static bool fiber_in_loop(void)
{
    return fiber_loop_now && fiber_loop_now->current >= 0;
}

bool fiber_sleep(double seconds)
{
    if (seconds <= 0)
        return true;
    if (!fiber_in_loop())
        return fiber_nanosleep(seconds);
    short revents;
    return fiber_wait(fiber_loop_now, -1, 0, clock_mono() + seconds, &revents) == 0;
}

bool fiber_sleep_until(double mono)
{
    double left = mono - clock_mono();
    if (left <= 0)
        return true;
    if (!fiber_in_loop())
        return fiber_nanosleep(left);
    short revents;
    return fiber_wait(fiber_loop_now, -1, 0, mono, &revents) == 0;
}

void fiber_yield(void)
{
    struct fiber_loop *l = fiber_loop_now;
    if (!l || l->current < 0)
        return;
    fiber_enqueue(l, l->current);
    fiber_to_loop(l);
}

void fiber_park(void)
{
    struct fiber_loop *l = fiber_loop_now;
    if (!l || l->current < 0)
        return;
    l->f[l->current].state = FIBER_PARKED;
    fiber_to_loop(l);
}

void fiber_unpark(int index)
{
    struct fiber_loop *l = fiber_loop_now;
    if (l && index >= 0 && index < l->n && l->f[index].state == FIBER_PARKED)
        fiber_enqueue(l, index);
}

/* Seconds until the earliest wait may time out (-1: none), after
 * queueing the waits whose time has come: the earliest first, from the
 * heap of the waits' times (O(log n) a wait, never a look at every
 * fiber: thousands of clients waking often). */
static double fiber_timeouts(struct fiber_loop *l)
{
    double now = clock_mono(), first;
    int i;
    while ((i = timeheap_top(&l->timers, &first)) >= 0 && first <= now) {
        timeheap_remove(&l->timers, i);
        if (l->f[i].state == FIBER_WAITING)
            fiber_enqueue(l, i);
    }
    for (i = 0; l->nwaiting == 0 && !l->qlen && i < l->n; i++)
        if (l->f[i].state == FIBER_PARKED) /* nobody left to wake them: a caller's bug */
            fiber_enqueue(l, i);
    if (l->qlen)
        return 0;
    if (timeheap_top(&l->timers, &first) < 0)
        return -1;
    return first > now ? first - now : 0;
}

/* One turn of the loop: run every ready fiber, then wait for events or
 * the first timeout. */
static void fiber_turn(struct fiber_loop *l)
{
    while (l->qlen) {
        int i = l->queue[l->qhead];
        l->qhead = (l->qhead + 1) % l->n;
        l->qlen--;
        fiber_from_loop(l, i);
    }
    if (l->left == 0)
        return;
    double timeout = fiber_timeouts(l);
    if (l->qlen)
        return;
    struct epoll_event ev[256];
    /* To the nanosecond (epoll_pwait2), so that a paced call's timer wakes
     * on time, not at the next whole millisecond. */
    struct timespec ts = {.tv_sec = (time_t)timeout,
                          .tv_nsec = (long)((timeout - (double)(time_t)timeout) * 1e9)};
    int got = epoll_pwait2(l->epfd, ev, 256, timeout < 0 ? NULL : &ts, NULL);
    if (got < 0 && errno == EINTR) { /* a signal: every wait looks at it */
        for (int i = 0; i < l->n; i++)
            if (l->f[i].state == FIBER_WAITING) {
                l->f[i].signalled = true;
                fiber_enqueue(l, i);
            }
        return;
    }
    for (int k = 0; k < got; k++) {
        int fd = ev[k].data.fd, who = fd < l->nfds ? l->owner[fd] - 1 : -1;
        if (who < 0 || l->f[who].state != FIBER_WAITING || l->f[who].fd != fd)
            continue; /* nobody waits on it now (its wait timed out) */
        uint32_t e = ev[k].events;
        l->f[who].revents = (short)((e & EPOLLIN ? POLLIN : 0) | (e & EPOLLOUT ? POLLOUT : 0) |
                                    (e & EPOLLERR ? POLLERR : 0) | (e & EPOLLHUP ? POLLHUP : 0));
        fiber_enqueue(l, who);
    }
}

static void fiber_loop_free(struct fiber_loop *l)
{
    for (int i = 0; l->f && i < l->n; i++)
        if (l->f[i].map)
            munmap(l->f[i].map, FIBER_STACK + l->page);
    if (l->epfd >= 0)
        close(l->epfd);
    free(l->f);
    free(l->queue);
    free(l->owner);
    free(l->registered);
    timeheap_free(&l->timers);
}

/* f's context: its stack, fiber_start, then back to the loop. */
static int fiber_context(struct fiber_loop *l, struct fiber *f)
{
    if (getcontext(&f->uc) != 0)
        return -1;
    f->uc.uc_stack.ss_sp = f->map + l->page;
    f->uc.uc_stack.ss_size = FIBER_STACK;
    f->uc.uc_link = &l->main;
    makecontext(&f->uc, fiber_start, 0);
    return 0;
}

/* Stacks (a guard page below each) and contexts for l's n fibers. */
static int fiber_loop_make(struct fiber_loop *l)
{
    l->f = calloc((size_t)l->n, sizeof *l->f);
    l->queue = calloc((size_t)l->n, sizeof *l->queue);
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (!l->f || !l->queue || l->epfd < 0 || timeheap_init(&l->timers, l->n) < 0)
        return -ENOMEM;
    for (int i = 0; i < l->n; i++) {
        struct fiber *f = &l->f[i];
        void *m = mmap(NULL, FIBER_STACK + l->page, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
        if (m == MAP_FAILED)
            return -ENOMEM;
        f->map = m;
        if (mprotect(f->map, l->page, PROT_NONE) != 0 || fiber_context(l, f) != 0)
            return -ENOMEM;
        f->fd = -1;
        fiber_enqueue(l, i);
    }
    return 0;
}

int fiber_run(int n, void (*fn)(void *arg, int i), void *arg)
{
    if (n < 1 || n > FIBER_MAX || fiber_loop_now)
        return -EINVAL; /* no loop inside a loop */
    if (n == 1) {
        fn(arg, 0);
        return 0;
    }
    struct fiber_loop l = {.n = n, .left = n, .current = -1, .fn = fn, .arg = arg, .epfd = -1};
    l.page = (size_t)sysconf(_SC_PAGESIZE);
    int rc = fiber_loop_make(&l);
    if (rc < 0) {
        fiber_loop_free(&l);
        return rc;
    }
    fiber_loop_now = &l;
    while (l.left > 0)
        fiber_turn(&l);
    fiber_loop_now = NULL;
    fiber_loop_free(&l);
    return 0;
}
