/* urlserver.h — the server part of a URL, what follows "SCHEME://" up to
 * the first '/', '?' or the end of the text: HOST or HOST:PORT, where
 * HOST is a name, an IPv4 address or an IPv6 address in brackets. The
 * nfs:// (nfsurl.h) and smb:// URLs of the backends, and the probe's
 * look at a server, read it here. A pure parser: no lookup, no
 * allocation, no global state.
 *
 * What a parse that succeeds guarantees:
 *   - host is 1 to URLSERVER_HOST_MAX - 1 bytes, NUL-terminated, one of
 *       a name: labels of letters, digits, '-' and '_' joined by single
 *         dots, each starting with a letter or digit (a last dot allowed);
 *         one made of digits and dots only must be an IPv4 address;
 *       an IPv4 address: four decimal numbers 0-255 (inet_pton's form);
 *       an IPv6 address inet_pton takes, written in brackets in the URL
 *         and stored without them (ipv6 true); no zone ("%eth0");
 *   - port is 0 when the URL gives none, else 1 to 65535, read from
 *     plain decimal digits (no sign, no space, no leading zero);
 *   - the part read ends at a '/', a '?' or the end of the text.
 * Anything else fails, with one line saying what is wrong (a port out of
 * range, a port that is not a number, an IPv6 address without brackets,
 * a character a host name cannot hold...). */
#ifndef HERD_URLSERVER_H
#define HERD_URLSERVER_H

#include <stdbool.h>
#include <stddef.h>

#define URLSERVER_HOST_MAX 256

struct urlserver {
    char host[URLSERVER_HOST_MAX]; /* without the brackets of an IPv6 address */
    bool ipv6;                     /* host is an IPv6 address */
    unsigned short port;           /* 1..65535, or 0: the URL gives none */
};

/* The server part at the start of text into *out: the number of bytes it
 * takes (text + that is '/', '?' or the NUL), or -1 with one line in why
 * (*out is then unspecified). */
int urlserver_parse(const char *text, struct urlserver *out, char *why, size_t whylen);

#endif
