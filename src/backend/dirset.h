/* dirset.h — a set of directory identities (device, inode): the
 * directories a backend made itself in this run, so that a call in one of
 * them can trust that only this user (or root) put a name there. An open
 * hash table with linear probing; a removal shifts the entries after it
 * back, so a lookup never meets a tombstone.
 *
 * Invariants: every identity is in the set at most once; a slot is empty
 * exactly when its `used` is false; the table is never more than half
 * full (cap is 0 or a power of two >= 16). */
#ifndef HERD_DIRSET_H
#define HERD_DIRSET_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct dirset_slot {
    dev_t dev;
    ino_t ino;
    bool used;
};

struct dirset {
    struct dirset_slot *slots;
    size_t cap, count;
};

/* An empty set needs no call: struct dirset s = {0}. */

/* Add (dev, ino); an identity already in the set is no error. 0 or
 * -ENOMEM (the set is unchanged). */
int dirset_add(struct dirset *s, dev_t dev, ino_t ino);
bool dirset_has(const struct dirset *s, dev_t dev, ino_t ino);
/* Remove (dev, ino) if present. */
void dirset_remove(struct dirset *s, dev_t dev, ino_t ino);
/* Free the table; the set is empty again. */
void dirset_free(struct dirset *s);

#endif
