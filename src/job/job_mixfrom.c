/* job_mixfrom.c — a mix phase from a client's mountstats snapshots
 * (job_mixfrom.h). */
#include "job_mixfrom.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "textfile.h"
#include "units.h"

/* The snapshot at path, parsed at mount (chosen when NULL: the only NFS
 * mount of the text, into chosen). 0 or -1 with err. */
static int snapshot_read(const char *path, const char *mount, char chosen[256],
                         struct mountstats *ms, char *err, size_t len)
{
    char *text = NULL;
    size_t cap = 0;
    long n = textfile_read_given(path, TEXTFILE_PROC_MAX, &text, &cap);
    if (n < 0) {
        snprintf(err, len, "%s: cannot read it: %s", path,
                 n == -ENOTSUP ? "not a regular file" : strerror((int)-n));
        free(text);
        return -1;
    }
    int rc = -1;
    if (!mount || !mount[0]) {
        char points[8][256];
        int np = mountstats_mounts(text, (size_t)n, points, 8);
        if (np == 1) {
            memcpy(chosen, points[0], 256);
            mount = chosen;
        } else if (np == 0) {
            snprintf(err, len, "%s: no NFS mount in it (is it a copy of /proc/self/mountstats?)",
                     path);
            free(text);
            return -1;
        } else {
            snprintf(err, len, "%s: more than one NFS mount: name one with --mount (%s, %s%s)",
                     path, points[0], points[1], np > 2 ? ", ..." : "");
            free(text);
            return -1;
        }
    }
    int got = mountstats_parse(text, (size_t)n, mount, ms);
    if (got == 0)
        rc = 0;
    else
        snprintf(err, len, "%s: %s", path,
                 got == 1 ? "no NFS mount there (is it a copy of /proc/self/mountstats?)"
                          : "its entry for that mount is cut short or malformed");
    if (got == 1 && mount)
        snprintf(err, len, "%s: no NFS mount on %s in it", path, mount);
    free(text);
    return rc;
}

/* vers= of the opts line, "" when none. */
static void opts_vers(const char *opts, char *vers, size_t len)
{
    const char *v = strstr(opts, "vers=");
    vers[0] = '\0';
    if (v && (v == opts || v[-1] == ','))
        snprintf(vers, len, "%.*s", (int)strcspn(v + 5, ","), v + 5);
}

int job_mixfrom_load(const char *before, const char *after, const char *mount, double seconds,
                     struct job_mixfrom *out, char *err, size_t len)
{
    memset(out, 0, sizeof *out);
    struct mountstats *b = malloc(sizeof *b), *a = malloc(sizeof *a);
    char chosen[256] = "";
    int rc = !a || !b ? (snprintf(err, len, "out of memory"), -1)
                      : snapshot_read(after, mount, chosen, a, err, len);
    if (rc == 0)
        rc = snapshot_read(before, mount && mount[0] ? mount : chosen, chosen, b, err, len);
    if (rc == 0 && strcmp(a->device, b->device) != 0) {
        snprintf(err, len, "%s and %s: the mount holds %s in one and %s in the other", before,
                 after, b->device, a->device);
        rc = -1;
    }
    if (rc == 0) {
        mountstats_delta(b, a, b);
        if (seconds <= 0 && !b->has_age) {
            snprintf(err, len,
                     "%s: no age: line to tell the time between the snapshots: give "
                     "--seconds",
                     after);
            rc = -1;
        }
    }
    if (rc == 0) {
        snprintf(out->device, sizeof out->device, "%s", a->device);
        snprintf(out->mount, sizeof out->mount, "%s", a->mount_point);
        snprintf(out->fstype, sizeof out->fstype, "%s", a->fstype);
        opts_vers(a->opts, out->vers, sizeof out->vers);
        char why[512];
        if (mixfrom_compute(b, seconds > 0 ? seconds : (double)b->age, &out->m, why, sizeof why)) {
            snprintf(err, len, "%s, %s: %s", before, after, why);
            rc = -1;
        }
    }
    free(a);
    free(b);
    return rc;
}

/* "getattr 76.8% (74.9%), ...": each op the replay or the target has,
 * the replay's share and, in brackets, the target's. */
