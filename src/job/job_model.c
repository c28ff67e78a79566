/* job_model.c — a loaded job as data: the bytes a phase moves per rank,
 * and freeing a job (job.h). */
#include <errno.h>
#include <stdlib.h>

#include "job.h"
#include "job_parse.h"

void job_free(struct job *job)
{
    free(job->text);
    free(job->phases);
    job->text = NULL;
    job->phases = NULL;
    job->nphases = 0;
}

void job_phase_volume(const struct phase *ph, struct job_volume *v)
{
    *v = (struct job_volume){0, 0, 0, "file_size"};
    const struct job_kind *kind = job_kind_at(ph->kind);
    if (kind && kind->volume)
        kind->volume(ph, v);
}

int job_phase_bytes(const struct phase *ph, uint64_t *bytes)
{
    struct job_volume v;
    uint64_t times, b;
    *bytes = 0;
    job_phase_volume(ph, &v);
    if (v.unit == 0)
        return 0;
    if (__builtin_mul_overflow(v.a, v.b, &times) || __builtin_mul_overflow(v.unit, times, &b))
        return -EOVERFLOW;
    *bytes = b;
    return 0;
}

uint64_t job_phase_bytes_per_rank(const struct phase *ph)
{
    uint64_t b;
    return job_phase_bytes(ph, &b) < 0 ? UINT64_MAX : b;
}
