/* pattern.c — the bytes herd writes and checks, a pure function of
 * (kind, seed, file key, offset); see pattern.h for the layout.
 *
 * The table holds `period` seeded random bytes twice over (plus one more
 * chunk), so any run of up to `period` bytes starting below `period` is
 * contiguous. Chunk c of file `key` is a 16-byte tag followed by the table
 * bytes at rot(key) + c*4096 + 16 (mod period). The fast path writes the
 * tags into the table's tag slots (the first 16 bytes of each 4 KiB-aligned
 * table chunk), which are never part of any chunk's body, and returns a
 * pointer into the table; it serves any 4 KiB-aligned offset (a short last
 * chunk's tag still lands in its own tag slot). Unaligned offsets are built
 * chunk by chunk in scratch. */
#include "pattern.h"

#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "md5.h"

#define GOLDEN UINT64_C(0x9E3779B97F4A7C15)

/* One splitmix64 output for state x (the state is advanced first). */
static inline uint64_t pattern_mix(uint64_t x)
{
    x += GOLDEN;
    x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
    return x ^ (x >> 31);
}

/* The 16-byte tag of chunk `chunk` of file `key`. */
static inline void pattern_tag(const struct pattern *p, uint64_t key, uint64_t chunk,
                               unsigned char tag[PATTERN_TAG])
{
    uint64_t t0 = pattern_mix(p->seed ^ key ^ (chunk * GOLDEN));
    uint64_t t1 = pattern_mix(t0);

    t0 = htole64(t0);
    t1 = htole64(t1);
    memcpy(tag, &t0, 8);
    memcpy(tag + 8, &t1, 8);
}

/* The file's rotation into the table: a multiple of PATTERN_CHUNK. */
static inline size_t pattern_rot(const struct pattern *p, uint64_t key)
{
    return (size_t)(pattern_mix(key ^ p->seed) % (p->period / PATTERN_CHUNK)) * PATTERN_CHUNK;
}

/* Table position (4 KiB aligned, < period) of the chunk starting at file
 * offset `chunk_start` (a multiple of PATTERN_CHUNK). */
static inline size_t pattern_pos(const struct pattern *p, size_t rot, uint64_t chunk_start)
{
    return (size_t)((rot + (size_t)(chunk_start % p->period)) % p->period);
}

static size_t round_up(size_t v, size_t to)
{
    return (v + to - 1) / to * to;
}

/* The tables in use: one per (kind, zero_percent, seed, period), shared
 * by reference count, so that a rank's K clients (clients_per_rank) hold
 * one table, not K. */
struct pattern_table {
    enum pattern_kind kind;
    int zero_percent;
    uint64_t seed;
    size_t period;
    unsigned char *bytes;
    unsigned refs;
};
#define PATTERN_TABLES 8
static struct pattern_table pattern_tables[PATTERN_TABLES];
static pthread_mutex_t pattern_tables_lock = PTHREAD_MUTEX_INITIALIZER;

/* Fill a table of period bytes (doubled, plus a chunk) for kind. */
static void pattern_table_fill(unsigned char *table, size_t period, enum pattern_kind kind,
                               int zero_percent, uint64_t seed)
{
    size_t size = 2 * period + PATTERN_CHUNK;
    if (kind == PATTERN_ZERO) {
        memset(table, 0, size);
        return;
    }
    /* One period of splitmix64 output (from a state unrelated to the tags),
     * then doubled: table[i] == table[i + period] for i < period + CHUNK. */
    uint64_t state = pattern_mix(seed ^ UINT64_C(0x5EED7AB1E0DA7A00));
    for (size_t i = 0; i < period; i += 8) {
        uint64_t w = htole64(pattern_mix(state));
        state += GOLDEN;
        memcpy(table + i, &w, 8);
    }
    memcpy(table + period, table, period);
    memcpy(table + 2 * period, table, PATTERN_CHUNK);
    if (kind == PATTERN_COMPRESSIBLE) {
        size_t zeros = (size_t)zero_percent * (PATTERN_CHUNK - PATTERN_TAG) / 100;
        for (size_t c = 0; c < size; c += PATTERN_CHUNK)
            memset(table + c + PATTERN_CHUNK - zeros, 0, zeros);
    }
}

