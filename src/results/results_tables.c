/* results_tables.c — the declaration of every results table
 * (results_tables.h): its place, its columns and the record they come
 * from, and the list `herd tables` prints. */
#include "results_tables.h"

#include <string.h>

#define NFIELDS(f) (sizeof(f) / sizeof((f)[0]))
#define TABLE(var, path, fields, row)                                                              \
    const struct results_table var = {path, fields, NFIELDS(fields), sizeof(row)}

/* clang-format off */

/* ---- the run ---- */

#define H(col, member, kind) FIELD(col, struct host_row, member, kind)
static const struct field host_fields[] = {
    H("host", host, FIELD_I32), H("hostname", hostname, FIELD_STR),
    H("mount_source", mount_source, FIELD_STR), H("mount_point", mount_point, FIELD_STR),
    H("fstype", fstype, FIELD_STR), H("mount_options", mount_options, FIELD_STR),
    H("read_ahead_kb", read_ahead_kb, FIELD_I32),
};
TABLE(table_hosts, "/hosts", host_fields, struct host_row);

#define R(col, member, kind) FIELD(col, struct rank_row, member, kind)
static const struct field rank_fields[] = {
    R("rank", rank, FIELD_I32), R("host", host, FIELD_I32), R("hostname", hostname, FIELD_STR),
    R("pid", pid, FIELD_I32), R("clock_offset", clock_offset, FIELD_F64),
    R("clock_error", clock_error, FIELD_F64),
};
TABLE(table_ranks, "/ranks", rank_fields, struct rank_row);

#define U(col, member, kind) FIELD(col, struct usage_row, member, kind)
static const struct field usage_fields[] = {
    U("rank", rank, FIELD_I32), U("host", host, FIELD_I32),
    U("max_rss_bytes", max_rss_bytes, FIELD_F64), U("user_seconds", user_seconds, FIELD_F64),
    U("system_seconds", system_seconds, FIELD_F64),
};
TABLE(table_usage, "/usage", usage_fields, struct usage_row);

/* ---- a phase ---- */

#define ST(col, member, kind) FIELD(col, struct step_row, member, kind)
static const struct field step_fields[] = {
    ST("step", step, FIELD_I32), ST("phase", phase, FIELD_STR), ST("kind", kind, FIELD_STR),
    ST("status", status, FIELD_STR), ST("active_ranks", active_ranks, FIELD_I32),
    ST("active_hosts", active_hosts, FIELD_I32), ST("active_clients", active_clients, FIELD_I32), ST("mib_per_s", mib_per_s, FIELD_F64),
    ST("ops_per_s", ops_per_s, FIELD_F64), ST("main_op", main_op, FIELD_STR),
    ST("p50_s", p50_s, FIELD_F64), ST("p99_s", p99_s, FIELD_F64), ST("max_s", max_s, FIELD_F64),
    ST("bytes", bytes, FIELD_U64), ST("ops", ops, FIELD_U64), ST("errors", errors, FIELD_U64),
    ST("top_errno", top_errno, FIELD_STR), ST("stuck", stuck, FIELD_U64),
    ST("verify_failures", verify_failures, FIELD_U64),
    ST("cpu_mean", server.cpu_mean, FIELD_F64), ST("cpu_max", server.cpu_max, FIELD_F64),
    ST("nfsd_threads", server.nfsd_threads, FIELD_F64),
    ST("proc_cpu", server.proc_cpu, FIELD_F64),
    ST("proc_thread_max", server.proc_thread_max, FIELD_F64),
    ST("nfsd_packets_per_s", server.nfsd_packets_per_s, FIELD_F64),
    ST("nfsd_woken_share", server.nfsd_woken_share, FIELD_F64),
    ST("t_start", t_start, FIELD_F64), ST("elapsed", elapsed, FIELD_F64),
    ST("start_skew", start_skew, FIELD_F64), ST("rate", rate, FIELD_F64),
    ST("offered_per_s", offered_per_s, FIELD_F64), ST("achieved_per_s", achieved_per_s, FIELD_F64),
    ST("units", units, FIELD_U64), ST("late", late, FIELD_U64), ST("due", due, FIELD_U64),
    ST("response_p50_s", response_p50_s, FIELD_F64), ST("response_p99_s", response_p99_s, FIELD_F64),
    ST("service_p99_s", service_p99_s, FIELD_F64), ST("lag_p99_s", lag_p99_s, FIELD_F64),
    ST("note", note, FIELD_STR),
};
TABLE(table_steps, "/phases/<ladder>/steps", step_fields, struct step_row);

