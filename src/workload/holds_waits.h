/* holds_waits.h — which grants had to wait (holds.h): a grant g waited
 * when another owner's hold o that conflicts with it (ranges meet, one of
 * the two exclusive) was granted before g and released after g asked, by
 * more than the clocks' slack. Counted in O(n log n): the holds in grant
 * order, each looking up the latest release among the conflicting holds
 * granted before it. */
#ifndef HERD_HOLDS_WAITS_H
#define HERD_HOLDS_WAITS_H

#include <stddef.h>
#include <stdint.h>

#include "holds_index.h"

/* The grants of h[0..n) that waited, into *waited. 0; -ENOMEM; -EINTR
 * when a stop came first (holds_stopped; *waited is then a part). */
int holds_waits(const struct hold *h, size_t n, const struct holds_index *ix, double slack,
                uint64_t *waited);

#endif
