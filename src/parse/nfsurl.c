/* nfsurl.c — nfs:// URLs checked against what libnfs 4.0 reads, and
 * written back in its form (nfsurl.h). */
#include "nfsurl.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define SHOWN_MAX 80 /* bytes of an option a message quotes, at most */

enum option_value { VALUE_NUMBER, VALUE_IFNAME, VALUE_REFUSED };

/* The options libnfs 4.0's nfs_parse_url reads (lib/libnfs.c:
 * nfs_set_context_args), each with what its value may be. */
static const struct option {
    const char *name;
    enum option_value value;
    unsigned long min, max; /* VALUE_NUMBER */
    const char *refused;    /* VALUE_REFUSED: why */
} options[] = {
    {"version", VALUE_NUMBER, 3, 4, NULL},
    {"nfsport", VALUE_NUMBER, 1, 65535, NULL},
    {"mountport", VALUE_NUMBER, 1, 65535, NULL},
    {"uid", VALUE_NUMBER, 0, 2147483647, NULL},
    {"gid", VALUE_NUMBER, 0, 2147483647, NULL},
    {"tcp-syncnt", VALUE_NUMBER, 1, 127, NULL},
    {"readahead", VALUE_NUMBER, 0, 2147483647, NULL},
    {"pagecache", VALUE_NUMBER, 0, 2147483647, NULL},
    {"debug", VALUE_NUMBER, 0, 2147483647, NULL},
    {"dircache", VALUE_NUMBER, 0, 1, NULL},
    {"auto-traverse-mounts", VALUE_NUMBER, 0, 1, NULL},
    {"if", VALUE_IFNAME, 0, 0, NULL},
    {"autoreconnect", VALUE_REFUSED, 0, 0,
     "herd turns libnfs's reconnects off (a lost server is an error of the call) and "
     "reconnects between files itself"},
};
#define NOPTIONS (sizeof options / sizeof options[0])
#define IFNAME_MAX 15 /* IFNAMSIZ - 1 */

/* The option called [name, name + n), or NULL. */
static const struct option *option_find(const char *name, size_t n)
{
    for (size_t i = 0; i < NOPTIONS; i++)
        if (strlen(options[i].name) == n && memcmp(options[i].name, name, n) == 0)
            return &options[i];
    return NULL;
}

/* "version, nfsport, ..." into buf: the names an option may have. */
static const char *option_names(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < NOPTIONS && used < len; i++)
        if (options[i].value != VALUE_REFUSED)
            used +=
                (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", options[i].name);
    return buf;
}

/* The n bytes at v as option o's number: plain decimal digits within its
 * bounds. */
static int value_number(const struct option *o, const char *v, size_t n, unsigned long *out,
                        char *why, size_t whylen)
{
    unsigned long x = 0;
    bool digits = n > 0 && strspn(v, "0123456789") >= n && (n == 1 || v[0] != '0');
    for (size_t i = 0; digits && i < n && x <= o->max; i++)
        x = x * 10 + (unsigned long)(v[i] - '0');
    if (digits && x >= o->min && x <= o->max) {
        *out = x;
        return 0;
    }
    int shown = (int)(n < SHOWN_MAX ? n : SHOWN_MAX);
    if (!digits)
        snprintf(why, whylen, "option %s='%.*s' is not a number (decimal digits, no leading zero)",
                 o->name, shown, v);
    else if (o->max - o->min == 1)
        snprintf(why, whylen, "option %s=%.*s must be %lu or %lu", o->name, shown, v, o->min,
                 o->max);
    else
        snprintf(why, whylen, "option %s=%.*s must be %lu to %lu", o->name, shown, v, o->min,
                 o->max);
    return -1;
}

