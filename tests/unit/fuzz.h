/* fuzz.h — the fuzz machinery the parser unit tests share (test_procfs.c,
 * test_nfsd_stats.c, test_mountstats.c, test_promtext.c): sample files of
 * tests/data read into exactly sized heap buffers, a seeded xorshift64
 * generator, random edits of a text (flipped, replaced, inserted, deleted
 * and duplicated bytes, the format's interesting characters and words,
 * long digit runs and long lines), and loops that hand every prefix of a
 * text, or seeded mutations of it, to a check in a heap buffer of exactly
 * its length, so that AddressSanitizer catches a parser reading past len.
 * What differs between formats (the characters and words worth inserting)
 * is a parameter. Header-only (static inline); include it after
 * <cmocka.h>, whose asserts it uses. */
#ifndef HERD_TESTS_FUZZ_H
#define HERD_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room a mutated text gets beyond twice the original's length. */
#define FUZZ_ROOM 16384

/* A seeded generator and what the edits insert besides random bytes. */
struct fuzz {
    uint64_t rng;             /* xorshift64 state: set it to the seed (not 0) */
    const char *alphabet;     /* the format's interesting characters, not empty */
    const char *const *words; /* words of the format to insert, or NULL */
    size_t nwords;
};

/* A check of one text, handed a buffer of exactly len bytes (no NUL). */
typedef void (*fuzz_fn)(void *arg, const char *text, size_t len);

/* The next number of f's generator (xorshift64). */
static inline uint64_t fuzz_rng(struct fuzz *f)
{
    f->rng ^= f->rng << 13;
    f->rng ^= f->rng >> 7;
    f->rng ^= f->rng << 17;
    return f->rng;
}

/* A number in [0, n); 0 when n is 0. */
static inline size_t fuzz_below(struct fuzz *f, size_t n)
{
    return n ? (size_t)(fuzz_rng(f) % n) : 0;
}

/* The path of tests/data/name, in a static buffer. Found from __FILE__,
 * which here is this header's path: tests/unit, like the tests'. */
static inline const char *fuzz_data_path(const char *name)
{
    static char path[4096];
    const char *slash = strrchr(__FILE__, '/');

    snprintf(path, sizeof path, "%.*s/../data/%s", slash ? (int)(slash - __FILE__) : 1,
             slash ? __FILE__ : ".", name);
    return path;
}

/* tests/data/name in a heap buffer of exactly its length (no NUL), and
 * that length in *len; the test fails when it cannot be read or is empty. */
