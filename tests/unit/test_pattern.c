/* test_pattern.c — unit tests for pattern.c: determinism, fast and slow
 * paths agreeing, blocks generated into a kept buffer (pattern_block_into
 * and its notes), compare and MD5, and that random data neither
 * compresses nor dedups while compressible:P compresses about as
 * promised. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#include "md5.h"
#include "pattern.h"

#define KiB 1024u
#define MiB (1024u * 1024u)

/* Pinned outputs (see test_reference_layout). */
#define PINNED_KEY UINT64_C(0xec270fb6796727dc)
#define PINNED_RANDOM "7d67ca8d408c0f4dc94f241a415c986c"
#define PINNED_COMPRESSIBLE "4436c9b7fbb657a12a21cdee3ca0c432"

static unsigned char *file_bytes(struct pattern *p, uint64_t key, uint64_t offset, size_t len)
{
    unsigned char *out = malloc(len);
    assert_non_null(out);
    for (size_t done = 0; done < len;) {
        size_t n = len - done < p->max_block ? len - done : p->max_block;
        const void *b = pattern_block(p, key, offset + done, n);
        assert_non_null(b);
        memcpy(out + done, b, n);
        done += n;
    }
    return out;
}

static void test_determinism(void **state)
{
    (void)state;
    struct pattern a, b, c;
    uint64_t key = pattern_file_key("unique-16M", 3);

    assert_int_equal(pattern_init(&a, PATTERN_RANDOM, 0, 42, 64 * KiB), 0);
    assert_int_equal(pattern_init(&b, PATTERN_RANDOM, 0, 42, 1 * MiB), 0);
    assert_int_equal(pattern_init(&c, PATTERN_RANDOM, 0, 43, 64 * KiB), 0);

    unsigned char *x = file_bytes(&a, key, 0, 2 * MiB);
    unsigned char *y = file_bytes(&b, key, 0, 2 * MiB);
    unsigned char *z = file_bytes(&c, key, 0, 2 * MiB);
    unsigned char *w = file_bytes(&a, key + 1, 0, 2 * MiB);
    /* Same seed and key: same bytes, whatever max_block each side uses. */
    assert_memory_equal(x, y, 2 * MiB);
    /* Other seed or other key: different bytes. */
    assert_memory_not_equal(x, z, 2 * MiB);
    assert_memory_not_equal(x, w, 2 * MiB);
    /* Bodies differ too, not only tags (the rotation depends on the key). */
    assert_memory_not_equal(x + 4 * KiB + PATTERN_TAG, w + 4 * KiB + PATTERN_TAG,
                            4 * KiB - PATTERN_TAG);

    free(x);
    free(y);
    free(z);
    free(w);
    pattern_free(&a);
    pattern_free(&b);
    pattern_free(&c);
}

static void test_file_key(void **state)
{
    (void)state;
    assert_true(pattern_file_key("a", 0) == pattern_file_key("a", 0));
    assert_true(pattern_file_key("a", 0) != pattern_file_key("a", 1));
    assert_true(pattern_file_key("a", 0) != pattern_file_key("b", 0));
    assert_true(pattern_file_key("ab", 1) != pattern_file_key("ba", 1));
}

static void test_fast_slow_agree(void **state)
{
    (void)state;
    struct pattern p;
    uint64_t key = pattern_file_key("shared-1G", 7);
    const size_t len = 64 * KiB;
    const uint64_t off = 8192;

    assert_int_equal(pattern_init(&p, PATTERN_RANDOM, 0, 1, 64 * KiB), 0);
    const unsigned char *fast = pattern_block(&p, key, off, len);
    assert_non_null(fast);
    assert_int_equal((uintptr_t)fast % 4096, 0); /* aligned offset: aligned */
    unsigned char *ref = malloc(len);
    assert_non_null(ref);
    memcpy(ref, fast, len);

    /* The same range in unaligned pieces through the slow path. */
    unsigned char *pieces = malloc(len);
    assert_non_null(pieces);
    size_t done = 0;
    size_t sizes[] = {3, 1000, 13, 4096, 5000, 1, 15, 16, 17, 4080};
    for (int i = 0; done < len; i = (i + 1) % 10) {
        size_t n = sizes[i] < len - done ? sizes[i] : len - done;
        const void *b = pattern_block(&p, key, off + done, n);
        assert_non_null(b);
        memcpy(pieces + done, b, n);
        done += n;
    }
    assert_memory_equal(ref, pieces, len);

    /* Offset 8192+3, 1000 bytes, and an aligned short block. */
    const unsigned char *b = pattern_block(&p, key, off + 3, 1000);
    assert_memory_equal(b, ref + 3, 1000);
    b = pattern_block(&p, key, off + 4096, 10);
    assert_memory_equal(b, ref + 4096, 10);
    b = pattern_block(&p, key, off + 4096, 6000);
    assert_memory_equal(b, ref + 4096, 6000);

    /* Too long for max_block is a caller bug. */
    assert_null(pattern_block(&p, key, 0, 64 * KiB + 1));

    free(ref);
    free(pieces);
    pattern_free(&p);
}

