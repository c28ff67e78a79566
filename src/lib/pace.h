/* pace.h — an open-loop schedule of calls: the instants at which one
 * client offers its calls at `rate` calls per second, fixed or with
 * Poisson arrivals, and what a paced call measured (response from its
 * intended instant, service from its send, herd's own lag, late calls).
 *
 * Pure: no clock is read here; callers pass times (clock_mono seconds).
 *
 * Invariants: the intended instants are strictly increasing and depend
 * only on (rate, arrivals, seed, anchor), never on when calls were made,
 * so a server that falls behind shows as growing response times, not as
 * a lower rate with flat latency (no coordinated omission). A call that
 * could not be issued at its instant (the client was still busy) is
 * issued as soon as the client is free and counted late; none is
 * dropped. The first instant lies in [anchor, anchor + 1/rate) for fixed
 * arrivals (a seeded offset, so that many clients at the same rate do
 * not fire together) and at anchor + an exponential gap for Poisson. */
#ifndef HERD_PACE_H
#define HERD_PACE_H

#include <stdbool.h>
#include <stdint.h>

enum pace_arrivals { PACE_FIXED, PACE_POISSON };

struct pace {
    double rate; /* calls per second; 0: no schedule (closed loop) */
    enum pace_arrivals arrivals;
    uint64_t rng;   /* xorshift64* state, from the seed */
    double next;    /* the next call's intended instant */
    uint64_t taken; /* instants handed out by pace_take */
    double last;    /* the last of them */
};

/* One paced call's instants: when it was due, when the client was free
 * to send it, and when it was sent. */
struct pace_call {
    double intended, ready, sent;
};

/* A schedule of rate calls/s from anchor; seed picks the arrivals (and the
 * fixed offset), so every client of a run gets its own. rate <= 0: none. */
void pace_init(struct pace *p, double rate, enum pace_arrivals arrivals, uint64_t seed,
               double anchor);

/* Start the schedule again from anchor (a new meta step), keeping the
 * arrivals' stream; the old schedule's calls due by anchor and not taken
 * count as taken (pace_due goes on counting them). */
void pace_restart(struct pace *p, double anchor);

/* The next call, for a client free at `now`: its intended instant and
 * ready time (sent: the later of the two, until the caller, who waits
 * for the instant when it is later than now, sets it). */
void pace_take(struct pace *p, double now, struct pace_call *call);

/* The calls due by t: the schedule's instants at or before t, taken or
 * not (a client that fell behind has instants pending). Walks the
 * pending ones: as many steps as the client is behind. */
uint64_t pace_due(const struct pace *p, double t);

/* Whether the call is late: its client was still busy at its instant. */
static inline bool pace_call_late(const struct pace_call *call)
{
    return call->ready > call->intended;
}

/* herd's own delay in sending the call: from the later of its intended
 * instant and the client's ready time to its send (a timer that woke
 * late, a busy event loop). Never negative. */
double pace_lag(const struct pace_call *call);

#endif