/* One NAME=VALUE of n bytes at p into u; seen marks the options given. */
static int option_parse(struct nfsurl *u, const char *p, size_t n, bool *seen, char *why,
                        size_t whylen)
{
    const char *eq = memchr(p, '=', n);
    size_t nlen = eq ? (size_t)(eq - p) : n, vlen = eq ? n - nlen - 1 : 0;
    const char *v = eq ? eq + 1 : p + n;
    int shown = (int)(nlen < SHOWN_MAX ? nlen : SHOWN_MAX);
    const struct option *o = option_find(p, nlen);
    char names[256];
    if (n == 0) {
        snprintf(why, whylen, "an empty option ('?' or '&' with no NAME=VALUE after it)");
        return -1;
    }
    if (!o) {
        snprintf(why, whylen, "unknown option '%.*s' (libnfs reads %s)", shown, p,
                 option_names(names, sizeof names));
        return -1;
    }
    if (o->value == VALUE_REFUSED) {
        snprintf(why, whylen, "option %s: %s", o->name, o->refused);
        return -1;
    }
    if (seen[o - options]) {
        snprintf(why, whylen, "option %s given twice", o->name);
        return -1;
    }
    seen[o - options] = true;
    if (!eq || vlen == 0) {
        snprintf(why, whylen, "option %s needs a value (%s=VALUE)", o->name, o->name);
        return -1;
    }
    if (o->value == VALUE_IFNAME) {
        if (vlen <= IFNAME_MAX &&
            strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") >= vlen)
            return 0;
        snprintf(why, whylen,
                 "option if='%.*s' is not an interface name (1-%d letters, digits, '.', '_', "
                 "'-')",
                 (int)(vlen < SHOWN_MAX ? vlen : SHOWN_MAX), v, IFNAME_MAX);
        return -1;
    }
    unsigned long x;
    if (value_number(o, v, vlen, &x, why, whylen) < 0)
        return -1;
    if (strcmp(o->name, "version") == 0)
        u->version = (int)x;
    else if (strcmp(o->name, "nfsport") == 0)
        u->nfsport = (unsigned short)x;
    else if (strcmp(o->name, "mountport") == 0)
        u->mountport = (unsigned short)x;
    return 0;
}

/* The options of u (u->options), each checked. */
static int options_parse(struct nfsurl *u, char *why, size_t whylen)
{
    bool seen[NOPTIONS] = {false};
    const char *p = u->options, *end = u->options + u->options_len;
    while (true) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *stop = amp ? amp : end;
        if (option_parse(u, p, (size_t)(stop - p), seen, why, whylen) < 0)
            return -1;
        if (!amp)
            return 0;
        p = amp + 1;
    }
}

int nfsurl_parse(const char *url, struct nfsurl *u, char *why, size_t whylen)
{
    memset(u, 0, sizeof *u);
    if (strncmp(url, "nfs://", 6) != 0) {
        snprintf(why, whylen, "not an nfs:// URL");
        return -1;
    }
    int n = urlserver_parse(url + 6, &u->server, why, whylen);
    if (n < 0)
        return -1;
    u->path = url + 6 + n;
    if (*u->path != '/') {
        snprintf(why, whylen, "no export path after the server (nfs://SERVER/EXPORT)");
        return -1;
    }
    u->path_len = strcspn(u->path, "?");
    for (size_t i = 0; i < u->path_len; i++)
        if ((unsigned char)u->path[i] < 0x20 || u->path[i] == 0x7f) {
            snprintf(why, whylen, "control byte 0x%02x in the path",
                     (unsigned)(unsigned char)u->path[i]);
            return -1;
        }
    if (u->path[u->path_len] == '?') {
        u->options = u->path + u->path_len + 1;
        u->options_len = strlen(u->options);
        if (options_parse(u, why, whylen) < 0)
            return -1;
    }
    if (u->server.port && u->nfsport) {
        snprintf(why, whylen,
                 "the port is given twice (nfs://SERVER:PORT and nfsport=): give it "
                 "once");
        return -1;
    }
    if (u->server.port)
        u->nfsport = u->server.port;
    return 0;
}

int nfsurl_format_libnfs(const struct nfsurl *u, char *buf, size_t len)
{
    char port[24] = "";
    if (u->server.port)
        snprintf(port, sizeof port, "%snfsport=%u", u->options ? "&" : "?", u->server.port);
    int n =
        snprintf(buf, len, "nfs://%s%.*s%s%.*s%s", u->server.host, (int)u->path_len, u->path,
                 u->options ? "?" : "", (int)u->options_len, u->options ? u->options : "", port);
    return n >= 0 && (size_t)n < len ? n : -1;
}
