/* results.c — the results file (HDF5): root attributes, /hosts and /ranks
 * at start, then one group /phases/<name> per phase as soon as it ends (its
 * attributes, per-rank rows, error table and latency histograms), saved
 * after every write so a crash loses at most the phase that was running.
 * The file lives in memory and each save replaces the whole file on disk
 * by rename (h5image.h): a kill at any instant leaves the last save.
 *
 * Only the results writers (this file, results_monitor.c and their
 * helpers in h5util.c and h5image.c) know HDF5, and only rank 0 calls
 * them, through the serial API (the core driver, which works on the
 * parallel build). HDF5's
 * automatic error printing is off: every failure becomes one line in the
 * caller's err buffer, and nothing here aborts. The layout is documented in
 * docs/results-format.md; keep the two in step. */
#include "results.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hdf5.h>

#include "h5image.h"
#include "h5util.h"
#include "ops.h"
#include "results_monitor.h"
#include "summary.h"
#define ERRNO_NAME_LEN 32
#define ERR_MESSAGE_LEN 64
/* What every save but the last keeps free beyond the file's next copy:
 * room for the final status and for the lost phases' CSVs. */
#define SPACE_MARGIN (1024 * 1024)

struct results {
    struct h5image *image; /* the file, in memory, saved by rename */
    hid_t file;            /* its HDF5 file */
    hid_t phases;          /* the /phases group */
    hid_t monitor;         /* the /monitor group */
    hid_t str;             /* variable-length UTF-8 string type */
    hid_t boolean;         /* int8 enum {FALSE, TRUE}: what h5py reads as bool */
    char path[];           /* for messages */
};

/* ---- the run: root, /hosts, /ranks ---- */

struct host_row {
    int32_t host;
    char hostname[RESULTS_HOST_MAX];
    char mount_source[RESULTS_HOST_MAX];
    char mount_point[RESULTS_HOST_MAX];
    char fstype[32];
    char mount_options[512];
    int32_t read_ahead_kb;
};

static const struct field host_fields[] = {
    FIELD("host", struct host_row, host, FIELD_I32),
    FIELD("hostname", struct host_row, hostname, FIELD_STR),
    FIELD("mount_source", struct host_row, mount_source, FIELD_STR),
    FIELD("mount_point", struct host_row, mount_point, FIELD_STR),
    FIELD("fstype", struct host_row, fstype, FIELD_STR),
    FIELD("mount_options", struct host_row, mount_options, FIELD_STR),
    FIELD("read_ahead_kb", struct host_row, read_ahead_kb, FIELD_I32),
};

struct rank_row {
    int32_t rank;
    int32_t host;
    char hostname[RESULTS_HOST_MAX];
    int32_t pid;
    double clock_offset;
    double clock_error;
};

static const struct field rank_fields[] = {
    FIELD("rank", struct rank_row, rank, FIELD_I32),
    FIELD("host", struct rank_row, host, FIELD_I32),
    FIELD("hostname", struct rank_row, hostname, FIELD_STR),
    FIELD("pid", struct rank_row, pid, FIELD_I32),
    FIELD("clock_offset", struct rank_row, clock_offset, FIELD_F64),
    FIELD("clock_error", struct rank_row, clock_error, FIELD_F64),
};

static int root_attrs(const struct results *r, const struct run_info *run, char *err, size_t errlen)
{
    hid_t f = r->file;
    unsigned maj = 0, min = 0, rel = 0;
    char hdf5_version[48];
    if (H5get_libversion(&maj, &min, &rel) < 0)
        return h5_fail(err, errlen, "cannot read the HDF5 library version");
    snprintf(hdf5_version, sizeof hdf5_version, "%u.%u.%u", maj, min, rel);

    if (h5_attr_str(r->str, f, "tool", "herd", err, errlen) < 0 ||
        h5_attr_str(r->str, f, "version", run->version, err, errlen) < 0 ||
        h5_attr_str(r->str, f, "run_id", run->run_id, err, errlen) < 0 ||
        h5_attr_str(r->str, f, "status", "partial", err, errlen) < 0 ||
        h5_attr_str(r->str, f, "start_utc", run->start_utc, err, errlen) < 0 ||
        h5_attr_str(r->str, f, "end_utc", "", err, errlen) < 0 ||
        h5_attr_f64(f, "epoch_unix", run->epoch_unix, err, errlen) < 0 ||
        h5_attr_i32(f, "nranks", run->nranks, err, errlen) < 0 ||
        h5_attr_i32(f, "nhosts", run->nhosts, err, errlen) < 0 ||
        h5_attr_str(r->str, f, "command_line", run->command_line, err, errlen) < 0 ||
        h5_attr_str(r->str, f, "job_path", run->job_path, err, errlen) < 0 ||
        h5_attr_str(r->str, f, "job_text", run->job_text, err, errlen) < 0 ||
        h5_attr_str(r->str, f, "target", run->target, err, errlen) < 0 ||
        h5_attr_str(r->str, f, "mpi_version", run->mpi_version, err, errlen) < 0 ||
        h5_attr_str(r->str, f, "hdf5_version", hdf5_version, err, errlen) < 0 ||
        h5_attr_f64(f, "clock_sync_seconds", run->clock_sync_seconds, err, errlen) < 0 ||
        h5_attr_i32(f, "exit_code", -1, err, errlen) < 0 ||
        h5_attr_f64(f, "startup_seconds", -1, err, errlen) < 0)
        return -1;
    return 0;
}

