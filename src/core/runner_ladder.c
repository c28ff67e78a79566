/* runner_ladder.c — which ranks do I/O in a load ladder's step: the
 * step's active ranks spread over hosts, the others wait. */
#include "runner_state.h"

#include <stdbool.h>
#include <stdlib.h>

int *run_spread_order(const struct run *r)
{
    int *spread = calloc((size_t)r->size, sizeof *spread);
    int *seen = calloc((size_t)r->nhosts + 1, sizeof *seen);
    int *nth = calloc((size_t)r->size, sizeof *nth);
    if (!spread || !seen || !nth) {
        free(seen);
        free(nth);
        free(spread);
        return NULL;
    }
    for (int i = 0; i < r->size; i++)
        nth[i] = seen[r->rank_host[i]]++;
    int place = 0;
    for (int k = 0; place < r->size; k++)
        for (int i = 0; i < r->size; i++)
            if (nth[i] == k)
                spread[i] = place++;
    free(seen);
    free(nth);
    return spread;
}

bool run_active(const struct run *r, int i, int64_t active_ranks)
{
    return active_ranks <= 0 || (r->spread ? r->spread[i] : i) < active_ranks;
}

int run_active_clients(const struct run *r, int i, const struct phase *ph)
{
    if (!run_active(r, i, ph->active_ranks))
        return 0;
    if (ph->active_clients <= 0)
        return r->clients;
    int64_t place = r->spread ? r->spread[i] : i;
    int64_t share = ph->active_clients / r->size + (place < ph->active_clients % r->size);
    return share < r->clients ? (int)share : r->clients;
}

void run_step_comm(struct run *r, const struct phase *ph, bool active)
{
    r->step_comm = MPI_COMM_NULL;
    if (ph->active_ranks > 0 || ph->active_clients > 0)
        MPI_Comm_split(r->comm, active ? 0 : MPI_UNDEFINED, r->rank, &r->step_comm);
}

struct phase_summary run_step_summary(const struct run *r, const struct phase *ph, int index)
{
    struct phase_summary sum = {.index = index, .active_hosts = run_active_hosts(r, ph)};
    for (int i = 0; i < r->size; i++) {
        int n = run_active_clients(r, i, ph);
        sum.active_ranks += n > 0;
        sum.active_clients += n;
    }
    return sum;
}

int run_active_hosts(const struct run *r, const struct phase *ph)
{
    int n = 0;
    for (int h = 0; h < r->nhosts; h++)
        for (int i = 0; i < r->size; i++)
            if (r->rank_host[i] == h && run_active_clients(r, i, ph) > 0) {
                n++;
                break;
            }
    return n;
}