/* p's table: the one in use with p's parameters, or a new one (kept for
 * sharing when there is room). NULL without memory. */
static unsigned char *pattern_table_get(const struct pattern *p)
{
    pthread_mutex_lock(&pattern_tables_lock);
    struct pattern_table *free_slot = NULL;
    for (int i = 0; i < PATTERN_TABLES; i++) {
        struct pattern_table *t = &pattern_tables[i];
        if (t->refs && t->kind == p->kind && t->zero_percent == p->zero_percent &&
            t->seed == p->seed && t->period == p->period) {
            t->refs++;
            pthread_mutex_unlock(&pattern_tables_lock);
            return t->bytes;
        }
        if (!t->refs && !free_slot)
            free_slot = t;
    }
    unsigned char *bytes = aligned_alloc(PATTERN_CHUNK, 2 * p->period + PATTERN_CHUNK);
    /* a table shared is never tagged in place: pattern_block fills scratch */
    if (bytes) {
        pattern_table_fill(bytes, p->period, p->kind, p->zero_percent, p->seed);
        if (free_slot)
            *free_slot =
                (struct pattern_table){p->kind, p->zero_percent, p->seed, p->period, bytes, 1};
    }
    pthread_mutex_unlock(&pattern_tables_lock);
    return bytes;
}

static void pattern_table_put(unsigned char *bytes)
{
    if (!bytes)
        return;
    pthread_mutex_lock(&pattern_tables_lock);
    for (int i = 0; i < PATTERN_TABLES; i++) {
        struct pattern_table *t = &pattern_tables[i];
        if (t->refs && t->bytes == bytes) {
            if (--t->refs == 0)
                free(bytes);
            pthread_mutex_unlock(&pattern_tables_lock);
            return;
        }
    }
    pthread_mutex_unlock(&pattern_tables_lock);
    free(bytes); /* one made when every slot was taken: this pattern's alone */
}

/* pattern_init and pattern_init_shared. */
static int pattern_make(struct pattern *p, enum pattern_kind kind, int zero_percent, uint64_t seed,
                        size_t max_block, bool shared)
{
    memset(p, 0, sizeof(*p));
    if (kind != PATTERN_RANDOM && kind != PATTERN_ZERO && kind != PATTERN_COMPRESSIBLE)
        return -EINVAL;
    if (kind == PATTERN_COMPRESSIBLE && (zero_percent < 0 || zero_percent > 100))
        return -EINVAL;
    if (max_block > (SIZE_MAX - 2 * PATTERN_CHUNK) / 4)
        return -ENOMEM;
    size_t period = round_up(max_block, PATTERN_CHUNK);
    if (period < PATTERN_TABLE)
        period = PATTERN_TABLE;

    p->kind = kind;
    p->zero_percent = kind == PATTERN_COMPRESSIBLE ? zero_percent : 0;
    p->seed = seed;
    p->period = period;
    p->max_block = max_block;
    p->shared = shared;
    if (shared) {
        p->table = pattern_table_get(p);
    } else if ((p->table = aligned_alloc(PATTERN_CHUNK, 2 * period + PATTERN_CHUNK))) {
        pattern_table_fill(p->table, period, kind, p->zero_percent, seed);
    }
    p->scratch = aligned_alloc(PATTERN_CHUNK, round_up(max_block ? max_block : 1, PATTERN_CHUNK));
    if (!p->table || !p->scratch) {
        pattern_free(p);
        return -ENOMEM;
    }
    return 0;
}

int pattern_init(struct pattern *p, enum pattern_kind kind, int zero_percent, uint64_t seed,
                 size_t max_block)
{
    return pattern_make(p, kind, zero_percent, seed, max_block, false);
}

int pattern_init_shared(struct pattern *p, enum pattern_kind kind, int zero_percent, uint64_t seed,
                        size_t max_block)
{
    return pattern_make(p, kind, zero_percent, seed, max_block, true);
}

