/* access.h — the order in which a rank visits the blocks of its range of a
 * file (job key `access`), and which blocks a mixed phase reads rather
 * than writes (`rwmix_read`). A pure module: no I/O, no allocation, no
 * table, so a 1 TiB range of 4 KiB blocks costs nothing to plan.
 *
 * Every order is a permutation of the block indices [0, n): each block is
 * visited exactly once, so a phase moves exactly its bytes, a write
 * leaves every block of the pattern in place (verify and md5 still hold)
 * and a verifying read checks every block.
 *   sequential  0, 1, 2, ... n-1
 *   random      a seeded permutation: a 4-round Feistel network over the
 *               smallest even power of two >= n, cycle-walked back into
 *               [0, n) (fewer than 4 steps per block on average)
 *   strided     passes over every S-th block, S = min(ACCESS_STRIDE, n):
 *               0, S, 2S, ... then 1, S+1, ... then 2, ... */
#ifndef HERD_ACCESS_H
#define HERD_ACCESS_H

#include <stdbool.h>
#include <stdint.h>

#include "job.h"

#define ACCESS_STRIDE 16u /* blocks between two visits of one strided pass */
#define ACCESS_ROUNDS 4   /* Feistel rounds of the random order */

struct access_order {
    enum access kind;
    uint64_t n; /* blocks */
    /* random: halves of `half` bits, keys per round */
    unsigned half;
    uint64_t mask; /* (1 << half) - 1 */
    uint64_t key[ACCESS_ROUNDS];
    /* strided: stride S; the first `rem` passes hold q + 1 blocks, the
     * others q (n = S * q + rem) */
    uint64_t stride, q, rem;
};

/* Plan the visit of n blocks in `kind` order; seed chooses the random
 * permutation (see access_seed). Returns 0, or -EINVAL for an unknown
 * kind. */
int access_init(struct access_order *a, enum access kind, uint64_t n, uint64_t seed);

/* The block visited i-th (i < n): a number in [0, n), each exactly once as
 * i goes from 0 to n - 1. */
uint64_t access_block(const struct access_order *a, uint64_t i);

/* The random order's seed for one pass over a file: from the job's seed,
 * the file's pattern key and the iteration, so every file and iteration
 * gets its own order and a rerun the same. */
uint64_t access_seed(uint64_t seed, uint64_t file_key, int64_t iteration);

/* rwmix_read: whether a mixed phase reads block `block` (else writes it):
 * true with probability percent / 100, decided by a hash of (seed, file
 * key, rank, iteration, block), the same on every rerun. percent <= 0:
 * never, >= 100: always. */
bool access_reads(uint64_t seed, uint64_t file_key, int rank, int64_t iteration, uint64_t block,
                  int percent);

#endif
