/* results_fallback.c — a lost phase as CSV (results_fallback.h). Strings
 * are quoted with doubled quotes and control bytes replaced, so that every
 * line parses as CSV whatever a path holds. */
#include "results_fallback.h"

#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "results_tables.h"
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

/* A table's column names, and one row of its C record, as CSV lines. */
static void csv_header(FILE *f, const char *prefix, const struct results_table *t)
{
    fputs(prefix, f);
    for (size_t c = 0; c < t->nfields; c++)
        fprintf(f, "%s%s", c ? "," : "", t->fields[c].name);
    fputc('\n', f);
}

static void csv_row(FILE *f, const char *prefix, const struct results_table *t, const void *row)
{
    fputs(prefix, f);
    for (size_t c = 0; c < t->nfields; c++) {
        const struct field *col = &t->fields[c];
        const char *at = (const char *)row + col->offset;
        int32_t i32;
        uint64_t u64;
        double f64;
        if (c)
            fputc(',', f);
        switch (col->kind) {
        case FIELD_I32:
            memcpy(&i32, at, sizeof i32);
            fprintf(f, "%" PRId32, i32);
            break;
        case FIELD_U64:
            memcpy(&u64, at, sizeof u64);
            fprintf(f, "%" PRIu64, u64);
            break;
        case FIELD_F64:
            memcpy(&f64, at, sizeof f64);
            fprintf(f, "%.9f", f64);
            break;
        case FIELD_STR: {
            char text[4096];
            snprintf(text, sizeof text, "%.*s", (int)col->len, at);
            csv_string(f, text);
            break;
        }
        }
    }
    fputc('\n', f);
}

static void fallback_write(FILE *f, const char *prefix, const struct phase *ph,
                           const struct phase_summary *sum, const struct phase_data *d)
{
    fprintf(f, "%sphase,kind,status,t_start,t_end,start_skew,nranks\n", prefix);
    fprintf(f, "%s", prefix);
    csv_string(f, ph->name);
    fprintf(f, ",%s,%s,%.9f,%.9f,%.9f,%zu\n", job_kind_name(ph->kind), sum->status, sum->t_start,
            sum->t_end, sum->start_skew, d->nranks);
    csv_header(f, prefix, &table_phase_ranks);
    for (size_t i = 0; i < d->nrows; i++)
        csv_row(f, prefix, &table_phase_ranks, &d->rows[i]);
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
