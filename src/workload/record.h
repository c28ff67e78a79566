/* record.h — what one rank measured in one iteration of a phase; one row of
 * /phases/<name>/ranks in results.h5. Times are on the common clock. */
#ifndef HERD_RECORD_H
#define HERD_RECORD_H

#include <stdint.h>

struct rank_record {
    int32_t rank;
    int32_t iteration;
    int32_t host;                              /* index into /hosts */
    int32_t completed;                         /* 1 if the iteration ran to its end */
    int32_t file_rank;                         /* whose file this rank worked on (read_from) */
    int32_t rpc_window_read, rpc_window_write; /* the backend's window (backend.h), 0: none */
    int32_t client;                            /* the rank's client (0 .. clients_per_rank - 1) */
    double t_start, t_end;                     /* common clock */
    double t_open, t_io, t_fsync, t_close, t_md5; /* seconds spent */
    uint64_t bytes;
    uint64_t ops;
    uint64_t errors;
    uint64_t verify_failures;
    uint64_t grants;     /* lock: locks granted */
    uint64_t contended;  /* lock: non-blocking attempts refused (EAGAIN/EACCES) */
    uint64_t violations; /* lock: another rank's token seen inside a held range */
    uint64_t units;      /* the kind's units of work done (write or read blocks, md5 reads, meta
                            items, lock or storm attempts): under rate, the calls of the schedule */
    uint64_t late;       /* rate > 0: of those, sent after their instant (the client was busy) */
    uint64_t due;        /* rate > 0: the calls due in this iteration: its schedule's instants
                            up to t_end, sent or not */
    double response_p99; /* rate > 0: this client's paced calls over the phase: the p99 of */
    double service_p99;  /* their response and of their service, s; NaN without a rate */
};

/* One rank's share of one step of a meta phase (create, stat, rename,
 * unlink, rmdir: every rank ends a step before any begins the next), as
 * mdtest times its steps: one row of /phases/<name>/meta_steps. */
struct meta_step_record {
    int32_t rank;
    int32_t step; /* enum meta_step */
    int32_t op;   /* enum op: the step's item call (create: open) */
    int32_t client;
    double t_start, t_end; /* common clock: the step's calls lie in between */
    uint64_t items;        /* item calls that succeeded (mdtest's items) */
};

#endif
