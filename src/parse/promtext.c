/* promtext.c — parser for the Prometheus text exposition format (what
 * node_exporter serves at /metrics; see promtext.h): one sample per line,
 * `name{labels} value [timestamp]`, comments skipped. Works on
 * [text, text + len) through a cursor; never reads text[len]. */
#include "promtext.h"

#include "textscan.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define VALUE_MAX 512 /* longest value token accepted */

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

static bool is_alpha_(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static const char *skip_blanks(const char *p, const char *e)
{
    while (p < e && is_blank(*p))
        p++;
    return p;
}

/* One label `name="value"` of a label set at *p, and the separator after
 * it. Returns 1 with the name and the raw (still escaped) value, 0 at the
 * end of the set ('}' or e, left at *p), -1 when malformed. */
static int label_next(const char **p, const char *e, const char **name, size_t *name_len,
                      const char **val, size_t *val_len)
{
    const char *q = skip_blanks(*p, e);
    if (q == e || *q == '}') {
        *p = q;
        return 0;
    }
    if (!is_alpha_(*q))
        return -1;
    *name = q;
    while (q < e && (is_alpha_(*q) || is_digit(*q)))
        q++;
    *name_len = (size_t)(q - *name);
    q = skip_blanks(q, e);
    if (q == e || *q++ != '=')
        return -1;
    q = skip_blanks(q, e);
    if (q == e || *q++ != '"')
        return -1;
    *val = q;
    for (;;) {
        if (q == e)
            return -1; /* unterminated quote */
        if (*q == '"')
            break;
        if (*q == '\\') {
            if (e - q < 2 || (q[1] != '"' && q[1] != '\\' && q[1] != 'n'))
                return -1;
            q++;
        }
        q++;
    }
    *val_len = (size_t)(q - *val);
    q = skip_blanks(q + 1, e);
    if (q < e && *q == ',')
        q++;
    else if (q < e && *q != '}')
        return -1;
    *p = q;
    return 1;
}

/* A Go float as Prometheus writes it: [+-]digits[.digits][e[+-]digits],
 * [+-]Inf, [+-]Infinity or NaN (any case). */
static bool value_parse(const char *p, const char *e, double *v)
{
    char buf[VALUE_MAX];
    size_t n = (size_t)(e - p);
    if (n == 0 || n >= sizeof buf)
        return false;
    memcpy(buf, p, n);
    buf[n] = '\0';
    const char *s = buf + (buf[0] == '+' || buf[0] == '-');
    if (strcasecmp(buf, "nan") == 0 || strcasecmp(s, "inf") == 0 ||
        strcasecmp(s, "infinity") == 0) {
        *v = strtod(buf, NULL);
        return true;
    }
    int digits = 0;
    while (is_digit(*s))
        s++, digits++;
    if (*s == '.')
        for (s++; is_digit(*s); s++)
            digits++;
    if (digits == 0)
        return false;
    if (*s == 'e' || *s == 'E') {
        s++;
        s += *s == '+' || *s == '-';
        if (!is_digit(*s))
            return false;
        while (is_digit(*s))
            s++;
    }
    if (*s != '\0')
        return false;
    errno = 0;
    char *end;
    *v = strtod(buf, &end);
    return *end == '\0' && !(errno == ERANGE && isinf(*v));
}

/* An int64 timestamp in milliseconds: [+-]digits. */
static bool timestamp_valid(const char *p, const char *e)
{
    bool neg = p < e && *p == '-';
    p += p < e && (*p == '-' || *p == '+');
    if (p == e)
        return false;
    uint64_t x = 0, lim = (uint64_t)INT64_MAX + neg;
    for (; p < e; p++) {
        if (!is_digit(*p))
            return false;
        unsigned d = (unsigned)(*p - '0');
        if (x > (lim - d) / 10)
            return false;
        x = x * 10 + d;
    }
    return true;
}

/* One sample line [p, e), trimmed and not a comment: 0, 1 when it is
 * well formed but its name or labels do not fit (skip it), -1 malformed. */
static int sample_parse(const char *p, const char *e, char *name, char *labels, double *value)
{
    const char *q = p;
    bool too_long = false;
    if (!(is_alpha_(*q) || *q == ':'))
        return -1;
    while (q < e && (is_alpha_(*q) || is_digit(*q) || *q == ':'))
        q++;
    size_t n = (size_t)(q - p);
    if (n >= PROMTEXT_NAME_MAX) {
        too_long = true;
        n = 0;
    }
    memcpy(name, p, n);
    name[n] = '\0';

    const char *r = skip_blanks(q, e);
    labels[0] = '\0';
    if (r < e && *r == '{') {
        const char *start = r + 1, *c = start, *ln, *lv;
        size_t lnn, lvn;
        int got;
        while ((got = label_next(&c, e, &ln, &lnn, &lv, &lvn)) == 1)
            ;
        if (got < 0 || c == e)
            return -1; /* bad label or no closing brace */
        size_t m = (size_t)(c - start);
        if (m >= PROMTEXT_LABELS_MAX) {
            too_long = true;
            m = 0;
        }
        memcpy(labels, start, m);
        labels[m] = '\0';
        q = c + 1;
        r = skip_blanks(q, e);
    } else if (r == q) {
        return -1; /* a character that fits no name, or no value */
    }

    const char *v = r;
    while (r < e && !is_blank(*r))
        r++;
    if (!value_parse(v, r, value))
        return -1;
    const char *t = skip_blanks(r, e);
    if (t < e) { /* a timestamp, then nothing */
        const char *te = t;
        while (te < e && !is_blank(*te))
            te++;
        if (!timestamp_valid(t, te) || skip_blanks(te, e) != e)
            return -1;
    }
    return too_long ? 1 : 0;
}

int promtext_parse(const char *text, size_t len, promtext_fn fn, void *arg)
{
    if (!text)
        return len ? -1 : 0;
    struct textscan rest = {text, text + len}, line;
    int count = 0;
    while (textscan_line(&rest, &line)) {
        const char *p = skip_blanks(line.p, line.end), *e = line.end;
        while (e > p && is_blank(e[-1]))
            e--;
        if (p == e || *p == '#')
            continue;
        char name[PROMTEXT_NAME_MAX], labels[PROMTEXT_LABELS_MAX];
        double value;
        int rc = sample_parse(p, e, name, labels, &value);
        if (rc < 0 || count == INT_MAX)
            return -1;
        if (rc == 1)
            continue; /* too long to hand over: skipped, not counted */
        if (fn)
            fn(arg, name, labels, value);
        count++;
    }
    return count;
}

int promtext_label(const char *labels, const char *key, char *buf, size_t len)
{
    if (!labels || !key || !buf || len == 0)
        return -1;
    const char *p = labels, *e = labels + strlen(labels), *name, *val;
    size_t nn, vn;
    size_t klen = strlen(key);
    int got;
    while ((got = label_next(&p, e, &name, &nn, &val, &vn)) == 1) {
        if (nn != klen || memcmp(name, key, klen) != 0)
            continue;
        size_t o = 0;
        for (size_t i = 0; i < vn; i++) {
            char c = val[i];
            if (c == '\\' && i + 1 < vn) {
                char x = val[++i];
                c = x == 'n' ? '\n' : x; /* \" \\ \n; label_next allows no other */
            }
            if (o + 1 >= len)
                return -1;
            buf[o++] = c;
        }
        buf[o] = '\0';
        return 0;
    }
    return -1;
}
