/* units.h — parsing and printing of sizes ("16M") and durations ("1ms"). */
#ifndef HERD_UNITS_H
#define HERD_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* Parse a byte count: a decimal number with an optional binary suffix
 * K, M, G, T (also KiB/MiB/..., KB/MB/... as in fio, k/m/g/t; "B" alone
 * allowed); a fraction (1.5M, at most 12 digits) only where it gives a
 * whole number of bytes. Returns 0, or -1 on anything else (empty,
 * negative, a fraction of a byte, trailing garbage, overflow). */
int units_parse_size(const char *text, uint64_t *bytes);

/* Parse a duration: a non-negative decimal number with an optional unit
 * ns, us, ms, s (default), m, h. Returns 0, or -1 on bad input. */
int units_parse_duration(const char *text, double *seconds);

/* Parse a rate: a non-negative decimal number of events per second, or
 * per minute or hour with "/m", "/h" ("/s" may be written). Returns 0,
 * or -1 on bad input. */
int units_parse_rate(const char *text, double *per_second);

/* Format bytes as the shortest exact suffix form ("16M", "1536K", "12345"). */
void units_format_size(uint64_t bytes, char *buf, size_t len);

/* Format bytes for humans with one decimal ("15.3 GiB"). */
void units_format_human(double bytes, char *buf, size_t len);

/* Format seconds as milliseconds to 3 significant digits, never in
 * exponent form ("31.9 ms", "0.0123 ms", "31900 ms"; 1 ns at least has
 * its digits); "-" for NaN. */
void units_format_ms(double seconds, char *buf, size_t len);

/* "s" after a count of n things that is not 1, else "": "1 rank", "4 ranks". */
static inline const char *units_plural(long long n)
{
    return n == 1 ? "" : "s";
}

#endif
