/* job_check.c — whether a resolved phase can run: the rules between
 * keys (sizes, kinds, names, ladders), the plug-ins' rules (the
 * registry's phase_check: the monitor's, the backend's), and the scale a
 * job asks of rank 0 and the target. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "job.h"
#include "job_parse.h"
#include "stoprule.h"
#include "units.h"

/* Whether key k applies to phases of kind (a key of no kinds, or no key:
 * every one). */
static bool key_fits_kind(const struct job_key *k, enum phase_kind kind)
{
    return !k || job_key_applies(k->name, kind);
}

/* The first key the phase's own section or a --set PHASE.KEY gives that
 * does not apply to its kind (a [global] one or a plain --set is a
 * default for the kinds it applies to, and fine elsewhere: job.c keeps
 * the key's default there), or NULL. */
static const struct job_key *phase_foreign_kind_key(struct parse_state *st, const struct phase *ph)
{
    for (size_t i = 0; i < st->nraws; i++)
        if (strcmp(st->raws[i].section, ph->name) == 0 &&
            !key_fits_kind(job_key_lookup(st->raws[i].key), ph->kind))
            return job_key_lookup(st->raws[i].key);
    for (int i = 0; i < st->nsets; i++)
        if (strcmp(st->sets[i].phase, ph->name) == 0 && !key_fits_kind(st->sets[i].key, ph->kind))
            return st->sets[i].key;
    return NULL;
}

/* The first key set for the phase (its section or [global]) that belongs
 * to another backend than the phase's, or NULL. */
static const struct job_key *phase_foreign_backend_key(struct parse_state *st,
                                                       const struct phase *ph)
{
    for (size_t i = 0; i < job_key_count(); i++) {
        const struct job_key *k = job_key_at(i);
        if (k->backend && strcmp(k->backend, ph->backend) != 0 &&
            job_line_of(st, ph->name, k->name))
            return k;
    }
    return NULL;
}

uint64_t job_host_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

/* Whether `bytes` gathered to rank 0 (for `what`, e.g. "16000000 iterations
 * x 4 ranks need") fit one MPI int count and half of mem; else why. */
static bool gather_fits(double bytes, uint64_t mem, const char *what, char *why, size_t len)
{
    char need[32], have[32];
    units_format_human(bytes, need, sizeof need);
    if (bytes > (double)INT_MAX) {
        snprintf(why, len,
                 "%s %.0f bytes (%s) of records on rank 0, more than MPI's int count "
                 "(2147483647 bytes) allows",
                 what, bytes, need);
        return false;
    }
    if (mem && bytes > (double)(mem / 2)) {
        units_format_human((double)mem, have, sizeof have);
        snprintf(why, len,
                 "%s %.0f bytes (%s) of records on rank 0, more than half of this host's "
                 "memory (%s) allows",
                 what, bytes, need, have);
        return false;
    }
    return true;
}

/* "x 4 ranks", or, before the rank count is known (nranks 0), what even
 * one rank needs. */
static void ranks_text(int64_t nranks, char *buf, size_t len)
{
    if (nranks > 0)
        snprintf(buf, len, "x %lld rank%s", (long long)nranks, units_plural(nranks));
    else
        snprintf(buf, len, "need, even for one rank,");
}

/* What ph gathers to rank 0 from n ranks: its records, and a lock phase's
 * holds. NULL, or the key at fault with why. */
static const char *phase_scale_gathered(const struct phase *ph, int64_t nranks, uint64_t mem,
                                        char *why, size_t len)
{
    char what[160], ranks[48];
    double n = nranks > 0 ? (double)nranks : 1.0;
    ranks_text(nranks, ranks, sizeof ranks);
    /* Records: iterations rows per rank, all gathered to rank 0. */
    snprintf(what, sizeof what, "%lld iterations %s%s", (long long)ph->iterations, ranks,
             nranks > 0 ? " need" : "");
    const struct job_registry *reg = job_registry();
    if (!gather_fits((double)ph->iterations * (double)reg->record_bytes * n, mem, what, why, len))
        return "iterations";
    /* Lock holds: one per granted lock, gathered to rank 0 likewise. */
    if ((job_kind_caps(ph->kind) & JOB_KIND_LOCKS) && ph->duration <= 0) {
        snprintf(what, sizeof what, "%lld locks x %lld iterations %s%s", (long long)ph->count,
                 (long long)ph->iterations, ranks, nranks > 0 ? " need" : "");
        if (!gather_fits((double)ph->count * (double)ph->iterations * (double)reg->hold_bytes * n,
                         mem, what, why, len))
            return "count";
    }
    return NULL;
}

