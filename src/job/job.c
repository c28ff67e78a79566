/* job.c — job files: parse the INI text with libinih, resolve [global]
 * defaults and --set overrides into phases (the key table: job_keys.c;
 * what a phase inherits where its kind refuses it: job_inherit.c),
 * validate them (job_check.c). Messages: job_error.c; lint: job_lint.c;
 * load ladders: job_ladder.c; a loaded job's bytes: job_model.c.
 *
 * Every key is one row of the key table (job_key_at); parsing, defaults, `herd check`
 * output and the results file's phase attributes all come from that table.
 * Errors are one line: "FILE:LINE: key 'K': what is wrong". */
#include "job.h"

#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_mixfrom.h"
#include "job_parse.h"
#include "jobtext.h"
#include "units.h"
#include "utf8.h"

static int section_index(struct parse_state *st, const char *section)
{
    for (int i = 0; i < st->nsections; i++)
        if (strcmp(st->sections[i], section) == 0)
            return i;
    return -1;
}

/* Remember the location of the line just read (for libinih's error line). */
static void reader_note(struct parse_state *st, int loc)
{
    if (st->nlocs == st->caplocs) {
        size_t cap = st->caplocs ? st->caplocs * 2 : 256;
        int *p = realloc(st->locs, cap * sizeof *p);
        if (!p)
            return; /* only error lines suffer: they fall back to libinih's count */
        st->locs = p;
        st->caplocs = cap;
    }
    st->locs[st->nlocs++] = loc;
}

/* fgets-style reader that also counts lines, since Debian's libinih is
 * built without line numbers in the handler. */
static char *reader_next_line(char *str, int num, void *stream)
{
    struct parse_state *st = stream;
    char *s = fgets(str, num, st->file);
    if (s && strncmp(s, JOBTEXT_MARKER, strlen(JOBTEXT_MARKER)) == 0) {
        /* jobtext.h: the lines that follow are LINE... of source INDEX */
        int index, line, at = 0;
        if (sscanf(s + strlen(JOBTEXT_MARKER), "%d %d %n", &index, &line, &at) == 2 && index >= 0 &&
            index < JOB_SOURCES && line > 0 && line < JOB_LOC_BASE) {
            char *name = s + strlen(JOBTEXT_MARKER) + at;
            name[strcspn(name, "\r\n")] = '\0';
            snprintf(st->job->sources[index], sizeof st->job->sources[index], "%s", name);
            st->line = index * JOB_LOC_BASE + line - 1;
            reader_note(st, st->line);
            return s; /* a comment to libinih */
        }
    }
    if (s) {
        st->line++;
        reader_note(st, st->line);
        const char *p = s + strspn(s, " \t");
        if (*p == '[') {
            /* A header with no keys before the next one is never reported
             * by libinih: remember it to say so. */
            if (st->header_line && !st->empty_line && section_index(st, st->header) < 0)
                st->empty_line = st->header_line;
            st->header_line = st->line;
            size_t len = strcspn(p + 1, "]");
            snprintf(st->header, sizeof st->header, "%.*s", (int)len, p + 1);
            if (section_index(st, st->header) >= 0)
                job_fail(st, st->line, NULL, "section [%s] appears twice", st->header);
        }
        size_t n = strlen(s);
        if (n == (size_t)num - 1 && s[n - 1] != '\n' && !feof(st->file))
            job_fail(st, st->line, NULL, "line longer than %d characters", num - 2);
    }
    return s;
}

static bool section_name_ok(const char *s)
{
    return job_name_ok(s);
}

/* Remember one "key = value" of a section (or replace it when it exists). */
static void raw_append(struct parse_state *st, const char *section, const char *key,
                       const char *value, int line)
{
    size_t i;
    for (i = 0; i < st->nraws; i++)
        if (strcmp(st->raws[i].section, section) == 0 && strcmp(st->raws[i].key, key) == 0)
            break;
    if (i == st->nraws) {
        if (st->nraws == st->capraws) {
            size_t cap = st->capraws ? st->capraws * 2 : 32;
            void *p = realloc(st->raws, cap * sizeof *st->raws);
            if (!p) {
                job_fail(st, line, NULL, "out of memory");
                return;
            }
            st->raws = p;
            st->capraws = cap;
        }
        st->nraws++;
    }
    struct raw *r = &st->raws[i];
    snprintf(r->section, sizeof r->section, "%s", section);
    snprintf(r->key, sizeof r->key, "%s", key);
    snprintf(r->value, sizeof r->value, "%s", value);
    r->line = line;
}