void pattern_free(struct pattern *p)
{
    if (p->shared)
        pattern_table_put(p->table);
    else
        free(p->table);
    free(p->scratch);
    p->table = NULL;
    p->scratch = NULL;
}

uint64_t pattern_file_key(const char *fileset, uint64_t index)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325); /* FNV-1a 64 */

    for (const unsigned char *s = (const unsigned char *)(fileset ? fileset : ""); *s; s++) {
        h ^= *s;
        h *= UINT64_C(0x100000001b3);
    }
    return pattern_mix(h ^ pattern_mix(index));
}

/* Write the expected bytes [offset, offset+len) of file `key` into dst. */
static void pattern_fill(const struct pattern *p, uint64_t key, uint64_t offset, unsigned char *dst,
                         size_t len)
{
    size_t rot;

    if (p->kind == PATTERN_ZERO) {
        memset(dst, 0, len);
        return;
    }
    rot = pattern_rot(p, key);
    while (len > 0) {
        uint64_t chunk = offset / PATTERN_CHUNK;
        size_t in = (size_t)(offset % PATTERN_CHUNK);
        size_t n = PATTERN_CHUNK - in;
        const unsigned char *src = p->table + pattern_pos(p, rot, offset - in);

        if (n > len)
            n = len;
        if (in < PATTERN_TAG) {
            unsigned char tag[PATTERN_TAG];
            size_t t = PATTERN_TAG - in < n ? PATTERN_TAG - in : n;
            pattern_tag(p, key, chunk, tag);
            memcpy(dst, tag + in, t);
            memcpy(dst + t, src + in + t, n - t);
        } else {
            memcpy(dst, src + in, n);
        }
        dst += n;
        offset += n;
        len -= n;
    }
}

const void *pattern_block(struct pattern *p, uint64_t key, uint64_t offset, size_t len)
{
    if (len > p->max_block)
        return NULL;
    if (p->kind == PATTERN_ZERO)
        return p->table; /* all zero, at least period >= max_block bytes */
    if (offset % PATTERN_CHUNK == 0 && !p->shared) {
        /* In place: p0 + len <= 2 * period, and a short last chunk's tag
         * still lies in its table chunk's tag slot (never a body byte). */
        size_t rot = pattern_rot(p, key);
        size_t p0 = pattern_pos(p, rot, offset);
        unsigned char *block = p->table + p0;
        uint64_t chunk = offset / PATTERN_CHUNK;

        for (size_t at = 0; at < len; at += PATTERN_CHUNK)
            pattern_tag(p, key, chunk++, block + at);
        return block;
    }
    pattern_fill(p, key, offset, p->scratch, len);
    return p->scratch;
}

uint64_t pattern_note(const struct pattern *p, uint64_t key, uint64_t offset, size_t len)
{
    if (len == 0 || offset % PATTERN_CHUNK != 0)
        return 0;
    /* What the table's bytes are a function of, and where the block lies in it. */
    uint64_t pos = p->kind == PATTERN_ZERO ? 0 : pattern_pos(p, pattern_rot(p, key), offset);
    uint64_t h =
        pattern_mix(p->seed ^ ((uint64_t)p->kind << 56) ^ ((uint64_t)p->zero_percent << 48));
    h = pattern_mix(h ^ p->period);
    h = pattern_mix(h ^ pos);
    h = pattern_mix(h ^ len);
    return h ? h : 1;
}

const void *pattern_block_into(struct pattern *p, uint64_t key, uint64_t offset, size_t len,
                               void *dest, uint64_t *note)
{
    if (len > p->max_block)
        return NULL;
    uint64_t want = pattern_note(p, key, offset, len);
    if (p->shared && p->kind != PATTERN_ZERO) { /* made in dest, the table untouched */
        pattern_fill(p, key, offset, dest, len);
        *note = want;
        return dest;
    }
    const unsigned char *block = pattern_block(p, key, offset, len);
    if (!block)
        return NULL;
    unsigned char *d = dest;
    if (want == 0 || *note != want) {
        memcpy(d, block, len);
    } else if (p->kind != PATTERN_ZERO) { /* the same table bytes: only the tags differ */
        for (size_t at = 0; at < len; at += PATTERN_CHUNK)
            memcpy(d + at, block + at, len - at < PATTERN_TAG ? len - at : PATTERN_TAG);
    }
    *note = want;
    return d;
}

