/* utf8.c — UTF-8 validity, control bytes, escaping (utf8.h). */
#include "utf8.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

size_t utf8_len(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    if (n == 0)
        return 0;
    if (p[0] < 0x80)
        return 1;
    size_t len = 2;
    if (p[0] >= 0xf0)
        len = 4;
    else if (p[0] >= 0xe0)
        len = 3;
    else if (p[0] < 0xc2)
        return 0;
    if (p[0] > 0xf4 || len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    /* overlong 3- and 4-byte forms, surrogates, above U+10FFFF */
    if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] > 0x9f) ||
        (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] > 0x8f))
        return 0;
    return len;
}

bool utf8_is_control(unsigned char c)
{
    return c < 0x20 || c == 0x7f;
}

uint32_t utf8_display_control(const char *s, size_t k)
{
    /* C1; LRM, RLM; LS, PS, LRE, RLE, PDF, LRO, RLO; LRI, RLI, FSI, PDI */
    static const uint32_t ranges[][2] = {
        {0x80, 0x9f}, {0x200e, 0x200f}, {0x2028, 0x202e}, {0x2066, 0x2069}};
    const unsigned char *p = (const unsigned char *)s;
    uint32_t code;
    if (k == 2)
        code = (uint32_t)(p[0] & 0x1f) << 6 | (p[1] & 0x3f);
    else if (k == 3)
        code = (uint32_t)(p[0] & 0x0f) << 12 | (uint32_t)(p[1] & 0x3f) << 6 | (p[2] & 0x3f);
    else
        return 0;
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++)
        if (code >= ranges[i][0] && code <= ranges[i][1])
            return code;
    return 0;
}

int utf8_check(const char *s, char *why, size_t len)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t k = utf8_len(s + i, n - i);
        uint32_t code = utf8_display_control(s + i, k);
        if (k == 1 && utf8_is_control(c)) {
            snprintf(why, len, "control byte 0x%02x at byte %zu is not allowed", c, i + 1);
            return -EILSEQ;
        }
        if (code) {
            snprintf(why, len, "control character U+%04X at byte %zu is not allowed", code, i + 1);
            return -EILSEQ;
        }
        if (k == 0) {
            snprintf(why, len, "byte 0x%02x at byte %zu is not valid UTF-8", c, i + 1);
            return -EILSEQ;
        }
        i += k;
    }
    return 0;
}

void utf8_escape(const char *s, char *dst, size_t len)
{
    size_t n = strlen(s), o = 0;
    if (len == 0)
        return;
    /* Invariant: o < len, dst[0..o) is printable valid UTF-8. */
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t k = utf8_len(s + i, n - i);
        uint32_t code = utf8_display_control(s + i, k);
        if (code) { /* as herd-report: \xNN below U+0100, else \uNNNN */
            size_t w = code < 0x100 ? 4 : 6;
            if (o + w >= len)
                break;
            snprintf(dst + o, len - o, code < 0x100 ? "\\x%02x" : "\\u%04x", code);
            o += w;
            i += k;
        } else if (k == 0 || (k == 1 && utf8_is_control(c))) {
            if (o + 4 >= len)
                break;
            snprintf(dst + o, len - o, "\\x%02x", c);
            o += 4;
            i++;
        } else {
            if (o + k >= len)
                break;
            memcpy(dst + o, s + i, k);
            o += k;
            i += k;
        }
    }
    dst[o] = '\0';
}

size_t utf8_cut(const char *s, size_t n)
{
    while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
        n--; /* s[n] continues a character: cut before that character */
    return n;
}