static void host_fill(void *out, size_t i, const void *src)
{
    const struct host_info *h = &((const struct host_info *)src)[i];
    struct host_row *row = out;
    row->host = (int32_t)i;
    h5_str_copy(row->hostname, sizeof row->hostname, h->hostname, sizeof h->hostname);
    h5_str_copy(row->mount_source, sizeof row->mount_source, h->mount_source,
                sizeof h->mount_source);
    h5_str_copy(row->mount_point, sizeof row->mount_point, h->mount_point, sizeof h->mount_point);
    h5_str_copy(row->fstype, sizeof row->fstype, h->fstype, sizeof h->fstype);
    h5_str_copy(row->mount_options, sizeof row->mount_options, h->mount_options,
                sizeof h->mount_options);
    row->read_ahead_kb = h->read_ahead_kb;
}

static int hosts_write(hid_t loc, const struct host_info *hosts, int nhosts, char *err,
                       size_t errlen)
{
    return h5_table_fill(loc, "hosts", host_fields, NFIELDS(host_fields), sizeof(struct host_row),
                         nhosts > 0 ? (size_t)nhosts : 0, host_fill, hosts, err, errlen);
}

/* What a /ranks row is made of: the ranks and the hosts they name. */
struct ranks_src {
    const struct rank_info *ranks;
    const struct host_info *hosts;
    int nhosts;
};

static void rank_fill(void *out, size_t i, const void *src)
{
    const struct ranks_src *s = src;
    const struct rank_info *k = &s->ranks[i];
    struct rank_row *row = out;
    row->rank = k->rank;
    row->host = k->host;
    if (s->hosts != NULL && k->host >= 0 && k->host < s->nhosts)
        h5_str_copy(row->hostname, sizeof row->hostname, s->hosts[k->host].hostname,
                    sizeof s->hosts[k->host].hostname);
    row->pid = k->pid;
    row->clock_offset = k->clock_offset;
    row->clock_error = k->clock_error;
}

static int ranks_write(hid_t loc, const struct rank_info *ranks, int nranks,
                       const struct host_info *hosts, int nhosts, char *err, size_t errlen)
{
    const struct ranks_src src = {ranks, hosts, nhosts};
    return h5_table_fill(loc, "ranks", rank_fields, NFIELDS(rank_fields), sizeof(struct rank_row),
                         nranks > 0 ? (size_t)nranks : 0, rank_fill, &src, err, errlen);
}

static void results_free(struct results *r)
{
    if (r == NULL)
        return;
    if (r->phases >= 0)
        H5Gclose(r->phases);
    if (r->monitor >= 0)
        H5Gclose(r->monitor);
    if (r->str >= 0)
        H5Tclose(r->str);
    if (r->boolean >= 0)
        H5Tclose(r->boolean);
    char ignored[64];
    h5image_close(r->image, ignored, sizeof ignored);
    free(r);
}

/* After name was added under parent (rc: how that went), save the file;
 * when either failed, drop name again: what the file holds in memory is
 * then what its last save holds, and a group in it is a whole one. */
static int results_save_added(struct results *r, hid_t parent, const char *name, int rc, char *err,
                              size_t errlen)
{
    if (rc == 0 && h5image_save(r->image, SPACE_MARGIN, err, errlen) == 0)
        return 0;
    H5Ldelete(parent, name, H5P_DEFAULT); /* best effort; err says what failed */
    return -1;
}

