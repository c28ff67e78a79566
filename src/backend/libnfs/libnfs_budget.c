/* libnfs_budget.c — what one libnfs client takes (libnfs_budget.h). */
#include "libnfs_budget.h"

#include "libnfs_ctx.h"
#include "mixspec.h"

/* nfs_inflight = 0: 16 RPCs, but at most this many bytes in flight. */
#define LIBNFS_INFLIGHT_AUTO 16
#define LIBNFS_INFLIGHT_AUTO_BYTES (4u << 20)
/* One client's own memory beyond its I/O buffers: its libnfs context,
 * the pages of its fiber's stack it touches, herd's tables for it
 * (measured: 161-165 KiB per client of an idle or a meta phase). */
#define LIBNFS_CLIENT_STATE (164u << 10)
/* libnfs 4.0 encodes a WRITE into a buffer of its data and this much
 * more (ZDR_ENCODEBUF_MINSIZE), kept until the WRITE is answered. */
#define LIBNFS_PDU_ROOM 4096u

unsigned libnfs_inflight(int64_t set, uint64_t rchunk, uint64_t wchunk)
{
    if (set > 0)
        return (unsigned)set;
    uint64_t chunk = rchunk > wchunk ? rchunk : wchunk;
    uint64_t n = chunk ? LIBNFS_INFLIGHT_AUTO_BYTES / chunk : LIBNFS_INFLIGHT_AUTO;
    if (n < 2)
        return 2;
    return n > LIBNFS_INFLIGHT_AUTO ? LIBNFS_INFLIGHT_AUTO : (unsigned)n;
}

bool libnfs_phase_writes_data(const struct phase *ph)
{
    unsigned caps = job_kind_caps(ph->kind);
    if (caps & JOB_KIND_WRITES)
        return true;
    if (caps & JOB_KIND_TREE) {
        uint64_t bytes;
        return job_phase_bytes(ph, &bytes) < 0 || bytes > 0;
    }
    return ph->rwmix_read >= 0 && ph->rwmix_read < 100;
}

/* One phase's sizes as a client of it sends them, tune's where it sets
 * them: bytes per call, per READ and per WRITE RPC (nfs_rsize and
 * nfs_wsize, else the server's, assumed LIBNFS_DEFAULT_XFER: the most
 * libnfs_mount takes), nfs_inflight (0: probed). */
struct budget {
    uint64_t block, rsize, wsize;
    int64_t inflight;
};

static uint64_t budget_rpc_size(uint64_t set)
{
    return set && set < LIBNFS_DEFAULT_XFER ? set : LIBNFS_DEFAULT_XFER;
}

static struct budget budget_of(const struct phase *ph, const struct client_tune *tune)
{
    const struct libnfs_opts *o = job_backend_opts(ph);
    return (struct budget){
        .block = tune && tune->block_size ? tune->block_size : ph->block_size,
        .rsize = budget_rpc_size(o->rsize),
        .wsize = budget_rpc_size(o->wsize),
        .inflight = tune && tune->inflight ? tune->inflight : o->inflight,
    };
}

