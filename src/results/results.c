/* results.c — the results file (HDF5): root attributes, /hosts and /ranks
 * at start, then one group /phases/<name> per phase as soon as it ends (its
 * attributes, per-rank rows, error table and latency histograms), saved
 * after every write so a crash loses at most the phase that was running.
 * The file lives in memory and each save replaces the whole file on disk
 * by rename (h5image.h): a kill at any instant leaves the last save.
 *
 * Only the results writers (this file, results_phase.c for a phase's
 * group, results_monitor.c and their helpers in h5util.c and h5image.c)
 * know HDF5, and only rank 0 calls
 * them, through the serial API (the core driver, which works on the
 * parallel build). HDF5's
 * automatic error printing is off: every failure becomes one line in the
 * caller's err buffer, and nothing here aborts. The layout is documented in
 * docs/results-format.md; keep the two in step. */
#include "results.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hdf5.h>
#include <zlib.h>

#include "h5image.h"
#include "h5util.h"
#include "results_monitor.h"
#include "results_phase.h"
/* What every save but the last keeps free beyond the file's next copy:
 * room for the final status and for the lost phases' CSVs. */
#define SPACE_MARGIN (1024 * 1024)

struct results {
    struct h5image *image; /* the file, in memory, saved by rename */
    hid_t file;            /* its HDF5 file */
    hid_t phases;          /* the /phases group */
    hid_t monitor;         /* the /monitor group */
    struct h5_types types; /* string and bool types */
    char path[];           /* for messages */
};

/* ---- the run: root, /hosts, /ranks ---- */

void results_hdf5_version(char *buf, size_t len)
{
    unsigned maj = 0, min = 0, rel = 0;
    if (H5get_libversion(&maj, &min, &rel) < 0)
        snprintf(buf, len, "?");
    else
        snprintf(buf, len, "%u.%u.%u", maj, min, rel);
}

const char *results_zlib_version(void)
{
    return zlibVersion();
}

