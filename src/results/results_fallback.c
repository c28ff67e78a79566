/* results_fallback.c — a lost phase as CSV (results_fallback.h). Strings
 * are quoted with doubled quotes and control bytes replaced, so that every
 * line parses as CSV whatever a path holds. */
#include "results_fallback.h"

#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "safeout.h"

static void csv_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"')
            fputs("\"\"", f);
        else if (*p < 0x20 || *p == 0x7f)
            fputc('?', f);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void fallback_write(FILE *f, const char *prefix, const struct phase *ph,
                           const struct phase_summary *sum, const struct phase_data *d)
{
    fprintf(f, "%sphase,kind,status,t_start,t_end,start_skew,nranks\n", prefix);
    fprintf(f, "%s", prefix);
    csv_string(f, ph->name);
    fprintf(f, ",%s,%s,%.9f,%.9f,%.9f,%zu\n", job_kind_name(ph->kind), sum->status, sum->t_start,
            sum->t_end, sum->start_skew, d->nranks);
    fprintf(f,
            "%srank,iteration,host,completed,file_rank,rpc_window_read,rpc_window_write,"
            "t_start,t_end,t_open,t_io,t_fsync,t_close,t_md5,bytes,ops,errors,"
            "verify_failures,grants,contended,violations\n",
            prefix);
    for (size_t i = 0; i < d->nrows; i++) {
        const struct rank_record *r = &d->rows[i];
        fprintf(f,
                "%s%d,%d,%d,%d,%d,%d,%d,%.9f,%.9f,%.9f,%.9f,%.9f,%.9f,%.9f,%" PRIu64 ",%" PRIu64
                ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
                prefix, r->rank, r->iteration, r->host, r->completed, r->file_rank,
                r->rpc_window_read, r->rpc_window_write, r->t_start, r->t_end, r->t_open, r->t_io,
                r->t_fsync, r->t_close, r->t_md5, r->bytes, r->ops, r->errors, r->verify_failures,
                r->grants, r->contended, r->violations);
    }
    fprintf(f, "%serror_rank,op,errno,count,first_time,first_path\n", prefix);
    for (size_t i = 0; i < d->nerrors; i++) {
        const struct err_entry *e = &d->errors[i];
        fprintf(f, "%s%d,%s,%d,%" PRIu64 ",%.9f,", prefix, e->rank, op_name((enum op)e->op), e->err,
                e->count, e->first_time);
        csv_string(f, e->first_path);
        fputc('\n', f);
    }
}

struct fallback_args {
    const struct phase *ph;
    const struct phase_summary *sum;
    const struct phase_data *d;
};

static void fallback_write_file(FILE *f, const void *arg)
{
    const struct fallback_args *a = arg;
    fallback_write(f, "", a->ph, a->sum, a->d);
}

int results_fallback_phase(int dirfd, const char *results_leaf, const char *results_shown,
                           const struct phase *ph, const struct phase_summary *sum,
                           const struct phase_data *d, FILE *stream, char *where, size_t wherelen)
{
    char leaf[RESULTS_FALLBACK_PATH_MAX], shown[RESULTS_FALLBACK_PATH_MAX];
    int n = snprintf(leaf, sizeof leaf, "%s.%s.lost.csv", results_leaf, ph->name);
    snprintf(shown, sizeof shown, "%s.%s.lost.csv", results_shown, ph->name);
    struct fallback_args a = {ph, sum, d};
    struct safeout out;
    char err[512];
    if (n > 0 && (size_t)n < sizeof leaf &&
        safeout_prepare_at(&out, dirfd, leaf, shown, err, sizeof err) == 0) {
        int rc = safeout_write(&out, fallback_write_file, &a, err, sizeof err);
        safeout_close(&out);
        if (rc == 0) {
            snprintf(where, wherelen, "%s", shown);
            return 0;
        }
    }
    if (!stream)
        return -1;
    fallback_write(stream, "herd-lost,", ph, sum, d);
    fflush(stream);
    snprintf(where, wherelen, "stderr");
    return ferror(stream) ? -1 : 1;
}