struct results *results_create(struct safeout *out, const char *path, const struct run_info *run,
                               const struct host_info *hosts, int nhosts,
                               const struct rank_info *ranks, int nranks, char *err, size_t errlen)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (path == NULL || run == NULL) {
        h5_msg_fail(err, errlen, "results: no path or run information");
        return NULL;
    }
    size_t plen = strlen(path);
    struct results *r = malloc(sizeof *r + plen + 1);
    if (r == NULL) {
        h5_msg_fail(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    r->image = NULL;
    r->file = r->phases = r->monitor = r->str = r->boolean = H5I_INVALID_HID;
    memcpy(r->path, path, plen + 1);

    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    int rc = -1;
    if (fcpl < 0 || H5Pset_link_creation_order(fcpl, CRT_ORDER) < 0 ||
        H5Pset_attr_creation_order(fcpl, CRT_ORDER) < 0) {
        h5_fail(err, errlen, "cannot set up file properties");
        goto out;
    }
    r->str = h5_type_var_string();
    r->boolean = h5_type_bool();
    if (r->str < 0 || r->boolean < 0) {
        h5_fail(err, errlen, "cannot build string and bool types");
        goto out;
    }
    r->image = h5image_create(fcpl, out, err, errlen);
    if (r->image == NULL)
        goto out;
    r->file = h5image_file(r->image);
    if (root_attrs(r, run, err, errlen) < 0 ||
        hosts_write(r->file, hosts, nhosts, err, errlen) < 0 ||
        ranks_write(r->file, ranks, nranks, hosts, nhosts, err, errlen) < 0)
        goto out;
    r->phases = h5_group_create(r->file, "phases", err, errlen);
    if (r->phases < 0)
        goto out;
    r->monitor = h5_group_create(r->file, "monitor", err, errlen);
    if (r->monitor < 0 ||
        h5_attr_str(r->str, r->monitor, "host", run->monitor_host, err, errlen) < 0 ||
        h5_attr_i32(r->monitor, "rank", run->monitor_rank, err, errlen) < 0 ||
        h5_attr_f64(r->monitor, "interval", run->monitor_interval, err, errlen) < 0 ||
        h5_attr_str(r->str, r->monitor, "url", run->monitor_url, err, errlen) < 0 ||
        h5image_save(r->image, SPACE_MARGIN, err, errlen) < 0)
        goto out;
    rc = 0;
out:
    if (fcpl >= 0)
        H5Pclose(fcpl);
    if (rc < 0) { /* nothing was put in place */
        h5_msg_prefix(err, errlen, "%s", path);
        results_free(r);
        return NULL;
    }
    return r;
}

const char *results_file_check(int fd, off_t size)
{
    /* HDF5's superblock: at 0, or at 512 and each doubling (a user block). */
    static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    for (off_t at = 0; at + (off_t)sizeof sig <= size; at = at ? 2 * at : 512) {
        unsigned char buf[sizeof sig];
        if (pread(fd, buf, sizeof buf, at) != (ssize_t)sizeof buf)
            break;
        if (memcmp(buf, sig, sizeof sig) == 0)
            return NULL;
    }
    return "not an HDF5 file";
}

/* ---- phases ---- */

static const struct field record_fields[] = {
    FIELD("rank", struct rank_record, rank, FIELD_I32),
    FIELD("iteration", struct rank_record, iteration, FIELD_I32),
    FIELD("host", struct rank_record, host, FIELD_I32),
    FIELD("completed", struct rank_record, completed, FIELD_I32),
    FIELD("file_rank", struct rank_record, file_rank, FIELD_I32),
    FIELD("rpc_window_read", struct rank_record, rpc_window_read, FIELD_I32),
    FIELD("rpc_window_write", struct rank_record, rpc_window_write, FIELD_I32),
    FIELD("t_start", struct rank_record, t_start, FIELD_F64),
    FIELD("t_end", struct rank_record, t_end, FIELD_F64),
    FIELD("t_open", struct rank_record, t_open, FIELD_F64),
    FIELD("t_io", struct rank_record, t_io, FIELD_F64),
    FIELD("t_fsync", struct rank_record, t_fsync, FIELD_F64),
    FIELD("t_close", struct rank_record, t_close, FIELD_F64),
    FIELD("t_md5", struct rank_record, t_md5, FIELD_F64),
    FIELD("bytes", struct rank_record, bytes, FIELD_U64),
    FIELD("ops", struct rank_record, ops, FIELD_U64),
    FIELD("errors", struct rank_record, errors, FIELD_U64),
    FIELD("verify_failures", struct rank_record, verify_failures, FIELD_U64),
    FIELD("grants", struct rank_record, grants, FIELD_U64),
    FIELD("contended", struct rank_record, contended, FIELD_U64),
    FIELD("violations", struct rank_record, violations, FIELD_U64),
};

struct error_row {
    int32_t rank;
    char op[OP_NAME_LEN];
    int32_t err;
    char errno_name[ERRNO_NAME_LEN];
    char message[ERR_MESSAGE_LEN];
    uint64_t count;
    char first_path[ERRTAB_PATH_MAX];
    double first_time;
    char status[ERRTAB_STATUS_MAX];
};

static const struct field error_fields[] = {
    FIELD("rank", struct error_row, rank, FIELD_I32),
    FIELD("op", struct error_row, op, FIELD_STR),
    FIELD("errno", struct error_row, err, FIELD_I32),
    FIELD("errno_name", struct error_row, errno_name, FIELD_STR),
    FIELD("message", struct error_row, message, FIELD_STR),
    FIELD("count", struct error_row, count, FIELD_U64),
    FIELD("first_path", struct error_row, first_path, FIELD_STR),
    FIELD("first_time", struct error_row, first_time, FIELD_F64),
    FIELD("status", struct error_row, status, FIELD_STR),
};

/* Every job key as an attribute: sizes and ints as int64, durations as
 * double seconds, bools as bool, the rest as canonical text. A key whose
 * name is already an attribute (kind) keeps the value written first. */
static int key_attrs(const struct results *r, hid_t g, const struct phase *ph, char *err,
                     size_t errlen)
{
    char text[JOB_PATH_MAX + 64];
    for (size_t i = 0; i < job_key_count(); i++) {
        const struct job_key *k = job_key_at(i);
        const char *field = job_key_value(k, ph);
        htri_t exists = H5Aexists(g, k->name);
        if (exists < 0)
            return h5_fail(err, errlen, "cannot look up attribute '%s'", k->name);
        if (exists > 0)
            continue;
        int rc;
        switch (k->type) {
        case KEY_SIZE: {
            uint64_t v;
            memcpy(&v, field, sizeof v);
            rc = h5_attr_i64(g, k->name, (int64_t)v, err, errlen);
            break;
        }
        case KEY_INT: {
            int64_t v;
            memcpy(&v, field, sizeof v);
            rc = h5_attr_i64(g, k->name, v, err, errlen);
            break;
        }
        case KEY_DURATION: {
            double v;
            memcpy(&v, field, sizeof v);
            rc = h5_attr_f64(g, k->name, v, err, errlen);
            break;
        }
        case KEY_BOOL: {
            bool b;
            memcpy(&b, field, sizeof b);
            int8_t v = b ? 1 : 0;
            rc = h5_attr_set(g, k->name, r->boolean, &v, err, errlen);
            break;
        }
        default:
            job_key_format(k, ph, text, sizeof text);
            rc = h5_attr_str(r->str, g, k->name, text, err, errlen);
            break;
        }
        if (rc < 0)
            return -1;
    }
    return 0;
}

static void error_fill(void *out, size_t i, const void *src)
{
    const struct err_entry *e = &((const struct err_entry *)src)[i];
    struct error_row *row = out;
    int en = e->err < 0 ? -e->err : e->err;
    row->rank = e->rank;
    snprintf(row->op, sizeof row->op, "%s", op_name((enum op)e->op));
    row->err = en;
    errtab_errno_name(en, row->errno_name, sizeof row->errno_name);
    snprintf(row->message, sizeof row->message, "%s", strerror(en));
    row->count = e->count;
    h5_str_copy(row->first_path, sizeof row->first_path, e->first_path, sizeof e->first_path);
    row->first_time = e->first_time;
    h5_str_copy(row->status, sizeof row->status, e->status, sizeof e->status);
}

static int errors_write(hid_t g, const struct err_entry *errors, size_t n, char *err, size_t errlen)
{
    return h5_table_fill(g, "errors", error_fields, NFIELDS(error_fields), sizeof(struct error_row),
                         n, error_fill, errors, err, errlen);
}

struct stuck_row {
    int32_t rank;
    char op[OP_NAME_LEN];
    char path[ERRTAB_PATH_MAX];
    double since;
    double noticed;
    double returned;
};

static const struct field stuck_fields[] = {
    FIELD("rank", struct stuck_row, rank, FIELD_I32),
    FIELD("op", struct stuck_row, op, FIELD_STR),
    FIELD("path", struct stuck_row, path, FIELD_STR),
    FIELD("since", struct stuck_row, since, FIELD_F64),
    FIELD("noticed", struct stuck_row, noticed, FIELD_F64),
    FIELD("returned", struct stuck_row, returned, FIELD_F64),
};

static void stuck_fill(void *out, size_t i, const void *src)
{
    const struct stuck_entry *e = &((const struct stuck_entry *)src)[i];
    struct stuck_row *row = out;
    row->rank = e->rank;
    snprintf(row->op, sizeof row->op, "%s", op_name((enum op)e->op));
    h5_str_copy(row->path, sizeof row->path, e->path, sizeof e->path);
    row->since = e->since;
    row->noticed = e->noticed;
    row->returned = e->returned;
}

static int stuck_write(hid_t g, const struct stuck_entry *stuck, size_t n, char *err, size_t errlen)
{
    return h5_table_fill(g, "stuck", stuck_fields, NFIELDS(stuck_fields), sizeof(struct stuck_row),
                         n, stuck_fill, stuck, err, errlen);
}

/* One op's histogram with its summary attributes. */
static int latency_op_write(hid_t g, const char *name, const struct hist *h, char *err,
                            size_t errlen)
{
    uint64_t count = hist_count(h), max = 0;
    double sum = 0;
    for (int i = 0; i < HIST_BUCKETS; i++) {
        if (h->counts[i] == 0)
            continue;
        uint64_t lo = hist_bucket_lower(i), hi = hist_bucket_upper(i);
        /* midpoint of the integer values lo .. hi-1 the bucket holds */
        double mid = hi > lo ? (double)lo + (double)(hi - lo - 1) / 2.0 : (double)lo;
        sum += (double)h->counts[i] * mid;
        max = hi;
    }
    hid_t d = h5_dset_write(g, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, sizeof(uint64_t),
                            HIST_BUCKETS, h->counts, err, errlen);
    if (d < 0)
        return -1;
    if (h5_attr_u64(d, "count", count, err, errlen) < 0 ||
        h5_attr_u64(d, "p50_ns", hist_quantile(h, 0.50), err, errlen) < 0 ||
        h5_attr_u64(d, "p99_ns", hist_quantile(h, 0.99), err, errlen) < 0 ||
        h5_attr_u64(d, "max_ns", max, err, errlen) < 0 ||
        h5_attr_f64(d, "mean_ns", count > 0 ? sum / (double)count : 0.0, err, errlen) < 0) {
        H5Dclose(d);
        return -1;
    }
    return h5_dset_close(d, name, err, errlen);
}

static int latency_write(hid_t g, const struct hist *hists, char *err, size_t errlen)
{
    hid_t lat = h5_group_create(g, "latency", err, errlen);
    if (lat < 0)
        return -1;
    uint64_t bounds[HIST_BUCKETS];
    int rc = h5_attr_i32(lat, "sub_bits", HIST_SUB_BITS, err, errlen);
    if (rc == 0)
        rc = h5_attr_i32(lat, "max_bits", HIST_MAX_BITS, err, errlen);
    for (int pass = 0; rc == 0 && pass < 2; pass++) {
        const char *name = pass == 0 ? "bucket_lower_ns" : "bucket_upper_ns";
        for (int i = 0; i < HIST_BUCKETS; i++)
            bounds[i] = pass == 0 ? hist_bucket_lower(i) : hist_bucket_upper(i);
        hid_t d = h5_dset_write(lat, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, sizeof(uint64_t),
                                HIST_BUCKETS, bounds, err, errlen);
        rc = d < 0 ? -1 : h5_dset_close(d, name, err, errlen);
    }
    for (int op = 0; rc == 0 && hists != NULL && op < OP_COUNT; op++)
        if (hist_count(&hists[op]) > 0)
            rc = latency_op_write(lat, op_name((enum op)op), &hists[op], err, errlen);
    if (H5Gclose(lat) < 0 && rc == 0)
        rc = h5_fail(err, errlen, "cannot close group 'latency'");
    return rc;
}

static const struct field hold_fields[] = {
    FIELD("rank", struct hold, rank, FIELD_I32),
    FIELD("exclusive", struct hold, exclusive, FIELD_I32),
    FIELD("granted", struct hold, granted, FIELD_F64),
    FIELD("released", struct hold, released, FIELD_F64),
    FIELD("start", struct hold, start, FIELD_U64),
    FIELD("len", struct hold, len, FIELD_U64),
    FIELD("asked", struct hold, asked, FIELD_F64),
};

struct op_row {
    int32_t rank;
    char op[OP_NAME_LEN];
    uint64_t count;
    double seconds;
};

static const struct field op_fields[] = {
    FIELD("rank", struct op_row, rank, FIELD_I32),
    FIELD("op", struct op_row, op, FIELD_STR),
    FIELD("count", struct op_row, count, FIELD_U64),
    FIELD("seconds", struct op_row, seconds, FIELD_F64),
};

/* One row per (rank, op) that a rank issued at least once. */
static int ops_write(hid_t g, const struct op_stats *ops, size_t nranks, char *err, size_t errlen)
{
    struct op_row *rows = calloc(nranks * OP_COUNT + 1, sizeof *rows);
    if (rows == NULL)
        return h5_msg_fail(err, errlen, "out of memory for the ops table");
    size_t n = 0;
    for (size_t rank = 0; ops && rank < nranks; rank++)
        for (int op = 0; op < OP_COUNT; op++)
            if (ops[rank].count[op]) {
                rows[n].rank = (int32_t)rank;
                snprintf(rows[n].op, sizeof rows[n].op, "%s", op_name((enum op)op));
                rows[n].count = ops[rank].count[op];
                rows[n].seconds = ops[rank].seconds[op];
                n++;
            }
    int rc =
        h5_table_write(g, "ops", op_fields, NFIELDS(op_fields), sizeof *rows, rows, n, err, errlen);
    free(rows);
    return rc;
}

/* One row of /phases/<name>/op_summary: an op over all ranks. */
struct op_summary_row {
    char op[OP_NAME_LEN];
    uint64_t calls;
    double seconds, ops_per_s;
    double p50_s, p90_s, p99_s, max_s;
    uint64_t items;
    double step_s, items_per_s;
};

static const struct field op_summary_fields[] = {
    FIELD("op", struct op_summary_row, op, FIELD_STR),
    FIELD("calls", struct op_summary_row, calls, FIELD_U64),
    FIELD("seconds", struct op_summary_row, seconds, FIELD_F64),
    FIELD("ops_per_s", struct op_summary_row, ops_per_s, FIELD_F64),
    FIELD("p50_s", struct op_summary_row, p50_s, FIELD_F64),
    FIELD("p90_s", struct op_summary_row, p90_s, FIELD_F64),
    FIELD("p99_s", struct op_summary_row, p99_s, FIELD_F64),
    FIELD("max_s", struct op_summary_row, max_s, FIELD_F64),
    FIELD("items", struct op_summary_row, items, FIELD_U64),
    FIELD("step_s", struct op_summary_row, step_s, FIELD_F64),
    FIELD("items_per_s", struct op_summary_row, items_per_s, FIELD_F64),
};

/* /phases/<meta>/meta_steps: each rank's time and items in each step. */
struct meta_step_row {
    int32_t rank;
    char step[8];
    char op[OP_NAME_LEN];
    double t_start, t_end;
    uint64_t items;
};

static const struct field meta_step_fields[] = {
    FIELD("rank", struct meta_step_row, rank, FIELD_I32),
    FIELD("step", struct meta_step_row, step, FIELD_STR),
    FIELD("op", struct meta_step_row, op, FIELD_STR),
    FIELD("t_start", struct meta_step_row, t_start, FIELD_F64),
    FIELD("t_end", struct meta_step_row, t_end, FIELD_F64),
    FIELD("items", struct meta_step_row, items, FIELD_U64),
};

static void meta_step_fill(void *out, size_t i, const void *src)
{
    const struct meta_step_record *m = &((const struct meta_step_record *)src)[i];
    struct meta_step_row *row = out;
    row->rank = m->rank;
    snprintf(row->step, sizeof row->step, "%s", job_meta_step_name((enum meta_step)m->step));
    snprintf(row->op, sizeof row->op, "%s", op_name((enum op)m->op));
    row->t_start = m->t_start;
    row->t_end = m->t_end;
    row->items = m->items;
}

/* The table only where a meta phase's steps were gathered. */
static int meta_steps_write(hid_t g, const struct phase_data *d, char *err, size_t errlen)
{
    if (d->nmeta_steps == 0)
        return 0;
    return h5_table_fill(g, "meta_steps", meta_step_fields, NFIELDS(meta_step_fields),
                         sizeof(struct meta_step_row), d->nmeta_steps, meta_step_fill,
                         d->meta_steps, err, errlen);
}

/* summary_* attributes and the op_summary table (ops with calls only). */
static int summary_write(const struct results *r, hid_t g, const struct phase_data *d, char *err,
                         size_t errlen)
{
    const struct phase_stats *st = d->stats;
    const struct {
        const char *name;
        double v;
    } f64[] = {
        {"summary_t_min", st->t_min},         {"summary_t_median", st->t_median},
        {"summary_t_max", st->t_max},         {"summary_first_done", st->first_done},
        {"summary_last_done", st->last_done}, {"summary_mib_per_s", st->mib_per_s},
        {"summary_ops_per_s", st->ops_per_s},
    };
    const struct {
        const char *name;
        uint64_t v;
    } u64[] = {
        {"summary_rows", (uint64_t)st->rows},   {"summary_ranks", (uint64_t)st->ranks},
        {"summary_bytes", st->bytes},           {"summary_ops", st->ops},
        {"summary_errors", st->errors},         {"summary_verify_failures", st->verify_failures},
        {"summary_grants", st->grants},         {"summary_contended", st->contended},
        {"summary_violations", st->violations}, {"summary_stuck", st->stuck},
    };
    for (size_t i = 0; i < sizeof f64 / sizeof f64[0]; i++)
        if (h5_attr_f64(g, f64[i].name, f64[i].v, err, errlen) < 0)
            return -1;
    for (size_t i = 0; i < sizeof u64 / sizeof u64[0]; i++)
        if (h5_attr_i64(g, u64[i].name, (int64_t)u64[i].v, err, errlen) < 0)
            return -1;
    if (h5_attr_str(r->str, g, "summary_main_op", st->main_op >= 0 ? op_name(st->main_op) : "", err,
                    errlen) < 0)
        return -1;
    struct summary_op ops[OP_COUNT];
    struct op_summary_row rows[OP_COUNT];
    int n = summary_op_totals(d, st->last_done, ops);
    for (int i = 0; i < n; i++) {
        const struct summary_op *o = &ops[i];
        rows[i] = (struct op_summary_row){.calls = o->calls,
                                          .seconds = o->seconds,
                                          .ops_per_s = o->per_s,
                                          .p50_s = o->p50,
                                          .p90_s = o->p90,
                                          .p99_s = o->p99,
                                          .max_s = o->max,
                                          .items = o->items,
                                          .step_s = o->step_s,
                                          .items_per_s = o->items_per_s};
        snprintf(rows[i].op, sizeof rows[i].op, "%s", op_name((enum op)o->op));
    }
    return h5_table_write(g, "op_summary", op_summary_fields, NFIELDS(op_summary_fields),
                          sizeof rows[0], rows, (size_t)n, err, errlen);
}

/* A phase's attributes: kind, index, times, every key's value, and a
 * ladder step's place. */
static int phase_attrs_write(const struct results *r, hid_t g, const struct phase *ph,
                             const struct phase_summary *sum, char *err, size_t errlen)
{
    if (h5_attr_str(r->str, g, "kind", job_kind_name(ph->kind), err, errlen) < 0 ||
        h5_attr_i32(g, "index", sum->index, err, errlen) < 0 ||
        h5_attr_f64(g, "t_start", sum->t_start, err, errlen) < 0 ||
        h5_attr_f64(g, "t_end", sum->t_end, err, errlen) < 0 ||
        h5_attr_f64(g, "elapsed", sum->t_end - sum->t_start, err, errlen) < 0 ||
        h5_attr_f64(g, "start_skew", sum->start_skew, err, errlen) < 0 ||
        key_attrs(r, g, ph, err, errlen) < 0)
        return -1;
    if (ph->ladder[0] && /* one step of a load ladder */
        (h5_attr_str(r->str, g, "ladder", ph->ladder, err, errlen) < 0 ||
         h5_attr_i64(g, "step", ph->step, err, errlen) < 0 ||
         h5_attr_i64(g, "active_ranks", sum->active_ranks, err, errlen) < 0 ||
         h5_attr_i64(g, "active_hosts", sum->active_hosts, err, errlen) < 0))
        return -1;
    return 0;
}

/* A lock phase's holds table and its overlap attributes. */
static int holds_write(hid_t g, const struct phase_summary *sum, const struct phase_data *d,
                       char *err, size_t errlen)
{
    const struct holds_overlap *o = &sum->overlap;
    if (h5_table_write(g, "holds", hold_fields, NFIELDS(hold_fields), sizeof *d->holds, d->holds,
                       d->nholds, err, errlen) < 0 ||
        h5_attr_f64(g, "overlap_seconds", o->together, err, errlen) < 0 ||
        h5_attr_f64(g, "exclusive_overlap_seconds", o->exclusive_clash, err, errlen) < 0 ||
        h5_attr_i32(g, "max_holders", o->max_holders, err, errlen) < 0 ||
        h5_attr_f64(g, "wait_seconds", o->wait_seconds, err, errlen) < 0 ||
        h5_attr_i64(g, "waited_grants", (int64_t)o->waited, err, errlen) < 0)
        return -1;
    return 0;
}

static int phase_fill(const struct results *r, hid_t g, const struct phase *ph,
                      const struct phase_summary *sum, const struct phase_data *d, char *err,
                      size_t errlen)
{
    if (phase_attrs_write(r, g, ph, sum, err, errlen) < 0)
        return -1;
    if (d->nrows > 0 && d->rows == NULL)
        return h5_msg_fail(err, errlen, "no rank records given");
    if (d->nerrors > 0 && d->errors == NULL)
        return h5_msg_fail(err, errlen, "no error entries given");
    if (h5_table_write(g, "ranks", record_fields, NFIELDS(record_fields), sizeof *d->rows, d->rows,
                       d->nrows, err, errlen) < 0 ||
        errors_write(g, d->errors, d->nerrors, err, errlen) < 0 ||
        stuck_write(g, d->stuck, d->nstuck, err, errlen) < 0 ||
        ops_write(g, d->ops, d->nranks, err, errlen) < 0 ||
        meta_steps_write(g, d, err, errlen) < 0 ||
        (d->has_holds && holds_write(g, sum, d, err, errlen) < 0) ||
        latency_write(g, d->hists, err, errlen) < 0 ||
        (d->stats && summary_write(r, g, d, err, errlen) < 0))
        return -1;
    /* Written last: a group without status was cut short while written. */
    return h5_attr_str(r->str, g, "status", sum->status, err, errlen);
}

int results_write_phase(struct results *r, const struct phase *ph, const struct phase_summary *sum,
                        const struct phase_data *d, char *err, size_t errlen)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (r == NULL || ph == NULL || sum == NULL)
        return h5_msg_fail(err, errlen, "results: no file, phase or summary");
    const char *name = ph->name;
    if (name[0] == '\0' || strchr(name, '/') != NULL || strcmp(name, ".") == 0)
        return h5_msg_fail(err, errlen, "%s: phase name '%s' cannot name an HDF5 group", r->path,
                           name);
    htri_t exists = H5Lexists(r->phases, name, H5P_DEFAULT);
    if (exists < 0) {
        h5_fail(err, errlen, "cannot look up the phase");
        h5_msg_prefix(err, errlen, "%s: phase '%s'", r->path, name);
        return -1;
    }
    if (exists > 0)
        return h5_msg_fail(err, errlen, "%s: phase '%s' is already in the file", r->path, name);

    hid_t g = h5_group_create(r->phases, name, err, errlen);
    if (g < 0) {
        h5_msg_prefix(err, errlen, "%s: phase '%s'", r->path, name);
        return -1;
    }

    int rc = phase_fill(r, g, ph, sum, d, err, errlen);
    if (H5Gclose(g) < 0 && rc == 0)
        rc = h5_fail(err, errlen, "cannot close the group");
    rc = results_save_added(r, r->phases, name, rc, err, errlen);
    if (rc < 0)
        h5_msg_prefix(err, errlen, "%s: phase '%s'", r->path, name);
    return rc;
}

