/* workload_kinds.c — the registry of phase kinds: each kind's ops table
 * by its enum phase_kind (workload.h). Apart from workload.c, whose
 * helpers every kind calls, so that no two files call each other. */
#include <stddef.h>

#include "workload.h"

extern const struct workload_ops workload_write, workload_read, workload_md5, workload_idle,
    workload_lock, workload_storm, workload_meta;

/* In enum phase_kind's order (the registry checks it). */
static const struct workload_ops *const all[] = {&workload_write, &workload_read, &workload_md5,
                                                 &workload_idle,  &workload_lock, &workload_storm,
                                                 &workload_meta};

const struct workload_ops *workload_at(size_t i)
{
    return i < sizeof all / sizeof all[0] ? all[i] : NULL;
}

const struct workload_ops *workload_find(enum phase_kind kind)
{
    const struct workload_ops *w;
    for (size_t i = 0; (w = workload_at(i)); i++)
        if (w->kind == kind)
            return w;
    return NULL;
}
