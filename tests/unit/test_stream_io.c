/* test_stream_io.c — unit tests for the order of READs and WRITEs on one
 * libnfs stream (libnfs_stream.h) when replies come at moments a real
 * server cannot be made to choose: this file defines the six libnfs calls
 * the stream and rpcwait make (they take the place of libnfs's own in
 * this program), backed by a model transport that queues each RPC and
 * answers them, in order, when the context is serviced (unless the test
 * holds them back: replies on the way, or answers each only at a later
 * service and after some age, as a server across a link does) or when a
 * test says so (as another call on the same context would). The model's
 * file is an array; a WRITE may be told to fail.
 *
 * What must hold: a read finds a slot whatever WRITEs hold them, answered
 * or not (a WRITE answered elsewhere once left a window of 1 with no
 * free slot and the read with no READ queued); a WRITE that failed after
 * its write returned is reported once, by the file's next call; a READ
 * answered before the one the read waits for frees its place in the
 * window at once, and every byte is asked for exactly once; a write
 * sends nothing more once one of its WRITEs failed, and all the waits of
 * one call end by the call's deadline, however many replies come; a
 * stream given a sender of its own sends every RPC through it. */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h> /* before libnfs.h */
#include <unistd.h>

#include <cmocka.h>

#include <nfsc/libnfs.h> /* before the raw header, which needs its types */

#include <nfsc/libnfs-raw.h>

#include "clock.h"
#include "libnfs_stream.h"
#include "rpcwait.h"

#define MODEL_FILE 16384 /* bytes: room for every test's RPCs */
#define MODEL_QUEUE 64

/* One RPC sent and not answered yet. */
struct model_rpc {
    bool write;
    uint64_t offset;
    size_t len;
    const void *wbuf; /* the caller's bytes, kept until answered (libnfs does too) */
    nfs_cb cb;
    void *priv;
    unsigned service; /* model.services when it was sent */
    double sent;      /* clock_mono() then */
};

static struct model {
    unsigned char file[MODEL_FILE];
    struct model_rpc q[MODEL_QUEUE];
    unsigned n;
    int write_error;            /* < 0: every WRITE answered while set fails so */
    bool hold;                  /* servicing the context answers nothing: replies on the way */
    unsigned late;              /* > 0: servicing answers all but the oldest RPC, and counts down */
    unsigned reads, read_bytes; /* READs sent and the bytes they asked for */
    unsigned most_reads;        /* the most READs on the way at once */
    unsigned reads_before_head; /* READs sent when a held-back oldest one was answered */
    unsigned writes;            /* WRITEs sent */
    unsigned by_libnfs;         /* RPCs sent by libnfs's nfs_pread_async / nfs_pwrite_async */
    unsigned by_send;           /* RPCs sent by the stream's own sender (stream_io.send) */
    /* A server across a link: an RPC is answered only at a service after
     * the one in which it was sent (the stream's own send-and-pump takes
     * no reply) and once it is min_age seconds old, oldest first. */
    bool delayed;
    double min_age;
    unsigned services; /* rpc_service calls */
    int pipe[2];       /* the context's "socket": always readable */
} model;

/* Answer the queued RPC at index i (the others move up). */
static void model_answer_one(unsigned i)
{
    struct model_rpc r = model.q[i];
    memmove(model.q + i, model.q + i + 1, (--model.n - i) * sizeof model.q[0]);
    if (r.write && model.write_error < 0) {
        r.cb(model.write_error, NULL, "model: WRITE refused", r.priv);
    } else if (r.write) {
        memcpy(model.file + r.offset, r.wbuf, r.len);
        r.cb((int)r.len, NULL, NULL, r.priv);
    } else {
        size_t n = r.offset >= MODEL_FILE          ? 0
                   : r.offset + r.len > MODEL_FILE ? MODEL_FILE - r.offset
                                                   : r.len;
        r.cb((int)n, NULL, model.file + r.offset, r.priv);
    }
}

/* Answer the queued RPCs in the order sent, from the one at index from. */
static void model_answer_from(unsigned from)
{
    while (model.n > from)
        model_answer_one(from);
}

static void model_answer(void)
{
    model_answer_from(0);
}

static unsigned model_reads_on_the_way(void)
{
    unsigned n = 0;
    for (unsigned i = 0; i < model.n; i++)
        n += !model.q[i].write;
    return n;
}

