/* connections.c — a phase's note on the connections the server dropped
 * or refused (connections.h). */
#include "connections.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define CONNECTIONS_LOST 1
#define CONNECTIONS_REFUSED 2

bool connections_note(const struct err_entry *errs, size_t n, int clients_per_rank, int64_t clients,
                      int64_t open, char *note, size_t len)
{
    note[0] = '\0';
    if (open <= 0 || open >= clients || clients_per_rank < 1)
        return false;
    unsigned char *seen = calloc((size_t)clients, 1); /* each client's kinds, once */
    if (!seen)
        return false;
    int64_t lost = 0, refused = 0;
    for (size_t i = 0; i < n; i++) {
        const struct err_entry *e = &errs[i];
        int64_t who = (int64_t)e->rank * clients_per_rank + e->client;
        if (!errtab_connection_lost(e->err) || e->client < 0 || e->client >= clients_per_rank ||
            who < 0 || who >= clients)
            continue;
        unsigned char kind = e->err == ECONNREFUSED ? CONNECTIONS_REFUSED : CONNECTIONS_LOST;
        if (seen[who] & kind)
            continue;
        seen[who] |= kind;
        lost += kind == CONNECTIONS_LOST;
        refused += kind == CONNECTIONS_REFUSED;
    }
    free(seen);
    if (lost + refused == 0)
        return false;
    const char *verb = lost ? "dropped" : "refused";
    if (lost && refused)
        verb = "dropped and refused";
    snprintf(note, len,
             "the server %s connections at about %lld: %lld of the %lld clients' connections "
             "were open at the phase's end; %lld clients lost theirs (ECONNRESET and the like), "
             "%lld were refused (ECONNREFUSED)",
             verb, (long long)open, (long long)open, (long long)clients, (long long)lost,
             (long long)refused);
    return true;
}
