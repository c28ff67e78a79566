/* nfs_async_peer.c — the plain libnfs peer of herd's libnfs data path for
 * bench/nfs_vs_nfscp.sh: one process, libnfs's own async API, N READ or
 * WRITE RPCs of CHUNK bytes in flight (nfs_pwrite_async / nfs_pread_async
 * and one rpc_service loop), the file written then read whole in order,
 * each buffer reused once its reply is in (CHUNK is cut to the server's
 * largest READ/WRITE, so that a slot is one RPC, as in herd's window).
 * Prints "write MIB_S read MIB_S"
 * (bytes / seconds from the first call to the last reply, the write's
 * COMMIT (fsync) included as herd's fsync = yes does; open and close
 * outside). Built by nfs_vs_nfscp.sh with cc.
 *   nfs_async_peer nfs://host/export FILE BYTES CHUNK INFLIGHT */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include <nfsc/libnfs.h>

#include <nfsc/libnfs-raw.h>

struct loop;

struct slot {
    struct loop *l;
    int busy;
    char *buf;
};

struct loop {
    struct nfs_context *nfs;
    struct nfsfh *fh;
    size_t chunk;
    int inflight, busy, failed;
    uint64_t bytes, next, done;
    struct slot *slots;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void replied(int err, struct nfs_context *nfs, void *data, void *priv)
{
    (void)nfs;
    struct slot *s = priv;
    struct loop *l = s->l;
    if (err <= 0) {
        l->failed = err < 0 ? err : -EIO;
    } else {
        if (data) /* a READ's bytes, valid only now: the program's copy */
            memcpy(s->buf, data, (size_t)err < l->chunk ? (size_t)err : l->chunk);
        l->done += (uint64_t)err;
    }
    s->busy = 0;
    l->busy--;
}

/* Send from every idle slot while bytes remain. */
static int loop_fill(struct loop *l, int write)
{
    for (int i = 0; i < l->inflight && l->next < l->bytes; i++) {
        struct slot *s = &l->slots[i];
        if (s->busy)
            continue;
        size_t n = l->bytes - l->next < l->chunk ? (size_t)(l->bytes - l->next) : l->chunk;
        int rc = write ? nfs_pwrite_async(l->nfs, l->fh, l->next, n, s->buf, replied, s)
                       : nfs_pread_async(l->nfs, l->fh, l->next, n, replied, s);
        if (rc < 0)
            return rc;
        s->busy = 1;
        l->busy++;
        l->next += n;
    }
    return 0;
}

static int loop_run(struct loop *l, int write)
{
    struct rpc_context *rpc = nfs_get_rpc_context(l->nfs);
    l->next = l->done = 0;
    while (!l->failed && (l->done < l->bytes || l->busy)) {
        if (loop_fill(l, write) < 0)
            return -EIO;
        struct pollfd p = {.fd = rpc_get_fd(rpc), .events = (short)rpc_which_events(rpc)};
        if (poll(&p, 1, 30000) <= 0 || rpc_service(rpc, p.revents) < 0)
            return -EIO;
    }
    return l->failed;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: %s nfs://host/export FILE BYTES CHUNK INFLIGHT\n", argv[0]);
        return 2;
    }
    struct loop l = {.bytes = strtoull(argv[3], NULL, 10),
                     .chunk = strtoull(argv[4], NULL, 10),
                     .inflight = atoi(argv[5])};
    if (l.chunk == 0 || l.inflight < 1 || l.bytes == 0) {
        fprintf(stderr, "nfs_async_peer: BYTES, CHUNK and INFLIGHT must be > 0\n");
        return 2;
    }
    l.nfs = nfs_init_context();
    struct nfs_url *url = l.nfs ? nfs_parse_url_dir(l.nfs, argv[1]) : NULL;
    if (!url || nfs_mount(l.nfs, url->server, url->path) != 0) {
        fprintf(stderr, "nfs_async_peer: mount %s: %s\n", argv[1],
                l.nfs ? nfs_get_error(l.nfs) : "no context");
        return 1;
    }
    /* One RPC per call, as herd counts its window: libnfs splits a call
     * larger than the server's largest READ or WRITE into several RPCs
     * sent at once (a knfsd with little memory offers 64 KiB), which
     * would put CHUNK / max RPCs in flight per slot. */
    size_t rpcmax = nfs_get_readmax(l.nfs) < nfs_get_writemax(l.nfs) ? nfs_get_readmax(l.nfs)
                                                                     : nfs_get_writemax(l.nfs);
    if (rpcmax > 0 && l.chunk > rpcmax) {
        fprintf(stderr, "nfs_async_peer: the server's largest RPC is %zu bytes: %zu-byte RPCs\n",
                rpcmax, rpcmax);
        l.chunk = rpcmax;
    }
    l.slots = calloc((size_t)l.inflight, sizeof *l.slots);
    for (int i = 0; l.slots && i < l.inflight; i++) {
        l.slots[i].l = &l;
        if (!(l.slots[i].buf = malloc(l.chunk)))
            return 1;
        memset(l.slots[i].buf, 'h' + i, l.chunk);
    }
    if (!l.slots || nfs_open2(l.nfs, argv[2], O_CREAT | O_TRUNC | O_RDWR, 0600, &l.fh) != 0) {
        fprintf(stderr, "nfs_async_peer: open %s: %s\n", argv[2], nfs_get_error(l.nfs));
        return 1;
    }
    double t0 = now();
    int rc = loop_run(&l, 1);
    if (rc == 0)
        rc = nfs_fsync(l.nfs, l.fh);
    double t1 = now();
    if (rc == 0)
        rc = loop_run(&l, 0);
    double t2 = now();
    nfs_close(l.nfs, l.fh);
    nfs_unlink(l.nfs, argv[2]);
    if (rc != 0) {
        fprintf(stderr, "nfs_async_peer: %s\n", nfs_get_error(l.nfs));
        return 1;
    }
    printf("%.1f %.1f\n", (double)l.bytes / 1048576.0 / (t1 - t0),
           (double)l.bytes / 1048576.0 / (t2 - t1));
    nfs_destroy_url(url);
    nfs_destroy_context(l.nfs);
    return 0;
}
