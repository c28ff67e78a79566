/* dirset.c — the set of directory identities a backend made (dirset.h). */
#include "dirset.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

static size_t dirset_hash(dev_t dev, ino_t ino)
{
    uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ULL ^ (uint64_t)dev * 0xc2b2ae3d27d4eb4fULL;
    return (size_t)(h ^ (h >> 29));
}

/* The slot holding (dev, ino), or the empty slot where it would go. */
static struct dirset_slot *dirset_find(const struct dirset *s, dev_t dev, ino_t ino)
{
    size_t mask = s->cap - 1;
    for (size_t i = dirset_hash(dev, ino) & mask;; i = (i + 1) & mask) {
        struct dirset_slot *e = &s->slots[i];
        if (!e->used || (e->dev == dev && e->ino == ino))
            return e;
    }
}

static int dirset_grow(struct dirset *s)
{
    size_t cap = s->cap ? s->cap * 2 : 16;
    struct dirset bigger = {.slots = calloc(cap, sizeof *bigger.slots), .cap = cap};
    if (!bigger.slots)
        return -ENOMEM;
    for (size_t i = 0; i < s->cap; i++)
        if (s->slots[i].used)
            *dirset_find(&bigger, s->slots[i].dev, s->slots[i].ino) = s->slots[i];
    bigger.count = s->count;
    free(s->slots);
    *s = bigger;
    return 0;
}

int dirset_add(struct dirset *s, dev_t dev, ino_t ino)
{
    if (dirset_has(s, dev, ino))
        return 0;
    if (2 * (s->count + 1) > s->cap) {
        int rc = dirset_grow(s);
        if (rc < 0)
            return rc;
    }
    *dirset_find(s, dev, ino) = (struct dirset_slot){.dev = dev, .ino = ino, .used = true};
    s->count++;
    return 0;
}

bool dirset_has(const struct dirset *s, dev_t dev, ino_t ino)
{
    return s->cap && dirset_find(s, dev, ino)->used;
}

void dirset_remove(struct dirset *s, dev_t dev, ino_t ino)
{
    if (!s->cap)
        return;
    size_t mask = s->cap - 1;
    struct dirset_slot *hole = dirset_find(s, dev, ino);
    if (!hole->used)
        return;
    hole->used = false;
    s->count--;
    /* Shift back every entry after the hole whose home slot does not lie
     * cyclically in (hole, its slot]: otherwise a lookup would stop at the
     * hole before reaching it. */
    size_t h = (size_t)(hole - s->slots);
    for (size_t i = (h + 1) & mask; s->slots[i].used; i = (i + 1) & mask) {
        size_t home = dirset_hash(s->slots[i].dev, s->slots[i].ino) & mask;
        if (((i - home) & mask) >= ((i - h) & mask)) {
            s->slots[h] = s->slots[i];
            s->slots[i].used = false;
            h = i;
        }
    }
}

void dirset_free(struct dirset *s)
{
    free(s->slots);
    *s = (struct dirset){0};
}