#define RR(col, kind) FIELD(#col, struct rank_record, col, kind)
static const struct field record_fields[] = {
    RR(rank, FIELD_I32), RR(client, FIELD_I32), RR(iteration, FIELD_I32), RR(host, FIELD_I32),
    RR(completed, FIELD_I32), RR(file_rank, FIELD_I32), RR(rpc_window_read, FIELD_I32),
    RR(rpc_window_write, FIELD_I32), RR(t_start, FIELD_F64), RR(t_end, FIELD_F64),
    RR(t_open, FIELD_F64), RR(t_io, FIELD_F64), RR(t_fsync, FIELD_F64), RR(t_close, FIELD_F64),
    RR(t_md5, FIELD_F64), RR(bytes, FIELD_U64), RR(ops, FIELD_U64), RR(errors, FIELD_U64),
    RR(verify_failures, FIELD_U64), RR(grants, FIELD_U64), RR(contended, FIELD_U64),
    RR(violations, FIELD_U64), RR(units, FIELD_U64), RR(late, FIELD_U64), RR(due, FIELD_U64),
    RR(response_p99, FIELD_F64), RR(service_p99, FIELD_F64),
};
TABLE(table_phase_ranks, "/phases/<name>/ranks", record_fields, struct rank_record);

#define E(col, member, kind) FIELD(col, struct error_row, member, kind)
static const struct field error_fields[] = {
    E("rank", rank, FIELD_I32), E("client", client, FIELD_I32), E("op", op, FIELD_STR), E("errno", err, FIELD_I32),
    E("errno_name", errno_name, FIELD_STR), E("message", message, FIELD_STR),
    E("count", count, FIELD_U64), E("first_path", first_path, FIELD_STR),
    E("first_time", first_time, FIELD_F64), E("status", status, FIELD_STR),
};
TABLE(table_errors, "/phases/<name>/errors", error_fields, struct error_row);

#define SK(col, kind) FIELD(#col, struct stuck_row, col, kind)
static const struct field stuck_fields[] = {
    SK(rank, FIELD_I32), SK(client, FIELD_I32), SK(op, FIELD_STR), SK(path, FIELD_STR), SK(since, FIELD_F64),
    SK(noticed, FIELD_F64), SK(returned, FIELD_F64),
};
TABLE(table_stuck, "/phases/<name>/stuck", stuck_fields, struct stuck_row);

static const struct field op_fields[] = {
    FIELD("rank", struct op_row, rank, FIELD_I32), FIELD("op", struct op_row, op, FIELD_STR),
    FIELD("count", struct op_row, count, FIELD_U64),
    FIELD("seconds", struct op_row, seconds, FIELD_F64),
};
TABLE(table_ops, "/phases/<name>/ops", op_fields, struct op_row);

#define OS(col, kind) FIELD(#col, struct op_summary_row, col, kind)
static const struct field op_summary_fields[] = {
    OS(op, FIELD_STR), OS(calls, FIELD_U64), OS(seconds, FIELD_F64), OS(ops_per_s, FIELD_F64),
    OS(p50_s, FIELD_F64), OS(p90_s, FIELD_F64), OS(p99_s, FIELD_F64), OS(max_s, FIELD_F64),
    OS(items, FIELD_U64), OS(step_s, FIELD_F64), OS(items_per_s, FIELD_F64),
};
TABLE(table_op_summary, "/phases/<name>/op_summary", op_summary_fields, struct op_summary_row);

#define MS(col, kind) FIELD(#col, struct meta_step_row, col, kind)
static const struct field meta_step_fields[] = {
    MS(rank, FIELD_I32), MS(client, FIELD_I32), MS(step, FIELD_STR), MS(op, FIELD_STR), MS(t_start, FIELD_F64),
    MS(t_end, FIELD_F64), MS(items, FIELD_U64),
};
TABLE(table_meta_steps, "/phases/<name>/meta_steps", meta_step_fields, struct meta_step_row);

#define HD(col, kind) FIELD(#col, struct hold, col, kind)
static const struct field hold_fields[] = {
    HD(rank, FIELD_I32), HD(exclusive, FIELD_I32), HD(granted, FIELD_F64),
    HD(released, FIELD_F64), HD(start, FIELD_U64), HD(len, FIELD_U64), HD(asked, FIELD_F64),
    HD(client, FIELD_I32),
};
TABLE(table_holds, "/phases/<name>/holds", hold_fields, struct hold);

/* ---- /monitor ---- */

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
TABLE(table_samples, "/monitor/samples", sample_fields, struct monitor_sample);

#define M(col, kind) FIELD(#col, struct monitor_metric, col, kind)
static const struct field metric_fields[] = {
    M(t, FIELD_F64), M(dt, FIELD_F64), M(host, FIELD_STR), M(source, FIELD_STR),
    M(name, FIELD_STR), M(labels, FIELD_STR), M(value, FIELD_F64),
};
TABLE(table_metrics, "/monitor/metrics", metric_fields, struct monitor_metric);