/* Root status, end_utc and exit_code, flushed. Without room for them the
 * file is left as it is (status partial): with nothing left to write, its
 * close still succeeds. */
int results_write_monitor(struct results *r, const struct monitor_append *a, char *err,
                          size_t errlen)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (r == NULL)
        return h5_msg_fail(err, errlen, "results: /monitor not written: no file");
    /* Rows the save could not take stay in memory: the next save has them. */
    int rc = results_monitor_append(r->monitor, a, err, errlen);
    if (rc == 0)
        rc = h5image_save(r->image, SPACE_MARGIN, err, errlen);
    if (rc < 0)
        h5_msg_prefix(err, errlen, "%s: /monitor", r->path);
    return rc;
}

int results_phase_timing(struct results *r, const char *phase, double gather_seconds,
                         double write_seconds, char *err, size_t errlen)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (r == NULL)
        return h5_msg_fail(err, errlen, "phase timing not recorded: no file");
    htri_t exists = H5Lexists(r->phases, phase, H5P_DEFAULT);
    if (exists <= 0)
        return h5_msg_fail(err, errlen, "%s: phase '%s' is not in the file", r->path, phase);
    hid_t g = H5Gopen2(r->phases, phase, H5P_DEFAULT);
    if (g < 0)
        return h5_fail(err, errlen, "%s: cannot open phase '%s'", r->path, phase);
    int rc = (h5_attr_f64(g, "gather_seconds", gather_seconds, err, errlen) < 0 ||
              h5_attr_f64(g, "write_seconds", write_seconds, err, errlen) < 0)
                 ? -1
                 : 0;
    H5Gclose(g);
    return rc;
}

