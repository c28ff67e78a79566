/* workload.c — what all workloads share: the registry of phase kinds, the
 * stop test, error counting and the naming of data files. */
#include "workload.h"

#include <errno.h>
#include <stdio.h>

#include "signals.h"

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

bool workload_should_stop(const struct phase_ctx *c)
{
    if (signals_caught())
        return true;
    return c->deadline_at > 0 && clock_now(c->clock) >= c->deadline_at;
}

void workload_error(struct phase_ctx *c, enum op op, int err, const char *path)
{
    errtab_add(c->errors, c->rank, op, err, path, clock_now(c->clock));
}

void workload_fileset_dir(const struct phase_ctx *c, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s", c->rundir, c->ph->fileset);
}

void workload_file_path(const struct phase_ctx *c, int index, char *buf, size_t len)
{
    if (index < 0)
        snprintf(buf, len, "%s/%s/shared.dat", c->rundir, c->ph->fileset);
    else
        snprintf(buf, len, "%s/%s/r%06d.dat", c->rundir, c->ph->fileset, index);
}

void workload_make_dirs(struct phase_ctx *c)
{
    char dir[1200];
    int rc = c->be->mkdir(c->be_ctx, c->rundir);
    if (rc < 0 && rc != -EEXIST)
        workload_error(c, OP_MKDIR, rc, c->rundir);
    workload_fileset_dir(c, dir, sizeof dir);
    rc = c->be->mkdir(c->be_ctx, dir);
    if (rc < 0 && rc != -EEXIST)
        workload_error(c, OP_MKDIR, rc, dir);
}
