/* runner_clients.c — a rank's clients (clients_per_rank = K): their
 * connections to the target, and one phase run by all of them, each on
 * a fiber of its own on the rank's one thread (fiber.h: one event loop
 * serves every client's socket, so a stalled client never blocks its
 * siblings). Each client has a phase_ctx of its own: its rows, error
 * table, holds, histograms, workload state and call in flight; to the
 * workload it is a rank of its own (workload.h). After the phase its
 * tables join the rank's, tagged with the client, for the gather. With
 * K = 1 the same code runs on the rank's stack, without fibers. The
 * clients' own barrier: the last to arrive passes the rank's. Before the
 * run directory is made or looked for, the rank's first client is made
 * to answer (a connection found lost is made again, up to op_timeout). */
#include "runner_state.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fiber.h"
#include "srcport.h"

_Static_assert(JOB_CLIENTS_MAX <= FIBER_MAX, "clients_per_rank's bound exceeds the fibers' one");

/* The name client k of this rank presents to the server (K > 1):
 * HOST-rR-cK; NULL for a lone client, which is the host itself. */
static const char *run_client_name(const struct run *r, int k, char *buf, size_t len)
{
    if (r->clients == 1)
        return NULL;
    char host[64] = "";
    if (gethostname(host, sizeof host - 1) != 0 || !host[0])
        snprintf(host, sizeof host, "herd");
    snprintf(buf, len, "%s-r%d-c%d", host, r->rank, k);
    return buf;
}

/* Client k connects under its name (at the start, and again before a
 * phase when it could not): 0 or -errno, client_ctx[k] NULL on failure. */
static int run_client_connect(struct run *r, int k)
{
    /* The backend reads its options ([global]-only, alike in every
     * phase) from the phase it is handed. */
    const struct phase *opts = &r->job->phases[0];
    char name[96];
    const char *who = run_client_name(r, k, name, sizeof name);
    int rc = r->be->connect(r->job->settings.target, opts, who, &r->client_ctx[k]);
    if (rc < 0)
        r->client_ctx[k] = NULL;
    return rc;
}

struct run_connect_all {
    struct run *r;
    int *rc;
};

static void run_client_connect_one(void *arg, int k)
{
    struct run_connect_all *a = arg;
    a->rc[k] = run_client_connect(a->r, k);
}

int run_clients_connect(struct run *r, int *first_err)
{
    int64_t per_rank = r->job->settings.clients_per_rank;
    r->clients = per_rank > 1 ? (int)per_rank : 1;
    r->client_ctx = calloc((size_t)r->clients, sizeof *r->client_ctx);
    int *rc = calloc((size_t)r->clients, sizeof *rc);
    *first_err = -ENOMEM;
    if (!r->client_ctx || !rc) {
        free(rc);
        return 0;
    }
    if (r->clients > 1) /* thousands of clients could not have a reserved port each */
        srcport_allow_reserved(false);
    struct run_connect_all a = {.r = r, .rc = rc};
    int ran = fiber_run(r->clients, run_client_connect_one, &a);
    int connected = 0;
    *first_err = ran < 0 ? ran : 0;
    for (int k = 0; ran == 0 && k < r->clients; k++) {
        if (rc[k] == 0 && connected++ == 0)
            r->be_ctx = r->client_ctx[k];
        if (rc[k] < 0 && *first_err == 0)
            *first_err = rc[k];
    }
    free(rc);
    return connected;
}

void run_client_reach(struct run *r)
{
    if (!r->be->scheme) /* a directory path: no connection to lose */
        return;
    double until = clock_mono() + r->job->phases[0].op_timeout;
    struct stat st;
    /* A backend remakes a connection it found lost on the next call. */
    while (errtab_connection_lost(r->be->stat(r->be_ctx, r->rundir, &st)) && clock_mono() < until &&
           !runner_stop_poll(&r->stop))
        fiber_sleep(RUN_REACH_PAUSE);
}

int run_clients_open(const struct run *r)
{
    if (!r->be->connected)
        return -1;
    int open = 0;
    for (int k = 0; r->client_ctx && k < r->clients; k++)
        open += r->client_ctx[k] && r->be->connected(r->client_ctx[k]);
    return open;
}

void run_clients_disconnect(struct run *r)
{
    for (int k = 0; r->client_ctx && k < r->clients; k++)
        if (r->client_ctx[k])
            r->be->disconnect(r->client_ctx[k]);
    free(r->client_ctx);
    r->client_ctx = NULL;
    r->be_ctx = NULL;
}

