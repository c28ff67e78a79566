/* clocksync.h — estimate every rank's clock offset to rank 0 by ping-pong
 * (keep the round with the smallest round trip, as NTP does) and build the
 * common clock from it. Collective over the communicator. */
#ifndef HERD_CLOCKSYNC_H
#define HERD_CLOCKSYNC_H

#include <mpi.h>

#include "clock.h"

/* Returns 0; fills this rank's clock. rounds >= 1 per rank. */
int clocksync_run(MPI_Comm comm, int rounds, struct clock *out);

#endif
