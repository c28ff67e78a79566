/* units.c — parsing and printing of byte counts ("16M", binary multiples)
 * and durations ("250ms"), strict about what they accept: no signs, no
 * spaces, no trailing garbage. */
#include "units.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Shift (power of two) for a size suffix, or -1 if it is not one:
 * "", "B", or one of K M G T (either case) optionally followed by "iB" or
 * "B" (KB = KiB, as fio's default kb_base = 1024). */
static int units_size_shift(const char *s)
{
    static const char letters[] = "KMGT";
    if (*s == '\0' || strcmp(s, "B") == 0)
        return 0;
    const char *at = strchr(letters, toupper((unsigned char)*s));
    if (!at)
        return -1;
    s++;
    if (*s != '\0' && strcmp(s, "iB") != 0 && strcmp(s, "B") != 0)
        return -1;
    return 10 * (int)(at - letters + 1);
}

/* Digits at *s (at most max of them) into *v, *s moved past them; the
 * count, or -1 on overflow of uint64. */
static int digits_read(const char **s, uint64_t *v, int max)
{
    int n = 0;
    *v = 0;
    for (; **s >= '0' && **s <= '9'; (*s)++, n++) {
        unsigned d = (unsigned)(**s - '0');
        if (n == max || *v > (UINT64_MAX - d) / 10)
            return -1;
        *v = *v * 10 + d;
    }
    return n;
}

int units_parse_size(const char *text, uint64_t *bytes)
{
    const char *s = text;
    uint64_t whole, frac = 0;
    int nfrac = 0;
    if (!s || *s < '0' || *s > '9' || digits_read(&s, &whole, 20) < 0)
        return -1;
    if (*s == '.') {
        s++;
        nfrac = digits_read(&s, &frac, 12);
        if (nfrac <= 0)
            return -1;
    }
    int shift = units_size_shift(s);
    if (shift < 0 || (shift > 0 && whole > (UINT64_MAX >> shift)))
        return -1;
    uint64_t v = whole << shift;
    if (nfrac > 0) { /* frac / 10^nfrac of the unit: only a whole number of bytes */
        unsigned __int128 scaled = (unsigned __int128)frac << shift, ten = 1;
        for (int i = 0; i < nfrac; i++)
            ten *= 10;
        if (scaled % ten != 0 || (uint64_t)(scaled / ten) > UINT64_MAX - v)
            return -1;
        v += (uint64_t)(scaled / ten);
    }
    *bytes = v;
    return 0;
}

/* A number as job files write it, [0-9]* ( '.' [0-9]* )? with at least
 * one digit, into *v; *rest is what follows it. strtod never sees signs,
 * spaces, hex, exponents, "inf" or "nan". 0, or -1 when there is none. */
static int units_decimal(const char *text, double *v, const char **rest)
{
    const char *s = text;
    size_t digits = 0, len;
    char num[64];
    if (!s)
        return -1;
    for (; *s >= '0' && *s <= '9'; s++)
        digits++;
    if (*s == '.')
        for (s++; *s >= '0' && *s <= '9'; s++)
            digits++;
    len = (size_t)(s - text);
    if (digits == 0 || len >= sizeof(num))
        return -1;
    memcpy(num, text, len);
    num[len] = '\0';
    *v = strtod(num, NULL);
    *rest = s;
    return 0;
}

struct units_scale {
    const char *name;
    double scale;
};

/* A decimal number and one of the units (the first's name may be ""),
 * scaled; finite and not negative. */
static int units_parse_scaled(const char *text, const struct units_scale *units, size_t n,
                              double *out)
{
    double v;
    const char *s;
    if (units_decimal(text, &v, &s) != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(s, units[i].name) == 0) {
            v *= units[i].scale;
            if (!isfinite(v) || v < 0.0)
                return -1;
            *out = v;
            return 0;
        }
    }
    return -1;
}

int units_parse_duration(const char *text, double *seconds)
{
    static const struct units_scale units[] = {
        {"", 1.0}, {"s", 1.0}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}, {"m", 60.0}, {"h", 3600.0},
    };
    return units_parse_scaled(text, units, sizeof units / sizeof units[0], seconds);
}

int units_parse_rate(const char *text, double *per_second)
{
    static const struct units_scale units[] = {
        {"", 1.0},
        {"/s", 1.0},
        {"/m", 1.0 / 60},
        {"/h", 1.0 / 3600},
    };
    return units_parse_scaled(text, units, sizeof units / sizeof units[0], per_second);
}

void units_format_size(uint64_t bytes, char *buf, size_t len)
{
    static const char suffix[] = "TGMK";
    static const int shifts[] = {40, 30, 20, 10};

    if (!buf || len == 0)
        return;
    if (bytes != 0) {
        for (int i = 0; i < 4; i++) {
            uint64_t unit = UINT64_C(1) << shifts[i];
            if (bytes % unit == 0) {
                snprintf(buf, len, "%llu%c", (unsigned long long)(bytes >> shifts[i]), suffix[i]);
                return;
            }
        }
    }
    snprintf(buf, len, "%llu", (unsigned long long)bytes);
}

void units_format_human(double bytes, char *buf, size_t len)
{
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    const int last = (int)(sizeof(names) / sizeof(names[0])) - 1;
    double v = bytes, mag = fabs(bytes);
    int i = 0;

    if (!buf || len == 0)
        return;
    if (!isfinite(bytes)) {
        snprintf(buf, len, "%g B", bytes);
        return;
    }
    if (round(mag) < 1024.0) {
        snprintf(buf, len, "%.0f B", v);
        return;
    }
    /* Step up while the value, rounded to one decimal, would print >= 1024. */
    do {
        mag /= 1024.0;
        v /= 1024.0;
        i++;
    } while (i < last && round(mag * 10.0) / 10.0 >= 1024.0);
    snprintf(buf, len, "%.1f %s", v, names[i]);
}

void units_format_ms(double seconds, char *buf, size_t len)
{
    if (!buf || len == 0)
        return;
    if (!isfinite(seconds)) {
        snprintf(buf, len, "-");
        return;
    }
    /* Rounded to 3 significant digits first, so 9.996 ms prints 10.0 */
    char sig[32];
    snprintf(sig, sizeof sig, "%.3g", seconds * 1e3);
    double ms = strtod(sig, NULL);
    int decimals = 0;
    if (ms != 0) {
        int magnitude = (int)floor(log10(fabs(ms))); /* 31.9: 1, 0.0123: -2 */
        decimals = magnitude < 2 ? 2 - magnitude : 0;
        decimals = decimals > 8 ? 8 : decimals; /* 0.00000100 ms = 1 ns */
    }
    snprintf(buf, len, "%.*f ms", decimals, ms);
}
