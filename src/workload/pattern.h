/* pattern.h — the data herd writes: bytes are a pure function of
 * (kind, seed, file key, offset), so any rank can produce or check the
 * content (and MD5) of any file without reading it.
 *
 * Layout: a file is a sequence of 4 KiB chunks. For `random`, chunk c of a
 * file is a 16-byte tag (derived from seed, file key and c, so no two chunks
 * anywhere are equal and block dedup gets nothing) followed by 4080 bytes of
 * a seeded random table of PATTERN_TABLE bytes, read at a file-dependent
 * rotation. The table period defeats LZ-window compressors (gzip, LZO, lz4,
 * all windows <= 64 KiB). `compressible:P` zeroes the last P % of every
 * chunk (after the tag). `zero` is all zero bytes, as dd if=/dev/zero.
 *
 * Fast path: for 4 KiB-aligned offset and length, pattern_block() returns a
 * pointer into an internal table (no copy: only the tags are rewritten), so
 * generating data costs almost nothing next to the write itself. */
#ifndef HERD_PATTERN_H
#define HERD_PATTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pattern_kind.h"

#define PATTERN_CHUNK 4096u
#define PATTERN_TAG 16u
#define PATTERN_TABLE (1u << 20) /* minimum table period in bytes */

struct pattern {
    enum pattern_kind kind;
    int zero_percent; /* compressible only: 0..100 */
    uint64_t seed;
    size_t period;          /* table period: multiple of PATTERN_CHUNK, >= max block */
    unsigned char *table;   /* 2*period + PATTERN_CHUNK bytes, 4 KiB aligned */
    bool shared;            /* table is pattern_init_shared's: read-only, blocks made in
                               scratch or the caller's buffer (never tagged in place) */
    unsigned char *scratch; /* max_block bytes, 4 KiB aligned, for the slow path */
    size_t max_block;
};

/* Prepare a pattern for blocks of at most max_block bytes.
 * Returns 0 or -ENOMEM. */
int pattern_init(struct pattern *p, enum pattern_kind kind, int zero_percent, uint64_t seed,
                 size_t max_block);
/* The same pattern, its table shared with every other pattern of the
 * process made by this call with the same kind, zero_percent, seed and
 * block bound (a rank's clients, clients_per_rank: one table, not K).
 * Its blocks are never tagged inside the table, so a block one client
 * holds across a wait stays its own: pattern_block returns scratch. */
int pattern_init_shared(struct pattern *p, enum pattern_kind kind, int zero_percent, uint64_t seed,
                        size_t max_block);
void pattern_free(struct pattern *p);

/* Key that names a file's content: hash of a file-set name and an index. */
uint64_t pattern_file_key(const char *fileset, uint64_t index);

/* Pointer to the len (<= max_block) bytes of file `key` at `offset`.
 * Valid until the next call on p. 4 KiB aligned when offset is. */
const void *pattern_block(struct pattern *p, uint64_t key, uint64_t offset, size_t len);

/* A name for the bytes of pattern_block(p, key, offset, len) but for their
 * tags: blocks with equal notes have equal bytes outside their tags (the
 * same table bytes: same seed, kind and period, same position, same
 * length). 0, no name, when offset is not 4 KiB aligned or len is 0. */
uint64_t pattern_note(const struct pattern *p, uint64_t key, uint64_t offset, size_t len);

/* The bytes of pattern_block(p, key, offset, len) into dest (len <=
 * max_block bytes; they may not overlap p's memory). When *note is the
 * block's pattern_note and not 0, dest is taken to hold those bytes but
 * for the tags already, and only the tags are written; otherwise all len
 * bytes. Then *note is the block's note. Returns dest, or NULL when len
 * is too long. For a writer that keeps its buffers and their notes (a
 * backend's pwrite_buffer): the bytes are generated once per buffer. */
const void *pattern_block_into(struct pattern *p, uint64_t key, uint64_t offset, size_t len,
                               void *dest, uint64_t *note);

/* Compare buf with the expected bytes; returns -1 when equal, else the file
 * offset of the first differing byte. Does not disturb pattern_block's
 * returned pointer contract (may use the same internal table). */
int64_t pattern_compare(struct pattern *p, uint64_t key, uint64_t offset, const void *buf,
                        size_t len);

/* Bytes pattern_md5 digests between two calls of its stop test. */
#define PATTERN_STOP_EVERY (4u << 20)

/* MD5 of the len bytes of file `key` starting at offset (usually 0).
 * stop (may be NULL) is asked stop(arg) before the first byte and then
 * every PATTERN_STOP_EVERY bytes or so: when it answers true the digest is
 * abandoned (a 1 TiB region takes minutes). Returns 0, -EINTR when
 * stopped, -ENOMEM or -EINVAL (max_block 0) when it cannot be computed. */
int pattern_md5(struct pattern *p, uint64_t key, uint64_t offset, uint64_t len,
                unsigned char digest[16], bool (*stop)(const void *arg), const void *arg);

/* "random", "zero" or "compressible:P" into buf. */
void pattern_format(const struct pattern *p, char *buf, size_t len);

#endif
