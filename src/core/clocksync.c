/* clocksync.c — ping-pong clock offset estimation against rank 0.
 *
 * Rank 0 takes each other rank in turn: it stamps t0, sends, the other
 * rank replies with its own clock reading tr, rank 0 stamps t1. Assuming a
 * symmetric path, the offset is tr - (t0 + t1) / 2 with an error of at most
 * (t1 - t0) / 2; the round with the smallest round trip wins. */
#include "clocksync.h"

#define TAG_PING 7001
#define TAG_RESULT 7002

int clocksync_run(MPI_Comm comm, int rounds, struct clock *out)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (rank == 0) {
        double epoch = clock_mono();
        out->base = epoch;
        out->error = 0.0;
        for (int r = 1; r < size; r++) {
            double best_rtt = 1e30, best_offset = 0.0, ping = 0.0, reply;
            for (int k = 0; k < rounds; k++) {
                double t0 = clock_mono();
                MPI_Send(&ping, 1, MPI_DOUBLE, r, TAG_PING, comm);
                MPI_Recv(&reply, 1, MPI_DOUBLE, r, TAG_PING, comm, MPI_STATUS_IGNORE);
                double t1 = clock_mono();
                if (t1 - t0 < best_rtt) {
                    best_rtt = t1 - t0;
                    best_offset = reply - (t0 + t1) / 2;
                }
            }
            double result[2] = {epoch + best_offset, best_rtt / 2};
            MPI_Send(result, 2, MPI_DOUBLE, r, TAG_RESULT, comm);
        }
    } else {
        double ping, now, result[2];
        for (int k = 0; k < rounds; k++) {
            MPI_Recv(&ping, 1, MPI_DOUBLE, 0, TAG_PING, comm, MPI_STATUS_IGNORE);
            now = clock_mono();
            MPI_Send(&now, 1, MPI_DOUBLE, 0, TAG_PING, comm);
        }
        MPI_Recv(result, 2, MPI_DOUBLE, 0, TAG_RESULT, comm, MPI_STATUS_IGNORE);
        out->base = result[0];
        out->error = result[1];
    }
    return 0;
}
