/* probe.c — herd check --probe's look at a target (probe.h). */
#include "probe.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "backend.h"
#include "job.h"
#include "nfsurl.h"
#include "srcport.h"
#include "urlserver.h"
#include "utf8.h"

#define PROBE_CONNECT_MS 3000 /* a server's port, at most */

static int probe_directory(const char *shown, const char *path, uint64_t writes, FILE *out)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT)
            fprintf(out, "probe: %s: does not exist\n", shown);
        else
            fprintf(out, "probe: %s: not reachable by this user (uid %u): %s\n", shown,
                    (unsigned)geteuid(), strerror(errno));
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
        fprintf(out, "probe: %s: is not a directory\n", shown);
        return 1;
    }
    if (access(path, W_OK | X_OK) != 0) {
        fprintf(out, "probe: %s: not writable by this user (uid %u): %s\n", shown,
                (unsigned)geteuid(), strerror(errno));
        return 1;
    }
    struct statvfs vfs;
    if (statvfs(path, &vfs) != 0) {
        fprintf(out, "probe: %s: statvfs: %s\n", shown, strerror(errno));
        return 1;
    }
    double avail = (double)vfs.f_bavail * (double)vfs.f_frsize;
    if ((double)writes > avail) {
        fprintf(out, "probe: %s: %.1f MiB free, the job writes up to %.1f MiB there\n", shown,
                avail / 1048576.0, (double)writes / 1048576.0);
        return 1;
    }
    fprintf(out, "probe: %s: ok (a writable directory, %.1f MiB free for up to %.1f MiB)\n", shown,
            avail / 1048576.0, (double)writes / 1048576.0);
    return 0;
}

/* A TCP connection to host:port within PROBE_CONNECT_MS: 0, or -errno;
 * a name that does not resolve is -EHOSTUNREACH with *gai set. */
static int connect_once(const char *host, const char *port, int *gai)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res;
    *gai = getaddrinfo(host, port, &hints, &res);
    if (*gai != 0)
        return -EHOSTUNREACH;
    int rc = -ECONNREFUSED;
    for (struct addrinfo *ai = res; ai && rc != 0; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            rc = -errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            rc = 0;
        } else if (errno == EINPROGRESS) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            int err = ETIMEDOUT;
            socklen_t len = sizeof err;
            if (poll(&p, 1, PROBE_CONNECT_MS) == 1)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
            rc = -err;
        } else {
            rc = -errno;
        }
        close(fd);
    }
    freeaddrinfo(res);
    return rc;
}

/* The server name of nfs://HOST[:PORT]/... or smb://[IPV6]:PORT/... into
 * host, the port the backend connects to, when the URL gives one (an
 * nfs:// URL's :PORT or nfsport=, nfsurl.h), into port (else left
 * alone): false when the URL is not one the backend's check takes. */
static bool url_server(const char *url, char *host, size_t hlen, char *port, size_t plen)
{
    struct nfsurl nfs;
    struct urlserver server;
    char why[256];
    const char *h = strstr(url, "://");
    unsigned short given;
    if (strncmp(url, "nfs://", 6) == 0) {
        if (nfsurl_parse(url, &nfs, why, sizeof why) < 0)
            return false;
        server = nfs.server;
        given = nfs.nfsport;
    } else if (h && urlserver_parse(h + 3, &server, why, sizeof why) >= 0) {
        given = server.port;
    } else {
        return false;
    }
    snprintf(host, hlen, "%s", server.host);
    if (given)
        snprintf(port, plen, "%u", given);
    return true;
}

/* Phase ph's export mounted as the run's clients will mount it (from
 * ordinary ports with clients_per_rank > 1, as the ranks connect) and
 * dropped at once: 0 with what it found in found, or 1 with the
 * finding's line on out. */
