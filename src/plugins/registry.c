/* registry.c — the plug-ins joined for the job model (registry.h): one
 * constant table, registry_table, that job/ reaches through its section
 * (job.h's JOB_REGISTRY). */
#include <stdio.h>

#include "backend.h"
#include "holds.h"
#include "job.h"
#include "monitor_keys.h"
#include "record.h"
#include "registry.h"

#include "mixspec.h"
#include "workload.h"

static bool backend_known(const char *name)
{
    return backend_find(name) != NULL;
}

/* The monitor's rules, then the backend's own check and lock support. */
/* A mix phase's calls that the backend has none of. */
/* Whether backend be has the call op needs (true for an op every backend has). */
static bool registry_backend_has(const struct backend_ops *be, enum op op)
{
    switch (op) {
    case OP_GETATTR:
        return be->fstat != NULL;
    case OP_SETATTR:
    case OP_TRUNCATE:
        return be->fsetattr != NULL;
    case OP_ACCESS:
        return be->faccess != NULL;
    case OP_READDIR:
        return be->readdir != NULL;
    case OP_LOCK:
        return be->lock != NULL;
    default:
        return true;
    }
}

static const char *registry_mix_supported(const struct backend_ops *be, const struct phase *ph,
                                          char *why, size_t len)
{
    struct mix_spec spec;
    if (ph->kind != KIND_MIX || mixspec_parse(ph->mix, &spec, why, len))
        return NULL; /* the key's own check said what is wrong with the text */
    for (int i = 0; i < spec.n; i++) {
        enum op op = (enum op)spec.op[i];
        if (!registry_backend_has(be, op)) {
            snprintf(why, len, "%s is not supported by the %s backend: leave it out of the mix",
                     op_name(op), ph->backend);
            return "mix";
        }
    }
    return NULL;
}

static const char *registry_phase_check(const struct phase *ph, char *why, size_t len)
{
    const char *key = monitor_phase_check(ph, why, len);
    if (key)
        return key;
    const struct backend_ops *be = backend_find(ph->backend);
    if (!be)
        return NULL; /* job/ refused the name already */
    if (ph->clients_per_rank > 1 && !be->clients) {
        snprintf(why, len,
                 "the %s backend runs one client per rank (backend = libnfs runs many: each an "
                 "NFS client of its own on one event loop)",
                 ph->backend);
        return "clients_per_rank";
    }
    key = be->check ? be->check(ph, why, len) : NULL;
    const struct workload_ops *w = workload_find(ph->kind);
    if (!key && be->check_depth && w)
        key = be->check_depth(ph, 1 + w->dir_depth, why, len);
    if (!key && (job_kind_caps(ph->kind) & JOB_KIND_LOCKS) && !be->lock) {
        snprintf(why, len, "lock is not supported by the %s backend", ph->backend);
        key = "kind";
    }
    return key ? key : registry_mix_supported(be, ph, why, len);
}

/* Kind i (its number), as job/ sees it: the job part of its ops table. */
static bool registry_kind_at(size_t i, struct job_kind *out)
{
    const struct workload_ops *w = workload_at(i);
    if (!w)
        return false;
    *out = (struct job_kind){
        .name = w->name,
        .help = w->help,
        .keys = w->keys,
        .own_defaults = w->own_defaults,
        .caps = w->job_caps,
        .own_keys = w->own_keys,
        .nown_keys = w->nown_keys,
        .opts_size = w->opts_size,
        .check = w->check,
        .volume = w->volume,
    };
    return true;
}

/* The monitor's rows, then each backend's, in backend_at's order. */
static bool registry_key_set_at(size_t i, struct job_key_set *out)
{
    if (i == 0) {
        *out = (struct job_key_set){NULL, monitor_keys, monitor_nkeys};
        return true;
    }
    const struct backend_ops *b = backend_at(i - 1);
    if (!b)
        return false;
    *out = (struct job_key_set){b->name, b->keys, b->nkeys};
    return true;
}

JOB_REGISTRY const struct job_registry registry_table = {
    .kind_at = registry_kind_at,
    .key_set_at = registry_key_set_at,
    .backend_known = backend_known,
    .target_backend = backend_for_target,
    .phase_check = registry_phase_check,
    .record_bytes = sizeof(struct rank_record),
    .hold_bytes = sizeof(struct hold),
};