/* The rank's barrier, for the clients that run: the last to arrive
 * passes the rank's own (runner.c's sync, with the other ranks) and
 * wakes the others. */
static void run_clients_sync(struct phase_ctx *c)
{
    struct client_phase *cp = c->sync_data;
    unsigned gen = cp->gen;
    if (++cp->arrived < cp->running) {
        while (cp->gen == gen)
            fiber_park();
        return;
    }
    cp->arrived = 0;
    cp->base->sync(cp->base);
    cp->gen++;
    for (int k = 0; k < cp->n; k++)
        if (k != c->client)
            fiber_unpark(k);
}

static bool run_clients_peer_stopped(struct phase_ctx *c)
{
    struct client_phase *cp = c->sync_data;
    return cp->base->peer_stopped(cp->base);
}

int run_clients_begin(struct run *r, struct phase_ctx *base, int nactive, struct client_phase *cp)
{
    int n = r->clients;
    memset(cp, 0, sizeof *cp);
    cp->n = n;
    cp->r = r;
    cp->base = base;
    cp->wl = workload_find(base->ph->kind);
    cp->c = calloc((size_t)n, sizeof *cp->c);
    cp->errors = calloc((size_t)n, sizeof *cp->errors);
    cp->inflight = calloc((size_t)n, sizeof *cp->inflight);
    cp->hist = calloc((size_t)n * OP_COUNT, sizeof *cp->hist);
    cp->runs = calloc((size_t)n, sizeof *cp->runs);
    if (!cp->c || !cp->errors || !cp->inflight || !cp->hist || !cp->runs || !base->records)
        return -ENOMEM;
    const struct phase *ph = base->ph;
    for (int k = 0; k < n; k++) {
        struct phase_ctx *c = &cp->c[k];
        *c = *base;
        c->rank = base->rank * n + k;
        c->nranks = base->nranks * n;
        c->client = k;
        c->clients = n;
        c->peer = base->peer * n + k;
        c->be_ctx = r->client_ctx[k];
        c->records = base->records + (size_t)k * (size_t)ph->iterations;
        errtab_init(&cp->errors[k]);
        c->errors = &cp->errors[k];
        c->hist = &cp->hist[(size_t)k * OP_COUNT];
        c->inflight = &cp->inflight[k];
        c->sync = run_clients_sync;
        c->sync_data = cp;
        c->peer_stopped = run_clients_peer_stopped;
        cp->runs[k] = k < nactive ? CLIENT_ACTIVE : CLIENT_IDLE;
        for (int64_t i = 0; i < ph->iterations; i++) {
            c->records[i].rank = r->rank;
            c->records[i].client = k;
            c->records[i].iteration = (int32_t)i;
            c->records[i].host = r->host;
        }
    }
    return 0;
}

/* A client that could not connect at the start tries again before each
 * phase it takes part in; a refusal is its error, counted in its rows. */
static int run_client_reconnect(struct client_phase *cp, int k)
{
    struct run *r = cp->r;
    struct phase_ctx *c = &cp->c[k];
    if (r->client_ctx[k])
        return 0;
    int rc = run_client_connect(r, k);
    if (rc < 0) {
        workload_fail(c, NULL, OP_CONNECT, rc, r->job->settings.target);
        return rc;
    }
    c->be_ctx = r->client_ctx[k];
    return 0;
}

static void run_client_prepare(void *arg, int k)
{
    struct client_phase *cp = arg;
    if (cp->runs[k] != CLIENT_ACTIVE)
        return;
    struct phase_ctx *c = &cp->c[k];
    int rc = run_client_reconnect(cp, k);
    if (rc == 0)
        rc = cp->prepare(cp->r, cp->wl, c);
    if (rc < 0) {
        cp->runs[k] = CLIENT_FAILED;
        cp->prep_err = cp->prep_err && cp->prep_err != -EINTR ? cp->prep_err : rc;
        cp->failed++;
    }
}

/* Client k + 1: the clients after the first, on fibers. */
static void run_client_prepare_next(void *arg, int k)
{
    run_client_prepare(arg, k + 1);
}

int run_clients_prepare(struct client_phase *cp, const struct workload_ops *wl,
                        int (*prepare)(struct run *r, const struct workload_ops *wl,
                                       struct phase_ctx *c))
{
    cp->wl = wl;
    cp->prepare = prepare; /* runner.c's, which is above this file */
    /* The first client alone: it makes the phase's directories
     * (workload_make_dirs), which the others' files need. */
    run_client_prepare(cp, 0);
    for (int k = 1; cp->runs[0] == CLIENT_ACTIVE && k < cp->n; k++)
        cp->c[k].dirs_made = true;
    int rc = cp->n > 1 ? fiber_run(cp->n - 1, run_client_prepare_next, cp) : 0;
    if (rc < 0)
        return rc;
    for (int k = 0; k < cp->n; k++)
        cp->running += cp->runs[k] == CLIENT_ACTIVE;
    /* One client: its failure is the rank's (as it always was). Many: the
     * rank runs the clients that are ready, unless none is, or a stop or
     * the deadline cut the preparing short. */
    if (cp->prep_err == -EINTR || (cp->failed > 0 && cp->running == 0))
        return cp->prep_err;
    return 0;
}

