/* linkdelay.c — herd-linkdelay: a link delayer for kernels without netem.
 *
 *   herd-linkdelay --queue N --delay SEC [--jitter SEC] [--seed N] [--pidfile F]
 *
 * Binds netfilter queue N (iptables -j NFQUEUE --queue-num N, see
 * cluster-configs/local/nfs-server.sh --link) and holds every packet it is
 * given for SEC seconds (plus a uniform jitter in [-jitter, +jitter], the sum
 * clipped at 0) before it accepts it. Packets leave in the order they came:
 * a packet's release time is max(previous release, arrival + delay + jitter),
 * so jitter never reorders a TCP stream. Waits use ppoll's nanosecond
 * timeout on CLOCK_MONOTONIC (poll()'s milliseconds add about 1 ms per
 * packet). SIGTERM/SIGINT: every held packet is accepted, the queue unbound,
 * the pidfile removed, exit 0. Bad arguments: one line on stderr, exit 2.
 * The pidfile is written once the queue is bound (the caller waits for it).
 */
#include <arpa/inet.h> /* ntohl */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "safeout.h"

#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h> /* NF_ACCEPT */

#define LINKDELAY_MAX_SEC 60.0            /* longest delay or jitter taken */
#define LINKDELAY_QUEUE_MAXLEN 65536      /* packets the kernel may hold for us */
#define LINKDELAY_RCVBUF (64u << 20)      /* netlink socket receive buffer */
#define LINKDELAY_RECV_BYTES (256u << 10) /* one recv (metadata only: many packets) */

/* One held packet: its queue id and when it may go (ns, CLOCK_MONOTONIC). */
struct held {
    uint32_t id;
    int64_t release_ns;
};

/* The FIFO of held packets: a ring of cap entries (cap a power of two),
 * head..head+len-1; release_ns never decreases from head to tail. */
struct fifo {
    struct held *v;
    size_t cap, head, len;
};

struct opts {
    int queue;
    int64_t delay_ns, jitter_ns;
    uint64_t seed;
    const char *pidfile;
};

struct state {
    struct opts o;
    struct fifo q;
    struct nfq_q_handle *qh;
    int64_t last_release_ns; /* release time of the last packet queued */
    uint64_t rng;
    uint64_t packets, overflows;
    int error; /* a negative errno from the callback */
};

static volatile sig_atomic_t linkdelay_stop;

static void linkdelay_on_signal(int sig)
{
    (void)sig;
    linkdelay_stop = 1;
}

static int64_t linkdelay_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* splitmix64: a small, seedable generator; quality is ample for jitter. */
static uint64_t linkdelay_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int fifo_push(struct fifo *f, struct held h)
{
    if (f->len == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 1024;
        struct held *v = malloc(cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        for (size_t i = 0; i < f->len; i++)
            v[i] = f->v[(f->head + i) & (f->cap - 1)];
        free(f->v);
        f->v = v;
        f->cap = cap;
        f->head = 0;
    }
    f->v[(f->head + f->len) & (f->cap - 1)] = h;
    f->len++;
    return 0;
}

static struct held *fifo_front(struct fifo *f)
{
    return f->len ? &f->v[f->head] : NULL;
}

static void fifo_pop(struct fifo *f)
{
    f->head = (f->head + 1) & (f->cap - 1);
    f->len--;
}

/* linkdelay_parse_sec: "0.010" -> 10000000 ns; 0..LINKDELAY_MAX_SEC. */
static int linkdelay_parse_sec(const char *s, int64_t *ns)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < 0 || v > LINKDELAY_MAX_SEC)
        return -EINVAL;
    *ns = (int64_t)llround(v * 1e9);
    return 0;
}

static int linkdelay_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    char *end;
    if (!*s || *s == '-')
        return -EINVAL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > max)
        return -EINVAL;
    *out = v;
    return 0;
}

static int linkdelay_usage(const char *why, const char *arg)
{
    fprintf(stderr,
            "herd-linkdelay: %s%s%s (usage: herd-linkdelay --queue N --delay SEC [--jitter SEC] "
            "[--seed N] [--pidfile FILE])\n",
            why, arg ? " " : "", arg ? arg : "");
    return -EINVAL;
}

