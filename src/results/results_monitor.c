/* results_monitor.c — /monitor in the results file: the server samples,
 * metrics, processes, disks and notes from the monitor, the phase marks on
 * the same clock, and the per-phase NFS client counters. Tables grow as
 * the run goes (appended after every phase). Layout: docs/results-format.md. */
#include "results_monitor.h"

#include <stddef.h>

#include "h5util.h"

/* clang-format off */
#define S(col, member) FIELD(col, struct monitor_sample, member, FIELD_F64)
static const struct field sample_fields[] = {
    S("t", t), S("dt", dt),
    FIELD("host", struct monitor_sample, host, FIELD_STR),
    FIELD("source", struct monitor_sample, source, FIELD_STR),
    S("cpu_user", cpu[CPU_USER]), S("cpu_nice", cpu[CPU_NICE]), S("cpu_system", cpu[CPU_SYSTEM]),
    S("cpu_idle", cpu[CPU_IDLE]), S("cpu_iowait", cpu[CPU_IOWAIT]), S("cpu_irq", cpu[CPU_IRQ]),
    S("cpu_softirq", cpu[CPU_SOFTIRQ]), S("cpu_steal", cpu[CPU_STEAL]),
    S("cpu_busy", cpu_busy), S("ncpus", ncpus),
    S("load1", load1), S("load5", load5), S("load15", load15),
    S("mem_total", mem_total), S("mem_used", mem_used), S("mem_cached", mem_cached),
    S("mem_dirty", mem_dirty), S("mem_writeback", mem_writeback),
    S("nfsd_threads", nfsd_threads), S("nfsd_rpc_calls", nfsd_rpc_calls),
    S("nfsd_rpc_bad", nfsd_rpc_bad), S("nfsd_read_bytes", nfsd_read_bytes),
    S("nfsd_write_bytes", nfsd_write_bytes), S("nfsd_rc_hits", nfsd_rc_hits),
    S("nfsd_rc_misses", nfsd_rc_misses), S("nfsd_rc_nocache", nfsd_rc_nocache),
    S("nfsd_th_full", nfsd_th_full), S("nfsd_net_tcp_conn", nfsd_net_tcp_conn),
    S("pool_packets", pool_packets), S("pool_sockets_enqueued", pool_sockets_enqueued),
    S("pool_threads_woken", pool_threads_woken), S("pool_threads_timedout", pool_threads_timedout),
};
#undef S

static const struct field metric_fields[] = {
    FIELD("t", struct monitor_metric, t, FIELD_F64),
    FIELD("dt", struct monitor_metric, dt, FIELD_F64),
    FIELD("host", struct monitor_metric, host, FIELD_STR),
    FIELD("source", struct monitor_metric, source, FIELD_STR),
    FIELD("name", struct monitor_metric, name, FIELD_STR),
    FIELD("labels", struct monitor_metric, labels, FIELD_STR),
    FIELD("value", struct monitor_metric, value, FIELD_F64),
};

#define P(col, member) FIELD(col, struct monitor_process, member, FIELD_F64)
static const struct field process_fields[] = {
    P("t", t), P("dt", dt),
    FIELD("host", struct monitor_process, host, FIELD_STR),
    FIELD("name", struct monitor_process, name, FIELD_STR),
    P("processes", processes), P("threads", threads), P("cpu", cpu),
    P("cpu_max_thread", cpu_max_thread), P("rss_bytes", rss_bytes),
};
#undef P

#define D(col, member) FIELD(col, struct monitor_disk, member, FIELD_F64)
static const struct field disk_fields[] = {
    D("t", t), D("dt", dt),
    FIELD("host", struct monitor_disk, host, FIELD_STR),
    FIELD("device", struct monitor_disk, device, FIELD_STR),
    D("reads", reads), D("read_bytes", read_bytes), D("writes", writes),
    D("write_bytes", write_bytes), D("busy", busy), D("weighted_ms", weighted_ms),
    D("in_flight", in_flight), D("flushes", flushes),
};
#undef D

static const struct field note_fields[] = {
    FIELD("t", struct monitor_note, t, FIELD_F64),
    FIELD("host", struct monitor_note, host, FIELD_STR),
    FIELD("source", struct monitor_note, source, FIELD_STR),
    FIELD("text", struct monitor_note, text, FIELD_STR),
};

static const struct field mark_fields[] = {
    FIELD("phase", struct monitor_mark, phase, FIELD_STR),
    FIELD("index", struct monitor_mark, index, FIELD_I32),
    FIELD("t_start", struct monitor_mark, t_start, FIELD_F64),
    FIELD("t_end", struct monitor_mark, t_end, FIELD_F64),
};

#define C(col, member) FIELD(col, struct client_op_row, member, FIELD_F64)
static const struct field client_op_fields[] = {
    FIELD("phase", struct client_op_row, phase, FIELD_STR),
    FIELD("host", struct client_op_row, host, FIELD_I32),
    FIELD("op", struct client_op_row, op, FIELD_STR),
    C("ops", ops), C("trans", trans), C("retrans", retrans), C("timeouts", timeouts),
    C("bytes_sent", bytes_sent), C("bytes_recv", bytes_recv), C("queue_ms", queue_ms),
    C("rtt_ms", rtt_ms), C("execute_ms", execute_ms), C("errors", errors),
};
#undef C

#define X(col, member) FIELD(col, struct client_row, member, FIELD_F64)
static const struct field client_fields[] = {
    FIELD("phase", struct client_row, phase, FIELD_STR),
    FIELD("host", struct client_row, host, FIELD_I32),
    FIELD("mount_point", struct client_row, mount_point, FIELD_STR),
    FIELD("proto", struct client_row, proto, FIELD_STR),
    X("xprt_count", xprt_count), X("connects", connects), X("sends", sends), X("recvs", recvs),
    X("bad_xids", bad_xids), X("req_u", req_u), X("backlog_u", backlog_u),
    X("read_bytes", read_bytes), X("write_bytes", write_bytes),
    X("direct_read_bytes", direct_read_bytes), X("direct_write_bytes", direct_write_bytes),
    X("server_read_bytes", server_read_bytes), X("server_write_bytes", server_write_bytes),
};
#undef X
/* clang-format on */

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

#define APPEND(name, fields, rows, n)                                                              \
    h5_table_append(group, name, fields, NFIELDS(fields), sizeof *(rows), rows, n, err, errlen)

int results_monitor_append(hid_t group, const struct monitor_append *a, char *err, size_t errlen)
{
    const struct monitor_batch *b = &a->batch;
    htri_t had_processes = H5Lexists(group, "processes", H5P_DEFAULT);
    if (had_processes < 0)
        return h5_fail(err, errlen, "cannot look up 'processes'");
    if (APPEND("samples", sample_fields, b->samples, b->nsamples) < 0 ||
        APPEND("metrics", metric_fields, b->metrics, b->nmetrics) < 0 ||
        APPEND("processes", process_fields, b->processes, b->nprocesses) < 0 ||
        (!had_processes && processes_scope_write(group, a->process_scope, err, errlen) < 0) ||
        APPEND("disks", disk_fields, b->disks, b->ndisks) < 0 ||
        APPEND("notes", note_fields, b->notes, b->nnotes) < 0 ||
        APPEND("marks", mark_fields, a->marks, a->nmarks) < 0 ||
        APPEND("client_ops", client_op_fields, a->client_ops, a->nclient_ops) < 0 ||
        APPEND("clients", client_fields, a->clients, a->nclients) < 0)
        return -1;
    return 0;
}