static inline char *fuzz_read_data(const char *name, size_t *len)
{
    const char *path = fuzz_data_path(name);
    FILE *f = fopen(path, "rb");
    long n;
    char *buf;

    if (!f)
        fail_msg("cannot open %s", path);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    buf = malloc((size_t)n);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* A heap copy of text[0, len) of exactly len bytes (1 when len is 0), no
 * NUL after it, so that a read past len is caught. */
static inline char *fuzz_copy(const char *text, size_t len)
{
    char *buf = malloc(len ? len : 1);

    assert_non_null(buf);
    memcpy(buf, text, len);
    return buf;
}

/* fn on an exactly sized copy of text[0, len). */
static inline void fuzz_exact(const char *text, size_t len, fuzz_fn fn, void *arg)
{
    char *buf = fuzz_copy(text, len);

    fn(arg, buf, len);
    free(buf);
}

/* fn on every prefix of text[0, len), the empty one and the whole text
 * included, each in a buffer of exactly its length. */
static inline void fuzz_prefixes(const char *text, size_t len, fuzz_fn fn, void *arg)
{
    for (size_t n = 0; n <= len; n++)
        fuzz_exact(text, n, fn, arg);
}

/* Opens a gap of n bytes at pos of buf[0, *len) (a buffer of cap bytes),
 * fewer when they do not fit; returns the gap's size. */
static inline size_t fuzz_insert(char *buf, size_t *len, size_t cap, size_t pos, size_t n)
{
    if (n > cap - *len)
        n = cap - *len;
    memmove(buf + pos + n, buf + pos, *len - pos);
    *len += n;
    return n;
}

/* One random edit of buf[0, *len) (a buffer of cap bytes; what an edit
 * inserts is cut to fit). */
static inline void fuzz_edit(struct fuzz *f, char *buf, size_t *len, size_t cap)
{
    const char *alpha = f->alphabet;
    size_t nalpha = strlen(alpha);
    size_t pos = fuzz_below(f, *len + 1), n, i;

    switch (fuzz_below(f, f->nwords ? 10 : 9)) {
    case 0: /* flip a bit */
        if (pos < *len)
            buf[pos] ^= (char)(1u << fuzz_below(f, 8));
        break;
    case 1: /* replace a byte: a random one or one of the alphabet */
        if (pos < *len)
            buf[pos] = fuzz_below(f, 2) ? (char)fuzz_rng(f) : alpha[fuzz_below(f, nalpha)];
        break;
    case 2: /* insert random bytes */
        n = fuzz_insert(buf, len, cap, pos, 1 + fuzz_below(f, 8));
        for (i = 0; i < n; i++)
            buf[pos + i] = (char)fuzz_rng(f);
        break;
    case 3: /* insert characters of the alphabet: separators, quotes... */
        n = fuzz_insert(buf, len, cap, pos, 1 + fuzz_below(f, 8));
        for (i = 0; i < n; i++)
            buf[pos + i] = alpha[fuzz_below(f, nalpha)];
        break;
    case 4: /* insert digits, half the time a long run that overflows */
        n = fuzz_below(f, 2) ? 15 + fuzz_below(f, 600) : 1 + fuzz_below(f, 5);
        n = fuzz_insert(buf, len, cap, pos, n);
        for (i = 0; i < n; i++)
            buf[pos + i] = (char)('0' + fuzz_below(f, 10));
        break;
    case 5: /* insert a long line of one character */
    {
        char c = fuzz_below(f, 2) ? "a9"[fuzz_below(f, 2)] : alpha[fuzz_below(f, nalpha)];
        n = fuzz_insert(buf, len, cap, pos, 100 + fuzz_below(f, 6000));
        memset(buf + pos, c, n);
        break;
    }
    case 6: /* delete a span: a short one, or any part of the rest */
        n = fuzz_below(f, 2) ? 1 + fuzz_below(f, 64) : fuzz_below(f, *len - pos + 1);
        if (n > *len - pos)
            n = *len - pos;
        memmove(buf + pos, buf + pos + n, *len - pos - n);
        *len -= n;
        break;
    case 7: /* duplicate a span of up to 512 bytes at another place */
    {
        char tmp[512];
        size_t from = fuzz_below(f, *len);
        n = 1 + fuzz_below(f, sizeof tmp);
        if (n > *len - from)
            n = *len - from;
        memcpy(tmp, buf + from, n);
        n = fuzz_insert(buf, len, cap, pos, n);
        memcpy(buf + pos, tmp, n);
        break;
    }
    case 8: /* replace a digit by another, keeping the form */
        if (pos < *len && buf[pos] >= '0' && buf[pos] <= '9')
            buf[pos] = (char)('0' + fuzz_below(f, 10));
        break;
    default: /* insert a word of the format */
    {
        const char *w = f->words[fuzz_below(f, f->nwords)];
        n = fuzz_insert(buf, len, cap, pos, strlen(w));
        memcpy(buf + pos, w, n);
    }
    }
}

/* One to max_edits random edits of buf[0, *len) (cap bytes). */
static inline void fuzz_mutate(struct fuzz *f, char *buf, size_t *len, size_t cap, size_t max_edits)
{
    for (size_t e = 1 + fuzz_below(f, max_edits); e--;)
        fuzz_edit(f, buf, len, cap);
}

/* fn on rounds mutations of text[0, len) (fuzz_mutate of a fresh copy,
 * one to max_edits edits), each in a buffer of exactly its length. */
static inline void fuzz_mutations(struct fuzz *f, const char *text, size_t len, int rounds,
                                  size_t max_edits, fuzz_fn fn, void *arg)
{
    size_t cap = 2 * len + FUZZ_ROOM;
    char *work = malloc(cap);

    assert_non_null(work);
    for (int round = 0; round < rounds; round++) {
        size_t n = len;
        memcpy(work, text, len);
        fuzz_mutate(f, work, &n, cap, max_edits);
        fuzz_exact(work, n, fn, arg);
    }
    free(work);
}

/* fn on every prefix of tests/data/name, then on rounds mutations of it
 * (fuzz_mutations), each in a buffer of exactly its length. */
static inline void fuzz_file(struct fuzz *f, const char *name, int rounds, size_t max_edits,
                             fuzz_fn fn, void *arg)
{
    size_t len;
    char *text = fuzz_read_data(name, &len);

    fuzz_prefixes(text, len, fn, arg);
    fuzz_mutations(f, text, len, rounds, max_edits, fn, arg);
    free(text);
}

#endif