static uint64_t budget_min(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

static uint64_t budget_chunks(uint64_t bytes, uint64_t chunk)
{
    uint64_t n = chunk ? bytes / chunk + (bytes % chunk != 0) : 1;
    return n ? n : 1;
}

/* Whether ph reads its files' data: read and md5, a write phase that
 * mixes reads in. */
static bool budget_reads(const struct phase *ph)
{
    unsigned caps = job_kind_caps(ph->kind);
    return ((caps & JOB_KIND_READS) && (caps & JOB_KIND_BLOCKS)) || ph->rwmix_read > 0;
}

/* Whether ph reads a file's range in order, unpaced: its stream reads
 * ahead in whole READs through the range (workload_io.c's advise). */
static bool budget_reads_ahead(const struct phase *ph)
{
    return budget_reads(ph) && ph->rwmix_read < 0 && ph->access == ACCESS_SEQUENTIAL &&
           ph->rate <= 0;
}

/* The bytes of one READ (write: WRITE) RPC of ph. */
static uint64_t budget_rpc(const struct phase *ph, const struct budget *b, bool write)
{
    if (write)
        return budget_min(b->block, b->wsize);
    return budget_reads_ahead(ph) ? budget_min(b->rsize, ph->file_size)
                                  : budget_min(b->block, b->rsize);
}

/* The RPCs of that direction one client of ph sends (a rank's share). */
static uint64_t budget_rpcs(const struct phase *ph, const struct client_tune *tune, bool write)
{
    if (!(write ? libnfs_phase_writes_data(ph) : budget_reads(ph)))
        return 0;
    struct budget b = budget_of(ph, tune);
    return budget_chunks(job_phase_bytes_per_rank(ph), budget_rpc(ph, &b, write));
}

/* The window of that direction a client reaches in phase i: nfs_inflight,
 * or as far as its probe gets with the RPCs of phases 0 to i (a probe
 * goes on across phases). */
static unsigned budget_window(const struct job *job, int i, const struct client_tune *tune,
                              bool write)
{
    struct budget b = budget_of(&job->phases[i], tune);
    unsigned ceiling = libnfs_inflight(b.inflight, b.rsize, b.wsize);
    if (b.inflight > 0)
        return ceiling;
    uint64_t replies = 0;
    for (int j = 0; j <= i; j++)
        replies += budget_rpcs(&job->phases[j], tune, write);
    return stream_window_reach(ceiling, replies);
}

/* A file's WRITEs: the stream's slots (window + 1: the one being filled)
 * and libnfs's encoded copy of each WRITE in flight, never more than the
 * file's WRITEs. */
static uint64_t budget_write_bytes(const struct phase *ph, const struct budget *b, unsigned w)
{
    uint64_t rpc = budget_rpc(ph, b, true);
    uint64_t chunks = budget_chunks(ph->file_size, rpc);
    uint64_t inflight = budget_min(w, chunks);
    return budget_min(inflight + 1, chunks) * rpc + inflight * (rpc + LIBNFS_PDU_ROOM);
}

/* A file's READs: the stream's 2 x window + 1 slots (answered READs wait
 * in theirs beside a full window), never more than the READs of what one
 * read goes through (its range when it reads ahead, else a block), and
 * the caller's buffer of a block. */
static uint64_t budget_read_bytes(const struct phase *ph, const struct budget *b, unsigned w)
{
    uint64_t rpc = budget_rpc(ph, b, false);
    uint64_t span = budget_reads_ahead(ph) ? ph->file_size : b->block;
    return budget_min(2 * (uint64_t)w + 1, budget_chunks(span, rpc)) * rpc + b->block;
}

uint64_t libnfs_client_memory(const struct job *job, int i, const struct client_tune *tune)
{
    const struct phase *ph = &job->phases[i];
    struct budget b = budget_of(ph, tune);
    uint64_t bytes = LIBNFS_CLIENT_STATE;
    if (libnfs_phase_writes_data(ph))
        bytes += budget_write_bytes(ph, &b, budget_window(job, i, tune, true));
    if (budget_reads(ph))
        bytes += budget_read_bytes(ph, &b, budget_window(job, i, tune, false));
    if (ph->rate > 0 && b.inflight > 1) /* paced: a buffer per call outstanding */
        bytes += (uint64_t)b.inflight * b.block;
    return bytes;
}

/* Whether phase ph takes locks: a lock phase (NLM over NFSv3, a context
 * of its own for the locked file over NFSv4), a mix with lock in it. */
static bool budget_locks(const struct phase *ph)
{
    struct mix_spec spec;
    char why[256];
    if (job_kind_caps(ph->kind) & JOB_KIND_LOCKS)
        return true;
    return ph->kind == KIND_MIX && !mixspec_parse(ph->mix, &spec, why, sizeof why) &&
           mixspec_locks(&spec);
}

unsigned libnfs_client_fds(const struct job *job)
{
    for (int i = 0; i < job->nphases; i++)
        if (budget_locks(&job->phases[i]))
            return 2; /* its connection, and its lock manager's or lock context's */
    return 1;
}
