/* test_monitor.c — unit tests for the monitor's row handling and the NFS
 * client counters: rows added to a batch survive growth past the
 * power-of-two steps and a move into a non-empty batch; pack and unpack
 * round-trip every table; unpack refuses truncated, padded and lying
 * buffers (counts larger than the bytes); monitor_sample_init leaves every
 * value NaN; client_stats_read finds the NFSv3 mount in the sample
 * mountstats, and client_stats_rows turns two snapshots into per-op rows
 * (retransmissions = trans - ops, ops without calls left out) and the
 * mount's transport and byte counts. summary_add_monitor marks a phase
 * covered only when every sampled source has a reading at or before its
 * start, one at or after its end and none missing between (a restarted
 * exporter's new baseline is a gap). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "client_stats.h"
#include "fuzz.h"
#include "monitor.h"
#include "monitor_sources.h"
#include "summary.h"
#include "textfile.h"

static struct monitor_batch filled(size_t n)
{
    struct monitor_batch b = {0};
    for (size_t i = 0; i < n; i++) {
        struct monitor_sample s;
        monitor_sample_init(&s, (double)i, 0.5, "srv", "proc");
        s.cpu_busy = (double)i / 1000.0;
        monitor_add_sample(&b, &s);
        struct monitor_metric m = {.t = (double)i, .value = (double)(2 * i)};
        snprintf(m.name, sizeof m.name, "nfsd_v3_ops");
        monitor_add_metric(&b, &m);
        if (i % 3 == 0) {
            struct monitor_process p = {.t = (double)i, .cpu = 1.5};
            monitor_add_process(&b, &p);
        }
        if (i % 5 == 0) {
            struct monitor_disk d = {.t = (double)i, .write_bytes = 4096.0 * (double)i};
            monitor_add_disk(&b, &d);
        }
    }
    monitor_add_note(&b, 1.0, "srv", "proc", "note %d", 7);
    return b;
}

static void check_filled(const struct monitor_batch *b, size_t n, size_t offset)
{
    for (size_t i = 0; i < n; i++) {
        assert_true(b->samples[offset + i].t == (double)i);
        assert_true(b->samples[offset + i].cpu_busy == (double)i / 1000.0);
        assert_true(b->metrics[offset + i].value == (double)(2 * i));
    }
}

static void test_sample_init(void **state)
{
    (void)state;
    struct monitor_sample s;
    memset(&s, 0, sizeof s);
    monitor_sample_init(&s, 3.0, 1.0, "h", "proc");
    assert_true(s.t == 3.0 && s.dt == 1.0);
    assert_string_equal(s.host, "h");
    assert_string_equal(s.source, "proc");
    for (int i = 0; i < CPU_MODES; i++)
        assert_true(isnan(s.cpu[i]));
    assert_true(isnan(s.cpu_busy) && isnan(s.load1) && isnan(s.mem_total));
    assert_true(isnan(s.nfsd_threads) && isnan(s.pool_threads_timedout));
}

static void test_add_and_move(void **state)
{
    (void)state;
    for (size_t n = 0; n < 300; n += 7) {
        struct monitor_batch a = filled(n), b = filled(n + 13);
        assert_int_equal(b.nsamples, n + 13);
        assert_int_equal(monitor_batch_move(&a, &b), 0);
        assert_int_equal(b.nsamples, 0);
        assert_null(b.samples);
        assert_int_equal(a.nsamples, 2 * n + 13);
        assert_int_equal(a.nnotes, 2);
        check_filled(&a, n, 0);
        check_filled(&a, n + 13, n);
        /* Growing after a move must stay inside the allocation (ASan). */
        for (int k = 0; k < 40; k++) {
            struct monitor_sample s;
            monitor_sample_init(&s, 1, 1, "x", "proc");
            monitor_add_sample(&a, &s);
        }
        assert_int_equal(a.nsamples, 2 * n + 13 + 40);
        monitor_batch_free(&a);
    }
}

