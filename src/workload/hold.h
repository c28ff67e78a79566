/* hold.h — one lock hold: the rank and client that held it (a lock owner
 * each), exclusive or shared, which bytes, and when it was asked for,
 * granted and released on the common clock; a row of
 * /phases/<name>/holds in results.h5 (holds.h puts them together). */
#ifndef HERD_HOLD_H
#define HERD_HOLD_H

#include <stdint.h>

struct hold {
    int32_t rank;
    int32_t exclusive; /* 1 exclusive (write) lock, 0 shared (read) lock */
    double granted;    /* common clock, s */
    double released;   /* common clock, s */
    uint64_t start;    /* locked byte range; len 0 = to the end of the file */
    uint64_t len;
    double asked;   /* common clock, s: when the lock call began */
    int32_t client; /* the rank's client that held it (clients_per_rank) */
    int32_t pad;
};

#endif
