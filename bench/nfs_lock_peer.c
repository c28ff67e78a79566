/* nfs_lock_peer.c — the peer of herd's lock phase over NFS for
 * bench/locks.sh: one process, plain libnfs, the same calls herd makes per
 * exclusive whole-file grant (LOCK, read 16 B, write 16 B, read 16 B,
 * write 16 B, UNLOCK), over NLM (NFSv3, raw rpc_nlm4_*) or NFSv4
 * (nfs_fcntl LOCK, nfs_lseek + nfs_lockf ULOCK), for SECONDS. Prints
 * "pairs N seconds S pairs_per_s R". Built by locks.sh with cc.
 *   nfs_lock_peer nfs://host/export 3|4 FILE SECONDS [anchor]
 * anchor (NLM only): first lock FILE.anchor by another owner of this host
 * and hold it to the end, so that the server keeps the host monitored
 * (rpc.statd) between the loop's lock/unlock pairs. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs.h> /* NFS_V3 */
#include <nfsc/libnfs-raw-nfs4.h>
#include <nfsc/libnfs-raw-nlm.h>

struct nfs_fh {
    int len;
    char *val;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct wait {
    int done, status, stat;
};

static void cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
    (void)rpc;
    struct wait *w = priv;
    w->status = status;
    if (status == RPC_STATUS_SUCCESS && data)
        w->stat = (int)((NLM4_LOCKres *)data)->status; /* same layout as UNLOCKres */
    w->done = 1;
}

static int await(struct rpc_context *rpc, struct wait *w)
{
    while (!w->done) {
        struct pollfd p = {rpc_get_fd(rpc), (short)rpc_which_events(rpc), 0};
        if (poll(&p, 1, 100) < 0 && errno != EINTR)
            return -1;
        if (rpc_service(rpc, p.revents) < 0)
            return -1;
    }
    return w->status == RPC_STATUS_SUCCESS ? w->stat : -1;
}

/* Lock PATH.anchor (created) exclusively by owner "anchor@HOST" and keep
 * it; unlock: release it (an NLM lock outlives its process). */
