/* results_tables.h — every table of the results file, declared once:
 * where it lives, the C record a row is written from, and its columns
 * (name, type, place in the record). The writers (results.c,
 * results_phase.c, results_monitor.c, results_fallback.c) write a table
 * through its declaration and nothing else; `herd tables` prints the list
 * (analysis/herd_tables.json is that output, which the analysis tools
 * check every file against), and tests/integration/test_results_tables.py
 * ties the list to that file, to docs/results-format.md and to what a run
 * writes. A new column is one FIELD line here (and its meaning in the
 * docs). Knows no HDF5. */
#ifndef HERD_RESULTS_TABLES_H
#define HERD_RESULTS_TABLES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model.h"

/* A column: its name, where its value sits in the row's C record, and its
 * type in the file. */
enum field_kind { FIELD_I32, FIELD_U64, FIELD_F64, FIELD_STR };
struct field {
    const char *name;
    size_t offset;
    enum field_kind kind;
    size_t len; /* bytes of the value; FIELD_STR: terminating NUL included */
};
/* clang-format off */
#define FIELD(name, type, member, kind) \
    {name, offsetof(type, member), kind, sizeof(((type *)0)->member)}
/* clang-format on */

/* A table: its place in the file ("/phases/<name>/ranks": the dataset is
 * the last part), its columns in file order, and the C record they are
 * read from (row_size bytes a row). */
struct results_table {
    const char *path;
    const struct field *fields;
    size_t nfields;
    size_t row_size;
};

/* The dataset's name: the path's last part. */
const char *results_table_name(const struct results_table *t);

/* Every table, in the order docs/results-format.md describes them; *n is
 * set to their count. */
const struct results_table *const *results_tables(size_t *n);

/* The list as JSON (herd tables): {"tables": [{"path": ..., "columns":
 * [[name, type], ...]}, ...]} with types int32, uint64, float64, S<bytes>. */
void results_tables_print(FILE *out);

/* ---- rows the writers convert to from the run's records (model.h) ---- */

#define ERRNO_NAME_LEN 32
#define ERR_MESSAGE_LEN 64

struct host_row { /* /hosts: a host_info and its index */
    int32_t host;
    char hostname[RESULTS_HOST_MAX];
    char mount_source[RESULTS_HOST_MAX];
    char mount_point[RESULTS_HOST_MAX];
    char fstype[32];
    char mount_options[512];
    int32_t read_ahead_kb;
};

struct rank_row { /* /ranks: a rank_info and its host's name */
    int32_t rank;
    int32_t host;
    char hostname[RESULTS_HOST_MAX];
    int32_t pid;
    double clock_offset;
    double clock_error;
};

struct error_row { /* errors: an err_entry with its op and errno named */
    int32_t rank;
    int32_t client;
    char op[OP_NAME_LEN];
    int32_t err;
    char errno_name[ERRNO_NAME_LEN];
    char message[ERR_MESSAGE_LEN];
    uint64_t count;
    char first_path[ERRTAB_PATH_MAX];
    double first_time;
    char status[ERRTAB_STATUS_MAX];
};

struct stuck_row { /* stuck: a stuck_entry with its op named */
    int32_t rank;
    int32_t client;
    char op[OP_NAME_LEN];
    char path[ERRTAB_PATH_MAX];
    double since;
    double noticed;
    double returned;
};

struct op_row { /* ops: one (rank, op) of op_stats */
    int32_t rank;
    char op[OP_NAME_LEN];
    uint64_t count;
    double seconds;
};

struct op_summary_row { /* op_summary: a summary_op with its op named */
    char op[OP_NAME_LEN];
    uint64_t calls;
    double seconds, ops_per_s;
    double p50_s, p90_s, p99_s, max_s;
    uint64_t items;
    double step_s, items_per_s;
};

struct meta_step_row { /* meta_steps: a meta_step_record with names */
    int32_t rank;
    int32_t client;
    char step[8];
    char op[OP_NAME_LEN];
    double t_start, t_end;
    uint64_t items;
};

/* ---- the tables ---- */

extern const struct results_table table_hosts, table_ranks, table_usage;
extern const struct results_table table_phase_ranks, table_errors, table_stuck, table_ops,
    table_op_summary, table_meta_steps, table_holds, table_steps;
extern const struct results_table table_samples, table_metrics, table_processes, table_disks,
    table_notes, table_marks, table_clients, table_client_ops;

#endif
