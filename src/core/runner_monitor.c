/* runner_monitor.c — monitor ranks and their messages (see
 * runner_monitor.h). */
#include "runner_monitor.h"

#include "monitor_keys.h"
#include "monitor_scope.h"
#include "monitor_sources.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { TAG_START = 7101, TAG_FLUSH, TAG_BATCH, TAG_EXIT, TAG_READY };

#define POLL_SECONDS 0.002

/* How long the first phase's start waits for the baselines: twice the
 * interval, at least BASELINE_WAIT_MIN, at most BASELINE_WAIT_MAX. One
 * reading may take a scrape's timeout (the interval, at least 2 s, at most
 * 10 s: monitor_scrape.c); twice the interval leaves room for a second try
 * at the next tick after a first that failed at once (an exporter still
 * starting). 3 s is five times a scrape of the busy User-Mode Linux
 * guest's node_exporter (0.4-0.6 s) and more than a scrape's shortest
 * timeout; past 12 s (the longest timeout and some) waiting only delays a
 * run whose monitor does not answer. */
#define BASELINE_WAIT_MIN 3.0
#define BASELINE_WAIT_MAX 12.0

static double baseline_wait(double interval)
{
    double w = 2 * interval;
    if (w < BASELINE_WAIT_MIN)
        return BASELINE_WAIT_MIN;
    return w > BASELINE_WAIT_MAX ? BASELINE_WAIT_MAX : w;
}

int runner_monitor_roles(const struct run_settings *g, const char *hostname, struct monitor_link *l,
                         char *err, size_t errlen)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    memset(l, 0, sizeof *l);
    l->sampler = -1;
    int mine = 0, wanted = -1;
    if (g->monitor_rank[0]) {
        wanted = strcmp(g->monitor_rank, "last") == 0 ? size - 1 : atoi(g->monitor_rank);
        if (wanted >= size) {
            snprintf(err, errlen, "monitor_rank %s: the run has only %d ranks (0-%d)",
                     g->monitor_rank, size, size - 1);
            return -1;
        }
        mine = rank == wanted;
    } else if (g->monitor_host[0]) {
        mine = monitor_host_matches(hostname, g->monitor_host);
    }
    int *roles = calloc((size_t)size, sizeof *roles);
    l->monitors = calloc((size_t)size, sizeof *l->monitors);
    char *names = calloc((size_t)size, MONITOR_HOST_MAX);
    if (!roles || !l->monitors || !names) {
        free(roles), free(names);
        snprintf(err, errlen, "out of memory");
        return -1; /* every rank would fail the same way, near enough */
    }
    MPI_Allgather(&mine, 1, MPI_INT, roles, 1, MPI_INT, MPI_COMM_WORLD);
    char me[MONITOR_HOST_MAX] = "";
    snprintf(me, sizeof me, "%s", hostname);
    MPI_Allgather(me, MONITOR_HOST_MAX, MPI_CHAR, names, MONITOR_HOST_MAX, MPI_CHAR,
                  MPI_COMM_WORLD);
    l->io_root = -1;
    for (int i = 0; i < size; i++) {
        if (roles[i])
            l->monitors[l->nmonitors++] = i;
        else if (l->io_root < 0)
            l->io_root = i;
    }
    int rc = 0;
    if (g->monitor_host[0] && l->nmonitors == 0) {
        snprintf(err, errlen, "monitor_host '%s': no rank of this run is on it (rank 0 is on %s)",
                 g->monitor_host, names);
        rc = -1;
    } else if (l->nmonitors == size) {
        snprintf(err, errlen, "monitor_%s: every rank is a monitor rank, none is left for I/O",
                 g->monitor_host[0] ? "host" : "rank");
        rc = -1;
    } else if (l->nmonitors > 0) {
        l->sampler = l->monitors[0];
        snprintf(l->sampler_host, sizeof l->sampler_host, "%s",
                 names + (size_t)l->sampler * MONITOR_HOST_MAX);
    }
    l->is_monitor = roles[rank] != 0;
    free(roles);
    free(names);
    return rc;
}

static void poll_sleep(void)
{
    struct timespec ts = {0, (long)(POLL_SECONDS * 1e9)};
    nanosleep(&ts, NULL);
}