/* linkdelay_parse_args: fill o; 0, or -EINVAL after one line on stderr. */
static int linkdelay_parse_args(int argc, char **argv, struct opts *o)
{
    int have_queue = 0, have_delay = 0, have_seed = 0;
    uint64_t u;
    *o = (struct opts){0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc)
            return linkdelay_usage(
                strncmp(a, "--", 2) ? "unexpected argument" : "option without a value:", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--queue")) {
            if (linkdelay_parse_u64(v, 65535, &u))
                return linkdelay_usage("--queue: a queue number 0..65535", NULL);
            o->queue = (int)u;
            have_queue = 1;
        } else if (!strcmp(a, "--delay")) {
            if (linkdelay_parse_sec(v, &o->delay_ns))
                return linkdelay_usage("--delay: seconds, 0..60", NULL);
            have_delay = 1;
        } else if (!strcmp(a, "--jitter")) {
            if (linkdelay_parse_sec(v, &o->jitter_ns))
                return linkdelay_usage("--jitter: seconds, 0..60", NULL);
        } else if (!strcmp(a, "--seed")) {
            if (linkdelay_parse_u64(v, UINT64_MAX, &o->seed))
                return linkdelay_usage("--seed: a non-negative integer", NULL);
            have_seed = 1;
        } else if (!strcmp(a, "--pidfile")) {
            if (!*v)
                return linkdelay_usage("--pidfile: a file name", NULL);
            o->pidfile = v;
        } else {
            return linkdelay_usage("unknown option", a);
        }
    }
    if (!have_queue || !have_delay)
        return linkdelay_usage("--queue and --delay are required", NULL);
    if (!have_seed)
        o->seed = (uint64_t)linkdelay_now_ns() ^ ((uint64_t)getpid() << 32);
    return 0;
}

/* linkdelay_hold: the release time of a packet arriving now; never earlier
 * than the previous packet's (FIFO order). */
static int64_t linkdelay_hold(struct state *st)
{
    int64_t d = st->o.delay_ns;
    if (st->o.jitter_ns > 0) {
        uint64_t span = 2 * (uint64_t)st->o.jitter_ns + 1;
        d += (int64_t)(linkdelay_rand(&st->rng) % span) - st->o.jitter_ns;
        if (d < 0)
            d = 0;
    }
    int64_t t = linkdelay_now_ns() + d;
    if (t < st->last_release_ns)
        t = st->last_release_ns;
    st->last_release_ns = t;
    return t;
}

static int linkdelay_on_packet(struct nfq_q_handle *qh, struct nfgenmsg *msg, struct nfq_data *nfa,
                               void *data)
{
    (void)qh;
    (void)msg;
    struct state *st = data;
    struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
    if (!ph)
        return 0;
    struct held h = {.id = ntohl(ph->packet_id), .release_ns = linkdelay_hold(st)};
    int rc = fifo_push(&st->q, h);
    if (rc < 0) {
        /* No memory to hold it: let it go now rather than lose it. */
        st->error = rc;
        nfq_set_verdict(st->qh, h.id, NF_ACCEPT, 0, NULL);
        return 0;
    }
    st->packets++;
    return 0;
}

/* linkdelay_release: accept every held packet due by now_ns (all if
 * now_ns is INT64_MAX); 0 or a negative errno. */
static int linkdelay_release(struct state *st, int64_t now_ns)
{
    struct held *h;
    while ((h = fifo_front(&st->q)) && h->release_ns <= now_ns) {
        if (nfq_set_verdict(st->qh, h->id, NF_ACCEPT, 0, NULL) < 0 && errno != ENOENT)
            return -errno;
        fifo_pop(&st->q);
    }
    return 0;
}

/* linkdelay_drain: hand every message waiting on the socket to the
 * callback; 0 or a negative errno. */
static int linkdelay_drain(struct nfq_handle *h, int fd, char *buf, size_t len)
{
    for (;;) {
        ssize_t n = recv(fd, buf, len, MSG_DONTWAIT);
        if (n > 0) {
            nfq_handle_packet(h, buf, (int)n);
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n < 0 && errno == EINTR)
            return 0;
        if (n < 0 && errno == ENOBUFS)
            return -ENOBUFS; /* the kernel dropped messages; caller counts */
        return n == 0 ? -EPIPE : -errno;
    }
}

static void linkdelay_write_pid(FILE *f, const void *arg)
{
    (void)arg;
    fprintf(f, "%ld\n", (long)getpid());
}

/* linkdelay_open: bind queue o->queue with metadata-only copies, a long
 * queue and a big socket buffer; 0 or a negative errno (logged). */
