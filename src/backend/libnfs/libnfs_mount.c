/* libnfs_mount.c — a libnfs backend context's connection: mount the
 * target (the URL as libnfs 4.0 reads it, a client name of its own, no
 * silent reconnects), drop it without touching a context that died
 * mid-call, and reconnect (libnfs_ctx.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h> /* before libnfs.h, which needs struct timeval */
#include <unistd.h>

#include <nfsc/libnfs.h> /* before the raw headers, which need its types */

#include <nfsc/libnfs-raw.h> /* nfs_get_fh */

#include <nfsc/libnfs-raw-nfs.h>
#include <nfsc/libnfs-raw-nfs4.h>

#include "libnfs_ctx.h"
#include "localerr.h"
#include "nfsurl.h"
#include "rpcwait.h"
#include "signals.h"

/* Forget a context. One whose connection died mid-call is not destroyed:
 * libnfs 4.0 crashes in nfs_destroy_context on it; closing its socket and
 * leaking its memory (a few KiB per lost connection) is the safe side. */
void libnfs_drop(struct libnfs_ctx *c)
{
    if (!c->nfs)
        return;
    libnfs_dirs_forget(c, NULL); /* frees the handles: no RPC */
    if (c->broken) {
        int fd = nfs_get_fd(c->nfs);
        if (fd >= 0)
            close(fd);
    } else {
        nfs_destroy_context(c->nfs);
    }
    c->nfs = NULL;
}

/* A mount that failed: libnfs 4.0 says EPERM ("Operation not permitted")
 * for a host it cannot resolve, EIO for a server that does not answer and
 * EFAULT for one that refuses the mount, and EIO too where this host had
 * no descriptor or memory for the socket (localerr.h);
 * tell them apart by its message (msg: the mount's own, else libnfs's). */
static int libnfs_mount_errno(struct libnfs_ctx *c, int rc, const char *msg)
{
    const char *said = c->nfs ? nfs_get_error(c->nfs) : NULL;
    int local = localerr_of(msg);
    if (!local)
        local = localerr_of(said);
    if (local)
        return local;
    if (!msg || !msg[0])
        msg = said;
    if (msg && (strstr(msg, "Can not resolv") || strstr(msg, "Invalid address")))
        return -EHOSTUNREACH;
    if (msg && strstr(msg, "refused"))
        return -ECONNREFUSED;
    if (rc == -EINTR && !signals_stop_requested())
        rc = -ETIMEDOUT; /* the mount's own RPC timed out: libnfs 4.0 says EINTR */
    if (rc != -EINTR && rc != -ETIMEDOUT)
        rc = libnfs_errno(c, rc);
    if (rc == -EIO || rc == -ECONNRESET || rc == -EPERM)
        rc = -ECONNREFUSED; /* nobody answered the mount */
    /* A server that answered and refused this client the export (its
     * address, or a source port above 1023 where the export wants a
     * reserved one): libnfs 4.0 says EFAULT ("mount_cb: (null)"). */
    if (rc == -EFAULT)
        rc = -EACCES;
    return rc;
}

/* The target URL as libnfs 4.0 reads it (nfsurl.h): nfs://host:port/export
 * becomes nfs://host/export?nfsport=port (4.0 takes "host:port" for a
 * host name), an [IPv6] host loses its brackets. libnfs_check refused
 * any other URL; one that does not parse or fit is copied as it is, for
 * libnfs to refuse. */
static void libnfs_url_port(const char *in, char *out, size_t len)
{
    struct nfsurl url;
    char why[256];
    if (nfsurl_parse(in, &url, why, sizeof why) < 0 || nfsurl_format_libnfs(&url, out, len) < 0)
        snprintf(out, len, "%s", in);
}

/* NFSv4 client names must differ between every context of every rank:
 * libnfs 4.0 names one "Libnfs pid:PID TIME", the same for two contexts a
 * process makes within a second, and a server takes a second SETCLIENTID
 * under a known name as that client's reboot, dropping the first's state. */
static void libnfs_client_name(struct nfs_context *nfs, const char *client)
{
    static unsigned made;
    char host[128] = "";
    if (client[0])
        snprintf(host, sizeof host, "%s", client);
    else
        gethostname(host, sizeof host - 1);
    char name[200];
    snprintf(name, sizeof name, "herd %s pid:%d ctx:%u", host, (int)getpid(), made++);
    nfs4_set_client_name(nfs, name);
}

