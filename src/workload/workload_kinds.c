/* workload_kinds.c — the registry of phase kinds: each kind's ops table
 * by its enum phase_kind (workload.h): a kind's number is its place in
 * the table. Apart from workload.c, whose
 * helpers every kind calls, so that no two files call each other. */
#include <stddef.h>

#include "workload.h"

extern const struct workload_ops workload_write, workload_read, workload_md5, workload_idle,
    workload_lock, workload_storm, workload_meta, workload_mix;
/* A kind built from a file outside src/ (cmake -DHERD_EXTRA_KIND=FILE.c,
 * docs/extending.md): its ops table's name. */
#ifdef HERD_EXTRA_KIND
extern const struct workload_ops HERD_EXTRA_KIND;
#endif

/* The built-in kinds at their enum phase_kind numbers, then any other:
 * the next number. */
static const struct workload_ops *const all[] = {
    [KIND_WRITE] = &workload_write,
    [KIND_READ] = &workload_read,
    [KIND_MD5] = &workload_md5,
    [KIND_IDLE] = &workload_idle,
    [KIND_LOCK] = &workload_lock,
    [KIND_STORM] = &workload_storm,
    [KIND_META] = &workload_meta,
    [KIND_MIX] = &workload_mix,
#ifdef HERD_EXTRA_KIND
    &HERD_EXTRA_KIND,
#endif
};

const struct workload_ops *workload_at(size_t i)
{
    return i < sizeof all / sizeof all[0] ? all[i] : NULL;
}

const struct workload_ops *workload_find(enum phase_kind kind)
{
    return workload_at((size_t)kind);
}