/* File offsets are signed 64-bit (off_t); a segmented file holds every
 * rank's region end to end. NULL, or "file_size" with why. */
static const char *phase_scale_offsets(const struct phase *ph, int64_t nranks, char *why,
                                       size_t len)
{
    double n = nranks > 0 ? (double)nranks : 1.0;
    bool segmented = ph->sharing == SHARING_SHARED && ph->shared_mode == SHARED_SEGMENTED &&
                     !(job_kind_caps(ph->kind) & JOB_KIND_TREE);
    uint64_t end;
    if (ph->file_size <= INT64_MAX &&
        (!segmented ||
         (!__builtin_mul_overflow(ph->file_size, (uint64_t)nranks, &end) && end <= INT64_MAX)))
        return NULL;
    char what[160], size[32];
    units_format_size(ph->file_size, size, sizeof size);
    if (segmented)
        snprintf(what, sizeof what, "%s x %lld rank%s (segmented)", size, (long long)n,
                 units_plural(n));
    else
        snprintf(what, sizeof what, "%s", size);
    snprintf(why, len, "%s = %.4g bytes is past the largest file offset (2^63 - 1)", what,
             (double)ph->file_size * (segmented ? n : 1.0));
    return "file_size";
}

/* The bytes one rank and all ranks move fit 64 bits. NULL, or the key
 * they scale with, with why. */
static const char *phase_scale_bytes(const struct phase *ph, int64_t nranks, char *why, size_t len)
{
    double n = nranks > 0 ? (double)nranks : 1.0;
    uint64_t per, all;
    struct job_volume v;
    job_phase_volume(ph, &v);
    if (job_phase_bytes(ph, &per) < 0) {
        double unit = (double)v.unit, times = (double)v.a * (double)v.b;
        snprintf(why, len, "%.0f bytes x %.0f = %.4g bytes per rank, more than 2^64", unit, times,
                 unit * times);
        return v.key;
    }
    if (__builtin_mul_overflow(per, (uint64_t)nranks, &all)) {
        snprintf(why, len, "%llu bytes per rank x %lld ranks = %.4g bytes, more than 2^64",
                 (unsigned long long)per, (long long)nranks, (double)per * n);
        return v.key;
    }
    return NULL;
}

/* The scale rule of one phase on nranks ranks (0: before the rank count
 * is known, as for one rank) with mem bytes of memory on rank 0's host
 * (0 = unknown): NULL, or the key at fault with why. Every product is
 * computed with overflow checks; numbers in messages are the exact
 * product or, past 2^64, a double. */
static const char *phase_scale(const struct phase *ph, int64_t nranks, uint64_t mem, char *why,
                               size_t len)
{
    if (ph->clients_per_rank > 1) /* each client: a rank's share (files, regions, rows) */
        nranks = (nranks > 0 ? nranks : 1) * ph->clients_per_rank;
    const char *key = phase_scale_gathered(ph, nranks, mem, why, len);
    if (key)
        return key;
    key = phase_scale_offsets(ph, nranks, why, len);
    return key ? key : phase_scale_bytes(ph, nranks, why, len);
}

/* One error per job: the first check of phase_validate's that fails is
 * reported (job_job_fail() keeps the first), on the key's line. */
#define PHASE_BAD(key, ...)                                                                        \
    job_fail(st, job_line_of(st, ph->name, key) ? job_line_of(st, ph->name, key) : ph->line, key,  \
             __VA_ARGS__)

/* the target, the backend, every bounded key, sizes and durations, and keys of another kind or
 * backend. */
