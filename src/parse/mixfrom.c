/* mixfrom.c — a mix from a client's mountstats (mixfrom.h). */
#include "mixfrom.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops.h"

static const struct {
    const char *nfs;
    int op;
} mix_map[] = {
    {"GETATTR", OP_GETATTR}, {"SETATTR", OP_SETATTR},     {"LOOKUP", OP_LOOKUP},
    {"ACCESS", OP_ACCESS},   {"READ", OP_READ},           {"WRITE", OP_WRITE},
    {"COMMIT", OP_FSYNC},    {"CREATE", OP_CREATE},       {"REMOVE", OP_UNLINK},
    {"RENAME", OP_RENAME},   {"MKDIR", OP_MKDIR},         {"RMDIR", OP_RMDIR},
    {"READDIR", OP_READDIR}, {"READDIRPLUS", OP_READDIR}, {"LOCK", OP_LOCK},
    {"LOCKU", -2}, /* the unlock of a LOCK: herd's lock sends both */
};

/* The mix op of an NFS op's name; -1: none (left out); -2: counted with
 * another (LOCKU). */
static int mix_op_of(const char *nfs)
{
    for (size_t i = 0; i < sizeof mix_map / sizeof mix_map[0]; i++)
        if (strcmp(mix_map[i].nfs, nfs) == 0)
            return mix_map[i].op;
    return -1;
}

/* calls per mix op, and the ops left out into out->left_out. */
static void mixfrom_count(const struct mountstats *d, double seconds, double calls[OP_COUNT],
                          struct mixfrom *out)
{
    size_t used = 0;
    for (int i = 0; i < d->nops && i < MOUNTSTATS_OPS_MAX; i++) {
        const struct mountstats_op *o = &d->ops[i];
        int op = mix_op_of(o->name);
        out->all_rate += (double)o->ops / seconds;
        if (op == OP_LOOKUP) {
            uint64_t failed = o->errors < o->ops ? o->errors : o->ops;
            calls[OP_LOOKUP] += (double)(o->ops - failed);
            calls[OP_LOOKUP_MISSING] += (double)failed;
        } else if (op >= 0) {
            calls[op] += (double)o->ops;
        } else if (op == -1 && o->ops > 0 && used < sizeof out->left_out) {
            used +=
                (size_t)snprintf(out->left_out + used, sizeof out->left_out - used, "%s%s %.3g/s",
                                 used ? ", " : "", o->name, (double)o->ops / seconds);
        }
        if (strcmp(o->name, "READ") == 0)
            out->read_per_s = (double)o->ops / seconds;
        if (strcmp(o->name, "WRITE") == 0)
            out->write_per_s = (double)o->ops / seconds;
    }
}

/* The average READ and WRITE (the bytes line's server read and write
 * bytes over the calls), and the block: the direction with more bytes,
 * rounded up to 4 KiB, 4 KiB at least. */
static void mixfrom_sizes(const struct mountstats *d, double seconds, struct mixfrom *out)
{
    double reads = out->read_per_s * seconds, writes = out->write_per_s * seconds;
    out->read_size = reads > 0 ? (double)d->bytes[4] / reads : 0;
    out->write_size = writes > 0 ? (double)d->bytes[5] / writes : 0;
    double size = (double)d->bytes[4] >= (double)d->bytes[5] ? out->read_size : out->write_size;
    uint64_t block = (uint64_t)ceil(size / 4096.0) * 4096;
    out->block_size = block < 4096 ? 4096 : block;
}

/* A percent as mix's weights are written: plain decimals (never an
 * exponent), at most 4 after the point, no trailing zeros; above 0. */
static void weight_format(double pct, char *buf, size_t len)
{
    snprintf(buf, len, "%.4f", pct < 0.0001 ? 0.0001 : pct);
    char *end = buf + strlen(buf);
    while (end > buf && end[-1] == '0')
        *--end = '\0';
    if (end > buf && end[-1] == '.')
        end[-1] = '\0';
}

/* The weights w[op] (>= 0, indexed by enum op) as mix-key text: each as
 * a percent of their sum, in mixspec_ops order, those above 0 only. */
static void mix_text(const double *w, char *mix, size_t mixlen)
{
    double total = 0;
    for (int i = 0; mixspec_ops[i] >= 0; i++)
        total += w[mixspec_ops[i]];
    size_t used = 0;
    mix[0] = '\0';
    for (int i = 0; total > 0 && mixspec_ops[i] >= 0; i++) {
        int op = mixspec_ops[i];
        if (w[op] <= 0 || used >= mixlen)
            continue;
        char pct[32];
        weight_format(100 * w[op] / total, pct, sizeof pct);
        used += (size_t)snprintf(mix + used, mixlen - used, "%s%s:%s", used ? "," : "",
                                 op_name((enum op)op), pct);
    }
}

double mixfrom_share(const struct mixfrom *m, int op)
{
    for (int i = 0; i < m->nshares; i++)
        if (m->share_op[i] == op)
            return m->share[i];
    return 0;
}

int mixfrom_correct(const struct mixfrom *target, const struct mixfrom *replay,
                    const struct mix_spec *ran, char *mix, size_t mixlen, char *why, size_t len)
{
    if (replay->nshares == 0) {
        snprintf(why, len, "the replay sent no call herd reproduces");
        return -1;
    }
    double w[OP_COUNT] = {0};
    for (int i = 0; i < target->nshares; i++) {
        int op = target->share_op[i];
        double had = mixspec_share(ran, op), got = mixfrom_share(replay, op);
        w[op] = target->share[i];
        if (had > 0)
            w[op] = got > 0 ? had * target->share[i] / got : had;
    }
    mix_text(w, mix, mixlen);
    return 0;
}

int mixfrom_compute(const struct mountstats *delta, double seconds, struct mixfrom *out, char *why,
                    size_t len)
{
    memset(out, 0, sizeof *out);
    if (!(seconds > 0)) {
        snprintf(why, len,
                 "the snapshots are 0 s apart: take them a minute apart (or give "
                 "--seconds)");
        return -1;
    }
    out->seconds = seconds;
    double calls[OP_COUNT] = {0}, total = 0;
    mixfrom_count(delta, seconds, calls, out);
    for (int op = 0; op < OP_COUNT; op++)
        total += calls[op];
    if (total <= 0) {
        snprintf(why, len, "the client sent no call herd reproduces between the snapshots%s%s",
                 out->left_out[0] ? " (only " : "", out->left_out[0] ? out->left_out : "");
        if (out->left_out[0])
            snprintf(why + strlen(why), len - strlen(why), ")");
        return -1;
    }
    out->rate = total / seconds;
    mixfrom_sizes(delta, seconds, out);
    for (int i = 0; mixspec_ops[i] >= 0; i++) {
        int op = mixspec_ops[i];
        if (calls[op] > 0 && out->nshares < MIX_OPS) {
            out->share_op[out->nshares] = op;
            out->share[out->nshares++] = calls[op] / total;
        }
    }
    mix_text(calls, out->mix, sizeof out->mix);
    return 0;
}