/* Shared patterns (a rank's clients): one table for the same parameters,
 * another for others; the same bytes as a private pattern's, through
 * pattern_block (in scratch, never the table) and pattern_block_into; a
 * block one holds is not changed by another's calls; compare holds; the
 * table is freed with its last user. */
static void test_shared(void **state)
{
    (void)state;
    enum pattern_kind kinds[] = {PATTERN_RANDOM, PATTERN_COMPRESSIBLE, PATTERN_ZERO};
    const size_t len = 64 * KiB;
    for (int k = 0; k < 3; k++) {
        struct pattern own, a, b, other;
        assert_int_equal(pattern_init(&own, kinds[k], 40, 9, len), 0);
        assert_int_equal(pattern_init_shared(&a, kinds[k], 40, 9, len), 0);
        assert_int_equal(pattern_init_shared(&b, kinds[k], 40, 9, len), 0);
        assert_int_equal(pattern_init_shared(&other, kinds[k], 40, 10, len), 0);
        assert_ptr_equal(a.table, b.table);
        assert_ptr_not_equal(a.table, other.table);
        uint64_t ka = pattern_file_key("unique-1M", 1), kb = pattern_file_key("unique-1M", 2);
        const unsigned char *want = pattern_block(&own, ka, 4096, len);
        unsigned char *copy = malloc(len);
        assert_non_null(copy);
        memcpy(copy, want, len);
        const unsigned char *held = pattern_block(&a, ka, 4096, len);
        assert_memory_equal(held, copy, len);
        if (kinds[k] != PATTERN_ZERO)
            assert_true(held < a.table || held >= a.table + 2 * a.period + 4096);
        (void)pattern_block(&b, kb, 4096, len); /* another client's block */
        assert_memory_equal(held, copy, len);
        unsigned char *dest = malloc(len);
        assert_non_null(dest);
        uint64_t note = 0;
        assert_ptr_equal(pattern_block_into(&b, ka, 4096, len, dest, &note), dest);
        assert_memory_equal(dest, copy, len);
        assert_int_equal(pattern_compare(&b, ka, 4096, dest, len), -1);
        dest[100] ^= 1;
        assert_int_equal(pattern_compare(&a, ka, 4096, dest, len), 4096 + 100);
        free(dest);
        free(copy);
        pattern_free(&a);
        pattern_free(&b);
        pattern_free(&other);
        pattern_free(&own);
    }
}

/* pattern_block_into gives pattern_block's bytes into a kept buffer,
 * whatever the buffer held: its note names what it holds, a block with
 * the same note gets only its tags, any other note all its bytes. */