static void phase_check_sizes(struct parse_state *st, const struct phase *ph)
{
    const struct job_key *foreign;
    const struct job_key *bounded;
    char kinds[64];
    char why[512];
    if (!ph->target[0])
        PHASE_BAD("target", "missing: set it in [global] or in [%s]", ph->name);
    else if (!job_registry()->backend_known(ph->backend))
        PHASE_BAD("backend", "'%s' is not a backend this herd was built with", ph->backend);
    else if ((bounded = job_key_out_of_bounds(ph, why, sizeof why)) != NULL)
        PHASE_BAD(bounded->name, "%s", why);
    else if (ph->file_size == 0 && !(job_kind_caps(ph->kind) & JOB_KIND_TREE))
        PHASE_BAD("file_size", "must be greater than 0");
    else if (ph->block_size > ph->file_size && (job_kind_caps(ph->kind) & JOB_KIND_BLOCKS))
        PHASE_BAD("block_size", "is larger than file_size");
    else if (ph->direct && (ph->block_size % 4096 || ph->file_size % 4096))
        PHASE_BAD("direct", "O_DIRECT needs block_size and file_size multiples of 4K");
    else if ((foreign = phase_foreign_kind_key(st, ph)) != NULL)
        PHASE_BAD(foreign->name, "applies to %s phases only, not to %s%s%s%s",
                  job_key_kinds_text(foreign, kinds, sizeof kinds), job_kind_name(ph->kind),
                  foreign->instead ? " (" : "", foreign->instead ? foreign->instead : "",
                  foreign->instead ? ")" : "");
    else if ((foreign = phase_foreign_backend_key(st, ph)) != NULL)
        PHASE_BAD(foreign->name, "applies to backend = %s only, not to %s", foreign->backend,
                  ph->backend);
}

/* what the phase's kind asks of its keys (its own rule), then read_from. */
static void phase_check_kind(struct parse_state *st, const struct phase *ph)
{
    char why[512];
    const char *key = job_kind_check(ph, why, sizeof why);
    if (key)
        PHASE_BAD(key, "%s", why);
    else if (ph->read_from == READ_NEIGHBOR && ph->sharing == SHARING_SHARED &&
             ph->shared_mode == SHARED_SAME_CONTENT)
        PHASE_BAD("read_from", "neighbor needs unique files or shared_mode = segmented "
                               "(with same-content every rank reads the same bytes)");
}

/* names and spellings: fileset, link, rwmix_read; files_per_rank with sharing. */
static void phase_check_names(struct parse_state *st, const struct phase *ph)
{
    if (!job_name_ok(ph->fileset))
        PHASE_BAD("fileset",
                  "'%s' must be letters, digits, '_', '.' and '-', not starting with "
                  "'.' or '-'",
                  ph->fileset);
    else if (strspn(ph->link, JOB_LINK_CHARS) != strlen(ph->link))
        PHASE_BAD("link", "'%s' may hold only letters, digits and = , . _ : + -", ph->link);
    else if (ph->rwmix_read < -1)
        PHASE_BAD("rwmix_read", "'%s' is not none or a percent 0 to 100", ph->rwmix_text);
    else if (ph->files_per_rank > 1 && ph->sharing != SHARING_UNIQUE)
        PHASE_BAD("files_per_rank", "applies to sharing = unique (a shared file is one file)");
}

/* pacing: rate (an open loop) or think_time (a closed one), not both. */
static void phase_check_pacing(struct parse_state *st, const struct phase *ph)
{
    if (ph->rate > 0 && ph->think_time > 0)
        PHASE_BAD("rate", "rate offers calls on a schedule and think_time pauses after each: "
                          "set one of them");
}