static void test_pack_round_trip(void **state)
{
    (void)state;
    struct monitor_batch b = filled(100), out;
    void *buf;
    size_t len;
    assert_int_equal(monitor_batch_pack(&b, &buf, &len), 0);
    assert_int_equal(monitor_batch_unpack(buf, len, &out), 0);
    assert_int_equal(out.nsamples, 100);
    assert_int_equal(out.nmetrics, 100);
    assert_int_equal(out.nprocesses, 34);
    assert_int_equal(out.ndisks, 20);
    assert_int_equal(out.nnotes, 1);
    assert_memory_equal(out.samples, b.samples, 100 * sizeof *b.samples);
    assert_memory_equal(out.disks, b.disks, 20 * sizeof *b.disks);
    assert_string_equal(out.notes[0].text, "note 7");
    /* The unpacked batch grows like any other. */
    struct monitor_sample s;
    monitor_sample_init(&s, 1, 1, "x", "proc");
    monitor_add_sample(&out, &s);
    assert_int_equal(out.nsamples, 101);
    monitor_batch_free(&out);

    /* Truncated, padded, empty and lying buffers are refused. */
    assert_int_equal(monitor_batch_unpack(buf, len - 1, &out), -EINVAL);
    assert_int_equal(monitor_batch_unpack(buf, 3, &out), -EINVAL);
    char *padded = malloc(len + 8);
    memcpy(padded, buf, len);
    assert_int_equal(monitor_batch_unpack(padded, len + 8, &out), -EINVAL);
    uint64_t huge = UINT64_MAX / 2;
    memcpy(padded, &huge, sizeof huge);
    assert_int_equal(monitor_batch_unpack(padded, len, &out), -EINVAL);
    free(padded);
    free(buf);

    struct monitor_batch empty = {0};
    assert_int_equal(monitor_batch_pack(&empty, &buf, &len), 0);
    assert_int_equal(monitor_batch_unpack(buf, len, &out), 0);
    assert_int_equal(out.nsamples + out.nmetrics + out.nnotes, 0);
    free(buf);
    monitor_batch_free(&b);
}

static void test_client_rows(void **state)
{
    (void)state;
    struct mountstats *before = malloc(sizeof *before), *after = malloc(sizeof *after);
    const char *path = fuzz_data_path("mountstats-nfs3.txt");
    char *buf = NULL;
    size_t cap = 0;
    long n = textfile_read(path, TEXTFILE_PROC_MAX, &buf, &cap);
    assert_true(n > 0);
    /* The sample's NFS mount point is the one on a "fstype nfs " line. */
    char *line = strstr(buf, " with fstype nfs ");
    assert_non_null(line);
    char *on = line;
    while (on > buf && strncmp(on, " mounted on ", 12) != 0)
        on--;
    char mount_point[256];
    snprintf(mount_point, sizeof mount_point, "%.*s", (int)(line - on - 12), on + 12);
    free(buf);
    assert_int_equal(client_stats_read(path, mount_point, before), 0);
    assert_int_equal(client_stats_read(path, "/no/such/mount", after), 1);
    assert_true(client_stats_read("/no/such/file", mount_point, after) < 0);

    *after = *before;
    int read = -1, write = -1;
    for (int i = 0; i < after->nops; i++) {
        if (strcmp(after->ops[i].name, "READ") == 0)
            read = i;
        if (strcmp(after->ops[i].name, "WRITE") == 0)
            write = i;
    }
    assert_true(read >= 0 && write >= 0);
    after->ops[read].ops += 10;
    after->ops[read].trans += 13;
    after->ops[read].bytes_recv += 10 << 20;
    after->ops[read].rtt_ms += 55;
    after->ops[write].ops += 4;
    after->ops[write].trans += 4;
    after->ops[write].timeouts += 1;
    after->xprt.sends += 17;
    after->xprt.bad_xids += 2;
    after->bytes[0] += 10 << 20;

    struct client_op_row *ops;
    size_t nops;
    struct client_row row;
    assert_int_equal(client_stats_rows(before, after, "write", 3, &ops, &nops, &row), 0);
    assert_int_equal(nops, 2); /* only the ops with calls */
    const struct client_op_row *r = strcmp(ops[0].op, "READ") == 0 ? &ops[0] : &ops[1];
    const struct client_op_row *w = r == &ops[0] ? &ops[1] : &ops[0];
    assert_string_equal(r->op, "READ");
    assert_string_equal(w->op, "WRITE");
    assert_string_equal(r->phase, "write");
    assert_int_equal(r->host, 3);
    assert_true(r->ops == 10 && r->trans == 13 && r->retrans == 3);
    assert_true(r->bytes_recv == (double)(10 << 20) && r->rtt_ms == 55);
    assert_true(w->ops == 4 && w->retrans == 0 && w->timeouts == 1);
    assert_true(row.sends == 17 && row.bad_xids == 2 && row.read_bytes == (double)(10 << 20));
    assert_true(row.write_bytes == 0);
    assert_string_equal(row.mount_point, mount_point);
    assert_string_equal(row.proto, before->xprt.proto);
    free(ops);
    free(before);
    free(after);
}