static void test_block_into(void **state)
{
    (void)state;
    enum pattern_kind kinds[] = {PATTERN_RANDOM, PATTERN_COMPRESSIBLE, PATTERN_ZERO};
    size_t lens[] = {64 * KiB, 3 * 4096 + 10, 2 * 4096 + 7, 4096, 5};
    uint64_t key = pattern_file_key("into", 3), other = pattern_file_key("into", 4);
    unsigned char *dest = malloc(1 * MiB);
    assert_non_null(dest);
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        struct pattern p;
        assert_int_equal(pattern_init(&p, kinds[k], 30, 11, 64 * KiB), 0);
        for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
            size_t len = lens[l];
            uint64_t note = 0;
            /* A buffer of garbage, no note: every byte written. */
            memset(dest, 0xA5, 1 * MiB);
            uint64_t offs[] = {0, p.period, 8192, 8195, 2 * p.period, 4096};
            uint64_t keys[] = {key, key, key, key, other, key};
            for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++) {
                uint64_t want = pattern_note(&p, keys[i], offs[i], len);
                assert_ptr_equal(pattern_block_into(&p, keys[i], offs[i], len, dest, &note), dest);
                assert_true(note == want);
                const void *ref = pattern_block(&p, keys[i], offs[i], len);
                assert_memory_equal(dest, ref, len);
                assert_int_equal(dest[len], 0xA5); /* not a byte past len */
            }
        }
        /* One period on, the same place in the table: the same note. */
        assert_true(pattern_note(&p, key, 0, 4096) == pattern_note(&p, key, p.period, 4096));
        assert_true(pattern_note(&p, key, 0, 4096) != pattern_note(&p, key, 0, 8192));
        assert_true(pattern_note(&p, key, 3, 4096) == 0); /* unaligned: no name */
        assert_true(pattern_note(&p, key, 0, 0) == 0);
        if (kinds[k] != PATTERN_ZERO)
            assert_true(pattern_note(&p, key, 0, 4096) != pattern_note(&p, key, 4096, 4096));
        /* A matching note is trusted: only the tags are written (the body
         * bytes left as they were prove it), as the contract says. */
        uint64_t note = pattern_note(&p, key, 0, 2 * 4096);
        memset(dest, 0x5A, 2 * 4096);
        pattern_block_into(&p, key, 0, 2 * 4096, dest, &note);
        const unsigned char *ref = pattern_block(&p, key, 0, 2 * 4096);
        if (kinds[k] == PATTERN_ZERO) {
            assert_int_equal(dest[0], 0x5A); /* zero: no tags, nothing written */
        } else {
            assert_memory_equal(dest, ref, PATTERN_TAG);
            assert_memory_equal(dest + 4096, ref + 4096, PATTERN_TAG);
            assert_int_equal(dest[PATTERN_TAG], 0x5A);
            assert_int_equal(dest[4096 + PATTERN_TAG], 0x5A);
        }
        assert_null(pattern_block_into(&p, key, 0, 64 * KiB + 1, dest, &note));
        pattern_free(&p);
    }
    /* Another seed, the same position: another note. */
    struct pattern a, b;
    assert_int_equal(pattern_init(&a, PATTERN_RANDOM, 0, 1, 64 * KiB), 0);
    assert_int_equal(pattern_init(&b, PATTERN_RANDOM, 0, 2, 64 * KiB), 0);
    assert_true(pattern_note(&a, 0, 0, 4096) != pattern_note(&b, 0, 0, 4096));
    pattern_free(&a);
    pattern_free(&b);
    free(dest);
}

/* Past the table period (offsets wrap around the table) the content
 * still agrees between paths, and the rotation wrap is seamless. */
static void test_wrap_period(void **state)
{
    (void)state;
    struct pattern p;
    uint64_t key = 99;

    assert_int_equal(pattern_init(&p, PATTERN_RANDOM, 0, 5, 1 * MiB), 0);
    size_t len = 3 * MiB;
    unsigned char *big = file_bytes(&p, key, 0, len);
    for (uint64_t off = 0; off + 70000 < len; off += 200003) {
        const unsigned char *b = pattern_block(&p, key, off + 1, 70000);
        assert_memory_equal(b, big + off + 1, 70000);
        uint64_t a = off / 4096 * 4096;
        size_t n = len - a < 1 * MiB ? len - a : 1 * MiB;
        b = pattern_block(&p, key, a, n);
        assert_memory_equal(b, big + a, n);
    }
    assert_int_equal(pattern_compare(&p, key, 0, big, len), -1);
    free(big);
    pattern_free(&p);
}

