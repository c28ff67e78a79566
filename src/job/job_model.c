/* job_model.c — a loaded job as data: the bytes a phase moves per rank,
 * and freeing a job (job.h). */
#include <errno.h>
#include <stdlib.h>

#include "job.h"

void job_free(struct job *job)
{
    free(job->text);
    free(job->phases);
    job->text = NULL;
    job->phases = NULL;
    job->nphases = 0;
}

int job_phase_bytes(const struct phase *ph, uint64_t *bytes)
{
    uint64_t unit = ph->file_size, times = (uint64_t)ph->iterations, b = 0;
    *bytes = 0;
    if (ph->kind == KIND_META) {
        if (!(job_meta_steps(ph->meta_ops) & (1 << META_CREATE)))
            return 0;
        times = (uint64_t)ph->files;
    } else if (ph->kind == KIND_STORM) {
        unit = ph->block_size < ph->file_size ? ph->block_size : ph->file_size;
        if (__builtin_mul_overflow((uint64_t)ph->count, times, &times))
            return -EOVERFLOW;
    } else if (!(job_kind_caps(ph->kind) & JOB_KIND_BLOCKS)) {
        return 0;
    } else if (__builtin_mul_overflow(times, (uint64_t)ph->files_per_rank, &times)) {
        return -EOVERFLOW; /* write, read, md5: every file of the rank */
    }
    if (__builtin_mul_overflow(unit, times, &b))
        return -EOVERFLOW;
    *bytes = b;
    return 0;
}

uint64_t job_phase_bytes_per_rank(const struct phase *ph)
{
    uint64_t b;
    return job_phase_bytes(ph, &b) < 0 ? UINT64_MAX : b;
}
