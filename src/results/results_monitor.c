/* results_monitor.c — /monitor in the results file: the server samples,
 * metrics, processes, disks and notes from the monitor, the phase marks on
 * the same clock, and the per-phase NFS client counters. Tables grow as
 * the run goes (appended after every phase). Their columns:
 * results_tables.c; layout: docs/results-format.md. */
#include "results_monitor.h"

#include "h5util.h"

/* /monitor/processes' attribute scope, once the table is made: the
 * monitor_scope its rows were confined to. */
static int processes_scope_write(hid_t group, const char *scope, char *err, size_t errlen)
{
    hid_t d = H5Dopen2(group, "processes", H5P_DEFAULT), str = h5_type_var_string();
    int rc = d < 0 || str < 0 ? h5_fail(err, errlen, "cannot open 'processes'")
                              : h5_attr_str(str, d, "scope", scope, err, errlen);
    if (str >= 0)
        H5Tclose(str);
    if (d >= 0)
        H5Dclose(d);
    return rc;
}

int results_monitor_append(hid_t group, const struct monitor_append *a, char *err, size_t errlen)
{
    const struct monitor_batch *b = &a->batch;
    htri_t had_processes = H5Lexists(group, "processes", H5P_DEFAULT);
    if (had_processes < 0)
        return h5_fail(err, errlen, "cannot look up 'processes'");
    if (h5_table_append(group, &table_samples, b->samples, b->nsamples, err, errlen) < 0 ||
        h5_table_append(group, &table_metrics, b->metrics, b->nmetrics, err, errlen) < 0 ||
        h5_table_append(group, &table_processes, b->processes, b->nprocesses, err, errlen) < 0 ||
        (!had_processes && processes_scope_write(group, a->process_scope, err, errlen) < 0) ||
        h5_table_append(group, &table_disks, b->disks, b->ndisks, err, errlen) < 0 ||
        h5_table_append(group, &table_notes, b->notes, b->nnotes, err, errlen) < 0 ||
        h5_table_append(group, &table_marks, a->marks, a->nmarks, err, errlen) < 0 ||
        h5_table_append(group, &table_client_ops, a->client_ops, a->nclient_ops, err, errlen) < 0 ||
        h5_table_append(group, &table_clients, a->clients, a->nclients, err, errlen) < 0)
        return -1;
    return 0;
}