/* Index of the first byte where a and b differ within n bytes (n > 0 and
 * they are known to differ). */
static size_t first_diff(const unsigned char *a, const unsigned char *b, size_t n)
{
    size_t i = 0;

    while (i + 8 <= n) {
        uint64_t x, y;
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y)
            break;
        i += 8;
    }
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

int64_t pattern_compare(struct pattern *p, uint64_t key, uint64_t offset, const void *buf,
                        size_t len)
{
    const unsigned char *b = buf;
    size_t rot, done = 0;

    if (p->kind == PATTERN_ZERO) {
        /* The table is all zero: compare in runs of up to a period. */
        while (done < len) {
            size_t n = len - done < p->period ? len - done : p->period;
            if (memcmp(b + done, p->table, n) != 0)
                return (int64_t)(offset + done + first_diff(b + done, p->table, n));
            done += n;
        }
        return -1;
    }
    rot = pattern_rot(p, key);
    while (done < len) {
        uint64_t at = offset + done;
        size_t in = (size_t)(at % PATTERN_CHUNK);
        size_t n = PATTERN_CHUNK - in;
        const unsigned char *src = p->table + pattern_pos(p, rot, at - in);
        const unsigned char *cur = b + done;

        if (n > len - done)
            n = len - done;
        if (in < PATTERN_TAG) {
            unsigned char tag[PATTERN_TAG];
            size_t t = PATTERN_TAG - in < n ? PATTERN_TAG - in : n;
            pattern_tag(p, key, at / PATTERN_CHUNK, tag);
            if (memcmp(cur, tag + in, t) != 0)
                return (int64_t)(at + first_diff(cur, tag + in, t));
            if (memcmp(cur + t, src + in + t, n - t) != 0)
                return (int64_t)(at + t + first_diff(cur + t, src + in + t, n - t));
        } else if (memcmp(cur, src + in, n) != 0) {
            return (int64_t)(at + first_diff(cur, src + in, n));
        }
        done += n;
    }
    return -1;
}

int pattern_md5(struct pattern *p, uint64_t key, uint64_t offset, uint64_t len,
                unsigned char digest[16], bool (*stop)(const void *arg), const void *arg)
{
    struct md5 m;
    size_t step =
        p->max_block >= PATTERN_CHUNK ? p->max_block / PATTERN_CHUNK * PATTERN_CHUNK : p->max_block;
    uint64_t since_check = PATTERN_STOP_EVERY; /* ask before the first byte */

    if (step == 0 && len > 0)
        return -EINVAL;
    if (md5_begin(&m) != 0)
        return -ENOMEM;
    while (len > 0) {
        size_t n = len < step ? (size_t)len : step;
        size_t in = (size_t)(offset % PATTERN_CHUNK);
        const void *data;

        if (stop && since_check >= PATTERN_STOP_EVERY) {
            since_check = 0;
            if (stop(arg)) {
                md5_end(&m, digest);
                return -EINTR;
            }
        }
        /* An unaligned start costs one short piece, then all are aligned. */
        if (in != 0 && n > PATTERN_CHUNK - in)
            n = PATTERN_CHUNK - in;
        data = pattern_block(p, key, offset, n);
        if (!data || md5_update(&m, data, n) != 0) {
            md5_end(&m, digest);
            return -ENOMEM;
        }
        offset += n;
        len -= n;
        since_check += n;
    }
    return md5_end(&m, digest) == 0 ? 0 : -ENOMEM;
}

void pattern_format(const struct pattern *p, char *buf, size_t len)
{
    if (!buf || len == 0)
        return;
    switch (p->kind) {
    case PATTERN_RANDOM:
        snprintf(buf, len, "random");
        break;
    case PATTERN_ZERO:
        snprintf(buf, len, "zero");
        break;
    case PATTERN_COMPRESSIBLE:
        snprintf(buf, len, "compressible:%d", p->zero_percent);
        break;
    default:
        snprintf(buf, len, "unknown");
        break;
    }
}
