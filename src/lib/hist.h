/* hist.h — log-linear latency histogram, mergeable by adding counts.
 *
 * Values are nanoseconds. Values below 16 ns get one bucket each; above,
 * each power of two is split into 16 equal sub-buckets, so a bucket's width
 * is at most 1/16 (6.25 %) of its lower bound. Values at or above 2^42 ns
 * (about 73 minutes) land in the last bucket. Two histograms merge by adding
 * their counts element-wise, so ranks can be merged with an MPI sum. */
#ifndef HERD_HIST_H
#define HERD_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 4
#define HIST_MAX_BITS 42
#define HIST_BUCKETS ((HIST_MAX_BITS - HIST_SUB_BITS + 1) << HIST_SUB_BITS)

struct hist {
    uint64_t counts[HIST_BUCKETS];
};

int hist_bucket_index(uint64_t ns);
uint64_t hist_bucket_lower(int index); /* smallest value in the bucket */
uint64_t hist_bucket_upper(int index); /* smallest value of the next bucket */
void hist_add(struct hist *h, uint64_t ns);
void hist_merge(struct hist *dst, const struct hist *src);
uint64_t hist_count(const struct hist *h);
/* Value (bucket upper bound) at or below which a fraction q of samples lie;
 * 0 for an empty histogram. */
uint64_t hist_quantile(const struct hist *h, double q);

#endif