static void replay_describe(const struct mixfrom *target, const struct mixfrom *replay, char *buf,
                            size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; mixspec_ops[i] >= 0 && used < len; i++) {
        int op = mixspec_ops[i];
        double t = mixfrom_share(target, op), r = mixfrom_share(replay, op);
        if (t > 0 || r > 0)
            used += (size_t)snprintf(buf + used, len - used, "%s%s %.1f%% (%.1f%%)",
                                     used ? ", " : "", op_name((enum op)op), 100 * r, 100 * t);
    }
}

int job_mixfrom_pair(const char *text, char *before, size_t blen, const char **after)
{
    const char *comma = strchr(text, ',');
    if (!comma || comma == text || !comma[1] || strchr(comma + 1, ',') ||
        (size_t)(comma - text) >= blen)
        return -1;
    snprintf(before, blen, "%.*s", (int)(comma - text), text);
    *after = comma + 1;
    return 0;
}

uint64_t job_mixfrom_file_size(const struct mixfrom *m)
{
    return m->block_size * 16 > 65536 ? m->block_size * 16 : 65536;
}

int job_mixfrom_correct(struct job_mixfrom *j, const char *replay, const char *ran,
                        const char *mount, double seconds, char *err, size_t len)
{
    char before[4096];
    const char *after;
    if (job_mixfrom_pair(replay, before, sizeof before, &after) < 0) {
        snprintf(err, len, "--replay '%s' is not BEFORE,AFTER (two mountstats files)", replay);
        return -1;
    }
    struct mix_spec spec;
    char why[512];
    snprintf(j->ran, sizeof j->ran, "%s", ran && ran[0] ? ran : j->m.mix);
    if (mixspec_parse(j->ran, &spec, why, sizeof why)) {
        snprintf(err, len, "--replay-mix '%s': %s", j->ran, why);
        return -1;
    }
    struct job_mixfrom *r = malloc(sizeof *r);
    int rc = r ? job_mixfrom_load(before, after, mount, seconds, r, err, len)
               : (snprintf(err, len, "out of memory"), -1);
    if (rc == 0 &&
        mixfrom_correct(&j->m, &r->m, &spec, j->m.mix, sizeof j->m.mix, why, sizeof why) < 0) {
        snprintf(err, len, "%s: %s", replay, why);
        rc = -1;
    }
    if (rc == 0)
        replay_describe(&j->m, &r->m, j->replayed, sizeof j->replayed);
    free(r);
    return rc;
}

void job_mixfrom_print(FILE *out, const struct job_mixfrom *j, const char *section)
{
    const struct mixfrom *m = &j->m;
    char block[32], fsize[32], rs[32], ws[32];
    units_format_size(m->block_size, block, sizeof block);
    units_format_size(job_mixfrom_file_size(m), fsize, sizeof fsize);
    units_format_human(m->read_size, rs, sizeof rs);
    units_format_human(m->write_size, ws, sizeof ws);
    fprintf(out, "; herd mix-from: %s on %s (%s%s%s), %.1f s between the snapshots\n", j->device,
            j->mount, j->fstype, j->vers[0] ? ", vers=" : "", j->vers, m->seconds);
    fprintf(out, "; that client sent %.1f calls/s; %.1f/s of them are reproduced below\n",
            m->all_rate, m->rate);
    fprintf(out, "; not reproduced: %s\n", m->left_out[0] ? m->left_out : "none");
    fprintf(out,
            "; READ %.1f/s of %s on average, WRITE %.1f/s of %s: block_size is the larger "
            "direction's (in bytes), rounded up to 4 KiB\n",
            m->read_per_s, rs, m->write_per_s, ws);
    fprintf(out, "; each herd client of this phase is one such client: clients_per_rank x "
                 "ranks of them offer N x the rate\n");
    if (j->replayed[0])
        fprintf(out,
                "; corrected by a replay of mix = %s: the client sent then %s (wanted in "
                "brackets)\n",
                j->ran, j->replayed);
    fprintf(out,
            "[%s]\nkind = mix\nmix = %s\nrate = %.4g\narrivals = poisson\nblock_size = %s\n"
            "file_size = %s\n",
            section && section[0] ? section : "mix", m->mix, m->rate, block, fsize);
}