static void test_compare(void **state)
{
    (void)state;
    struct pattern p;
    uint64_t key = pattern_file_key("x", 1);
    const size_t len = 256 * KiB;

    assert_int_equal(pattern_init(&p, PATTERN_RANDOM, 0, 9, 256 * KiB), 0);
    unsigned char *buf = file_bytes(&p, key, 4096, len);
    assert_int_equal(pattern_compare(&p, key, 4096, buf, len), -1);
    /* compare on the very pointer pattern_block returned */
    const void *blk = pattern_block(&p, key, 4096, len);
    assert_int_equal(pattern_compare(&p, key, 4096, blk, len), -1);

    size_t flips[] = {0, 1, 15, 16, 17, 4095, 4096, 4111, 100000, len - 1};
    for (size_t i = 0; i < sizeof(flips) / sizeof(flips[0]); i++) {
        buf[flips[i]] ^= 0x40;
        assert_int_equal(pattern_compare(&p, key, 4096, buf, len), (int64_t)(4096 + flips[i]));
        /* unaligned view of the same bytes */
        if (flips[i] >= 5)
            assert_int_equal(pattern_compare(&p, key, 4096 + 5, buf + 5, len - 5),
                             (int64_t)(4096 + flips[i]));
        buf[flips[i]] ^= 0x40;
    }
    /* First of two differences wins. */
    buf[5000] ^= 1;
    buf[9000] ^= 1;
    assert_int_equal(pattern_compare(&p, key, 4096, buf, len), 4096 + 5000);
    buf[5000] ^= 1;
    buf[9000] ^= 1;
    /* Wrong key or offset: differs at the first byte. */
    assert_int_equal(pattern_compare(&p, key + 1, 4096, buf, len), 4096);
    assert_int_equal(pattern_compare(&p, key, 8192, buf, len), 8192);
    free(buf);
    pattern_free(&p);

    /* zero pattern */
    assert_int_equal(pattern_init(&p, PATTERN_ZERO, 0, 9, 4096), 0);
    unsigned char *z = calloc(1, 3 * MiB);
    assert_non_null(z);
    assert_int_equal(pattern_compare(&p, key, 0, z, 3 * MiB), -1);
    z[2 * MiB + 77] = 1;
    assert_int_equal(pattern_compare(&p, key, 10, z, 3 * MiB), 10 + 2 * MiB + 77);
    free(z);
    pattern_free(&p);
}

static void test_md5(void **state)
{
    (void)state;
    struct pattern p;
    unsigned char d1[16], d2[16];
    char hex[33];
    uint64_t key = pattern_file_key("md5", 0);

    assert_int_equal(pattern_init(&p, PATTERN_RANDOM, 0, 3, 128 * KiB), 0);
    assert_int_equal(pattern_md5(&p, key, 0, 1 * MiB, d1, NULL, NULL), 0);
    /* Same thing over pattern_block pieces of an odd size. */
    struct md5 m;
    assert_int_equal(md5_begin(&m), 0);
    for (uint64_t off = 0; off < 1 * MiB;) {
        size_t n = 1 * MiB - off < 10007 ? 1 * MiB - off : 10007;
        assert_int_equal(md5_update(&m, pattern_block(&p, key, off, n), n), 0);
        off += n;
    }
    assert_int_equal(md5_end(&m, d2), 0);
    assert_memory_equal(d1, d2, 16);
    /* Unaligned start and length. */
    assert_int_equal(pattern_md5(&p, key, 777, 300001, d1, NULL, NULL), 0);
    unsigned char *bytes = file_bytes(&p, key, 777, 300001);
    assert_int_equal(md5_begin(&m), 0);
    assert_int_equal(md5_update(&m, bytes, 300001), 0);
    assert_int_equal(md5_end(&m, d2), 0);
    assert_memory_equal(d1, d2, 16);
    free(bytes);
    pattern_free(&p);

    assert_int_equal(pattern_init(&p, PATTERN_ZERO, 0, 3, 64 * KiB), 0);
    assert_int_equal(pattern_md5(&p, key, 0, 1 * MiB, d1, NULL, NULL), 0);
    md5_hex(d1, hex);
    assert_string_equal(hex, "b6d81b360a5672d80c27430f39153e2c");
    pattern_free(&p);

    /* md5_hex of the empty string's digest */
    assert_int_equal(md5_begin(&m), 0);
    assert_int_equal(md5_end(&m, d1), 0);
    md5_hex(d1, hex);
    assert_string_equal(hex, "d41d8cd98f00b204e9800998ecf8427e");
}

static double compressed_ratio(enum pattern_kind kind, int percent)
{
    struct pattern p;
    assert_int_equal(pattern_init(&p, kind, percent, 11, 1 * MiB), 0);
    unsigned char *data = file_bytes(&p, pattern_file_key("z", 0), 0, 1 * MiB);
    uLongf outlen = compressBound(1 * MiB);
    unsigned char *out = malloc(outlen);
    assert_non_null(out);
    assert_int_equal(compress2(out, &outlen, data, 1 * MiB, 9), Z_OK);
    free(out);
    free(data);
    pattern_free(&p);
    return (double)outlen / (double)(1 * MiB);
}

