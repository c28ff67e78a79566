/* workload_kinds.c — the registry of phase kinds: each kind's ops table
 * by its enum phase_kind (workload.h). Apart from workload.c, whose
 * helpers every kind calls, so that no two files call each other. */
#include <stddef.h>

#include "workload.h"

extern const struct workload_ops workload_write, workload_read, workload_md5, workload_idle,
    workload_lock, workload_storm, workload_meta;

const struct workload_ops *workload_find(enum phase_kind kind)
{
    static const struct workload_ops *const all[] = {
        &workload_write, &workload_read,  &workload_md5, &workload_idle,
        &workload_lock,  &workload_storm, &workload_meta};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]->kind == kind)
            return all[i];
    return NULL;
}
