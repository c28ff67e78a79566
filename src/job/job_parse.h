/* job_parse.h — what the job module's files share while they load a job
 * (job.c reads and resolves, job_inherit.c fits inherited values to
 * kinds, job_keys.c owns the key table, job_check.c validates a resolved
 * phase). Private to src/job/; the rest of herd sees job.h. */
#ifndef HERD_JOB_PARSE_H
#define HERD_JOB_PARSE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "joblimits.h"

struct job;
struct job_key;
struct phase;

/* Parsing state handed to libinih's callbacks. */
struct parse_state {
    FILE *file;
    const char *path;
    int line;  /* location (JOB_LOC_BASE) most recently handed to libinih */
    int *locs; /* the location of every line read, in order */
    size_t nlocs, caplocs;
    int header_line;           /* line of the most recent [section] header */
    char header[JOB_NAME_MAX]; /* first section header that had no keys yet */
    int empty_line;
    struct job *job;
    /* Raw "key = value" lines per section, resolved after parsing so that a
     * global key may appear after a phase without surprising anyone. */
    struct raw {
        char section[JOB_NAME_MAX];
        char key[64];
        char value[JOB_PATH_MAX];
        int line;
    } * raws;
    size_t nraws, capraws;
    char sections[128][JOB_NAME_MAX];
    int section_lines[128];
    int nsections;
    char *err;
    size_t errlen;
    bool failed;
    /* --set KEY=VALUE (phase "": every phase it applies to) and
     * --set PHASE.KEY=VALUE, applied after the file's values. */
    struct set {
        char phase[JOB_NAME_MAX];
        const struct job_key *key;
        const char *value;
    } * sets;
    int nsets;
    /* Each key a phase's kind refused where the phase inherited it
     * ([global], a plain --set): the phase kept the key's default
     * (job_inherit.c), which the job's notes say. */
    struct skip {
        const struct job_key *key;
        int phase; /* index into job->phases */
        char why[256];
    } * skips;
    size_t nskips, capskips;
};

/* Line number of a value that came from --set rather than the file. */
#define LINE_SET (-1)

/* job.c */

/* The one-line message "FILE:LINE: key 'K': msg" (or without line or key),
 * every unprintable byte escaped, into err. */
void job_error_format(char *err, size_t errlen, const struct job *job, const char *path, int line,
                      const char *key, const char *msg);
/* "FILE:LINE" of a location (a line of the job file or of an include),
 * into buf; returns buf. */
const char *job_loc_text(const struct job *job, const char *path, int loc, char *buf, size_t len);
/* Record the job's error (only the first one counts). */
void job_fail(struct parse_state *st, int line, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The line of key in section (or [global]'s when the section does not set
 * it), 0 when neither does. */
int job_line_of(struct parse_state *st, const char *section, const char *key);
/* The text the job gives key for every phase: its last plain --set
 * (*from_set true; from_set may be NULL), else [global]'s; NULL when
 * neither does. */
const char *job_global_value(const struct parse_state *st, const char *key, bool *from_set);
/* The location of key's value in phase ph (for messages after loading). */
int job_phase_key_loc(const struct phase *ph, const char *key);

/* Whether --set s reaches phase (NULL: [global]). A key of some kinds
 * reaches only those phases, never [global] (whose value every phase
 * would inherit); a [global]-only key reaches only [global]. */
bool job_set_reaches(const struct set *s, const struct phase *ph);
/* Whether ph's own section or a --set that reaches it gives key; own:
 * only a --set PHASE.KEY of ph counts, not a plain --set. */
bool job_phase_gives(const struct parse_state *st, const struct phase *ph, const char *key,
                     bool own);

/* job_inherit.c */

/* Each value ph inherits ([global], a plain --set) that its kind's rule
 * refuses replaced by the key's default in ph, remembered in st->skips
 * (a value of ph's own section or --set PHASE.KEY is left for
 * job_check.c to refuse). */
void job_phase_fit_inherited(struct parse_state *st, struct phase *ph);
/* The job's notes from st->skips, one line per key; a key whose
 * inherited value no phase takes is st's error instead (the first
 * phase's kind's rule, on the value's line). */
void job_inherit_finish(struct parse_state *st);

/* job_keys.c */

/* Parse v into key k's member of ph: NULL, or what is wrong (in why). */
const char *job_key_assign(const struct job_key *k, struct phase *ph, const char *v, char *why,
                           size_t whylen);
/* "a | b | c" for an enum key's choices. */
const char *job_key_choices_text(const struct job_key *k, char *buf, size_t len);
/* "read, md5" for the kinds key k applies to. */
const char *job_key_kinds_text(const struct job_key *k, char *buf, size_t len);
/* rwmix_read's text: -1 none, 0..100 a percent, below -1 not a mix. */
int64_t job_rwmix_parse(const char *text);
/* The first key whose resolved value in ph is outside its row's bounds,
 * with the rule it breaks in why; NULL when none. */
const struct job_key *job_key_out_of_bounds(const struct phase *ph, char *why, size_t len);
/* The program's registry (job.h's JOB_REGISTRY), there from the start. */
const struct job_registry *job_registry(void);
/* Kind kind as the registry lists it; NULL when there is none. */
const struct job_kind *job_kind_at(enum phase_kind kind);
/* The first rule of ph's kind that ph breaks: the key at fault, with
 * why written; NULL when none. */
const char *job_kind_check(const struct phase *ph, char *why, size_t len);

/* job_check.c */

/* Whether phase ph (every key resolved) can run, the first problem into st. */
void job_phase_validate(struct parse_state *st, const struct phase *ph);

#endif