static void test_compression(void **state)
{
    (void)state;
    double r = compressed_ratio(PATTERN_RANDOM, 0);
    assert_true(r > 0.99);
    r = compressed_ratio(PATTERN_COMPRESSIBLE, 50);
    assert_true(r > 0.35 && r < 0.70);
    r = compressed_ratio(PATTERN_COMPRESSIBLE, 0);
    assert_true(r > 0.99);
    r = compressed_ratio(PATTERN_ZERO, 0);
    assert_true(r < 0.01);
}

static void test_compressible_layout(void **state)
{
    (void)state;
    struct pattern p;
    assert_int_equal(pattern_init(&p, PATTERN_COMPRESSIBLE, 50, 1, 64 * KiB), 0);
    const unsigned char *b = pattern_block(&p, 5, 4096 * 3, 8192);
    size_t zeros = 50 * (PATTERN_CHUNK - PATTERN_TAG) / 100;
    for (size_t c = 0; c < 2; c++) {
        const unsigned char *chunk = b + c * PATTERN_CHUNK;
        for (size_t i = PATTERN_CHUNK - zeros; i < PATTERN_CHUNK; i++)
            assert_int_equal(chunk[i], 0);
        /* the body before the zeros is random: not all zero */
        size_t nonzero = 0;
        for (size_t i = PATTERN_TAG; i < PATTERN_CHUNK - zeros; i++)
            nonzero += chunk[i] != 0;
        assert_true(nonzero > (PATTERN_CHUNK - zeros - PATTERN_TAG) * 9 / 10);
    }
    pattern_free(&p);

    /* compressible:100 still has distinct tags per chunk */
    assert_int_equal(pattern_init(&p, PATTERN_COMPRESSIBLE, 100, 1, 64 * KiB), 0);
    b = pattern_block(&p, 5, 0, 8192);
    assert_memory_not_equal(b, b + 4096, PATTERN_TAG);
    for (size_t i = PATTERN_TAG; i < PATTERN_CHUNK; i++)
        assert_int_equal(b[i], 0);
    pattern_free(&p);

    assert_int_equal(pattern_init(&p, PATTERN_COMPRESSIBLE, 101, 1, 4096), -EINVAL);
    pattern_free(&p);
}

static int cmp_u64x2(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    if (x[1] != y[1])
        return x[1] < y[1] ? -1 : 1;
    return 0;
}

/* FNV-1a-like 128-bit fingerprint of a chunk (two independent 64-bit). */
static void chunk_hash(const unsigned char *c, uint64_t h[2])
{
    h[0] = UINT64_C(0xcbf29ce484222325);
    h[1] = UINT64_C(0x84222325cbf29ce4);
    for (size_t i = 0; i < PATTERN_CHUNK; i++) {
        h[0] = (h[0] ^ c[i]) * UINT64_C(0x100000001b3);
        h[1] = (h[1] ^ c[i]) * UINT64_C(0x9E3779B97F4A7C15);
    }
}

static void test_no_duplicate_chunks(void **state)
{
    (void)state;
    struct pattern p;
    const size_t len = 16 * MiB, n = len / PATTERN_CHUNK;
    uint64_t key = pattern_file_key("dedup", 0);

    assert_int_equal(pattern_init(&p, PATTERN_RANDOM, 0, 17, 1 * MiB), 0);
    uint64_t(*h)[2] = malloc(sizeof(*h) * 2 * n);
    assert_non_null(h);
    unsigned char *data = file_bytes(&p, key, 0, len);
    for (size_t i = 0; i < n; i++)
        chunk_hash(data + i * PATTERN_CHUNK, h[i]);
    free(data);
    /* and a second file with the same seed */
    data = file_bytes(&p, key + 1, 0, len);
    for (size_t i = 0; i < n; i++)
        chunk_hash(data + i * PATTERN_CHUNK, h[n + i]);
    free(data);
    qsort(h, 2 * n, sizeof(*h), cmp_u64x2);
    for (size_t i = 1; i < 2 * n; i++)
        assert_true(cmp_u64x2(h[i - 1], h[i]) != 0);
    free(h);
    pattern_free(&p);
}