/* A row of source at t counting from the reading at t - dt. */
static void add_row(struct monitor_batch *b, const char *source, double t, double dt)
{
    struct monitor_sample s;
    monitor_sample_init(&s, t, dt, "srv", source);
    s.cpu_busy = 0.5;
    monitor_add_sample(b, &s);
}

static void test_coverage(void **state)
{
    (void)state;
    struct monitor_batch b = {0};
    /* /proc: readings at 0.9 (the baseline), 1.1, 1.3, 1.5, 1.7 */
    for (double t = 1.1; t < 1.8; t += 0.2)
        add_row(&b, "proc", t, 0.2);
    /* a node_exporter: readings at 0.95, 1.2; it restarts: 1.4 (a new
     * baseline, no row), 1.6 */
    add_row(&b, "node_exporter", 1.2, 0.25);
    add_row(&b, "node_exporter", 1.6, 0.2);
    const double spans[][2] = {
        {1.0, 1.6}, /* inside the /proc readings; over the exporter's gap */
        {0.8, 1.2}, /* starts before the first reading */
        {1.4, 1.8}, /* ends after the last reading */
        {1.1, 1.5}, /* starts and ends at a reading */
        {1.25, 1.35},
    };
    enum { N = sizeof spans / sizeof spans[0] };
    const int proc_only[N] = {1, 0, 0, 1, 1}, both[N] = {0, 0, 0, 0, 0};
    struct summary_line lines[N];
    const struct summary_sources none = {0}, proc = {.proc = true},
                                 all = {.proc = true, .node_exporter = true};
    const struct summary_sources *want[] = {&none, &proc, &all};
    for (size_t w = 0; w < 3; w++) {
        memset(lines, 0, sizeof lines);
        for (int i = 0; i < N; i++) {
            lines[i].t_start = spans[i][0];
            lines[i].t_end = spans[i][1];
            lines[i].server = (struct phase_server){NAN, NAN, NAN, NAN, NAN, NAN, NAN, -1};
        }
        summary_add_monitor(lines, N, b.samples, b.nsamples, NULL, 0, want[w]);
        for (int i = 0; i < N; i++)
            assert_int_equal(lines[i].server.covered, w == 0   ? -1
                                                      : w == 1 ? proc_only[i]
                                                               : both[i]);
    }
    /* the exporter alone covers what lies between two of its readings,
     * on either side of its restart, but not across it */
    memset(lines, 0, sizeof lines);
    lines[0].t_start = 1.0, lines[0].t_end = 1.2;
    lines[1].t_start = 1.45, lines[1].t_end = 1.6;
    lines[2].t_start = 1.3, lines[2].t_end = 1.5; /* its new baseline 1.4 gave no row */
    const struct summary_sources url = {.node_exporter = true};
    summary_add_monitor(lines, 3, b.samples, b.nsamples, NULL, 0, &url);
    assert_int_equal(lines[0].server.covered, 1);
    assert_int_equal(lines[1].server.covered, 1);
    assert_int_equal(lines[2].server.covered, 0);
    monitor_batch_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sample_init),     cmocka_unit_test(test_add_and_move),
        cmocka_unit_test(test_pack_round_trip), cmocka_unit_test(test_client_rows),
        cmocka_unit_test(test_coverage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
