/* registry.c — the plug-ins joined for the job model (registry.h). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend.h"
#include "holds.h"
#include "job.h"
#include "monitor_keys.h"
#include "record.h"
#include "registry.h"

#include "mixspec.h"
#include "workload.h"

/* The monitor's rows, then each backend's, in backend_at's order; room
 * for one backend too many, which the key table refuses by name. */
static struct job_key_set key_sets[1 + JOB_BACKENDS_MAX + 1];
static struct job_registry registry;
/* The kinds' names and help, from the workloads (registry_kinds). */
static const char *kind_names[JOB_KINDS_MAX + 1];
static const char *const *kind_keys[JOB_KINDS_MAX];
static const char *const *kind_own_defaults[JOB_KINDS_MAX];
static unsigned kind_caps[JOB_KINDS_MAX];
static char kinds_help[1024];
static pthread_once_t once = PTHREAD_ONCE_INIT;

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

/* A registry herd cannot run with is a build's mistake: say which and stop. */
static void registry_broken(const char *what)
{
    fprintf(stderr, "herd: internal: registry: %s\n", what);
    abort();
}

/* Each kind's name at its enum value, and "what the phase does: NAME
 * (HELP) | ..." for the kind key's help. */
static void registry_kinds(void)
{
    const struct workload_ops *w;
    size_t used = (size_t)snprintf(kinds_help, sizeof kinds_help, "what the phase does:");
    for (size_t i = 0; (w = workload_at(i)); i++) {
        if (i == JOB_KINDS_MAX || !w->name || !w->help)
            registry_broken("more than JOB_KINDS_MAX kinds, or one without name or help");
        kind_names[i] = w->name;
        kind_keys[i] = w->keys;
        kind_own_defaults[i] = w->own_defaults;
        kind_caps[i] = w->job_caps;
        if (used < sizeof kinds_help)
            used += (size_t)snprintf(kinds_help + used, sizeof kinds_help - used, "%s %s (%s)",
                                     i ? " |" : "", w->name, w->help);
    }
    if (used >= sizeof kinds_help)
        registry_broken("the kinds' help is longer than its buffer");
}

static const char *registry_kind_check(const struct phase *ph, char *why, size_t len)
{
    const struct workload_ops *w = workload_find(ph->kind);
    return w && w->check ? w->check(ph, why, len) : NULL;
}

static void registry_kind_volume(const struct phase *ph, struct job_volume *v)
{
    const struct workload_ops *w = workload_find(ph->kind);
    if (w && w->volume)
        w->volume(ph, v);
}

static void registry_build(void)
{
    registry_kinds();
    size_t n = 0;
    key_sets[n++] = (struct job_key_set){NULL, monitor_keys, monitor_nkeys};
    const struct backend_ops *b;
    for (size_t i = 0; (b = backend_at(i)) && n < sizeof key_sets / sizeof key_sets[0]; i++)
        key_sets[n++] = (struct job_key_set){b->name, b->keys, b->nkeys};
    registry = (struct job_registry){
        .key_sets = key_sets,
        .nkey_sets = n,
        .backend_known = backend_known,
        .target_backend = backend_for_target,
        .kind_names = kind_names,
        .kinds_help = kinds_help,
        .kind_keys = kind_keys,
        .kind_own_defaults = kind_own_defaults,
        .kind_check = registry_kind_check,
        .kind_caps = kind_caps,
        .kind_volume = registry_kind_volume,
        .phase_check = registry_phase_check,
        .record_bytes = sizeof(struct rank_record),
        .hold_bytes = sizeof(struct hold),
    };
    job_registry_set(&registry);
}

void registry_install(void)
{
    pthread_once(&once, registry_build);
}