int results_phase_server(struct results *r, const char *phase, const struct phase_server *s,
                         char *err, size_t errlen)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (r == NULL)
        return h5_msg_fail(err, errlen, "server CPU not recorded: no file");
    if (H5Lexists(r->phases, phase, H5P_DEFAULT) <= 0)
        return 0; /* a phase that is not in the file has nothing to add to */
    hid_t g = H5Gopen2(r->phases, phase, H5P_DEFAULT);
    if (g < 0)
        return h5_fail(err, errlen, "%s: cannot open phase '%s'", r->path, phase);
    int rc =
        (h5_attr_f64(g, "summary_cpu_mean", s->cpu_mean, err, errlen) < 0 ||
         h5_attr_f64(g, "summary_cpu_max", s->cpu_max, err, errlen) < 0 ||
         h5_attr_f64(g, "summary_nfsd_threads", s->nfsd_threads, err, errlen) < 0 ||
         h5_attr_f64(g, "summary_proc_cpu", s->proc_cpu, err, errlen) < 0 ||
         h5_attr_f64(g, "summary_proc_thread_max", s->proc_thread_max, err, errlen) < 0 ||
         h5_attr_f64(g, "summary_nfsd_packets_per_s", s->nfsd_packets_per_s, err, errlen) < 0 ||
         h5_attr_f64(g, "summary_nfsd_woken_share", s->nfsd_woken_share, err, errlen) < 0 ||
         (s->covered >= 0 && h5_attr_set(g, "monitor_covered", r->boolean,
                                         &(int8_t){s->covered == 1}, err, errlen) < 0))
            ? -1
            : 0;
    H5Gclose(g);
    return rc;
}