static int model_send(bool write, uint64_t offset, uint64_t count, const void *buf, nfs_cb cb,
                      void *priv)
{
    if (offset + count > MODEL_FILE) /* the test's own mistake, not the stream's */
        fail_msg("model: an RPC at %llu + %llu lies past the model's file (%d bytes)",
                 (unsigned long long)offset, (unsigned long long)count, MODEL_FILE);
    if (model.n == MODEL_QUEUE)
        return -1;
    model.q[model.n++] =
        (struct model_rpc){write, offset, count, buf, cb, priv, model.services, clock_mono()};
    model.writes += write;
    if (!write) {
        model.reads++;
        model.read_bytes += (unsigned)count;
        if (model_reads_on_the_way() > model.most_reads)
            model.most_reads = model_reads_on_the_way();
    }
    return 0;
}

int nfs_pread_async(struct nfs_context *nfs, struct nfsfh *fh, uint64_t offset, uint64_t count,
                    nfs_cb cb, void *priv)
{
    (void)nfs;
    (void)fh;
    model.by_libnfs++;
    return model_send(false, offset, count, NULL, cb, priv);
}

int nfs_pwrite_async(struct nfs_context *nfs, struct nfsfh *fh, uint64_t offset, uint64_t count,
                     const void *buf, nfs_cb cb, void *priv)
{
    (void)nfs;
    (void)fh;
    model.by_libnfs++;
    return model_send(true, offset, count, buf, cb, priv);
}

/* The stream's own sender (herd's NFSv4 READs and WRITEs): its arg must
 * be the one the stream was given. */
static int model_own_send(void *arg, struct nfs_context *nfs, bool write, uint64_t offset,
                          size_t len, const void *buf, stream_cb *cb, void *priv)
{
    (void)nfs;
    assert_ptr_equal(arg, &model);
    model.by_send++;
    return model_send(write, offset, len, buf, cb, priv);
}

struct rpc_context *nfs_get_rpc_context(struct nfs_context *nfs)
{
    return (struct rpc_context *)nfs;
}

int rpc_get_fd(struct rpc_context *rpc)
{
    (void)rpc;
    return model.pipe[0];
}

int rpc_which_events(struct rpc_context *rpc)
{
    (void)rpc;
    return POLLIN;
}

/* delayed: how many of the oldest RPCs are due now. */
static unsigned model_due(void)
{
    unsigned n = 0;
    while (n < model.n && model.q[n].service + 1 < model.services &&
           clock_mono() - model.q[n].sent >= model.min_age)
        n++;
    return n;
}

int rpc_service(struct rpc_context *rpc, int revents)
{
    (void)rpc;
    (void)revents;
    model.services++;
    if (model.hold)
        return 0;
    if (model.delayed) {
        for (unsigned due = model_due(); due > 0; due--)
            model_answer_one(0);
        return 0;
    }
    if (model.late) { /* the oldest stays on the way */
        model.late--;
        model_answer_from(1);
        return 0;
    }
    if (model.n)
        model.reads_before_head = model.reads;
    model_answer();
    return 0;
}

static int rpc_errno_same(void *arg, int rc, bool write, size_t len)
{
    (void)arg;
    (void)write;
    (void)len;
    return rc;
}

/* A stream of 4 slots with a READ window of 1 (a probe's first try, or a
 * kept 1) and a WRITE window of 4, on the model's context. */
struct rig {
    struct nfs_stream *s;
    struct stream_window rwin, wwin;
    bool broken;
    const char *why;
    struct stream_io io;
};

static int rig_setup(void **state)
{
    static struct rig rig;
    memset(&model, 0, sizeof model);
    if (pipe(model.pipe) != 0 || write(model.pipe[1], "x", 1) != 1)
        return -1;
    rig = (struct rig){.s = stream_new(4)};
    stream_window_init(&rig.rwin, 1, false);
    stream_window_init(&rig.wwin, 4, false);
    rig.io = (struct stream_io){.nfs = (struct nfs_context *)&model,
                                .fh = NULL,
                                .rchunk = 1024,
                                .wchunk = 1024,
                                .deadline = rpcwait_deadline(10000),
                                .rwin = &rig.rwin,
                                .wwin = &rig.wwin,
                                .rpc_errno = rpc_errno_same,
                                .broken = &rig.broken,
                                .why = &rig.why};
    *state = &rig;
    return rig.s ? 0 : -1;
}

static int rig_teardown(void **state)
{
    struct rig *rig = *state;
    stream_free(rig->s);
    close(model.pipe[0]);
    close(model.pipe[1]);
    return 0;
}

/* A write whose WRITE stays on the way (the model holds replies back). */
static void rig_write_behind(struct rig *rig, const void *buf, size_t len, uint64_t offset)
{
    unsigned before = model.n;
    model.hold = true;
    assert_int_equal(stream_pwrite(rig->s, &rig->io, buf, len, offset), len);
    model.hold = false;
    assert_int_equal(model.n, before + 1);
}