static int handle_key(void *user, const char *section, const char *name, const char *value)
{
    struct parse_state *st = user;
    if (st->failed)
        return 1;
    if (!*section) {
        job_fail(st, st->line, name, "appears before any [section]");
        return 1;
    }
    int idx = section_index(st, section);
    if (idx < 0) {
        if (!section_name_ok(section)) {
            job_fail(st, st->header_line, NULL,
                     "section name '%s' must be 1-%d letters, digits, '_', '.' or '-', "
                     "not starting with '.' or '-'",
                     section, JOB_NAME_MAX - 1);
            return 1;
        }
        if (st->nsections == (int)(sizeof st->sections / sizeof st->sections[0])) {
            job_fail(st, st->line, NULL, "too many sections");
            return 1;
        }
        idx = st->nsections++;
        snprintf(st->sections[idx], JOB_NAME_MAX, "%s", section);
        st->section_lines[idx] = st->header_line;
    } else if (idx != st->nsections - 1) {
        job_fail(st, st->header_line, NULL, "section [%s] appears twice", section);
        return 1;
    }
    if (!job_key_lookup(name)) {
        job_fail(st, st->line, name, "unknown key (see `herd keys`)");
        return 1;
    }
    if (strlen(value) >= JOB_PATH_MAX) {
        job_fail(st, st->line, name, "value too long");
        return 1;
    }
    for (size_t i = 0; i < st->nraws; i++)
        if (strcmp(st->raws[i].section, section) == 0 && strcmp(st->raws[i].key, name) == 0) {
            char first[JOB_PATH_MAX + 16];
            job_fail(st, st->line, name, "given twice in [%s] (first at %s)", section,
                     job_loc_text(st->job, st->path, st->raws[i].line, first, sizeof first));
            return 1;
        }
    raw_append(st, section, name, value, st->line);
    return 1;
}

/* Apply the raw lines of one section (and, for phases, global first). */
static void section_apply(struct parse_state *st, const char *section, struct phase *ph,
                          bool global_only_check)
{
    char why[256];
    for (size_t i = 0; i < st->nraws && !st->failed; i++) {
        struct raw *r = &st->raws[i];
        if (strcmp(r->section, section) != 0)
            continue;
        const struct job_key *k = job_key_lookup(r->key);
        if (global_only_check && k->scope == KEY_GLOBAL_ONLY) {
            job_fail(st, r->line, r->key, "can only be set in [global]");
            return;
        }
        const char *bad = job_key_assign(k, ph, r->value, why, sizeof why);
        if (bad)
            job_fail(st, r->line, r->key, "%s", bad);
    }
}

bool job_set_split(const char *arg, struct job_set_arg *out)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg)
        return false;
    const char *dot = memrchr(arg, '.', (size_t)(eq - arg));
    out->phase = dot ? arg : NULL;
    out->phase_len = dot ? (size_t)(dot - arg) : 0;
    out->key = dot ? dot + 1 : arg;
    out->key_len = (size_t)(eq - out->key);
    out->value = eq + 1;
    return true;
}