static int probe_mount(const struct phase *ph, const char *shown, char *found, size_t len,
                       FILE *out)
{
    const struct backend_ops *be = backend_find(ph->backend);
    if (!be)
        return 0; /* job/ refused the name already */
    if (ph->clients_per_rank > 1)
        srcport_allow_reserved(false);
    bool reserved = srcport_reserved();
    void *ctx;
    int rc = be->connect(ph->target, ph, NULL, &ctx);
    if (rc == 0) {
        be->disconnect(ctx);
        snprintf(found, len, "; the export mounts from %s, as the run's clients will",
                 reserved ? "a reserved port (below 1024)" : "an ordinary port (above 1023)");
        return 0;
    }
    char why[600];
    if (!probe_port_refused(ph, rc, why, sizeof why))
        snprintf(why, sizeof why, "the server answers, the mount fails: %s", strerror(-rc));
    fprintf(out, "probe: %s: %s\n", shown, why);
    return 1;
}

/* nfs://HOST[:PORT]/... or smb://HOST[:PORT]/...: the name resolves and
 * the port answers; an nfs:// export mounts. */
static int probe_server(const struct phase *ph, const char *shown, const char *port, FILE *out)
{
    char host[256], given[8];
    snprintf(given, sizeof given, "%s", port);
    if (!url_server(ph->target, host, sizeof host, given, sizeof given)) {
        fprintf(out, "probe: %s: no server name in the URL\n", shown);
        return 1;
    }
    int gai;
    int rc = connect_once(host, given, &gai);
    char name[300];
    utf8_escape(host, name, sizeof name);
    if (rc == -EHOSTUNREACH && gai != 0) {
        fprintf(out, "probe: %s: server name '%s' does not resolve: %s\n", shown, name,
                gai_strerror(gai));
        return 1;
    }
    if (rc < 0) {
        fprintf(out, "probe: %s: server %s port %s: %s\n", shown, name, given, strerror(-rc));
        return 1;
    }
    char mounted[128] = "";
    if (strcmp(ph->backend, "libnfs") == 0 && probe_mount(ph, shown, mounted, sizeof mounted, out))
        return 1;
    fprintf(out, "probe: %s: ok (server %s answers on port %s%s)\n", shown, name, given, mounted);
    return 0;
}

bool probe_name_unresolved(const char *url, char *why, size_t len)
{
    char host[256], port[8] = "";
    if (!url_server(url, host, sizeof host, port, sizeof port))
        return false;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res;
    int gai = getaddrinfo(host, NULL, &hints, &res);
    if (gai == 0) {
        freeaddrinfo(res);
        return false;
    }
    char name[300];
    utf8_escape(host, name, sizeof name);
    snprintf(why, len, "server name '%s' does not resolve: %s", name, gai_strerror(gai));
    return true;
}

bool probe_port_refused(const struct phase *ph, int rc, char *why, size_t len)
{
    const struct backend_ops *be = backend_find(ph->backend);
    if (rc != -EACCES || ph->clients_per_rank <= 1 || !be || srcport_allow_reserved(true) < 0)
        return false;
    void *ctx;
    int again = be->connect(ph->target, ph, NULL, &ctx);
    srcport_allow_reserved(false);
    if (again < 0)
        return false;
    be->disconnect(ctx);
    snprintf(why, len,
             "%s from ports above 1023: the export serves this host only from a reserved port "
             "(below 1024), and with clients_per_rank = %lld herd's clients connect from "
             "ordinary ones (a host has a few hundred reserved ports); run herd where the export "
             "takes them (inside the server's network namespace: nfs-server.sh exec) or give "
             "the export the insecure option (ganesha: PrivilegedPort = false)",
             strerror(EACCES), (long long)ph->clients_per_rank);
    return true;
}

int probe_target(const struct phase *ph, uint64_t writes, FILE *out)
{
    char shown[1024];
    utf8_escape(ph->target, shown, sizeof shown);
    if (strcmp(ph->backend, "libnfs") == 0 && strncmp(ph->target, "nfs://", 6) == 0)
        return probe_server(ph, shown, "2049", out);
    if (strcmp(ph->backend, "smb") == 0 && strncmp(ph->target, "smb://", 6) == 0)
        return probe_server(ph, shown, "445", out);
    return probe_directory(shown, ph->target, writes, out);
}