/* Wait for a message with tag (or any tag) from `from` without spinning. */
static void wait_message(int from, int tag, MPI_Status *st)
{
    int flag = 0;
    for (;;) {
        MPI_Iprobe(from, tag, MPI_COMM_WORLD, &flag, st);
        if (flag)
            return;
        poll_sleep();
    }
}

/* Poll until m has its baselines or `seconds` pass; true when it has. */
static bool await_baseline(struct monitor *m, double seconds)
{
    double deadline = clock_mono() + seconds;
    bool in;
    while (!(in = monitor_baseline_in(m)) && clock_mono() < deadline)
        poll_sleep();
    return in;
}

/* I/O rank 0: the sampler's answer to TAG_START (whether its baseline is
 * in) when it has come, or with wait, once it does; false when not yet. */
static bool take_ready(struct monitor_link *l, bool wait, int *in)
{
    int flag = 1;
    MPI_Status st;
    if (wait)
        wait_message(l->sampler, TAG_READY, &st);
    else
        MPI_Iprobe(l->sampler, TAG_READY, MPI_COMM_WORLD, &flag, &st);
    if (!flag)
        return false;
    MPI_Recv(in, 1, MPI_INT, l->sampler, TAG_READY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    l->ready_pending = false;
    return true;
}

static void send_batch(struct monitor_batch *b, int to)
{
    void *buf = NULL;
    size_t len = 0;
    if (monitor_batch_pack(b, &buf, &len) < 0) { /* out of memory: send nothing */
        monitor_batch_free(b);
        monitor_batch_pack(b, &buf, &len);
    }
    MPI_Send(buf, (int)len, MPI_BYTE, to, TAG_BATCH, MPI_COMM_WORLD);
    free(buf);
    monitor_batch_free(b);
}

/* The sampler rank, at TAG_START: sample this host on the schedule from
 * t_first and tell I/O rank 0 once the baseline is in, or that it is not
 * after the bounded wait (a start that failed is a note in early). */
static struct monitor *serve_start(const struct monitor_link *l, const struct run_settings *g,
                                   const struct clock *clock, const char *hostname, double t_first,
                                   struct monitor_batch *early)
{
    struct monitor_config cfg = {
        .interval = g->monitor_interval,
        .local = true,
        .processes = g->monitor_processes,
        .scope = monitor_scope_effective(g->monitor_scope),
        .disks = g->monitor_disks,
        .url = "",
        .hostname = hostname,
        .clock = clock,
    };
    char err[256];
    struct monitor *m = monitor_start(&cfg, t_first, err, sizeof err);
    if (!m)
        monitor_add_note(early, clock_now(clock), hostname, "proc", "%s", err);
    int in = m && await_baseline(m, baseline_wait(g->monitor_interval));
    MPI_Send(&in, 1, MPI_INT, l->io_root, TAG_READY, MPI_COMM_WORLD);
    return m;
}

int runner_monitor_serve(const struct monitor_link *l, const struct run_settings *g,
                         const struct clock *clock, const char *hostname)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    struct monitor *m = NULL;
    struct monitor_batch early = {0}; /* notes from before sampling began */
    for (;;) {
        MPI_Status st;
        wait_message(l->io_root, MPI_ANY_TAG, &st);
        if (st.MPI_TAG == TAG_START) {
            double t_first;
            MPI_Recv(&t_first, 1, MPI_DOUBLE, l->io_root, TAG_START, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            if (rank == l->sampler && !m)
                m = serve_start(l, g, clock, hostname, t_first, &early);
        } else if (st.MPI_TAG == TAG_FLUSH) {
            int final;
            MPI_Recv(&final, 1, MPI_INT, l->io_root, TAG_FLUSH, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            struct monitor_batch b = {0};
            monitor_batch_move(&b, &early);
            if (m && final) {
                monitor_stop(m, &b);
                m = NULL;
            } else if (m) {
                monitor_take(m, &b);
            }
            send_batch(&b, l->io_root);
        } else if (st.MPI_TAG == TAG_EXIT) {
            int code;
            MPI_Recv(&code, 1, MPI_INT, l->io_root, TAG_EXIT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            struct monitor_batch dropped = {0};
            monitor_stop(m, &dropped);
            monitor_batch_free(&dropped);
            monitor_batch_free(&early);
            return code;
        } else { /* not ours: take it off the queue */
            MPI_Recv(NULL, 0, MPI_BYTE, l->io_root, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
}

bool runner_monitor_wanted(const struct monitor_link *l, const struct run_settings *g)
{
    return l->sampler >= 0 || g->monitor_url[0];
}

/* I/O rank 0: a note for the first rows that source on host had no
 * baseline when the first phase (called phase) was announced. */
static void note_no_baseline(struct monitor_link *l, const char *phase, const struct clock *clock,
                             const char *host, const char *source, double waited)
{
    monitor_add_note(&l->early, clock_now(clock), host, source,
                     "no baseline reading within %g s: phase %s started without one, its "
                     "figures miss its beginning",
                     waited, phase);
}

int runner_monitor_begin(struct monitor_link *l, const struct run_settings *g, const char *phase,
                         const struct clock *clock, struct runner_stop *stop, char *err,
                         size_t errlen)
{
    double t_first = clock_now(clock), waited = baseline_wait(g->monitor_interval);
    double deadline = clock_mono() + waited;
    if (l->sampler >= 0) {
        MPI_Send(&t_first, 1, MPI_DOUBLE, l->sampler, TAG_START, MPI_COMM_WORLD);
        l->ready_pending = true;
    }
    int rc = 0;
    if (g->monitor_url[0]) {
        struct monitor_config cfg = {
            .interval = g->monitor_interval,
            .local = false,
            .processes = "",
            .disks = "",
            .url = g->monitor_url,
            .hostname = "",
            .clock = clock,
        };
        l->scrape = monitor_start(&cfg, t_first, err, errlen);
        rc = l->scrape ? 0 : -1;
    }
    int sampler_in = 0;
    bool scrape_in = !l->scrape;
    bool stopped = false;
    while ((l->ready_pending || !scrape_in) && clock_mono() < deadline &&
           !(stopped = runner_stop_poll(stop))) {
        if (l->ready_pending)
            take_ready(l, false, &sampler_in);
        scrape_in = scrape_in || monitor_baseline_in(l->scrape);
        if (l->ready_pending || !scrape_in)
            poll_sleep();
    }
    if (stopped) /* the first phase does not run: nothing to say */
        return rc;
    if (l->sampler >= 0 && !sampler_in)
        note_no_baseline(l, phase, clock, l->sampler_host, monitor_source_proc.name, waited);
    if (l->scrape && !scrape_in) {
        char host[MONITOR_HOST_MAX];
        monitor_url_host(g->monitor_url, host, sizeof host);
        note_no_baseline(l, phase, clock, host, monitor_source_scrape.name, waited);
    }
    return rc;
}

void runner_monitor_collect(struct monitor_link *l, bool final, struct monitor_batch *out)
{
    int in;
    if (l->ready_pending) /* a late baseline's answer: it comes before the batch */
        take_ready(l, true, &in);
    if (l->sampler >= 0) {
        int flag = final;
        MPI_Send(&flag, 1, MPI_INT, l->sampler, TAG_FLUSH, MPI_COMM_WORLD);
        MPI_Status st;
        wait_message(l->sampler, TAG_BATCH, &st);
        int len = 0;
        MPI_Get_count(&st, MPI_BYTE, &len);
        void *buf = malloc(len > 0 ? (size_t)len : 1);
        MPI_Recv(buf, len, MPI_BYTE, l->sampler, TAG_BATCH, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        struct monitor_batch b;
        if (buf && monitor_batch_unpack(buf, (size_t)len, &b) == 0)
            monitor_batch_move(out, &b);
        free(buf);
    }
    if (l->scrape) {
        if (final) {
            monitor_stop(l->scrape, out);
            l->scrape = NULL;
        } else {
            monitor_take(l->scrape, out);
        }
    }
    monitor_batch_move(out, &l->early); /* after the rows it follows in time */
}

void runner_monitor_release(struct monitor_link *l, int exit_code)
{
    int in;
    if (l->ready_pending) /* no collect took it: nothing is left unreceived */
        take_ready(l, true, &in);
    monitor_batch_free(&l->early);
    for (int i = 0; i < l->nmonitors; i++)
        MPI_Send(&exit_code, 1, MPI_INT, l->monitors[i], TAG_EXIT, MPI_COMM_WORLD);
    if (l->scrape) {
        struct monitor_batch dropped = {0};
        monitor_stop(l->scrape, &dropped);
        monitor_batch_free(&dropped);
    }
    free(l->monitors);
    l->monitors = NULL;
}