/* One of a rank's clients presents its own name as AUTH_SYS machine
 * name (libnfs's default is "libnfs" for every context), so the server
 * sees K hosts; the uid and gid stay the process's. */
static void libnfs_client_auth(struct nfs_context *nfs, const char *client)
{
    if (!client[0])
        return;
    struct AUTH *auth =
        libnfs_authunix_create(client, (uint32_t)getuid(), (uint32_t)getgid(), 0, NULL);
    if (auth)
        nfs_set_auth(nfs, auth);
}

/* A mount in progress, awaited by rpcwait (so that a stop from any rank
 * ends the wait, not only op_timeout). */
struct libnfs_mount_wait {
    bool done;
    int err;
    char msg[200];
};

static void libnfs_mounted(int err, struct nfs_context *nfs, void *data, void *priv)
{
    (void)nfs;
    struct libnfs_mount_wait *w = priv;
    w->err = err;
    if (err < 0 && data)
        snprintf(w->msg, sizeof w->msg, "%s", (const char *)data);
    w->done = true;
}

int libnfs_mount(struct libnfs_ctx *c)
{
    c->nfs = nfs_init_context();
    if (!c->nfs)
        return -ENOMEM;
    libnfs_client_name(c->nfs, c->client);
    libnfs_client_auth(c->nfs, c->client);
    nfs_set_timeout(c->nfs, c->timeout_ms);
    /* No silent reconnect loops inside a call: a lost server must surface
     * as an error here, and herd reconnects between files. */
    nfs_set_autoreconnect(c->nfs, 0);
    char target[JOB_PATH_MAX + 32];
    libnfs_url_port(c->target, target, sizeof target);
    struct nfs_url *url = nfs_parse_url_dir(c->nfs, target);
    if (!url) {
        nfs_destroy_context(c->nfs);
        c->nfs = NULL;
        return -EINVAL;
    }
    /* After the URL, whose version= the parse applies: nfs_version wins. */
    if (c->version)
        nfs_set_version(c->nfs, c->version == 4 ? NFS_V4 : NFS_V3);
    struct libnfs_mount_wait w = {0};
    const char *why = NULL;
    int rc = nfs_mount_async(c->nfs, url->server, url->path, libnfs_mounted, &w);
    nfs_destroy_url(url); /* the call keeps copies */
    bool queued = rc == 0;
    if (queued)
        rc = rpcwait(nfs_get_rpc_context(c->nfs), &w.done, c->deadline, &why);
    if (rc == 0)
        rc = w.err;
    if (rc < 0) {
        rc = libnfs_mount_errno(c, rc, w.msg);
        if (why)
            libnfs_note(c, why);
        c->broken = queued && !w.done; /* a half-open call is still queued */
        libnfs_drop(c);
        c->broken = true;
        return rc;
    }
    /* libnfs 4.0 reports 0 over NFSv4 (nothing negotiated): ask the
     * server (a WRITE above its maxwrite is refused; the kernel's nfsd
     * drops the connection), at most 1 MiB as libnfs caps NFSv3's (it
     * drops a reply above 1 MiB + 4 KiB), else use 1 MiB, what NFS
     * servers commonly offer. */
    c->server_rmax = nfs_get_readmax(c->nfs);
    c->server_wmax = nfs_get_writemax(c->nfs);
    c->broken = false;
    if (c->v4 && (rc = libnfs_dirs_limits4(c, &c->server_rmax, &c->server_wmax)) < 0 && c->broken) {
        libnfs_drop(c);
        return rc;
    }
    if (c->server_rmax == 0 || c->server_rmax > LIBNFS_DEFAULT_XFER)
        c->server_rmax = LIBNFS_DEFAULT_XFER;
    if (c->server_wmax == 0 || c->server_wmax > LIBNFS_DEFAULT_XFER)
        c->server_wmax = LIBNFS_DEFAULT_XFER;
    return 0;
}

int libnfs_reconnect(struct libnfs_ctx *c)
{
    libnfs_drop(c);
    return libnfs_mount(c);
}
