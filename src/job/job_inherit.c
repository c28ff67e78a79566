/* job_inherit.c — a value a phase inherits ([global], a plain --set)
 * reaches it only where it fits: a value its kind's rule refuses is
 * replaced by the key's default in that phase, and the job's notes say so,
 * one line per key; a value that no phase takes is refused, as a value of
 * the phase's own section or of --set PHASE.KEY is (by job_check.c). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "job_parse.h"

/* Key k's default in a phase of kind: the kind's own (own_defaults),
 * else the key's; NULL for a required key. */
static const char *kind_default(enum phase_kind kind, const struct job_key *k)
{
    const char *const *own = job_kind_at(kind)->own_defaults;
    size_t len = strlen(k->name);
    for (; own && *own; own++)
        if (strncmp(*own, k->name, len) == 0 && (*own)[len] == '=')
            return *own + len + 1;
    return k->fallback;
}

/* Remember that phase ph kept key k's default, its kind's rule saying why. */
static void skip_append(struct parse_state *st, const struct job_key *k, const struct phase *ph,
                        const char *why)
{
    if (st->nskips == st->capskips) {
        size_t cap = st->capskips ? st->capskips * 2 : 8;
        void *p = realloc(st->skips, cap * sizeof *st->skips);
        if (!p) {
            job_fail(st, 0, k->name, "out of memory");
            return;
        }
        st->skips = p;
        st->capskips = cap;
    }
    struct skip *s = &st->skips[st->nskips++];
    s->key = k;
    s->phase = (int)(ph - st->job->phases);
    snprintf(s->why, sizeof s->why, "%s", why);
}

void job_phase_fit_inherited(struct parse_state *st, struct phase *ph)
{
    char why[256];
    const char *name;
    /* a value out of its bounds is the bounds rule's to name, wherever it came from */
    while (!st->failed && !job_key_out_of_bounds(ph, why, sizeof why) &&
           (name = job_kind_check(ph, why, sizeof why)) != NULL) {
        const struct job_key *k = job_key_lookup(name);
        const char *fallback = k ? kind_default(ph->kind, k) : NULL;
        size_t i = k ? (size_t)(k - job_key_at(0)) : 0;
        char bad[256];
        if (!fallback || !ph->key_line[i] || job_phase_gives(st, ph, name, true))
            return; /* the phase's own value, or the default: job_check.c refuses it */
        if (job_key_assign(k, ph, fallback, bad, sizeof bad)) {
            job_fail(st, 0, name, "internal: bad default of kind %s", job_kind_name(ph->kind));
            return;
        }
        ph->key_line[i] = 0;
        skip_append(st, k, ph, why);
    }
}

/* Append printf-style text to buf (len bytes, NUL-ended), cut at its end. */
static void text_append(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void text_append(char *buf, size_t len, const char *fmt, ...)
{
    size_t used = strlen(buf);
    va_list ap;
    va_start(ap, fmt);
    if (used < len)
        vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
}

/* The note of the skips from index first on that share its key: where the
 * value came from, the phases that kept the default, why (the first
 * phase's kind's rule) and what they kept. */
static void note_compose(const struct parse_state *st, size_t first, char *line, size_t len)
{
    const struct job_key *k = st->skips[first].key;
    bool from_set;
    const char *value = job_global_value(st, k->name, &from_set);
    snprintf(line, len, from_set ? "note: --set %s=%s" : "note: [global] %s = %s", k->name,
             value ? value : "");
    char kept[128], other[128];
    const struct phase *ph = &st->job->phases[st->skips[first].phase];
    job_key_format(k, ph, kept, sizeof kept);
    int n = 0;
    bool same = true;
    for (size_t i = first; i < st->nskips; i++) {
        if (st->skips[i].key != k)
            continue;
        ph = &st->job->phases[st->skips[i].phase];
        job_key_format(k, ph, other, sizeof other);
        same = same && strcmp(other, kept) == 0;
        text_append(line, len, n++ ? ", %s phase [%s]" : " does not apply to %s phase [%s]",
                    job_kind_name(ph->kind), ph->name);
    }
    text_append(line, len, " (%s): %s %s", st->skips[first].why,
                n == 1 ? "that phase keeps" : "those phases keep",
                same ? kept : "their kinds' defaults");
}

/* Whether some phase of the job runs with key k's inherited value. */
static bool inherited_taken(const struct parse_state *st, const struct job_key *k)
{
    size_t i = (size_t)(k - job_key_at(0));
    for (int p = 0; p < st->job->nphases; p++)
        if (st->job->phases[p].key_line[i] &&
            !job_phase_gives(st, &st->job->phases[p], k->name, true))
            return true;
    return false;
}

void job_inherit_finish(struct parse_state *st)
{
    struct job *job = st->job;
    job->notes[0] = '\0';
    for (size_t i = 0; i < st->nskips && !st->failed; i++) {
        bool noted = false;
        for (size_t j = 0; j < i && !noted; j++)
            noted = st->skips[j].key == st->skips[i].key;
        if (noted)
            continue;
        const struct skip *s = &st->skips[i];
        if (!inherited_taken(st, s->key)) { /* a value for no phase: a mistake, said as ever */
            const char *phase = job->phases[s->phase].name;
            job_fail(st, job_line_of(st, phase, s->key->name), s->key->name, "%s", s->why);
            return;
        }
        char line[768];
        note_compose(st, i, line, sizeof line);
        size_t used = strlen(job->notes);
        if (used + strlen(line) + 1 < sizeof job->notes) /* one that does not fit is left out */
            snprintf(job->notes + used, sizeof job->notes - used, "%s\n", line);
    }
}