static void run_client_work(void *arg, int k)
{
    struct client_phase *cp = arg;
    if (cp->runs[k] != CLIENT_ACTIVE)
        return;
    struct phase_ctx *c = &cp->c[k];
    c->deadline_at = cp->base->deadline_at; /* the common start's, not prepare's */
    const struct backend_ops *be = cp->r->be;
    if (be->observe) /* the backend's own RPCs go into this client's tables */
        be->observe(c->be_ctx, c->hist, c->op_count, c->op_seconds);
    cp->wl->run(c);
    if (be->observe)
        be->observe(c->be_ctx, NULL, NULL, NULL);
    uint32_t read = 0, write = 0;
    if ((cp->wl->flags & WORKLOAD_MOVES_BYTES) && be->window)
        be->window(c->be_ctx, &read, &write);
    for (int64_t i = 0; i < c->ph->iterations; i++) {
        c->records[i].rpc_window_read = (int32_t)read;
        c->records[i].rpc_window_write = (int32_t)write;
    }
}

void run_clients_work(struct client_phase *cp)
{
    if (fiber_run(cp->n, run_client_work, cp) < 0)
        workload_fail(cp->base, NULL, OP_OPEN, -ENOMEM, "(clients)");
}

/* Client k's holds and meta steps into the rank's, tagged. */
static void run_client_merge_lists(struct phase_ctx *base, const struct phase_ctx *c, int rank,
                                   int k)
{
    for (size_t i = 0; i < c->holds.n; i++) {
        const struct hold *h = &c->holds.v[i];
        size_t before = base->holds.n;
        holds_add(&base->holds, rank, h->exclusive, h->asked, h->granted, h->released, h->start,
                  h->len);
        if (base->holds.n > before)
            base->holds.v[before].client = k;
    }
    if (c->nmeta_steps == 0)
        return;
    struct meta_step_record *rows =
        realloc(base->meta_rows, (base->nmeta_rows + c->nmeta_steps) * sizeof *rows);
    if (!rows)
        return;
    base->meta_rows = rows;
    for (size_t i = 0; i < c->nmeta_steps; i++) {
        struct meta_step_record *m = &rows[base->nmeta_rows++];
        *m = c->meta_steps[i];
        m->rank = rank;
        m->client = k;
    }
}

/* A client's own p99 of its paced calls' response and service, from its
 * histograms before they join the rank's, into each of its rows. */
static void run_client_pace_rows(struct phase_ctx *c)
{
    const struct hist *resp = &c->hist[OP_RESPONSE], *serv = &c->hist[OP_SERVICE];
    bool paced = hist_count(resp) > 0;
    double r = paced ? (double)hist_quantile(resp, 0.99) * 1e-9 : NAN;
    double s = paced ? (double)hist_quantile(serv, 0.99) * 1e-9 : NAN;
    for (int64_t i = 0; c->records && i < c->ph->iterations; i++) {
        c->records[i].response_p99 = r;
        c->records[i].service_p99 = s;
    }
}

void run_clients_end(struct client_phase *cp)
{
    struct phase_ctx *base = cp->base;
    for (int k = 0; cp->c && k < cp->n; k++) {
        struct phase_ctx *c = &cp->c[k];
        cp->wl->finish(c);
        run_client_pace_rows(c);
        errtab_absorb(base->errors, c->errors, cp->r->rank, k);
        errtab_free(c->errors);
        run_client_merge_lists(base, c, cp->r->rank, k);
        holds_free(&c->holds);
        for (int op = 0; op < OP_COUNT; op++) {
            hist_merge(&base->hist[op], &c->hist[op]);
            base->op_count[op] += c->op_count[op];
            base->op_errors[op] += c->op_errors[op];
            base->op_seconds[op] += c->op_seconds[op];
        }
    }
}

void run_clients_free(struct client_phase *cp)
{
    free(cp->c);
    free(cp->errors);
    free(cp->inflight);
    free(cp->hist);
    free(cp->runs);
    memset(cp, 0, sizeof *cp);
}
