/* access.c — block orders and the read/write mix of a phase (access.h). */
#include "access.h"

#include <errno.h>

/* splitmix64's finaliser: a bijective 64-bit mix. */
static uint64_t access_mix(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

uint64_t access_seed(uint64_t seed, uint64_t file_key, int64_t iteration)
{
    return access_mix(access_mix(access_mix(seed) ^ file_key) ^ (uint64_t)iteration);
}

int access_init(struct access_order *a, enum access kind, uint64_t n, uint64_t seed)
{
    *a = (struct access_order){.kind = kind, .n = n};
    switch (kind) {
    case ACCESS_SEQUENTIAL:
        return 0;
    case ACCESS_RANDOM: {
        unsigned bits = 0; /* bits of n - 1: 2^bits >= n */
        while (bits < 64 && n > 1 && ((n - 1) >> bits) != 0)
            bits++;
        a->half = bits < 2 ? 1 : (bits + 1) / 2;
        a->mask = (UINT64_C(1) << a->half) - 1;
        for (int r = 0; r < ACCESS_ROUNDS; r++)
            a->key[r] = access_mix(seed + (uint64_t)r * UINT64_C(0x632be59bd9b4e019));
        return 0;
    }
    case ACCESS_STRIDED:
        a->stride = n < ACCESS_STRIDE ? n : ACCESS_STRIDE;
        if (a->stride) {
            a->q = n / a->stride;
            a->rem = n % a->stride;
        }
        return 0;
    }
    return -EINVAL;
}

/* One pass of the Feistel network: a permutation of [0, 2^(2 half)). */
static uint64_t access_feistel(const struct access_order *a, uint64_t x)
{
    uint64_t l = x >> a->half, r = x & a->mask;
    for (int i = 0; i < ACCESS_ROUNDS; i++) {
        uint64_t t = l ^ (access_mix(r ^ a->key[i]) & a->mask);
        l = r;
        r = t;
    }
    return l << a->half | r;
}

uint64_t access_block(const struct access_order *a, uint64_t i)
{
    switch (a->kind) {
    case ACCESS_RANDOM: {
        if (a->n <= 1)
            return 0;
        /* Cycle-walking: the permutation's cycle through i, followed until
         * it re-enters [0, n), stays a bijection of [0, n). The domain is
         * below 4n, so few steps. */
        uint64_t x = i;
        do
            x = access_feistel(a, x);
        while (x >= a->n);
        return x;
    }
    case ACCESS_STRIDED: {
        uint64_t pass, j, big = a->rem * (a->q + 1); /* blocks in the longer passes */
        if (i < big) {
            pass = i / (a->q + 1);
            j = i % (a->q + 1);
        } else {
            pass = a->rem + (i - big) / a->q;
            j = (i - big) % a->q;
        }
        return pass + j * a->stride;
    }
    case ACCESS_SEQUENTIAL:
    default:
        return i;
    }
}

bool access_reads(uint64_t seed, uint64_t file_key, int rank, int64_t iteration, uint64_t block,
                  int percent)
{
    if (percent <= 0)
        return false;
    if (percent >= 100)
        return true;
    uint64_t h = access_mix(access_seed(seed, file_key, iteration) ^ access_mix((uint64_t)rank));
    h = access_mix(h ^ block);
    return h % 100 < (uint64_t)percent;
}