#define P(col, kind) FIELD(#col, struct monitor_process, col, kind)
static const struct field process_fields[] = {
    P(t, FIELD_F64), P(dt, FIELD_F64), P(host, FIELD_STR), P(name, FIELD_STR),
    P(processes, FIELD_F64), P(threads, FIELD_F64), P(cpu, FIELD_F64),
    P(cpu_max_thread, FIELD_F64), P(rss_bytes, FIELD_F64),
};
TABLE(table_processes, "/monitor/processes", process_fields, struct monitor_process);

#define D(col, kind) FIELD(#col, struct monitor_disk, col, kind)
static const struct field disk_fields[] = {
    D(t, FIELD_F64), D(dt, FIELD_F64), D(host, FIELD_STR), D(device, FIELD_STR),
    D(reads, FIELD_F64), D(read_bytes, FIELD_F64), D(writes, FIELD_F64),
    D(write_bytes, FIELD_F64), D(busy, FIELD_F64), D(weighted_ms, FIELD_F64),
    D(in_flight, FIELD_F64), D(flushes, FIELD_F64),
};
TABLE(table_disks, "/monitor/disks", disk_fields, struct monitor_disk);

#define N(col, kind) FIELD(#col, struct monitor_note, col, kind)
static const struct field note_fields[] = {
    N(t, FIELD_F64), N(host, FIELD_STR), N(source, FIELD_STR), N(text, FIELD_STR),
};
TABLE(table_notes, "/monitor/notes", note_fields, struct monitor_note);

#define MK(col, kind) FIELD(#col, struct monitor_mark, col, kind)
static const struct field mark_fields[] = {
    MK(phase, FIELD_STR), MK(index, FIELD_I32), MK(t_start, FIELD_F64), MK(t_end, FIELD_F64),
};
TABLE(table_marks, "/monitor/marks", mark_fields, struct monitor_mark);

#define C(col) FIELD(#col, struct client_row, col, FIELD_F64)
static const struct field client_fields[] = {
    FIELD("phase", struct client_row, phase, FIELD_STR),
    FIELD("host", struct client_row, host, FIELD_I32),
    FIELD("mount_point", struct client_row, mount_point, FIELD_STR),
    FIELD("proto", struct client_row, proto, FIELD_STR),
    C(xprt_count), C(connects), C(sends), C(recvs), C(bad_xids), C(req_u), C(backlog_u),
    C(read_bytes), C(write_bytes), C(direct_read_bytes), C(direct_write_bytes),
    C(server_read_bytes), C(server_write_bytes),
};
TABLE(table_clients, "/monitor/clients", client_fields, struct client_row);

#define CO(col) FIELD(#col, struct client_op_row, col, FIELD_F64)
static const struct field client_op_fields[] = {
    FIELD("phase", struct client_op_row, phase, FIELD_STR),
    FIELD("host", struct client_op_row, host, FIELD_I32),
    FIELD("op", struct client_op_row, op, FIELD_STR),
    CO(ops), CO(trans), CO(retrans), CO(timeouts), CO(bytes_sent), CO(bytes_recv), CO(queue_ms),
    CO(rtt_ms), CO(execute_ms), CO(errors),
};
TABLE(table_client_ops, "/monitor/client_ops", client_op_fields, struct client_op_row);

/* clang-format on */

static const struct results_table *const all[] = {
    &table_hosts,  &table_ranks,   &table_usage,   &table_steps,      &table_phase_ranks,
    &table_errors, &table_stuck,   &table_ops,     &table_op_summary, &table_meta_steps,
    &table_holds,  &table_samples, &table_metrics, &table_processes,  &table_disks,
    &table_notes,  &table_marks,   &table_clients, &table_client_ops,
};

const char *results_table_name(const struct results_table *t)
{
    return strrchr(t->path, '/') + 1;
}

const struct results_table *const *results_tables(size_t *n)
{
    *n = NFIELDS(all);
    return all;
}

static void field_type_print(FILE *out, const struct field *f)
{
    switch (f->kind) {
    case FIELD_I32:
        fputs("int32", out);
        break;
    case FIELD_U64:
        fputs("uint64", out);
        break;
    case FIELD_F64:
        fputs("float64", out);
        break;
    case FIELD_STR:
        fprintf(out, "S%zu", f->len);
        break;
    }
}

void results_tables_print(FILE *out)
{
    fputs("{\"tables\": [\n", out);
    for (size_t i = 0; i < NFIELDS(all); i++) {
        const struct results_table *t = all[i];
        fprintf(out, "  {\"path\": \"%s\", \"columns\": [", t->path);
        for (size_t c = 0; c < t->nfields; c++) {
            fprintf(out, "%s\n    [\"%s\", \"", c ? "," : "", t->fields[c].name);
            field_type_print(out, &t->fields[c]);
            fputs("\"]", out);
        }
        fprintf(out, "]}%s\n", i + 1 < NFIELDS(all) ? "," : "");
    }
    fputs("]}\n", out);
}
