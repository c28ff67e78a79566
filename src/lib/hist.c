/* hist.c — log-linear latency histogram (see hist.h for the bucket scheme):
 * values below 16 have one bucket each, above that every power of two is
 * cut into 16 equal sub-buckets; values >= 2^HIST_MAX_BITS share the last. */
#include "hist.h"

#include <math.h>

#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_LIMIT (UINT64_C(1) << HIST_MAX_BITS)

int hist_bucket_index(uint64_t ns)
{
    if (ns < HIST_SUB)
        return (int)ns;
    if (ns >= HIST_LIMIT)
        return HIST_BUCKETS - 1;
    int msb = 63 - __builtin_clzll(ns);
    int shift = msb - HIST_SUB_BITS;
    return ((msb - HIST_SUB_BITS + 1) << HIST_SUB_BITS) + (int)((ns >> shift) & (HIST_SUB - 1));
}

uint64_t hist_bucket_lower(int index)
{
    if (index <= 0)
        return 0;
    if (index > HIST_BUCKETS)
        index = HIST_BUCKETS;
    if (index < (int)HIST_SUB)
        return (uint64_t)index;
    int e = index >> HIST_SUB_BITS; /* >= 1: msb - HIST_SUB_BITS + 1 */
    uint64_t s = (uint64_t)(index & (HIST_SUB - 1));
    return (HIST_SUB + s) << (e - 1);
}

uint64_t hist_bucket_upper(int index)
{
    if (index < 0)
        return 0;
    if (index >= HIST_BUCKETS - 1)
        return HIST_LIMIT;
    return hist_bucket_lower(index + 1);
}

void hist_add(struct hist *h, uint64_t ns)
{
    h->counts[hist_bucket_index(ns)]++;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
    for (int i = 0; i < HIST_BUCKETS; i++)
        dst->counts[i] += src->counts[i];
}

uint64_t hist_count(const struct hist *h)
{
    uint64_t n = 0;

    for (int i = 0; i < HIST_BUCKETS; i++)
        n += h->counts[i];
    return n;
}

uint64_t hist_quantile(const struct hist *h, double q)
{
    uint64_t n = hist_count(h);

    if (n == 0)
        return 0;
    if (!(q > 0.0)) /* also NaN */
        q = 0.0;
    if (q > 1.0)
        q = 1.0;
    /* Rank of the sample wanted, 1-based: the smallest r with r >= q*n. */
    double want = ceil(q * (double)n);
    uint64_t rank = 1;
    if (want >= 1.0)
        rank = want >= (double)n ? n : (uint64_t)want;
    uint64_t seen = 0;
    for (int i = 0; i < HIST_BUCKETS; i++) {
        seen += h->counts[i];
        if (seen >= rank)
            return hist_bucket_upper(i);
    }
    return hist_bucket_upper(HIST_BUCKETS - 1);
}
