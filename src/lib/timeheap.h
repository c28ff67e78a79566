/* timeheap.h — the earliest of many deadlines: a binary min-heap of ids
 * 0 .. n-1, each with at most one time, for an event loop that must know
 * which of thousands of waits times out first without looking at all of
 * them (fiber.c: 1000 clients each waking 10 times a second).
 *
 * Pure: times are the caller's numbers; nothing here reads a clock.
 *
 * Invariants: an id is in the heap at most once (set moves it); the top
 * holds the smallest time (ties: any of them); set, remove and pop cost
 * O(log n), top O(1); memory is fixed at init (3 arrays of n). */
#ifndef HERD_TIMEHEAP_H
#define HERD_TIMEHEAP_H

#include <stdbool.h>

struct timeheap {
    int n, cap; /* ids in the heap; ids there may be (init's n) */
    int *heap;  /* [cap] ids, heap-ordered by at[] */
    int *pos;   /* [cap] by id: its index in heap, -1 when not there */
    double *at; /* [cap] by id: its time, while in the heap */
};

/* Room for ids 0 .. ids-1, none in the heap. 0, or -1 without memory
 * (nothing allocated). */
int timeheap_init(struct timeheap *h, int ids);
void timeheap_free(struct timeheap *h);

/* Id's time becomes t (in the heap, or added). */
void timeheap_set(struct timeheap *h, int id, double t);

/* Id out of the heap (nothing when it is not there). */
void timeheap_remove(struct timeheap *h, int id);

/* The id with the smallest time, and the time into *t; -1 when empty. */
int timeheap_top(const struct timeheap *h, double *t);

/* Whether id is in the heap. */
bool timeheap_has(const struct timeheap *h, int id);

#endif