static const struct field step_fields[] = {
    FIELD("step", struct step_row, step, FIELD_I32),
    FIELD("phase", struct step_row, phase, FIELD_STR),
    FIELD("kind", struct step_row, kind, FIELD_STR),
    FIELD("status", struct step_row, status, FIELD_STR),
    FIELD("active_ranks", struct step_row, active_ranks, FIELD_I32),
    FIELD("active_hosts", struct step_row, active_hosts, FIELD_I32),
    FIELD("mib_per_s", struct step_row, mib_per_s, FIELD_F64),
    FIELD("ops_per_s", struct step_row, ops_per_s, FIELD_F64),
    FIELD("main_op", struct step_row, main_op, FIELD_STR),
    FIELD("p50_s", struct step_row, p50_s, FIELD_F64),
    FIELD("p99_s", struct step_row, p99_s, FIELD_F64),
    FIELD("max_s", struct step_row, max_s, FIELD_F64),
    FIELD("bytes", struct step_row, bytes, FIELD_U64),
    FIELD("ops", struct step_row, ops, FIELD_U64),
    FIELD("errors", struct step_row, errors, FIELD_U64),
    FIELD("top_errno", struct step_row, top_errno, FIELD_STR),
    FIELD("stuck", struct step_row, stuck, FIELD_U64),
    FIELD("verify_failures", struct step_row, verify_failures, FIELD_U64),
    FIELD("cpu_mean", struct step_row, server.cpu_mean, FIELD_F64),
    FIELD("cpu_max", struct step_row, server.cpu_max, FIELD_F64),
    FIELD("nfsd_threads", struct step_row, server.nfsd_threads, FIELD_F64),
    FIELD("proc_cpu", struct step_row, server.proc_cpu, FIELD_F64),
    FIELD("proc_thread_max", struct step_row, server.proc_thread_max, FIELD_F64),
    FIELD("nfsd_packets_per_s", struct step_row, server.nfsd_packets_per_s, FIELD_F64),
    FIELD("nfsd_woken_share", struct step_row, server.nfsd_woken_share, FIELD_F64),
    FIELD("t_start", struct step_row, t_start, FIELD_F64),
    FIELD("elapsed", struct step_row, elapsed, FIELD_F64),
    FIELD("start_skew", struct step_row, start_skew, FIELD_F64),
};