/* a ladder in rate (rate_steps, rate_curve) and a ladder's stop_when. */
static void phase_check_rate_ladder(struct parse_state *st, const struct phase *ph)
{
    bool in_rate = ph->rate_steps[0] || ph->rate_curve[0];
    bool other = ph->ranks_active[0] || ph->ranks_step || ph->clients_active[0];
    struct stop_rule rule;
    char why[256];
    if (ph->rate_steps[0] && ph->rate_curve[0])
        PHASE_BAD("rate_curve", "set rate_steps or rate_curve, not both");
    else if (in_rate && other)
        PHASE_BAD(ph->rate_steps[0] ? "rate_steps" : "rate_curve",
                  "a ladder steps in one thing: ranks, clients or rate, not two");
    else if (in_rate && ph->rate > 0)
        PHASE_BAD("rate", "the ladder in rate sets each step's rate: leave rate out");
    else if (ph->rate_steps[0] &&
             job_ladder_rates(ph->rate_steps, NULL, JOB_STEPS_MAX, JOB_RATE_MAX) < 0)
        PHASE_BAD("rate_steps", "'%s' is not a list of rates (10,20,50,100), rising, above 0",
                  ph->rate_steps);
    else if (ph->rate_curve[0] &&
             job_ladder_rates(ph->rate_curve, NULL, JOB_STEPS_MAX - 1, 100) < 0)
        PHASE_BAD("rate_curve",
                  "'%s' is not a list of percents (10,50,90,100), rising, above 0 "
                  "and at most 100",
                  ph->rate_curve);
    else if (ph->stop_when[0] && !job_phase_is_ladder(ph))
        PHASE_BAD("stop_when", "applies to a load ladder (ranks_active, ranks_step, "
                               "clients_active, rate_steps or rate_curve)");
    else if (stoprule_parse(ph->stop_when, &rule, why, sizeof why) == NULL &&
             (stoprule_uses(&rule, STOP_ACHIEVED) || stoprule_uses(&rule, STOP_LATE)) && !in_rate &&
             ph->rate <= 0)
        PHASE_BAD("stop_when", "achieved and late need an offered rate: rate, rate_steps or "
                               "rate_curve");
}

/* a load ladder: ranks_active, ranks_step or clients_active, step_duration. */
static void phase_check_ladder(struct parse_state *st, const struct phase *ph)
{
    if (ph->ranks_active[0] && ph->ranks_step)
        PHASE_BAD("ranks_step", "set ranks_active or ranks_step, not both");
    else if (ph->clients_active[0] && (ph->ranks_active[0] || ph->ranks_step))
        PHASE_BAD("clients_active", "a ladder steps in ranks or in clients: set "
                                    "clients_active or ranks_active/ranks_step, not both");
    else if (ph->clients_active[0] && job_ladder_steps(ph->clients_active, NULL, 0, 0) < 0)
        PHASE_BAD("clients_active", "'%s' is not a list of client counts (10,100,all), rising",
                  ph->clients_active);
    else if (ph->ranks_step == 1 || ph->ranks_step < 0 || ph->ranks_step > 1000)
        PHASE_BAD("ranks_step", "must be 2 to 1000 (the factor between steps), or 0");
    else if (ph->ranks_active[0] && job_ladder_steps(ph->ranks_active, NULL, 0, 0) < 0)
        PHASE_BAD("ranks_active", "'%s' is not a list of rank counts (1,2,4,all), rising",
                  ph->ranks_active);
    else if (ph->step_duration > 0 && !job_phase_is_ladder(ph))
        PHASE_BAD("step_duration", "applies to a load ladder (ranks_active, ranks_step, "
                                   "clients_active, rate_steps or rate_curve)");
    else
        phase_check_rate_ladder(st, ph);
}

/* the plug-ins' rules (the monitor's, the backend's), then the scale of the phase. */
static void phase_check_plugins(struct parse_state *st, const struct phase *ph)
{
    char why[512];
    const char *key = job_registry()->phase_check(ph, why, sizeof why);
    if (!key)
        key = phase_scale(ph, 0, job_host_memory(), why, sizeof why);
    if (key)
        PHASE_BAD(key, "%s", why);
}

/* Whether phase ph (every key resolved) can run, the first problem into
 * st: each check in turn, until one fails. */
void job_phase_validate(struct parse_state *st, const struct phase *ph)
{
    void (*const checks[])(struct parse_state *, const struct phase *) = {
        phase_check_sizes,  phase_check_kind,   phase_check_names,
        phase_check_pacing, phase_check_ladder, phase_check_plugins,
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0] && !st->failed; i++)
        checks[i](st, ph);
}

void job_key_error(const struct job *job, const struct phase *ph, const char *key, const char *why,
                   char *err, size_t len)
{
    job_error_format(err, len, job, job->path, job_phase_key_loc(ph, key), key, why);
}

int job_check_scale(const struct job *job, int64_t nranks, char *err, size_t len)
{
    uint64_t mem = job_host_memory();
    char why[512];
    for (int i = 0; i < job->nphases; i++) {
        const struct phase *ph = &job->phases[i];
        const char *key = phase_scale(ph, nranks, mem, why, sizeof why);
        if (!key)
            continue;
        job_key_error(job, ph, key, why, err, len);
        return -EOVERFLOW;
    }
    return 0;
}
