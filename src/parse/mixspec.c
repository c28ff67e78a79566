/* mixspec.c — a mix phase's weighted operations (mixspec.h). */
#include "mixspec.h"

#include "ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const int mixspec_ops[] = {
    OP_READ,           OP_WRITE,   OP_FSYNC,     OP_MKDIR,      OP_UNLINK, OP_RMDIR,   OP_RENAME,
    OP_LOCK,           OP_GETATTR, OP_SETATTR,   OP_TRUNCATE,   OP_ACCESS, OP_READDIR, OP_LOOKUP,
    OP_LOOKUP_MISSING, OP_CREATE,  OP_READ_FILE, OP_WRITE_FILE, OP_APPEND, -1,
};

/* The mix op named name (an alias included), or -1. */
static int mix_op_named(const char *name)
{
    if (strcmp(name, "remove") == 0)
        return OP_UNLINK;
    if (strcmp(name, "commit") == 0)
        return OP_FSYNC;
    for (int i = 0; mixspec_ops[i] >= 0; i++)
        if (strcmp(name, op_name((enum op)mixspec_ops[i])) == 0)
            return mixspec_ops[i];
    return -1;
}

/* A weight: digits with at most one '.', above 0 and at most 1e9. */
static int weight_parse(const char *s, double *w)
{
    size_t digits = strspn(s, "0123456789");
    const char *p = s + digits;
    if (*p == '.') {
        size_t frac = strspn(p + 1, "0123456789");
        digits += frac;
        p += 1 + frac;
    }
    if (digits == 0 || *p || p - s > 20)
        return -1;
    *w = strtod(s, NULL);
    return *w > 0 && *w <= 1e9 ? 0 : -1;
}

static const char *item_parse(const char *item, struct mix_spec *spec, char *why, size_t len)
{
    const char *colon = strchr(item, ':');
    char name[32];
    if (!colon || colon == item || (size_t)(colon - item) >= sizeof name) {
        snprintf(why, len, "'%s' is not OP:WEIGHT (e.g. getattr:40)", item);
        return why;
    }
    snprintf(name, sizeof name, "%.*s", (int)(colon - item), item);
    int op = mix_op_named(name);
    if (op < 0) {
        snprintf(why, len,
                 "'%s' is not a mix operation (read, read_file, write, write_file, append, "
                 "fsync, getattr, setattr, truncate, access, readdir, lookup, lookup_missing, "
                 "create, unlink, rename, mkdir, rmdir, lock)",
                 name);
        return why;
    }
    for (int i = 0; i < spec->n; i++)
        if (spec->op[i] == op) {
            snprintf(why, len, "%s appears twice", op_name((enum op)op));
            return why;
        }
    double w;
    if (weight_parse(colon + 1, &w) != 0) {
        snprintf(why, len, "'%s': the weight must be a number above 0 (40, 2.5)", item);
        return why;
    }
    spec->op[spec->n] = op;
    spec->weight[spec->n] = w;
    spec->n++;
    return NULL;
}

const char *mixspec_parse(const char *text, struct mix_spec *spec, char *why, size_t len)
{
    memset(spec, 0, sizeof *spec);
    char buf[MIXSPEC_TEXT_MAX];
    if (strlen(text) >= sizeof buf) {
        snprintf(why, len, "is longer than %d characters", MIXSPEC_TEXT_MAX - 1);
        return why;
    }
    snprintf(buf, sizeof buf, "%s", text);
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        if (spec->n == MIX_OPS) {
            snprintf(why, len, "names more than %d operations", MIX_OPS);
            return why;
        }
        if (item_parse(item, spec, why, len))
            return why;
    }
    if (spec->n == 0 || text[0] == ',' || text[strlen(text) - 1] == ',' || strstr(text, ",,")) {
        snprintf(why, len, "'%s' is not OP:WEIGHT,... (e.g. getattr:40,read:20,write:10)", text);
        return why;
    }
    double total = 0, sum = 0;
    for (int i = 0; i < spec->n; i++)
        total += spec->weight[i];
    for (int i = 0; i < spec->n; i++) {
        sum += spec->weight[i];
        spec->upto[i] = i + 1 == spec->n ? 1.0 : sum / total;
    }
    return NULL;
}

int mixspec_pick(const struct mix_spec *spec, double u)
{
    for (int i = 0; i + 1 < spec->n; i++)
        if (u < spec->upto[i])
            return spec->op[i];
    return spec->op[spec->n - 1];
}

double mixspec_share(const struct mix_spec *spec, int op)
{
    double total = 0, mine = 0;
    for (int i = 0; i < spec->n; i++) {
        total += spec->weight[i];
        mine += spec->op[i] == op ? spec->weight[i] : 0;
    }
    return total > 0 ? mine / total : 0;
}

double mixspec_data_share(const struct mix_spec *spec)
{
    static const int data[] = {OP_READ,       OP_READ_FILE, OP_WRITE,
                               OP_WRITE_FILE, OP_APPEND,    OP_TRUNCATE};
    double share = 0;
    for (size_t i = 0; i < sizeof data / sizeof data[0]; i++)
        share += mixspec_share(spec, data[i]);
    return share;
}

bool mixspec_locks(const struct mix_spec *spec)
{
    return mixspec_share(spec, OP_LOCK) > 0;
}
