/* urlserver.c — HOST[:PORT] of a URL, checked (urlserver.h). */
#include "urlserver.h"

#include <arpa/inet.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#define SHOWN_MAX 80 /* bytes of the URL a message quotes, at most */

static bool is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Whether s is a host name: labels of letters, digits, '-' and '_'
 * joined by single dots, each starting with a letter or digit; one last
 * dot allowed. */
static bool name_ok(const char *s)
{
    bool label_start = true;
    for (; *s; s++) {
        if (*s == '.' && label_start)
            return false; /* an empty label */
        if (*s == '.')
            label_start = true;
        else if (is_alnum(*s) || (!label_start && (*s == '-' || *s == '_')))
            label_start = false;
        else
            return false;
    }
    return true;
}

/* The n bytes at p as a port: plain decimal digits, 1 to 65535. */
static int port_parse(const char *p, size_t n, unsigned short *port, char *why, size_t whylen)
{
    unsigned long v = 0;
    if (n == 0) {
        snprintf(why, whylen, "':' without a port number after it");
        return -1;
    }
    if (strspn(p, "0123456789") < n || (n > 1 && p[0] == '0')) {
        snprintf(why, whylen, "port '%.*s' is not a number (decimal digits, no leading zero)",
                 (int)(n < SHOWN_MAX ? n : SHOWN_MAX), p);
        return -1;
    }
    for (size_t i = 0; i < n && v <= 65535; i++)
        v = v * 10 + (unsigned long)(p[i] - '0');
    if (v == 0 || v > 65535) {
        snprintf(why, whylen, "port %.*s is not 1 to 65535", (int)(n < SHOWN_MAX ? n : SHOWN_MAX),
                 p);
        return -1;
    }
    *port = (unsigned short)v;
    return 0;
}

/* Whether out->host is what the header allows; else why. */
static int host_check(const struct urlserver *out, char *why, size_t whylen)
{
    unsigned char addr[16];
    const char *h = out->host;
    if (out->ipv6) {
        if (inet_pton(AF_INET6, h, addr) == 1)
            return 0;
        snprintf(why, whylen, "'[%.*s]' is not an IPv6 address", SHOWN_MAX, h);
    } else if (strspn(h, "0123456789.") == strlen(h)) {
        if (inet_pton(AF_INET, h, addr) == 1)
            return 0;
        snprintf(why, whylen, "'%.*s' is not an IPv4 address (four numbers 0-255)", SHOWN_MAX, h);
    } else {
        if (name_ok(h))
            return 0;
        snprintf(why, whylen,
                 "'%.*s' is not a host name (letters, digits, '-', '_' and dots), an IPv4 "
                 "address or [IPv6]",
                 SHOWN_MAX, h);
    }
    return -1;
}

int urlserver_parse(const char *text, struct urlserver *out, char *why, size_t whylen)
{
    size_t n = strcspn(text, "/?"), hlen;
    const char *host = text, *after;
    memset(out, 0, sizeof *out);
    if (n >= INT_MAX) {
        snprintf(why, whylen, "the server part is too long");
        return -1;
    }
    if (text[0] == '[') {
        const char *close = memchr(text, ']', n);
        if (!close) {
            snprintf(why, whylen, "'[' without ']' (an IPv6 address is [ADDRESS])");
            return -1;
        }
        host = text + 1;
        hlen = (size_t)(close - host);
        after = close + 1;
        out->ipv6 = true;
        if (after != text + n && *after != ':') {
            snprintf(why, whylen, "after [%.*s] comes ':PORT', '/' or '?', not '%c'",
                     (int)(hlen < SHOWN_MAX ? hlen : SHOWN_MAX), host, *after);
            return -1;
        }
    } else {
        const char *colon = memchr(text, ':', n);
        hlen = colon ? (size_t)(colon - text) : n;
        after = text + hlen;
        if (colon && memchr(colon + 1, ':', n - hlen - 1)) {
            snprintf(why, whylen, "an IPv6 address goes in brackets: [%.*s]",
                     (int)(n < SHOWN_MAX ? n : SHOWN_MAX), text);
            return -1;
        }
    }
    if (hlen == 0) {
        snprintf(why, whylen, "no server name");
        return -1;
    }
    if (hlen >= sizeof out->host) {
        snprintf(why, whylen, "the server name is longer than %zu bytes", sizeof out->host - 1);
        return -1;
    }
    memcpy(out->host, host, hlen);
    out->host[hlen] = '\0';
    if (host_check(out, why, whylen) < 0)
        return -1;
    if (*after == ':' &&
        port_parse(after + 1, (size_t)(text + n - after - 1), &out->port, why, whylen) < 0)
        return -1;
    return (int)n;
}