/* The --set arguments (job_set_split). */
static void sets_parse(struct parse_state *st, char *const *sets, int nsets)
{
    st->sets = nsets > 0 ? calloc((size_t)nsets, sizeof *st->sets) : NULL;
    if (nsets > 0 && !st->sets) {
        job_fail(st, 0, NULL, "out of memory");
        return;
    }
    for (int i = 0; i < nsets && !st->failed; i++) {
        struct job_set_arg arg;
        if (!job_set_split(sets[i], &arg)) {
            job_fail(st, 0, NULL, "--set %s: expected KEY=VALUE or PHASE.KEY=VALUE", sets[i]);
            return;
        }
        char key[64];
        snprintf(key, sizeof key, "%.*s", (int)(arg.key_len < 63 ? arg.key_len : 63), arg.key);
        struct set *set = &st->sets[st->nsets];
        set->key = job_key_lookup(key);
        set->value = arg.value;
        if (!set->key || arg.key_len >= sizeof key) {
            job_fail(st, LINE_SET, key, "unknown key (see `herd keys`)");
            return;
        }
        if (strlen(arg.value) >= JOB_PATH_MAX) {
            job_fail(st, LINE_SET, key, "value too long");
            return;
        }
        if (arg.phase) {
            snprintf(set->phase, sizeof set->phase, "%.*s", (int)arg.phase_len, arg.phase);
            if (arg.phase_len >= sizeof set->phase || section_index(st, set->phase) < 0 ||
                strcmp(set->phase, "global") == 0) {
                job_fail(st, LINE_SET, key, "no phase [%.*s] in the job", (int)arg.phase_len,
                         arg.phase);
                return;
            }
            if (set->key->scope == KEY_GLOBAL_ONLY) {
                job_fail(st, LINE_SET, key, "describes the whole run: --set %s=..., not per phase",
                         key);
                return;
            }
        }
        st->nsets++;
    }
}

/* Apply the --set values that reach ph (global: the [global] values),
 * after its own. */
static void sets_apply(struct parse_state *st, struct phase *ph, bool global)
{
    char why[256];
    for (int i = 0; i < st->nsets && !st->failed; i++) {
        struct set *s = &st->sets[i];
        if (!job_set_reaches(s, global ? NULL : ph))
            continue;
        const char *bad = job_key_assign(s->key, ph, s->value, why, sizeof why);
        if (bad)
            job_fail(st, LINE_SET, s->key->name, "%s", bad);
    }
}

/* A --set of a key of some kinds that no phase of the job has: say so
 * rather than ignore it. */
static void sets_unused(struct parse_state *st)
{
    for (int i = 0; i < st->nsets && !st->failed; i++) {
        const struct set *s = &st->sets[i];
        if (s->phase[0] || !s->key->kinds)
            continue;
        bool used = false;
        for (int p = 0; p < st->job->nphases && !used; p++)
            used = job_set_reaches(s, &st->job->phases[p]);
        if (!used) {
            char kinds[64];
            job_fail(st, LINE_SET, s->key->name, "applies to %s phases, and the job has none",
                     job_key_kinds_text(s->key, kinds, sizeof kinds));
        }
    }
}

/* A key of some kinds keeps its default in a phase of another kind: a
 * [global] value is the default of the phases it applies to only, as a
 * --set reaches only those (job_set_reaches). The phase's own section or a
 * --set PHASE.KEY giving it is refused by job_check.c, which reads where
 * values came from, not what they are. */
static void phase_kind_defaults(struct parse_state *st, struct phase *ph)
{
    char why[256];
    for (size_t i = 0; i < job_key_count() && !st->failed; i++) {
        const struct job_key *k = job_key_at(i);
        if (!k->kinds || (k->kinds & KIND_BIT(ph->kind)))
            continue;
        if (job_key_assign(k, ph, k->fallback, why, sizeof why))
            job_fail(st, 0, k->name, "internal: bad default");
        ph->key_line[i] = 0;
    }
}

/* The kind's own defaults (struct job_kind's own_defaults): each key
 * that neither ph's section nor the command line gives takes the kind's
 * value, whatever [global] says. */
static void phase_own_defaults(struct parse_state *st, struct phase *ph)
{
    const char *const *own = job_kind_at(ph->kind)->own_defaults;
    char why[256], key[64];
    for (; own && *own && !st->failed; own++) {
        const char *eq = strchr(*own, '=');
        snprintf(key, sizeof key, "%.*s", eq ? (int)(eq - *own) : 0, *own);
        const struct job_key *k = job_key_lookup(key);
        if (k && job_phase_gives(st, ph, key, false))
            continue;
        if (!k || job_key_assign(k, ph, eq + 1, why, sizeof why)) {
            job_fail(st, 0, key, "internal: bad default of kind %s", job_kind_name(ph->kind));
            return;
        }
        ph->key_line[k - job_key_at(0)] = 0;
    }
}