/* The group's members first, its kind last: a group cut off while written
 * has no kind and no status, and readers skip it as they skip a cut-off
 * phase. */
static int steps_fill(const struct results *r, hid_t g, const char *ladder,
                      const struct step_row *rows, size_t n, char *err, size_t errlen)
{
    if (h5_table_write(g, "steps", step_fields, NFIELDS(step_fields), sizeof *rows, rows, n, err,
                       errlen) < 0 ||
        h5_attr_str(r->str, g, "ladder", ladder, err, errlen) < 0 ||
        h5_attr_i64(g, "steps", (int64_t)n, err, errlen) < 0)
        return -1;
    return h5_attr_str(r->str, g, "kind", "ladder", err, errlen);
}

int results_write_steps(struct results *r, const char *ladder, const struct step_row *rows,
                        size_t n, char *err, size_t errlen)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (r == NULL)
        return h5_msg_fail(err, errlen, "ladder steps not recorded: no file");
    if (ladder[0] == '\0' || strchr(ladder, '/') != NULL || strcmp(ladder, ".") == 0)
        return h5_msg_fail(err, errlen, "%s: ladder name '%s' cannot name an HDF5 group", r->path,
                           ladder);
    if (H5Lexists(r->phases, ladder, H5P_DEFAULT) != 0)
        return h5_msg_fail(err, errlen, "%s: /phases/%s is already in the file", r->path, ladder);
    /* On a full disk the table is left out (readers build it from the
     * steps' phases) rather than risk the file's final status. */
    struct step_row *kept = n ? malloc(n * sizeof *kept) : NULL;
    if (n && !kept)
        return h5_msg_fail(err, errlen, "%s: ladder '%s': out of memory", r->path, ladder);
    size_t nkept = 0;
    for (size_t i = 0; i < n; i++) /* a lost step has no phase to point to */
        if (H5Lexists(r->phases, rows[i].phase, H5P_DEFAULT) > 0)
            kept[nkept++] = rows[i];
    int rc = -1;
    hid_t g = h5_group_create(r->phases, ladder, err, errlen);
    if (g >= 0) {
        rc = steps_fill(r, g, ladder, kept, nkept, err, errlen);
        if (H5Gclose(g) < 0 && rc == 0)
            rc = h5_fail(err, errlen, "cannot close the group");
        rc = results_save_added(r, r->phases, ladder, rc, err, errlen);
    }
    free(kept);
    if (rc < 0)
        h5_msg_prefix(err, errlen, "%s: ladder '%s'", r->path, ladder);
    return rc;
}

