/* job_error.c — a job's errors: the one-line message "FILE:LINE: key
 * 'K': what is wrong" (the file an include's line came from), the first
 * failure of a load, and where a key's value came from (job_parse.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "job.h"
#include "job_parse.h"
#include "utf8.h"

const char *job_loc_text(const struct job *job, const char *path, int loc, char *buf, size_t len)
{
    int source = loc / JOB_LOC_BASE;
    const char *file = source > 0 && source < JOB_SOURCES && job && job->sources[source][0]
                           ? job->sources[source]
                           : path;
    snprintf(buf, len, "%s:%d", file, loc % JOB_LOC_BASE);
    return buf;
}

void job_error_format(char *err, size_t errlen, const struct job *job, const char *path, int line,
                      const char *key, const char *msg)
{
    char raw[JOB_ERR_MAX], where[JOB_PATH_MAX + 16];
    if (line > 0)
        path = job_loc_text(job, path, line, where, sizeof where);
    if (line == LINE_SET)
        snprintf(raw, sizeof raw, "%s: --set %s: %s", path, key ? key : "", msg);
    else if (line > 0 && key)
        snprintf(raw, sizeof raw, "%s: key '%s': %s", path, key, msg);
    else if (line > 0)
        snprintf(raw, sizeof raw, "%s: %s", path, msg);
    else if (key)
        snprintf(raw, sizeof raw, "%s: key '%s': %s", path, key, msg);
    else
        snprintf(raw, sizeof raw, "%s: %s", path, msg);
    utf8_escape(raw, err, errlen);
}

void job_fail(struct parse_state *st, int line, const char *key, const char *fmt, ...)
{
    if (st->failed)
        return;
    st->failed = true;
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    job_error_format(st->err, st->errlen, st->job, st->path, line, key, msg);
}

/* Where a phase's value of key came from: its own line, the [global] line
 * (LINE_SET when --set gave it), or 0 when it is the default. */
int job_line_of(struct parse_state *st, const char *section, const char *key)
{
    for (int i = 0; i < st->nsets; i++)
        if (strcmp(st->sets[i].key->name, key) == 0 &&
            (!st->sets[i].phase[0] || strcmp(st->sets[i].phase, section) == 0))
            return LINE_SET;
    for (size_t i = 0; i < st->nraws; i++)
        if (strcmp(st->raws[i].section, section) == 0 && strcmp(st->raws[i].key, key) == 0)
            return st->raws[i].line;
    for (size_t i = 0; i < st->nraws; i++)
        if (strcmp(st->raws[i].section, "global") == 0 && strcmp(st->raws[i].key, key) == 0)
            return st->raws[i].line;
    return 0;
}

const char *job_global_value(const struct parse_state *st, const char *key, bool *from_set)
{
    bool set_unused;
    from_set = from_set ? from_set : &set_unused;
    *from_set = true;
    for (int i = st->nsets - 1; i >= 0; i--)
        if (!st->sets[i].phase[0] && strcmp(st->sets[i].key->name, key) == 0)
            return st->sets[i].value;
    *from_set = false;
    for (size_t i = st->nraws; i > 0; i--)
        if (strcmp(st->raws[i - 1].section, "global") == 0 && strcmp(st->raws[i - 1].key, key) == 0)
            return st->raws[i - 1].value;
    return NULL;
}

bool job_set_reaches(const struct set *s, const struct phase *ph)
{
    if (!ph)
        return !s->phase[0] && !s->key->kinds;
    if (s->phase[0])
        return strcmp(s->phase, ph->name) == 0;
    return s->key->scope != KEY_GLOBAL_ONLY &&
           (!s->key->kinds || (s->key->kinds & KIND_BIT(ph->kind)));
}

bool job_phase_gives(const struct parse_state *st, const struct phase *ph, const char *key,
                     bool own)
{
    for (size_t i = 0; i < st->nraws; i++)
        if (strcmp(st->raws[i].section, ph->name) == 0 && strcmp(st->raws[i].key, key) == 0)
            return true;
    for (int i = 0; i < st->nsets; i++)
        if (strcmp(st->sets[i].key->name, key) == 0 && (!own || st->sets[i].phase[0]) &&
            job_set_reaches(&st->sets[i], ph))
            return true;
    return false;
}

/* Where a phase's value of key came from (the phase's header line when
 * it is the default). */
int job_phase_key_loc(const struct phase *ph, const char *key)
{
    for (size_t k = 0; k < job_key_count(); k++)
        if (strcmp(job_key_at(k)->name, key) == 0 && ph->key_line[k])
            return ph->key_line[k];
    return ph->line;
}
