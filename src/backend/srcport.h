/* srcport.h — which source ports this process's new connections bind:
 * reserved ones (below 1024) or ordinary ones. libnfs binds a reserved
 * port when it may (CAP_NET_BIND_SERVICE in the effective set: root's);
 * a rank of many clients (clients_per_rank > 1) gives that up, and
 * `herd check --probe` connects as such a rank will. */
#ifndef HERD_SRCPORT_H
#define HERD_SRCPORT_H

#include <stdbool.h>

/* Let new connections bind reserved ports (allow), where this process
 * may (the capability in its permitted set), or never (!allow): 0, or
 * -errno (-EPERM: it may not). */
int srcport_allow_reserved(bool allow);

/* Whether new connections bind reserved ports. */
bool srcport_reserved(void);

#endif
