/* textscan.h — a cursor over text that is not NUL-terminated, shared by
 * the parsers of /proc texts (procfs.c, nfsd_stats.c; mountstats.c and
 * promtext.c take only its lines or numbers, their blanks being fewer):
 * the text is a span [p, end); it splits into lines at '\n', a line into
 * fields (runs of anything but blanks: ' ', '\t', '\r', '\v', '\f', so a
 * '\r' before the '\n' is blank space), and a field is read as an
 * unsigned decimal with an overflow check.
 *
 * None of these functions ever reads at or past a span's end pointer, nor
 * needs a NUL anywhere: a span may end exactly at the end of a buffer. */
#ifndef HERD_TEXTSCAN_H
#define HERD_TEXTSCAN_H

#include <stddef.h>
#include <stdint.h>

/* A span of text [p, end): the unread rest of a text, a line or a field. */
struct textscan {
    const char *p, *end;
};

/* The next line of *text (without its '\n') into *line, and *text moved
 * past it; 0 when *text is empty. A last line without '\n' counts. */
int textscan_line(struct textscan *text, struct textscan *line);

/* The next blank-separated field of *line into *field, and *line moved
 * past it; 0 when only blanks are left. */
int textscan_field(struct textscan *line, struct textscan *field);

/* The length of s. */
size_t textscan_len(struct textscan s);

/* Whether s is exactly the NUL-terminated word. */
int textscan_eq(struct textscan s, const char *word);

/* s as an unsigned decimal: digits only, at least one, no overflow. 0, or
 * -1 (and *v untouched) when s is not such a number. */
int textscan_u64(struct textscan s, uint64_t *v);

/* Reads the rest of *line as unsigned decimals (textscan_u64), the first
 * nv of them into v; *count is how many there were. -1 on a field that is
 * not a number (v may then hold the ones before it). */
int textscan_u64s(struct textscan *line, uint64_t *v, size_t nv, size_t *count);

#endif