static int peer_anchor(struct nfs_context *nfs, struct rpc_context *rpc, const char *path,
                       char *host, int unlock)
{
    char apath[1100], owner[300];
    struct nfsfh *fh;
    snprintf(apath, sizeof apath, "%s.anchor", path);
    snprintf(owner, sizeof owner, "anchor@%s", host);
    if (nfs_open2(nfs, apath, O_RDWR | O_CREAT, 0644, &fh) < 0) {
        fprintf(stderr, "open anchor: %s\n", nfs_get_error(nfs));
        return -1;
    }
    struct nfs_fh *h = nfs_get_fh(fh);
    uint32_t cookie = 0xa0c4;
    NLM4_LOCKargs a;
    memset(&a, 0, sizeof a);
    a.cookie.data.data_len = sizeof cookie;
    a.cookie.data.data_val = (char *)&cookie;
    a.exclusive = 1;
    a.lock = (nlm4_lock){host, {{(u_int)h->len, h->val}}, owner, 1, 0, 0};
    struct wait w = {0};
    NLM4_UNLOCKargs u = {a.cookie, a.lock};
    int rc = unlock ? rpc_nlm4_unlock_async(rpc, cb, &u, &w) : rpc_nlm4_lock_async(rpc, cb, &a, &w);
    if (rc != 0 || await(rpc, &w) != 0) {
        fprintf(stderr, "nlm anchor %s: %d\n", unlock ? "unlock" : "lock", w.stat);
        return -1;
    }
    return nfs_close(nfs, fh) < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
    if (argc != 5 && !(argc == 6 && strcmp(argv[5], "anchor") == 0)) {
        fprintf(stderr, "usage: %s nfs://host/export 3|4 FILE SECONDS [anchor]\n", argv[0]);
        return 2;
    }
    int v4 = atoi(argv[2]) == 4;
    double secs = atof(argv[4]);
    struct nfs_context *nfs = nfs_init_context();
    nfs_set_version(nfs, v4 ? NFS_V4 : NFS_V3);
    struct nfs_url *url = nfs_parse_url_dir(nfs, argv[1]);
    if (!url || nfs_mount(nfs, url->server, url->path) < 0) {
        fprintf(stderr, "mount: %s\n", nfs_get_error(nfs));
        return 1;
    }
    struct nfsfh *fh;
    char path[1024];
    snprintf(path, sizeof path, "/%s", argv[3]);
    /* libnfs 4.0's NFSv4 OPEN with O_CREAT fails NFS4ERR_EXIST on a file
     * that exists: create only a missing one. */
    if (nfs_open2(nfs, path, O_RDWR, 0644, &fh) < 0 &&
        nfs_open2(nfs, path, O_RDWR | O_CREAT, 0644, &fh) < 0) {
        fprintf(stderr, "open: %s\n", nfs_get_error(nfs));
        return 1;
    }
    char buf[16] = {0}, tok[16] = "peer-token";
    struct rpc_context *rpc = NULL;
    char host[256] = "peer", owner[300];
    gethostname(host, sizeof host - 1);
    snprintf(owner, sizeof owner, "peer.%d@%s", (int)getpid(), host);
    struct nfs_fh *h = nfs_get_fh(fh);
    if (!v4) {
        rpc = rpc_init_context();
        struct wait w = {0};
        if (rpc_connect_program_async(rpc, url->server, 100021, 4, cb, &w) != 0 ||
            await(rpc, &w) < 0) {
            fprintf(stderr, "nlm connect failed\n");
            return 1;
        }
        if (argc == 6 && peer_anchor(nfs, rpc, path, host, 0) != 0)
            return 1;
    } else {
        struct nfs4_flock fl = {F_WRLCK, SEEK_SET, 0, 1ull << 62, 1};
        uint64_t at;
        if (nfs_fcntl(nfs, fh, NFS4_F_SETLK, &fl) < 0 ||
            nfs_lseek(nfs, fh, 1ll << 62, SEEK_SET, &at) < 0 ||
            nfs_lockf(nfs, fh, NFS4_F_ULOCK, 1) < 0) {
            fprintf(stderr, "v4 first lock: %s\n", nfs_get_error(nfs));
            return 1;
        }
    }
    long pairs = 0;
    uint32_t cookie = 0;
    double t0 = now(), end = t0 + secs;
    while (now() < end) {
        if (!v4) {
            NLM4_LOCKargs a;
            memset(&a, 0, sizeof a);
            a.cookie.data.data_len = sizeof cookie;
            a.cookie.data.data_val = (char *)&cookie;
            a.exclusive = 1;
            a.lock = (nlm4_lock){host, {{(u_int)h->len, h->val}}, owner, (u_int)getpid(), 0, 0};
            struct wait w = {0};
            cookie++;
            if (rpc_nlm4_lock_async(rpc, cb, &a, &w) != 0 || await(rpc, &w) != 0) {
                fprintf(stderr, "nlm lock: %d\n", w.stat);
                return 1;
            }
        } else {
            struct nfs4_flock fl = {F_WRLCK, SEEK_SET, 0, 0, UINT64_MAX};
            if (nfs_fcntl(nfs, fh, NFS4_F_SETLK, &fl) < 0) {
                fprintf(stderr, "v4 lock: %s\n", nfs_get_error(nfs));
                return 1;
            }
        }
        if (nfs_pread(nfs, fh, 0, 16, buf) < 0 || nfs_pwrite(nfs, fh, 0, 16, tok) < 0 ||
            nfs_pread(nfs, fh, 0, 16, buf) < 0 || nfs_pwrite(nfs, fh, 0, 16, buf) < 0) {
            fprintf(stderr, "io: %s\n", nfs_get_error(nfs));
            return 1;
        }
        if (!v4) {
            NLM4_UNLOCKargs a;
            memset(&a, 0, sizeof a);
            a.cookie.data.data_len = sizeof cookie;
            a.cookie.data.data_val = (char *)&cookie;
            a.lock = (nlm4_lock){host, {{(u_int)h->len, h->val}}, owner, (u_int)getpid(), 0, 0};
            struct wait w = {0};
            cookie++;
            if (rpc_nlm4_unlock_async(rpc, cb, &a, &w) != 0 || await(rpc, &w) != 0)
                return 1;
        } else {
            uint64_t at;
            if (nfs_lseek(nfs, fh, 0, SEEK_SET, &at) < 0 ||
                nfs_lockf(nfs, fh, NFS4_F_ULOCK, UINT64_MAX) < 0) {
                fprintf(stderr, "v4 unlock: %s\n", nfs_get_error(nfs));
                return 1;
            }
        }
        pairs++;
    }
    double el = now() - t0;
    if (argc == 6 && !v4 && peer_anchor(nfs, rpc, path, host, 1) != 0)
        return 1;
    printf("pairs %ld seconds %.3f pairs_per_s %.1f\n", pairs, el, pairs / el);
    return 0;
}
