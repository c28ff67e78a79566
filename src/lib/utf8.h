/* utf8.h — the one rule for text herd takes in, prints or stores: valid
 * UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF) and no
 * control byte (below 0x20, or 0x7f). Job values are checked with it,
 * error messages escape with it, the JSON summary and HDF5 strings cut and
 * copy by it. Pure functions; no allocation. */
#ifndef HERD_UTF8_H
#define HERD_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* Length (1-4) of the valid UTF-8 sequence at s, which has n bytes left,
 * or 0 when there is none. */
size_t utf8_len(const char *s, size_t n);
/* A control byte: below 0x20, or 0x7f. */
bool utf8_is_control(unsigned char c);
/* 0 when s is valid UTF-8 without control bytes; else -EILSEQ with the
 * first bad byte and its 1-based position in why. */
int utf8_check(const char *s, char *why, size_t len);
/* s for one line of a message: control bytes and bytes that are not valid
 * UTF-8 become \xNN; cut to fit len, never inside an escape or a
 * character. */
void utf8_escape(const char *s, char *dst, size_t len);
/* The largest length <= n at which s (at least n bytes) can be cut
 * without splitting a UTF-8 character. */
size_t utf8_cut(const char *s, size_t n);

#endif