/* The job's backend: the one it names, if its target's form is that
 * backend's; else the one its target's form asks for (nfs:// libnfs,
 * smb:// smb, a path posix: the registry's target_backend). A
 * backend and target that disagree, or a target no backend here takes,
 * is st's error. (target is [global]-only: one for the whole job.) */
static const char *backend_resolved(struct parse_state *st)
{
    const char *named = job_global_value(st, "backend", NULL);
    const char *target = job_global_value(st, "target", NULL);
    char why[512];
    if (!target)
        return named ? named : "posix"; /* target missing: refused with the phases */
    const char *backend = job_registry()->target_backend(named, target, why, sizeof why);
    if (backend)
        return backend;
    const char *key = named ? "backend" : "target";
    job_fail(st, job_line_of(st, "global", key), key, "%s", why);
    return named ? named : "posix";
}

/* The job's text (text, or read from path) parsed by libinih into st's
 * raw keys and sections; a problem is st's error. 0, or -1 when there is
 * no text to go on (st's error said why). */
static int job_parse_text(struct parse_state *st, const char *path, const char *text)
{
    struct job *job = st->job;
    if (!text) { /* read it here: includes and ${VAR} (jobtext.h), with their own errors */
        if (jobtext_read(path, &job->text, st->err, st->errlen) < 0)
            return -1;
    } else if (!(job->text = strdup(text))) {
        job_fail(st, 0, NULL, "out of memory");
        return -1;
    }
    if (strlen(job->text) > JOBTEXT_MAX) {
        job_fail(st, 0, NULL, "larger than 1 MiB: not a job file");
        return -1;
    }
    st->file = fmemopen(job->text, strlen(job->text), "r");
    if (!st->file) {
        job_fail(st, 0, NULL, "cannot parse job file: %s", strerror(errno));
        return -1;
    }
    ini_max_line = 4096;
    ini_allow_multiline = false; /* keeps reported line numbers exact */
    /* jobtext.c took the comments out before it replaced ${VAR}: a ';'
     * left in a value came from a variable and belongs to it. */
    ini_allow_inline_comments = false;
    int rc = ini_parse_stream(reader_next_line, st, handle_key, st);
    fclose(st->file);
    if (rc > 0) /* libinih counts every line it read: its location is ours */
        job_fail(st, rc <= (int)st->nlocs ? st->locs[rc - 1] : rc, NULL,
                 "syntax error (expected [section] or key = value)");
    free(st->locs);
    if (st->header_line && !st->empty_line && section_index(st, st->header) < 0)
        st->empty_line = st->header_line;
    if (st->empty_line)
        job_fail(st, st->empty_line, NULL, "section has no keys (a phase needs at least kind)");
    else if (rc < 0)
        job_fail(st, 0, NULL, "cannot parse job file");
    return 0;
}

/* The run-wide settings (struct run_settings) from the resolved [global]. */
static void settings_fill(struct run_settings *set, const struct phase *global)
{
    memset(set, 0, sizeof *set);
    snprintf(set->target, sizeof set->target, "%s", global->target);
    snprintf(set->backend, sizeof set->backend, "%s", global->backend);
    set->keep = global->keep;
    snprintf(set->run_id, sizeof set->run_id, "%s", global->run_id);
    set->clients_per_rank = global->clients_per_rank;
    snprintf(set->link, sizeof set->link, "%s", global->link);
    snprintf(set->label, sizeof set->label, "%s", global->label);
    snprintf(set->monitor_host, sizeof set->monitor_host, "%s", global->monitor_host);
    snprintf(set->monitor_rank, sizeof set->monitor_rank, "%s", global->monitor_rank);
    set->monitor_interval = global->monitor_interval;
    snprintf(set->monitor_processes, sizeof set->monitor_processes, "%s",
             global->monitor_processes);
    snprintf(set->monitor_scope, sizeof set->monitor_scope, "%s", global->monitor_scope);
    snprintf(set->monitor_disks, sizeof set->monitor_disks, "%s", global->monitor_disks);
    snprintf(set->monitor_url, sizeof set->monitor_url, "%s", global->monitor_url);
}

