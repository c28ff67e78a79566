/* pace.c — the open-loop schedule of pace.h: intended instants from a
 * seeded stream, late calls counted, herd's own lag. */
#include "pace.h"

#include <math.h>

/* xorshift64*, never zero. */
static uint64_t pace_rand(struct pace *p)
{
    uint64_t x = p->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    p->rng = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* Uniform in (0, 1]: 53 bits, never 0, so log() below is finite. */
static double pace_uniform(struct pace *p)
{
    return ((double)(pace_rand(p) >> 11) + 1.0) / 9007199254740992.0;
}

/* The gap to the next instant: 1/rate, or exponential with mean 1/rate. */
static double pace_gap(struct pace *p)
{
    if (p->arrivals == PACE_POISSON)
        return -log(pace_uniform(p)) / p->rate;
    return 1.0 / p->rate;
}

/* The first instant after anchor: a seeded share of one interval for
 * fixed arrivals, an exponential gap for Poisson ones. */
static double pace_first(struct pace *p, double anchor)
{
    if (p->arrivals == PACE_POISSON)
        return anchor + pace_gap(p);
    return anchor + (1.0 - pace_uniform(p)) / p->rate;
}

void pace_init(struct pace *p, double rate, enum pace_arrivals arrivals, uint64_t seed,
               double anchor)
{
    *p = (struct pace){.rate = rate > 0 ? rate : 0, .arrivals = arrivals};
    /* splitmix64 of the seed: nearby seeds give unrelated streams */
    uint64_t z = seed + 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    p->rng = z ? z : 0x9E3779B97F4A7C15ULL;
    if (p->rate > 0)
        p->next = pace_first(p, anchor);
}

void pace_restart(struct pace *p, double anchor)
{
    if (p->rate <= 0)
        return;
    p->taken = pace_due(p, anchor); /* the old schedule's pending calls stay due */
    p->next = pace_first(p, anchor);
}

void pace_take(struct pace *p, double now, struct pace_call *call)
{
    call->intended = p->next;
    call->ready = now;
    call->sent = now > p->next ? now : p->next;
    p->last = p->next;
    p->taken++;
    p->next += pace_gap(p);
}

uint64_t pace_due(const struct pace *p, double t)
{
    if (p->rate <= 0)
        return 0;
    uint64_t due = p->taken - (p->taken > 0 && p->last > t);
    struct pace walk = *p; /* the same stream: the instants pace_take would give */
    while (walk.next <= t) {
        due++;
        walk.next += pace_gap(&walk);
    }
    return due;
}

double pace_lag(const struct pace_call *call)
{
    double from = call->ready > call->intended ? call->ready : call->intended;
    return call->sent > from ? call->sent - from : 0;
}