static void test_format(void **state)
{
    (void)state;
    struct pattern p;
    char buf[32];

    assert_int_equal(pattern_init(&p, PATTERN_RANDOM, 0, 1, 4096), 0);
    pattern_format(&p, buf, sizeof(buf));
    assert_string_equal(buf, "random");
    pattern_free(&p);
    assert_int_equal(pattern_init(&p, PATTERN_ZERO, 0, 1, 4096), 0);
    pattern_format(&p, buf, sizeof(buf));
    assert_string_equal(buf, "zero");
    pattern_free(&p);
    assert_int_equal(pattern_init(&p, PATTERN_COMPRESSIBLE, 37, 1, 4096), 0);
    pattern_format(&p, buf, sizeof(buf));
    assert_string_equal(buf, "compressible:37");
    pattern_free(&p);
    /* truncated safely */
    pattern_format(&p, buf, 5);
    assert_string_equal(buf, "comp");
}

static void test_geometry(void **state)
{
    (void)state;
    struct pattern p;

    assert_int_equal(pattern_init(&p, PATTERN_RANDOM, 0, 1, 4096), 0);
    assert_int_equal(p.period, PATTERN_TABLE);
    assert_int_equal((uintptr_t)p.table % 4096, 0);
    assert_int_equal((uintptr_t)p.scratch % 4096, 0);
    pattern_free(&p);
    assert_int_equal(pattern_init(&p, PATTERN_RANDOM, 0, 1, 3 * MiB + 1), 0);
    assert_int_equal(p.period, 3 * MiB + 4096);
    /* a max-size block at the worst offsets */
    for (uint64_t off = 0; off < 8 * MiB; off += 3 * MiB + 4096 - 4096 * 3) {
        assert_non_null(pattern_block(&p, 1, off, 3 * MiB + 1));
        assert_non_null(pattern_block(&p, 1, off + 4095, 3 * MiB + 1));
    }
    pattern_free(&p);
    pattern_free(&p); /* twice is harmless */
}

/* ---- An independent reference, written from the layout in pattern.h and
 * pattern.c's documented constants: pins the on-disk format, which files
 * written by one herd build and checked by another depend on. ---- */

static uint64_t ref_mix(uint64_t x)
{
    x += UINT64_C(0x9E3779B97F4A7C15);
    x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
    return x ^ (x >> 31);
}

/* Byte at table position q (< period) of the random table for `seed`. */
static unsigned char ref_table(uint64_t seed, uint64_t q)
{
    uint64_t state = ref_mix(seed ^ UINT64_C(0x5EED7AB1E0DA7A00));
    uint64_t w = ref_mix(state + (q / 8) * UINT64_C(0x9E3779B97F4A7C15));
    return (unsigned char)(w >> (8 * (q % 8)));
}

/* Byte at `offset` of file `key`, random pattern, given period. */
static unsigned char ref_byte(uint64_t seed, uint64_t key, uint64_t period, uint64_t offset)
{
    uint64_t c = offset / 4096, in = offset % 4096;
    if (in < 16) {
        uint64_t t = ref_mix(seed ^ key ^ (c * UINT64_C(0x9E3779B97F4A7C15)));
        if (in >= 8)
            t = ref_mix(t);
        return (unsigned char)(t >> (8 * (in % 8)));
    }
    uint64_t rot = (ref_mix(key ^ seed) % (period / 4096)) * 4096;
    uint64_t pos = (rot + (c * 4096) % period) % period;
    return ref_table(seed, pos + in);
}

static void test_reference_layout(void **state)
{
    (void)state;
    struct pattern p;
    const uint64_t seed = 0x1234, key = pattern_file_key("unique-16M", 2);
    const size_t len = 3 * MiB + 5000;

    assert_int_equal(pattern_init(&p, PATTERN_RANDOM, 0, seed, 256 * KiB), 0);
    assert_int_equal(p.period, 1 * MiB);
    unsigned char *got = file_bytes(&p, key, 0, len);
    for (size_t i = 0; i < len; i++)
        if (got[i] != ref_byte(seed, key, p.period, i))
            fail_msg("byte %zu: got %u, want %u", i, got[i], ref_byte(seed, key, p.period, i));
    free(got);
    pattern_free(&p);

    /* Known answers: any change here changes what herd writes. */
    assert_true(pattern_file_key("unique-16M", 0) == PINNED_KEY);
    unsigned char d[16];
    char hex[33];
    assert_int_equal(pattern_init(&p, PATTERN_RANDOM, 0, 7, 1 * MiB), 0);
    assert_int_equal(pattern_md5(&p, pattern_file_key("unique-16M", 0), 0, 4 * MiB, d, NULL, NULL),
                     0);
    md5_hex(d, hex);
    assert_string_equal(hex, PINNED_RANDOM);
    pattern_free(&p);
    assert_int_equal(pattern_init(&p, PATTERN_COMPRESSIBLE, 50, 7, 1 * MiB), 0);
    assert_int_equal(pattern_md5(&p, pattern_file_key("unique-16M", 0), 0, 4 * MiB, d, NULL, NULL),
                     0);
    md5_hex(d, hex);
    assert_string_equal(hex, PINNED_COMPRESSIBLE);
    pattern_free(&p);
}