/* [global] resolved into global: the backend first (its rows' defaults
 * fill the phase's options block), then every default, then [global]'s
 * keys, then plain --set. */
static void job_resolve_global(struct parse_state *st, struct phase *global)
{
    memset(global, 0, sizeof *global);
    const char *backend = backend_resolved(st); /* too long: refused where it is assigned */
    if (strlen(backend) < sizeof global->backend)
        memcpy(global->backend, backend, strlen(backend) + 1);
    char why[256];
    for (size_t i = 0; i < job_key_count() && !st->failed; i++) {
        const struct job_key *k = job_key_at(i);
        if (k->fallback && strcmp(k->name, "backend") != 0 &&
            job_key_assign(k, global, k->fallback, why, sizeof why))
            job_fail(st, 0, k->name, "internal: bad default");
    }
    if (!st->failed)
        section_apply(st, "global", global, false);
    sets_apply(st, global, true);
    settings_fill(&st->job->settings, global);
    if (!st->failed && global->run_id[0] && !job_name_ok(global->run_id))
        job_fail(st, job_line_of(st, "global", "run_id"), "run_id",
                 "'%s' may hold only letters, digits, '_', '.' and '-', not starting with '.' "
                 "or '-'",
                 global->run_id);
}

/* mix_from = BEFORE,AFTER: the mix, rate, block_size and file_size that
 * herd mix-from prints, each unless the job gives it (job_mixfrom.h);
 * the paths relative to the job file. */
static void job_mix_from_apply(struct parse_state *st, struct phase *ph)
{
    char paths[2][JOB_PATH_MAX], before[JOB_PATH_MAX], err[1024];
    const char *after;
    int line = job_line_of(st, ph->name, "mix_from");
    if (job_mixfrom_pair(ph->mix_from, before, sizeof before, &after) < 0) {
        job_fail(st, line, "mix_from", "'%s' is not BEFORE,AFTER (two mountstats files)",
                 ph->mix_from);
        return;
    }
    const char *slash = strrchr(st->job->path, '/');
    int dir = slash && st->job->path[0] ? (int)(slash - st->job->path) : -1;
    for (int i = 0; i < 2; i++) {
        const char *p = i ? after : before;
        int n = p[0] == '/' || dir < 0
                    ? snprintf(paths[i], sizeof paths[i], "%s", p)
                    : snprintf(paths[i], sizeof paths[i], "%.*s/%s", dir, st->job->path, p);
        if (n < 0 || (size_t)n >= sizeof paths[i]) {
            job_fail(st, line, "mix_from", "'%s': a path longer than %d bytes", p,
                     JOB_PATH_MAX - 1);
            return;
        }
    }
    struct job_mixfrom m;
    if (job_mixfrom_load(paths[0], paths[1], NULL, 0, &m, err, sizeof err) < 0) {
        job_fail(st, line, "mix_from", "%s", err);
        return;
    }
    static const char *const keys[] = {"mix", "rate", "block_size", "file_size"};
    bool given[4];
    for (int i = 0; i < 4; i++)
        given[i] = ph->key_line[job_key_lookup(keys[i]) - job_key_at(0)] != 0;
    if (!given[0])
        snprintf(ph->mix, sizeof ph->mix, "%s", m.m.mix);
    if (!given[1])
        ph->rate = m.m.rate;
    if (!given[2])
        ph->block_size = m.m.block_size;
    if (!given[3])
        ph->file_size = job_mixfrom_file_size(&m.m);
}

/* Phase ph of section i: global's values, then the section's keys and
 * its --set, the kind's defaults, the defaults of what it inherits and
 * its kind refuses (job_inherit.c), the fileset's name; then validated.
 * false when st failed. */