static const struct field usage_fields[] = {
    FIELD("rank", struct usage_row, rank, FIELD_I32),
    FIELD("host", struct usage_row, host, FIELD_I32),
    FIELD("max_rss_bytes", struct usage_row, max_rss_bytes, FIELD_F64),
    FIELD("user_seconds", struct usage_row, user_seconds, FIELD_F64),
    FIELD("system_seconds", struct usage_row, system_seconds, FIELD_F64),
};

int results_write_usage(struct results *r, const struct usage_row *rows, size_t n, char *err,
                        size_t errlen)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (r == NULL)
        return h5_msg_fail(err, errlen, "/usage not written: no file");
    if (h5_table_write(r->file, "usage", usage_fields, NFIELDS(usage_fields), sizeof *rows, rows, n,
                       err, errlen) < 0) {
        h5_msg_prefix(err, errlen, "%s: /usage", r->path);
        return -1;
    }
    return 0;
}

static int final_attrs(struct results *r, const char *status, const char *end_utc, int exit_code,
                       double startup_seconds, char *err, size_t errlen)
{
    if (h5_attr_str(r->str, r->file, "status", status ? status : "partial", err, errlen) < 0 ||
        h5_attr_str(r->str, r->file, "end_utc", end_utc, err, errlen) < 0 ||
        h5_attr_i32(r->file, "exit_code", exit_code, err, errlen) < 0 ||
        h5_attr_f64(r->file, "startup_seconds", startup_seconds, err, errlen) < 0)
        return -1;
    if (h5image_save(r->image, 0, err, errlen) < 0) {
        h5_msg_prefix(err, errlen, "final status");
        return -1;
    }
    return 0;
}

int results_status(struct results *r, const char *status, const char *end_utc, int exit_code,
                   double startup_seconds, char *err, size_t errlen)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (r == NULL)
        return h5_msg_fail(err, errlen, "results: no file");
    if (final_attrs(r, status, end_utc, exit_code, startup_seconds, err, errlen) < 0) {
        h5_msg_prefix(err, errlen, "%s", r->path);
        return -1;
    }
    return 0;
}

int results_close(struct results *r, const char *status, const char *end_utc, int exit_code,
                  double startup_seconds, char *err, size_t errlen)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (r == NULL)
        return h5_msg_fail(err, errlen, "results: no file to close");
    int rc = final_attrs(r, status, end_utc, exit_code, startup_seconds, err, errlen);
    H5Gclose(r->phases);
    r->phases = H5I_INVALID_HID;
    H5Gclose(r->monitor);
    r->monitor = H5I_INVALID_HID;
    H5Tclose(r->str);
    r->str = H5I_INVALID_HID;
    H5Tclose(r->boolean);
    r->boolean = H5I_INVALID_HID;
    char closing[256];
    if (h5image_close(r->image, closing, sizeof closing) < 0 && rc == 0)
        rc = h5_msg_fail(err, errlen, "%s", closing);
    r->file = H5I_INVALID_HID;
    if (rc < 0)
        h5_msg_prefix(err, errlen, "%s", r->path);
    free(r);
    return rc;
}

int results_write_cleanup(struct results *r, const struct err_entry *left, size_t n, char *err,
                          size_t errlen)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (r == NULL)
        return h5_msg_fail(err, errlen, "/cleanup not written: no file");
    hid_t g = h5_group_create(r->file, "cleanup", err, errlen);
    if (g < 0)
        return -1;
    int rc = errors_write(g, left, n, err, errlen);
    H5Gclose(g);
    rc = results_save_added(r, r->file, "cleanup", rc, err, errlen);
    if (rc < 0)
        h5_msg_prefix(err, errlen, "%s: /cleanup", r->path);
    return rc;
}
