/* clientfit.c — whether a rank's clients fit its host (clientfit.h). */
#include "clientfit.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "backend.h"
#include "units.h"

/* The settings a memory refusal tries, largest first: calls in flight
 * (libnfs's nfs_inflight: the backends with clients), block sizes. */
#define FIT_INFLIGHT_MAX 64
#define FIT_BLOCK_MIN 4096u

/* The backend's estimate of a client, when job has clients; else NULL. */
static const struct backend_ops *fit_backend(const struct job *job)
{
    const struct backend_ops *be = backend_find(job->settings.backend);
    return job->settings.clients_per_rank > 1 && be && be->client_memory ? be : NULL;
}

/* The most one client holds over job's phases with tune's settings
 * (NULL: the job's own); *at (NULL: not asked) the phase that does. */
static uint64_t fit_most(const struct backend_ops *be, const struct job *job,
                         const struct client_tune *tune, int *at)
{
    uint64_t most = 0;
    for (int i = 0; i < job->nphases; i++) {
        uint64_t m = be->client_memory(job, i, tune);
        if (m > most && at)
            *at = i;
        most = m > most ? m : most;
    }
    return most;
}

void clientfit_client(const struct job *job, struct clientfit_client *out)
{
    const struct backend_ops *be = fit_backend(job);
    *out = (struct clientfit_client){0};
    if (!be)
        return;
    out->memory = fit_most(be, job, NULL, &out->phase);
    out->fds = be->client_fds ? be->client_fds(job) : 1;
}

/* Whether clients of `client` bytes each, `clients` a rank, on `ranks`
 * ranks fit half of mem (0: unknown). */
static bool fit_in(uint64_t client, int64_t clients, int64_t ranks, uint64_t mem)
{
    return !mem || (double)client * (double)clients * (double)ranks <= (double)mem / 2;
}

/* A suggestion's words ("nfs_inflight = 2 (3.1 MiB per client)"), up to
 * three of them. */
struct fit_offer {
    char text[3][96];
    int n;
};

/* Whether tune's settings bring a client below `now` and the job's
 * clients within mem; then offered as "NAME = VALUE (... per client)". */
static bool fit_try(const struct backend_ops *be, const struct job *job,
                    const struct client_tune *tune, uint64_t now, int64_t ranks, uint64_t mem,
                    const char *name, const char *value, struct fit_offer *offer)
{
    uint64_t m = fit_most(be, job, tune, NULL);
    if (m >= now || !fit_in(m, job->settings.clients_per_rank, ranks, mem))
        return false;
    char each[32];
    units_format_human((double)m, each, sizeof each);
    snprintf(offer->text[offer->n++], sizeof offer->text[0], "%s = %s (%s per client)", name, value,
             each);
    return true;
}

/* The largest block_size below every block phase's that fits (a power of
 * two, at most the smallest file_size of those phases). */
static void fit_offer_block(const struct backend_ops *be, const struct job *job, uint64_t now,
                            int64_t ranks, uint64_t mem, struct fit_offer *offer)
{
    uint64_t most = 0, room = UINT64_MAX;
    for (int i = 0; i < job->nphases; i++) {
        const struct phase *ph = &job->phases[i];
        most = ph->block_size > most ? ph->block_size : most;
        if ((job_kind_caps(ph->kind) & JOB_KIND_BLOCKS) && ph->file_size < room)
            room = ph->file_size;
    }
    for (uint64_t b = (uint64_t)1 << 30; b >= FIT_BLOCK_MIN; b /= 2) {
        char value[32];
        units_format_size(b, value, sizeof value);
        if (b < most && b <= room &&
            fit_try(be, job, &(struct client_tune){.block_size = b}, now, ranks, mem, "block_size",
                    value, offer))
            return;
    }
}

/* The nearest settings that fit: a smaller window, a smaller block, fewer
 * clients (each the largest that fits), as "fits with A, B or C". */
