/* textscan.c — the cursor over non-NUL-terminated text that the /proc
 * parsers share (see textscan.h): lines, blank-separated fields and
 * unsigned decimals, never reading at or past a span's end. */
#include "textscan.h"

#include <string.h>

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

int textscan_line(struct textscan *text, struct textscan *line)
{
    const char *nl;

    if (text->p >= text->end)
        return 0;
    nl = memchr(text->p, '\n', (size_t)(text->end - text->p));
    line->p = text->p;
    line->end = nl ? nl : text->end;
    text->p = nl ? nl + 1 : text->end;
    return 1;
}

int textscan_field(struct textscan *line, struct textscan *field)
{
    const char *p = line->p;

    while (p < line->end && is_blank(*p))
        p++;
    field->p = p;
    while (p < line->end && !is_blank(*p))
        p++;
    field->end = p;
    line->p = p;
    return field->p < field->end;
}

size_t textscan_len(struct textscan s)
{
    return (size_t)(s.end - s.p);
}

int textscan_eq(struct textscan s, const char *word)
{
    size_t n = strlen(word);
    return textscan_len(s) == n && memcmp(s.p, word, n) == 0;
}

int textscan_u64(struct textscan s, uint64_t *v)
{
    uint64_t x = 0;

    if (s.p >= s.end)
        return -1;
    for (const char *p = s.p; p < s.end; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (d > 9 || x > (UINT64_MAX - d) / 10)
            return -1;
        x = x * 10 + d;
    }
    *v = x;
    return 0;
}

int textscan_u64s(struct textscan *line, uint64_t *v, size_t nv, size_t *count)
{
    struct textscan field;
    size_t n = 0;
    uint64_t x;

    for (; textscan_field(line, &field); n++) {
        if (textscan_u64(field, &x) < 0)
            return -1;
        if (n < nv)
            v[n] = x;
    }
    *count = n;
    return 0;
}
