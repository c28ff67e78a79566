/* timeheap.c — an indexed binary min-heap of deadlines (timeheap.h). */
#include "timeheap.h"

#include <stdlib.h>

int timeheap_init(struct timeheap *h, int ids)
{
    *h = (struct timeheap){.cap = ids};
    h->heap = malloc((size_t)(ids > 0 ? ids : 1) * sizeof *h->heap);
    h->pos = malloc((size_t)(ids > 0 ? ids : 1) * sizeof *h->pos);
    h->at = malloc((size_t)(ids > 0 ? ids : 1) * sizeof *h->at);
    if (!h->heap || !h->pos || !h->at) {
        timeheap_free(h);
        return -1;
    }
    for (int i = 0; i < ids; i++)
        h->pos[i] = -1;
    return 0;
}

void timeheap_free(struct timeheap *h)
{
    free(h->heap);
    free(h->pos);
    free(h->at);
    *h = (struct timeheap){0};
}

/* Put id at heap index k. */
static void timeheap_place(struct timeheap *h, int k, int id)
{
    h->heap[k] = id;
    h->pos[id] = k;
}

/* The entry at k moves up while it is earlier than its parent. */
static void timeheap_up(struct timeheap *h, int k)
{
    int id = h->heap[k];
    while (k > 0) {
        int parent = (k - 1) / 2;
        if (h->at[h->heap[parent]] <= h->at[id])
            break;
        timeheap_place(h, k, h->heap[parent]);
        k = parent;
    }
    timeheap_place(h, k, id);
}

/* The entry at k moves down while a child is earlier. */
static void timeheap_down(struct timeheap *h, int k)
{
    int id = h->heap[k];
    for (;;) {
        int child = 2 * k + 1;
        if (child >= h->n)
            break;
        if (child + 1 < h->n && h->at[h->heap[child + 1]] < h->at[h->heap[child]])
            child++;
        if (h->at[id] <= h->at[h->heap[child]])
            break;
        timeheap_place(h, k, h->heap[child]);
        k = child;
    }
    timeheap_place(h, k, id);
}

void timeheap_set(struct timeheap *h, int id, double t)
{
    if (id < 0 || id >= h->cap)
        return;
    h->at[id] = t;
    if (h->pos[id] < 0) {
        timeheap_place(h, h->n++, id);
        timeheap_up(h, h->n - 1);
        return;
    }
    timeheap_up(h, h->pos[id]);
    timeheap_down(h, h->pos[id]);
}

void timeheap_remove(struct timeheap *h, int id)
{
    if (id < 0 || id >= h->cap || h->pos[id] < 0)
        return;
    int k = h->pos[id], last = h->heap[--h->n];
    h->pos[id] = -1;
    if (k == h->n)
        return;
    timeheap_place(h, k, last);
    timeheap_up(h, k);
    timeheap_down(h, h->pos[last]);
}

int timeheap_top(const struct timeheap *h, double *t)
{
    if (h->n == 0)
        return -1;
    *t = h->at[h->heap[0]];
    return h->heap[0];
}

bool timeheap_has(const struct timeheap *h, int id)
{
    return id >= 0 && id < h->cap && h->pos[id] >= 0;
}