/* pattern_md5's stop test: asked before the first byte and about every
 * PATTERN_STOP_EVERY bytes; a true answer abandons even a 1 TiB digest. */
struct stop_probe {
    int calls;
    int stop_at; /* answer true on this call (1-based); 0: never */
};

static bool stop_probe(const void *arg)
{
    struct stop_probe *s = (struct stop_probe *)arg;
    s->calls++;
    return s->stop_at > 0 && s->calls >= s->stop_at;
}

static void test_md5_stop(void **state)
{
    (void)state;
    struct pattern p;
    unsigned char d1[16], d2[16];
    uint64_t key = pattern_file_key("md5-stop", 0);
    assert_int_equal(pattern_init(&p, PATTERN_RANDOM, 0, 5, 1 * MiB), 0);

    /* Never stopping: the same digest as without a stop test, asked once
     * per PATTERN_STOP_EVERY bytes (20 MiB: 5 or 6 times). */
    struct stop_probe never = {0, 0};
    assert_int_equal(pattern_md5(&p, key, 0, 20 * MiB, d1, stop_probe, &never), 0);
    assert_int_equal(pattern_md5(&p, key, 0, 20 * MiB, d2, NULL, NULL), 0);
    assert_memory_equal(d1, d2, 16);
    assert_true(never.calls >= 5 && never.calls <= 6);

    /* Stop at once: nothing digested. */
    struct stop_probe now = {0, 1};
    assert_int_equal(pattern_md5(&p, key, 0, 1 * MiB, d1, stop_probe, &now), -EINTR);
    assert_int_equal(now.calls, 1);

    /* 1 TiB, stopped on the third question: returns after about 8 MiB
     * (hours of digest otherwise). */
    struct stop_probe third = {0, 3};
    assert_int_equal(pattern_md5(&p, key, 0, UINT64_C(1) << 40, d1, stop_probe, &third), -EINTR);
    assert_int_equal(third.calls, 3);
    pattern_free(&p);

    /* A pattern that cannot produce blocks says why. */
    struct pattern z = {.kind = PATTERN_ZERO, .max_block = 0};
    assert_int_equal(pattern_md5(&z, key, 0, 1, d1, NULL, NULL), -EINVAL);
}

/* A max_block-sized block at every table rotation, through the fast path,
 * equals the same bytes built by the slow path: exercises every byte of the
 * doubled table. */
static void test_all_rotations(void **state)
{
    (void)state;
    struct pattern p;
    const uint64_t key = 31337;

    assert_int_equal(pattern_init(&p, PATTERN_RANDOM, 0, 2, 1 * MiB), 0);
    const size_t period = p.period, len = 2 * period;
    unsigned char *ref = malloc(len);
    assert_non_null(ref);
    memcpy(ref, pattern_block(&p, key, 0, 1), 1);
    for (size_t done = 1; done < len;) { /* unaligned: slow path only */
        size_t n = len - done < period - 1 ? len - done : period - 1;
        memcpy(ref + done, pattern_block(&p, key, done, n), n);
        done += n;
    }
    for (size_t a = 0; a < period; a += 4096) {
        const unsigned char *b = pattern_block(&p, key, a, period);
        if (memcmp(b, ref + a, period) != 0)
            fail_msg("fast path differs at offset %zu", a);
        assert_int_equal(pattern_compare(&p, key, a, ref + a, period), -1);
    }
    free(ref);
    pattern_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_file_key),
        cmocka_unit_test(test_fast_slow_agree),
        cmocka_unit_test(test_block_into),
        cmocka_unit_test(test_shared),
        cmocka_unit_test(test_wrap_period),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_md5),
        cmocka_unit_test(test_compression),
        cmocka_unit_test(test_compressible_layout),
        cmocka_unit_test(test_no_duplicate_chunks),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_geometry),
        cmocka_unit_test(test_reference_layout),
        cmocka_unit_test(test_all_rotations),
        cmocka_unit_test(test_md5_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