/* A WRITE still on the way when the file is read: it lands first, and
 * the read sees its bytes. */
static void test_read_after_write_in_flight(void **state)
{
    struct rig *rig = *state;
    char token[16] = "herd token 0001";
    rig_write_behind(rig, token, sizeof token, 0);
    char seen[16] = {0};
    assert_int_equal(stream_pread(rig->s, &rig->io, seen, sizeof seen, 0), sizeof seen);
    assert_memory_equal(seen, token, sizeof token);
}

/* The WRITE's reply came during another call on the context: its slot is
 * answered but not taken, and the READ window of 1 has no slot free. */
static void test_read_after_write_answered_elsewhere(void **state)
{
    struct rig *rig = *state;
    char token[16] = "herd token 0002";
    rig_write_behind(rig, token, sizeof token, 64);
    model_answer();
    char seen[16] = {0};
    assert_int_equal(stream_pread(rig->s, &rig->io, seen, sizeof seen, 64), sizeof seen);
    assert_memory_equal(seen, token, sizeof token);
    assert_false(rig->broken);
}

/* The same with a WRITE that failed: the next call (a read) reports it,
 * once; the call after it reads. */
static void test_failed_write_answered_elsewhere(void **state)
{
    struct rig *rig = *state;
    char token[16] = "herd token 0003";
    rig_write_behind(rig, token, sizeof token, 128);
    model.write_error = -EIO;
    model_answer();
    model.write_error = 0;
    char seen[16];
    assert_int_equal(stream_pread(rig->s, &rig->io, seen, sizeof seen, 128), -EIO);
    memset(model.file + 128, 'z', sizeof seen);
    assert_int_equal(stream_pread(rig->s, &rig->io, seen, sizeof seen, 128), sizeof seen);
    assert_memory_equal(seen, "zzzzzzzzzzzzzzzz", sizeof seen);
}

/* Several answered WRITEs hold slots when a read comes. */
static void test_read_after_answered_writes(void **state)
{
    struct rig *rig = *state;
    char chunk[1024];
    for (int i = 0; i < 3; i++) {
        memset(chunk, 'a' + i, sizeof chunk);
        rig_write_behind(rig, chunk, sizeof chunk, 1024u * i);
    }
    model_answer();
    char seen[4];
    assert_int_equal(stream_pread(rig->s, &rig->io, seen, sizeof seen, 2 * 1024 - 2), sizeof seen);
    assert_memory_equal(seen, "bbcc", sizeof seen);
    assert_int_equal(stream_drain(rig->s, &rig->io), 0);
}

/* The READ the read waits for comes last: each READ answered before it
 * is replaced at once, never more than the window on the way, and the
 * whole advised range (read in part, in part lent) is asked for once,
 * one READ per chunk, and handed out in file order. */
static void test_reads_answered_before_the_head(void **state)
{
    struct rig *rig = *state;
    enum { CHUNK = 256, RANGE = 4096 };
    for (unsigned i = 0; i < RANGE; i++)
        model.file[i] = (unsigned char)(i * 7 + i / 251);
    stream_window_init(&rig->rwin, 4, false);
    rig->io.rchunk = CHUNK;
    stream_advise(rig->s, 0, RANGE);
    unsigned char seen[RANGE];
    model.late = 2;
    assert_int_equal(stream_pread(rig->s, &rig->io, seen, CHUNK, 0), CHUNK);
    /* 4 sent, 3 more after the first service that answered all but the
     * head, 2 after the second (the stream's 2 * 4 + 1 slots are full):
     * 9 (waiting for the head: 4) */
    assert_int_equal(model.reads_before_head, 9);
    for (unsigned off = CHUNK; off < RANGE / 2; off += CHUNK) {
        model.late = off / CHUNK % 3;
        assert_int_equal(stream_pread(rig->s, &rig->io, seen + off, CHUNK, off), CHUNK);
    }
    for (unsigned off = RANGE / 2; off < RANGE; off += CHUNK) {
        model.late = off / CHUNK % 3;
        const void *data = NULL;
        assert_int_equal(stream_pread_lend(rig->s, &rig->io, seen + off, CHUNK, off, &data), CHUNK);
        memcpy(seen + off, data, CHUNK);
    }
    assert_memory_equal(seen, model.file, RANGE);
    assert_int_equal(model.most_reads, 4);
    assert_int_equal(model.reads, RANGE / CHUNK);
    assert_int_equal(model.read_bytes, RANGE);
    assert_int_equal(stream_drain(rig->s, &rig->io), 0);
}

