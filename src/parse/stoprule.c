/* stoprule.c — the stop rule of a load ladder (stoprule.h). */
#include "stoprule.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const metric_names[STOP_METRICS] = {
    [STOP_P50] = "p50",       [STOP_P90] = "p90",           [STOP_P99] = "p99",
    [STOP_MAX] = "max",       [STOP_ACHIEVED] = "achieved", [STOP_LATE] = "late",
    [STOP_ERRORS] = "errors",
};
static const char *const cmp_names[] = {
    [STOP_GT] = ">", [STOP_GE] = ">=", [STOP_LT] = "<", [STOP_LE] = "<="};

enum value_kind { VALUE_SECONDS, VALUE_PERCENT, VALUE_COUNT };

static enum value_kind metric_kind(enum stop_metric m)
{
    if (m <= STOP_MAX)
        return VALUE_SECONDS;
    return m == STOP_ERRORS ? VALUE_COUNT : VALUE_PERCENT;
}

/* A decimal number at *p (digits, at most one '.'), *p moved past it. */
static int number_at(const char **p, double *v)
{
    const char *s = *p;
    size_t digits = strspn(s, "0123456789");
    const char *q = s + digits;
    if (*q == '.') {
        size_t frac = strspn(q + 1, "0123456789");
        digits += frac;
        q += 1 + frac;
    }
    if (digits == 0 || q - s > 30)
        return -1;
    char num[32];
    snprintf(num, sizeof num, "%.*s", (int)(q - s), s);
    *v = strtod(num, NULL);
    *p = q;
    return 0;
}

/* The value of kind k at the start of s, up to end: "50ms", "95%", "3". */
static int value_parse(const char *s, size_t n, enum value_kind k, double *out)
{
    const char *p = s;
    double v;
    if (number_at(&p, &v) != 0)
        return -1;
    size_t rest = n - (size_t)(p - s);
    if (k == VALUE_PERCENT) {
        if (rest != 1 || *p != '%' || v > 100)
            return -1;
        *out = v / 100;
        return 0;
    }
    if (k == VALUE_COUNT) {
        if (rest != 0 || v != floor(v))
            return -1;
        *out = v;
        return 0;
    }
    static const struct {
        const char *unit;
        double scale;
    } units[] = {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (rest == strlen(units[i].unit) && strncmp(p, units[i].unit, rest) == 0) {
            *out = v * units[i].scale;
            return 0;
        }
    return -1;
}

static int metric_at(const char **p, enum stop_metric *m)
{
    for (int i = 0; i < STOP_METRICS; i++) {
        size_t n = strlen(metric_names[i]);
        if (strncmp(*p, metric_names[i], n) == 0 && strchr(" <>", (*p)[n]) != NULL &&
            (*p)[n] != '\0') {
            *m = (enum stop_metric)i;
            *p += n;
            return 0;
        }
    }
    return -1;
}

static int cmp_at(const char **p, enum stop_cmp *c)
{
    const char *s = *p;
    if (s[0] != '<' && s[0] != '>')
        return -1;
    bool eq = s[1] == '=';
    if (s[0] == '>')
        *c = eq ? STOP_GE : STOP_GT;
    else
        *c = eq ? STOP_LE : STOP_LT;
    *p += eq ? 2 : 1;
    return 0;
}

/* One condition in [s, s + n). */
static const char *cond_parse(const char *s, size_t n, struct stop_cond *c, char *why, size_t len)
{
    char text[128];
    snprintf(text, sizeof text, "%.*s", (int)n, s);
    const char *p = text;
    if (metric_at(&p, &c->metric) != 0) {
        snprintf(why, len,
                 "'%s' does not start with p50, p90, p99, max, achieved, late or errors "
                 "followed by a comparison",
                 text);
        return why;
    }
    p += strspn(p, " ");
    if (cmp_at(&p, &c->cmp) != 0) {
        snprintf(why, len, "'%s': a comparison (>, >=, <, <=) must follow %s", text,
                 metric_names[c->metric]);
        return why;
    }
    p += strspn(p, " ");
    static const char *const want[] = {[VALUE_SECONDS] = "a duration (50ms, 1.5s)",
                                       [VALUE_PERCENT] = "a percent (95%)",
                                       [VALUE_COUNT] = "a whole count (0, 10)"};
    enum value_kind k = metric_kind(c->metric);
    if (value_parse(p, strlen(p), k, &c->value) != 0) {
        snprintf(why, len, "'%s': %s needs %s", text, metric_names[c->metric], want[k]);
        return why;
    }
    return NULL;
}

const char *stoprule_parse(const char *text, struct stop_rule *rule, char *why, size_t len)
{
    memset(rule, 0, sizeof *rule);
    size_t tl = strlen(text);
    if ((tl >= 3 && strcmp(text + tl - 3, " or") == 0) || strncmp(text, "or ", 3) == 0) {
        snprintf(why, len, "'%s' is not METRIC OP VALUE [or ...], e.g. p99 > 50ms", text);
        return why;
    }
    const char *p = text;
    while (*p) {
        const char *sep = strstr(p, " or ");
        size_t n = sep ? (size_t)(sep - p) : strlen(p);
        if (rule->n == STOPRULE_MAX) {
            snprintf(why, len, "more than %d conditions", STOPRULE_MAX);
            return why;
        }
        if (n == 0 || n >= 128) {
            snprintf(why, len, "'%s' is not METRIC OP VALUE [or ...], e.g. p99 > 50ms", text);
            return why;
        }
        if (cond_parse(p, n, &rule->cond[rule->n], why, len))
            return why;
        rule->n++;
        p += n;
        if (sep) {
            p += 4;
            if (!*p) {
                snprintf(why, len, "'%s' ends with 'or'", text);
                return why;
            }
        }
    }
    return NULL;
}

static bool cond_broken(const struct stop_cond *c, double v)
{
    if (isnan(v))
        return false;
    switch (c->cmp) {
    case STOP_GT:
        return v > c->value;
    case STOP_GE:
        return v >= c->value;
    case STOP_LT:
        return v < c->value;
    case STOP_LE:
        return v <= c->value;
    }
    return false;
}

int stoprule_broken(const struct stop_rule *rule, const double values[STOP_METRICS])
{
    for (int i = 0; i < rule->n; i++)
        if (cond_broken(&rule->cond[i], values[rule->cond[i].metric]))
            return i;
    return -1;
}

static void value_format(enum stop_metric m, double v, char *buf, size_t len)
{
    enum value_kind k = metric_kind(m);
    if (isnan(v))
        snprintf(buf, len, "-");
    else if (k == VALUE_PERCENT)
        snprintf(buf, len, "%.1f%%", v * 100);
    else if (k == VALUE_COUNT)
        snprintf(buf, len, "%.0f", v);
    else if (v < 1)
        snprintf(buf, len, "%.3gms", v * 1e3);
    else
        snprintf(buf, len, "%.3gs", v);
}

void stoprule_describe(const struct stop_rule *rule, int i, const double values[STOP_METRICS],
                       char *buf, size_t len)
{
    const struct stop_cond *c = &rule->cond[i];
    char seen[32], bound[32];
    value_format(c->metric, values[c->metric], seen, sizeof seen);
    value_format(c->metric, c->value, bound, sizeof bound);
    snprintf(buf, len, "%s %s %s %s", metric_names[c->metric], seen, cmp_names[c->cmp], bound);
}

bool stoprule_uses(const struct stop_rule *rule, enum stop_metric metric)
{
    for (int i = 0; i < rule->n; i++)
        if (rule->cond[i].metric == metric)
            return true;
    return false;
}
