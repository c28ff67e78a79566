/* promtext.h — parser for the Prometheus text exposition format (what
 * node_exporter serves at /metrics): "# HELP" / "# TYPE" comments and
 * sample lines `name{label="value",...} value [timestamp]`. Values may be
 * NaN, +Inf, -Inf; label values may hold escaped \" \\ \n. A pure function
 * on text: never reads past len, never crashes on truncated or garbage
 * input. Format: prometheus.io/docs/instrumenting/exposition_formats. */
#ifndef HERD_PROMTEXT_H
#define HERD_PROMTEXT_H

#include <stddef.h>

#define PROMTEXT_NAME_MAX 128
#define PROMTEXT_LABELS_MAX 512

/* Called for every sample: name NUL-terminated; labels is the text
 * between the braces, unescaped only as far as needed to find its end
 * ("" when none), NUL-terminated. */
typedef void (*promtext_fn)(void *arg, const char *name, const char *labels, double value);

/* Returns the number of samples passed to fn, or -1 when a line is
 * malformed (unbalanced braces or quotes, a value that is not a number);
 * samples before the bad line have been passed to fn. A well-formed line
 * whose name or label set is too long for the limits above is skipped
 * (not passed, not counted). Values are read with strtod in the C locale
 * herd runs in (it never calls setlocale). */
int promtext_parse(const char *text, size_t len, promtext_fn fn, void *arg);

/* Copy the (unescaped) value of label `key` from a labels text as given
 * to promtext_fn into buf. Returns 0, or -1 when absent or too long. */
int promtext_label(const char *labels, const char *key, char *buf, size_t len);

#endif
