/* utf8.h — the one rule for text herd takes in, prints or stores: valid
 * UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF) and no
 * control byte (below 0x20, or 0x7f) nor display control (a C1 control,
 * a line or paragraph separator, a bidirectional mark, embedding, override
 * or isolate: utf8_display_control). Job values are checked with it,
 * error messages escape with it, the JSON summary and HDF5 strings cut and
 * copy by it. Pure functions; no allocation. */
#ifndef HERD_UTF8_H
#define HERD_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Length (1-4) of the valid UTF-8 sequence at s, which has n bytes left,
 * or 0 when there is none. */
size_t utf8_len(const char *s, size_t n);
/* A control byte: below 0x20, or 0x7f. */
bool utf8_is_control(unsigned char c);
/* The code point of the valid k-byte character at s (k from utf8_len) when
 * a terminal or log viewer acts on it instead of showing it: a C1 control
 * (U+0080 to U+009F), a line or paragraph separator (U+2028, U+2029), a
 * bidirectional mark, embedding, override or isolate (U+200E, U+200F,
 * U+202A to U+202E, U+2066 to U+2069); else 0. The same characters
 * herd-report and herd-compare escape (analysis/herd_safe.py). */
uint32_t utf8_display_control(const char *s, size_t k);
/* 0 when s is valid UTF-8 without control bytes or display controls; else
 * -EILSEQ with the first bad byte (or character, as U+NNNN) and its
 * 1-based position in why. */
int utf8_check(const char *s, char *why, size_t len);
/* s for one line of a message: control bytes and bytes that are not valid
 * UTF-8 become \xNN, display controls \uNNNN (as herd-report shows them);
 * cut to fit len, never inside an escape or a character. */
void utf8_escape(const char *s, char *dst, size_t len);
/* The largest length <= n at which s (at least n bytes) can be cut
 * without splitting a UTF-8 character. */
size_t utf8_cut(const char *s, size_t n);

#endif
