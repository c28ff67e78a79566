/* stoprule.h — a load ladder's stop rule (`stop_when`), as text and as
 * a test on a step's figures: "p99 > 50ms", "achieved < 95%",
 * "p99 > 50ms or late > 10%". Pure: parse text, test numbers.
 *
 * Grammar: CONDITION ( " or " CONDITION )*, at most STOPRULE_MAX;
 * CONDITION = METRIC OP VALUE, spaces around OP optional;
 * METRIC = p50 | p90 | p99 | max (latency: a duration, 50ms, 1.5s),
 *          achieved | late (percent: 95%),
 *          errors (a count);
 * OP = > | >= | < | <=.
 *
 * Invariant: a rule that parsed names only known metrics with values of
 * their kind, so stoprule_broken never meets a value it cannot compare;
 * a metric the step has no figure for (NaN: achieved in a closed loop, a
 * latency with no calls) breaks no condition. */
#ifndef HERD_STOPRULE_H
#define HERD_STOPRULE_H

#include <stdbool.h>
#include <stddef.h>

#define STOPRULE_MAX 4

enum stop_metric {
    STOP_P50,
    STOP_P90,
    STOP_P99,
    STOP_MAX,
    STOP_ACHIEVED, /* achieved calls/s over offered, a fraction (95% = 0.95) */
    STOP_LATE,     /* late calls over calls, a fraction */
    STOP_ERRORS,   /* failed calls, a count */
    STOP_METRICS
};

enum stop_cmp { STOP_GT, STOP_GE, STOP_LT, STOP_LE };

struct stop_cond {
    enum stop_metric metric;
    enum stop_cmp cmp;
    double value; /* seconds, a fraction or a count, as the metric */
};

struct stop_rule {
    int n; /* 0: no rule */
    struct stop_cond cond[STOPRULE_MAX];
};

/* Parse text ("" gives a rule of no conditions) into rule. NULL, or what
 * is wrong, in why. */
const char *stoprule_parse(const char *text, struct stop_rule *rule, char *why, size_t len);

/* The first condition of rule that the step's figures (values, indexed
 * by enum stop_metric) break, or -1. */
int stoprule_broken(const struct stop_rule *rule, const double values[STOP_METRICS]);

/* Condition i as text with the step's figure: "p99 61.2ms > 50ms". */
void stoprule_describe(const struct stop_rule *rule, int i, const double values[STOP_METRICS],
                       char *buf, size_t len);

/* Whether any condition of rule names metric. */
bool stoprule_uses(const struct stop_rule *rule, enum stop_metric metric);

#endif