static void fit_suggest(const struct backend_ops *be, const struct job *job, uint64_t now,
                        int64_t ranks, uint64_t mem, char *out, size_t len)
{
    struct fit_offer offer = {.n = 0};
    for (int64_t w = FIT_INFLIGHT_MAX; w >= 1; w /= 2) {
        char value[24];
        snprintf(value, sizeof value, "%lld", (long long)w);
        if (fit_try(be, job, &(struct client_tune){.inflight = w}, now, ranks, mem, "nfs_inflight",
                    value, &offer))
            break;
    }
    fit_offer_block(be, job, now, ranks, mem, &offer);
    double most = (double)mem / 2 / ((double)now * (double)ranks);
    if (most >= 2)
        snprintf(offer.text[offer.n++], sizeof offer.text[0], "clients_per_rank = %lld",
                 (long long)most);
    if (offer.n == 0) {
        snprintf(out, len, "even 2 clients a rank do not fit: run fewer ranks on it");
        return;
    }
    snprintf(out, len, "fits with %s%s%s%s%s", offer.text[0], offer.n == 3 ? ", " : "",
             offer.n == 3 ? offer.text[1] : "", offer.n > 1 ? " or " : "",
             offer.n > 1 ? offer.text[offer.n - 1] : "");
}

int clientfit_memory(const struct job *job, int64_t ranks_on_host, uint64_t mem, const char *host,
                     char *err, size_t len)
{
    const struct backend_ops *be = fit_backend(job);
    int64_t clients = job->settings.clients_per_rank;
    int at = 0;
    uint64_t client = be ? fit_most(be, job, NULL, &at) : 0;
    if (!be || fit_in(client, clients, ranks_on_host, mem))
        return 0;
    char each[32], all[32], have[32], ranks[64] = "", fits[400], why[1024];
    units_format_human((double)client, each, sizeof each);
    units_format_human((double)client * (double)clients * (double)ranks_on_host, all, sizeof all);
    units_format_human((double)mem, have, sizeof have);
    if (ranks_on_host > 1)
        snprintf(ranks, sizeof ranks, " x %lld ranks", (long long)ranks_on_host);
    fit_suggest(be, job, client, ranks_on_host, mem, fits, sizeof fits);
    snprintf(why, sizeof why,
             "%lld clients x %s each (phase %s: RPC window and block buffers, and its state)%s "
             "on %s = %s, more than half of its %s: %s",
             (long long)clients, each, job->phases[at].name, ranks, host, all, have, fits);
    job_key_error(job, &job->phases[0], "clients_per_rank", why, err, len); /* its line */
    return -ENOMEM;
}

long clientfit_fds_open(void)
{
    DIR *d = opendir("/proc/self/fd");
    long n = 0;
    if (!d)
        return 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n > 3 ? n - 3 : 0; /* ".", ".." and the listing's own */
}

long clientfit_fds_need(const struct job *job, long in_use)
{
    struct clientfit_client c;
    clientfit_client(job, &c);
    return in_use + CLIENTFIT_FDS_LATER + (long)job->settings.clients_per_rank * (long)c.fds;
}

/* The soft limit raised to the hard one (where the hard one is unlimited:
 * to need). 0 or -errno. */
static int fit_raise(struct rlimit rl, long need)
{
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
        return 0;
    rl.rlim_cur = (rlim_t)need;
    return setrlimit(RLIMIT_NOFILE, &rl) == 0 ? 0 : -errno;
}

int clientfit_fds(const struct job *job, long in_use, bool raise, const char *who, char *err,
                  size_t len)
{
    struct clientfit_client c;
    struct rlimit rl;
    clientfit_client(job, &c);
    if (!c.fds || getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 0;
    long need = clientfit_fds_need(job, in_use);
    if ((rlim_t)need <= rl.rlim_cur)
        return 0;
    bool room = rl.rlim_max == RLIM_INFINITY || (rlim_t)need <= rl.rlim_max;
    if (room && (!raise || fit_raise(rl, need) == 0))
        return 0;
    long own = in_use + CLIENTFIT_FDS_LATER;
    long most = room ? 0 : ((long)rl.rlim_max - own) / (long)c.fds;
    char why[600], fewer[64] = "";
    if (most >= 2)
        snprintf(fewer, sizeof fewer, " or set clients_per_rank = %ld at most", most);
    snprintf(
        why, sizeof why,
        "%lld clients need about %ld file descriptors in a rank (%u each, and %ld of herd, "
        "MPI and HDF5), more than the limit of %s (%llu: ulimit -n; hard limit %llu): raise it "
        "(ulimit -n %ld, or nofile in /etc/security/limits.conf)%s",
        (long long)job->settings.clients_per_rank, need, c.fds, own, who,
        (unsigned long long)rl.rlim_cur,
        (unsigned long long)(rl.rlim_max == RLIM_INFINITY ? rl.rlim_cur : rl.rlim_max), need,
        fewer);
    job_key_error(job, &job->phases[0], "clients_per_rank", why, err, len); /* its line */
    return -EMFILE;
}