static bool job_resolve_phase(struct parse_state *st, struct phase *ph, int i)
{
    snprintf(ph->name, sizeof ph->name, "%s", st->sections[i]);
    ph->line = st->section_lines[i];
    for (size_t k = 0; k < job_key_count(); k++)
        ph->key_line[k] = job_line_of(st, ph->name, job_key_at(k)->name);
    section_apply(st, st->sections[i], ph, true);
    sets_apply(st, ph, false);
    if (st->failed)
        return false;
    if (!job_line_of(st, ph->name, "kind")) {
        char kinds[256];
        job_fail(st, ph->line, "kind", "missing in [%s]: %s", ph->name,
                 job_key_choices_text(job_key_lookup("kind"), kinds, sizeof kinds));
        return false;
    }
    phase_kind_defaults(st, ph);
    phase_own_defaults(st, ph);
    if (ph->mix_from[0])
        job_mix_from_apply(st, ph);
    job_phase_fit_inherited(st, ph);
    if (!ph->fileset[0]) {
        char size[32];
        units_format_size(ph->file_size, size, sizeof size);
        snprintf(ph->fileset, sizeof ph->fileset, "%s-%s",
                 ph->sharing == SHARING_UNIQUE ? "unique" : "shared", size);
    }
    ph->rwmix_read = job_rwmix_parse(ph->rwmix_text);
    job_phase_validate(st, ph);
    return !st->failed;
}

/* Every section but [global] as a phase, in file order. */
static void job_resolve_phases(struct parse_state *st, const struct phase *global)
{
    struct job *job = st->job;
    int nphases = 0;
    for (int i = 0; i < st->nsections; i++)
        nphases += strcmp(st->sections[i], "global") != 0;
    if (!st->failed && nphases == 0)
        job_fail(st, 0, NULL, "no phases: add a section such as [write] with kind = write");
    job->phases = calloc(nphases ? nphases : 1, sizeof *job->phases);
    if (!job->phases && !st->failed)
        job_fail(st, 0, NULL, "out of memory");
    for (int i = 0; i < st->nsections && !st->failed; i++) {
        if (strcmp(st->sections[i], "global") == 0)
            continue;
        struct phase *ph = &job->phases[job->nphases++];
        *ph = *global;
        if (!job_resolve_phase(st, ph, i))
            break;
    }
}

int job_load(const char *path, const char *text, char *const *sets, int nsets, struct job *job,
             char *err, size_t errlen)
{
    memset(job, 0, sizeof *job);
    const char *shown = strcmp(path, JOBTEXT_STDIN) == 0 ? JOBTEXT_STDIN_NAME : path;
    snprintf(job->path, sizeof job->path, "%s", shown);
    struct parse_state st = {.path = shown, .job = job, .err = err, .errlen = errlen};
    err[0] = '\0';
    if (job_parse_text(&st, path, text) < 0) {
        job_free(job);
        return -1;
    }
    sets_parse(&st, sets, nsets);
    struct phase global;
    job_resolve_global(&st, &global);
    job_resolve_phases(&st, &global);
    sets_unused(&st);
    job_inherit_finish(&st);
    free(st.raws);
    free(st.sets);
    free(st.skips);
    if (st.failed) {
        job_free(job);
        return -1;
    }
    return 0;
}

int job_label_default(struct job *job, const char *value, char *why, size_t len)
{
    if (job->settings.label[0] || !value || !value[0] || job->nphases == 0)
        return 0;
    const struct job_key *k = job_key_lookup("label");
    if (job_key_assign(k, &job->phases[0], value, why, len)) { /* label's rule, on a phase */
        job->phases[0].label[0] = '\0';
        return -1;
    }
    snprintf(job->settings.label, sizeof job->settings.label, "%s", value);
    for (int i = 1; i < job->nphases; i++)
        snprintf(job->phases[i].label, sizeof job->phases[i].label, "%s", value);
    return 0;
}

const char *job_inih_version(void)
{
    return HERD_INIH_VERSION;
}