static int root_attrs(const struct results *r, const struct run_info *run, char *err, size_t errlen)
{
    hid_t f = r->file;
    char hdf5_version[48];
    results_hdf5_version(hdf5_version, sizeof hdf5_version);

    if (h5_attr_str(r->types.str, f, "tool", "herd", err, errlen) < 0 ||
        h5_attr_str(r->types.str, f, "version", run->version, err, errlen) < 0 ||
        h5_attr_str(r->types.str, f, "run_id", run->run_id, err, errlen) < 0 ||
        h5_attr_str(r->types.str, f, "label", run->label, err, errlen) < 0 ||
        h5_attr_str(r->types.str, f, "status", "partial", err, errlen) < 0 ||
        h5_attr_str(r->types.str, f, "start_utc", run->start_utc, err, errlen) < 0 ||
        h5_attr_str(r->types.str, f, "end_utc", "", err, errlen) < 0 ||
        h5_attr_f64(f, "epoch_unix", run->epoch_unix, err, errlen) < 0 ||
        h5_attr_i32(f, "nranks", run->nranks, err, errlen) < 0 ||
        h5_attr_i32(f, "clients_per_rank", run->clients_per_rank, err, errlen) < 0 ||
        h5_attr_i32(f, "nhosts", run->nhosts, err, errlen) < 0 ||
        h5_attr_i32(f, "monitor_client_ranks", run->monitor_client_ranks, err, errlen) < 0 ||
        h5_attr_str(r->types.str, f, "command_line", run->command_line, err, errlen) < 0 ||
        h5_attr_str(r->types.str, f, "job_path", run->job_path, err, errlen) < 0 ||
        h5_attr_str(r->types.str, f, "job_text", run->job_text, err, errlen) < 0 ||
        h5_attr_str(r->types.str, f, "target", run->target, err, errlen) < 0 ||
        h5_attr_str(r->types.str, f, "server_fs", run->server_fs, err, errlen) < 0 ||
        h5_attr_str(r->types.str, f, "server_disk", run->server_disk ? run->server_disk : "", err,
                    errlen) < 0 ||
        h5_attr_str(r->types.str, f, "mpi_version", run->mpi_version, err, errlen) < 0 ||
        h5_attr_str(r->types.str, f, "hdf5_version", hdf5_version, err, errlen) < 0 ||
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
    return h5_table_fill(loc, &table_hosts, nhosts > 0 ? (size_t)nhosts : 0, host_fill, hosts, err,
                         errlen);
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
    return h5_table_fill(loc, &table_ranks, nranks > 0 ? (size_t)nranks : 0, rank_fill, &src, err,
                         errlen);
}

static void results_free(struct results *r)
{
    if (r == NULL)
        return;
    if (r->phases >= 0)
        H5Gclose(r->phases);
    if (r->monitor >= 0)
        H5Gclose(r->monitor);
    if (r->types.str >= 0)
        H5Tclose(r->types.str);
    if (r->types.boolean >= 0)
        H5Tclose(r->types.boolean);
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
    r->file = r->phases = r->monitor = r->types.str = r->types.boolean = H5I_INVALID_HID;
    memcpy(r->path, path, plen + 1);

    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    int rc = -1;
    if (fcpl < 0 || H5Pset_link_creation_order(fcpl, CRT_ORDER) < 0 ||
        H5Pset_attr_creation_order(fcpl, CRT_ORDER) < 0) {
        h5_fail(err, errlen, "cannot set up file properties");
        goto out;
    }
    r->types.str = h5_type_var_string();
    r->types.boolean = h5_type_bool();
    if (r->types.str < 0 || r->types.boolean < 0) {
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
        h5_attr_str(r->types.str, r->monitor, "host", run->monitor_host, err, errlen) < 0 ||
        h5_attr_i32(r->monitor, "rank", run->monitor_rank, err, errlen) < 0 ||
        h5_attr_f64(r->monitor, "interval", run->monitor_interval, err, errlen) < 0 ||
        h5_attr_str(r->types.str, r->monitor, "url", run->monitor_url, err, errlen) < 0 ||
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

    int rc = results_phase_fill(&r->types, g, ph, sum, d, err, errlen);
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
         (s->covered >= 0 && h5_attr_set(g, "monitor_covered", r->types.boolean,
                                         &(int8_t){s->covered == 1}, err, errlen) < 0))
            ? -1
            : 0;
    H5Gclose(g);
    return rc;
}

/* The group's members first, its kind last: a group cut off while written
 * has no kind and no status, and readers skip it as they skip a cut-off
 * phase. */
static int steps_fill(const struct results *r, hid_t g, const char *ladder,
                      const struct step_row *rows, size_t n, char *err, size_t errlen)
{
    if (h5_table_write(g, &table_steps, rows, n, err, errlen) < 0 ||
        h5_attr_str(r->types.str, g, "ladder", ladder, err, errlen) < 0 ||
        h5_attr_i64(g, "steps", (int64_t)n, err, errlen) < 0)
        return -1;
    return h5_attr_str(r->types.str, g, "kind", "ladder", err, errlen);
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
    for (size_t i = 0; i < n; i++) /* a lost step has no phase to point to; one not run never had */
        if (strcmp(rows[i].status, "not-run") == 0 ||
            H5Lexists(r->phases, rows[i].phase, H5P_DEFAULT) > 0)
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

int results_write_usage(struct results *r, const struct usage_row *rows, size_t n, char *err,
                        size_t errlen)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (r == NULL)
        return h5_msg_fail(err, errlen, "/usage not written: no file");
    if (h5_table_write(r->file, &table_usage, rows, n, err, errlen) < 0) {
        h5_msg_prefix(err, errlen, "%s: /usage", r->path);
        return -1;
    }
    return 0;
}

static int final_attrs(struct results *r, const char *status, const char *end_utc, int exit_code,
                       double startup_seconds, char *err, size_t errlen)
{
    if (h5_attr_str(r->types.str, r->file, "status", status ? status : "partial", err, errlen) <
            0 ||
        h5_attr_str(r->types.str, r->file, "end_utc", end_utc, err, errlen) < 0 ||
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
    H5Tclose(r->types.str);
    r->types.str = H5I_INVALID_HID;
    H5Tclose(r->types.boolean);
    r->types.boolean = H5I_INVALID_HID;
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
    int rc = results_errors_write(g, left, n, err, errlen);
    H5Gclose(g);
    rc = results_save_added(r, r->file, "cleanup", rc, err, errlen);
    if (rc < 0)
        h5_msg_prefix(err, errlen, "%s: /cleanup", r->path);
    return rc;
}
