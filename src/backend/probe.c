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

#include "nfsurl.h"
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

/* nfs://HOST[:PORT]/... or smb://HOST[:PORT]/...: the name resolves and
 * the port answers. */
static int probe_server(const char *shown, const char *url, const char *port, FILE *out)
{
    char host[256], given[8];
    snprintf(given, sizeof given, "%s", port);
    if (!url_server(url, host, sizeof host, given, sizeof given)) {
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
    fprintf(out, "probe: %s: ok (server %s answers on port %s)\n", shown, name, given);
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

int probe_target(const char *backend, const char *target, uint64_t writes, FILE *out)
{
    char shown[1024];
    utf8_escape(target, shown, sizeof shown);
    if (strcmp(backend, "libnfs") == 0 && strncmp(target, "nfs://", 6) == 0)
        return probe_server(shown, target, "2049", out);
    if (strcmp(backend, "smb") == 0 && strncmp(target, "smb://", 6) == 0)
        return probe_server(shown, target, "445", out);
    return probe_directory(shown, target, writes, out);
}