/* A write of four WRITEs, one on the way at a time, whose first WRITE
 * fails when its reply comes (libnfs's own timeout answers a WRITE so):
 * the write returns that error and sends none of the other three (each
 * would have waited op_timeout again on a server that is gone). */
static void test_write_stops_at_failed_write(void **state)
{
    struct rig *rig = *state;
    char block[4096];
    memset(block, 'w', sizeof block);
    stream_window_init(&rig->wwin, 1, false);
    model.delayed = true;
    model.write_error = -ETIMEDOUT;
    assert_int_equal(stream_pwrite(rig->s, &rig->io, block, sizeof block, 0), -ETIMEDOUT);
    assert_int_equal(model.writes, 1);
    model.write_error = 0;
    assert_int_equal(stream_drain(rig->s, &rig->io), 0);
}

/* Replies that keep coming do not stretch a call: a write of eight WRITEs,
 * one on the way at a time, each answered no sooner than 50 ms after it
 * was sent (at least 0.4 s in all), ends at its deadline 0.2 s after it
 * began with -ETIMEDOUT and the context broken, having sent at most the
 * WRITEs that fit in that time. */
static void test_write_ends_at_call_deadline(void **state)
{
    struct rig *rig = *state;
    char block[8192];
    memset(block, 'd', sizeof block);
    stream_window_init(&rig->wwin, 1, false);
    model.delayed = true;
    model.min_age = 0.05;
    rig->io.deadline = rpcwait_deadline(200);
    assert_int_equal(stream_pwrite(rig->s, &rig->io, block, sizeof block, 0), -ETIMEDOUT);
    assert_true(rig->broken);
    assert_string_equal(rig->why, "RPC_TIMEOUT");
    assert_in_range(model.writes, 1, 5);
}

/* The own sender's failures are its own codes (libnfs_data4.c: a status
 * carried to the stream's rpc_errno); this one says ENOSPC. */
#define MODEL_OWN_NOSPC (-0x10000 - 28)
static int rpc_errno_own(void *arg, int rc, bool write, size_t len)
{
    (void)arg;
    (void)len;
    assert_true(write);
    return rc == MODEL_OWN_NOSPC ? -ENOSPC : rc;
}

/* A stream with a sender of its own (stream_io.send) sends every READ and
 * WRITE through it, none through libnfs's calls, with the same windows
 * and bytes; a WRITE that fails after its write returned is reported by
 * the next call as the sender's rpc_errno names it, once. */
static void test_own_sender(void **state)
{
    struct rig *rig = *state;
    rig->io.send = model_own_send;
    rig->io.send_arg = &model;
    rig->io.rpc_errno = rpc_errno_own;
    char block[3000], seen[3000];
    for (size_t i = 0; i < sizeof block; i++)
        block[i] = (char)('a' + i % 26);
    assert_int_equal(stream_pwrite(rig->s, &rig->io, block, sizeof block, 0), sizeof block);
    assert_int_equal(stream_pread(rig->s, &rig->io, seen, sizeof seen, 0), sizeof seen);
    assert_memory_equal(seen, block, sizeof block);
    assert_int_equal(model.writes, 3); /* 1024-byte WRITEs */
    assert_int_equal(model.by_send, 6);
    assert_int_equal(model.by_libnfs, 0);
    rig_write_behind(rig, block, 100, 4096);
    model.write_error = MODEL_OWN_NOSPC;
    model_answer();
    model.write_error = 0;
    assert_int_equal(stream_drain(rig->s, &rig->io), -ENOSPC);
    assert_int_equal(stream_drain(rig->s, &rig->io), 0);
    assert_int_equal(model.by_libnfs, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_read_after_write_in_flight, rig_setup, rig_teardown),
        cmocka_unit_test_setup_teardown(test_read_after_write_answered_elsewhere, rig_setup,
                                        rig_teardown),
        cmocka_unit_test_setup_teardown(test_failed_write_answered_elsewhere, rig_setup,
                                        rig_teardown),
        cmocka_unit_test_setup_teardown(test_read_after_answered_writes, rig_setup, rig_teardown),
        cmocka_unit_test_setup_teardown(test_reads_answered_before_the_head, rig_setup,
                                        rig_teardown),
        cmocka_unit_test_setup_teardown(test_write_stops_at_failed_write, rig_setup, rig_teardown),
        cmocka_unit_test_setup_teardown(test_write_ends_at_call_deadline, rig_setup, rig_teardown),
        cmocka_unit_test_setup_teardown(test_own_sender, rig_setup, rig_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