static int linkdelay_open(struct state *st, struct nfq_handle **hp)
{
    struct nfq_handle *h = nfq_open();
    if (!h) {
        int e = errno ? errno : EIO;
        fprintf(stderr, "herd-linkdelay: nfq_open: %s\n", strerror(e));
        return -e;
    }
    st->qh = nfq_create_queue(h, (uint16_t)st->o.queue, linkdelay_on_packet, st);
    if (!st->qh) {
        int e = errno;
        fprintf(stderr, "herd-linkdelay: cannot bind queue %d: %s\n", st->o.queue, strerror(e));
        nfq_close(h);
        return -(e ? e : EIO);
    }
    if (nfq_set_mode(st->qh, NFQNL_COPY_META, 0) < 0) {
        int e = errno;
        fprintf(stderr, "herd-linkdelay: nfq_set_mode: %s\n", strerror(e));
        nfq_destroy_queue(st->qh);
        nfq_close(h);
        return -(e ? e : EIO);
    }
    /* Best effort: older kernels lack these; the delay works without. */
    nfq_set_queue_maxlen(st->qh, LINKDELAY_QUEUE_MAXLEN);
    nfq_set_queue_flags(st->qh, NFQA_CFG_F_GSO, NFQA_CFG_F_GSO);
    nfnl_rcvbufsiz(nfq_nfnlh(h), LINKDELAY_RCVBUF);
    int one = 1;
    setsockopt(nfq_fd(h), SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, sizeof one);
    *hp = h;
    return 0;
}

/* linkdelay_timeout: how long ppoll may sleep: until the oldest held
 * packet is due, or forever (NULL) when none is held. */
static struct timespec *linkdelay_timeout(struct state *st, struct timespec *ts)
{
    struct held *h = fifo_front(&st->q);
    if (!h)
        return NULL;
    int64_t left = h->release_ns - linkdelay_now_ns();
    if (left < 0)
        left = 0;
    ts->tv_sec = (time_t)(left / 1000000000);
    ts->tv_nsec = (long)(left % 1000000000);
    return ts;
}

/* linkdelay_run: the loop; returns 0 on a stop signal, a negative errno
 * on a failure. Every held packet is accepted before it returns. */
static int linkdelay_run(struct state *st, struct nfq_handle *h, const sigset_t *waitmask)
{
    static char buf[LINKDELAY_RECV_BYTES];
    int fd = nfq_fd(h), rc = 0;
    while (!linkdelay_stop) {
        struct timespec ts;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int n = ppoll(&pfd, 1, linkdelay_timeout(st, &ts), waitmask);
        if (n < 0 && errno != EINTR) {
            rc = -errno;
            break;
        }
        if (n > 0) {
            rc = linkdelay_drain(h, fd, buf, sizeof buf);
            if (rc == -ENOBUFS) {
                st->overflows++;
                rc = 0;
            } else if (rc < 0) {
                break;
            }
        }
        rc = linkdelay_release(st, linkdelay_now_ns());
        if (rc < 0)
            break;
    }
    int rc2 = linkdelay_release(st, INT64_MAX);
    return rc ? rc : rc2;
}

int main(int argc, char **argv)
{
    struct state st = {0};
    if (linkdelay_parse_args(argc, argv, &st.o) < 0)
        return 2;
    st.rng = st.o.seed;
    /* Timers as sharp as the kernel allows (default slack: 50 us). */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

    /* SIGTERM/SIGINT stay blocked except inside ppoll: a signal can only
     * cut a wait short, never land between the check and the wait. */
    sigset_t block, waitmask;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGHUP);
    sigprocmask(SIG_BLOCK, &block, &waitmask);
    sigdelset(&waitmask, SIGTERM);
    sigdelset(&waitmask, SIGINT);
    sigdelset(&waitmask, SIGHUP);
    struct sigaction sa = {.sa_handler = linkdelay_on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    struct nfq_handle *h = NULL;
    if (linkdelay_open(&st, &h) < 0)
        return 1;
    /* The pid file is made by the safe-output rule (safeout.h): only where
     * nothing is, and at the end removed only if it is still ours. */
    struct safeout pid = SAFEOUT_NONE;
    char err[600];
    if (st.o.pidfile &&
        (safeout_prepare(&pid, st.o.pidfile, st.o.pidfile, false, NULL, "", err, sizeof err) < 0 ||
         safeout_write(&pid, linkdelay_write_pid, NULL, err, sizeof err) < 0)) {
        fprintf(stderr, "herd-linkdelay: pidfile %s\n", err);
        safeout_close(&pid);
        nfq_destroy_queue(st.qh);
        nfq_close(h);
        return 1;
    }
    fprintf(stderr, "herd-linkdelay: queue %d, delay %.6f s, jitter %.6f s, seed %" PRIu64 "\n",
            st.o.queue, st.o.delay_ns / 1e9, st.o.jitter_ns / 1e9, st.o.seed);
    int rc = linkdelay_run(&st, h, &waitmask);
    nfq_destroy_queue(st.qh);
    nfq_close(h);
    safeout_remove_made(&pid);
    safeout_close(&pid);
    fprintf(stderr, "herd-linkdelay: %s after %" PRIu64 " packets (%" PRIu64 " overflows)%s%s\n",
            rc ? "failed" : "stopped", st.packets, st.overflows, rc ? ": " : "",
            rc ? strerror(-rc) : "");
    free(st.q.v);
    return rc ? 1 : 0;
}
