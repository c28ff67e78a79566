/* nfsurl.h — an nfs:// URL, the target of the libnfs backend, checked
 * whole before anything connects, and written back in the form libnfs
 * 4.0 reads, so that what is probed and mounted is what was checked:
 *
 *   nfs://SERVER[:PORT]/PATH[?NAME=VALUE[&NAME=VALUE...]]
 *
 * A pure parser: no lookup, no allocation, no global state; the struct
 * points into the text parsed, which must outlive it.
 *
 * What a parse that succeeds guarantees:
 *   - the text starts "nfs://";
 *   - SERVER[:PORT] is urlserver.h's (a name, IPv4 or [IPv6]; a port
 *     1..65535 of plain decimal digits);
 *   - PATH starts with '/' and runs to the first '?' or the end, with no
 *     control byte (below 0x20, 0x7f): the export as the server names it
 *     (libnfs takes it as it is, '%' included);
 *   - each option is NAME=VALUE, the options joined by single '&', none
 *     empty, none given twice, every NAME one libnfs 4.0's URL parser
 *     (nfs_parse_url) reads, every VALUE what that option takes:
 *       version                 3 or 4
 *       nfsport, mountport      1..65535
 *       uid, gid                0..2147483647
 *       tcp-syncnt              1..127 (TCP_SYNCNT's range)
 *       readahead, pagecache    0..2147483647
 *       debug                   0..2147483647
 *       dircache, auto-traverse-mounts   0 or 1
 *       if                      an interface name: 1-15 letters, digits, '.', '_', '-'
 *     (numbers: plain decimal digits, no sign, no space, no leading
 *     zero: libnfs gets the URL as written, one spelling a value). An unknown
 *     NAME is refused: libnfs ignores one, so a typo ("vers=4") would
 *     silently do nothing. autoreconnect is refused too: herd turns
 *     libnfs's reconnects off (a lost server must surface as an error
 *     of the call) and reconnects between files itself;
 *   - the port is given once at most: nfs://SERVER:PORT or nfsport=PORT.
 * Anything else fails with one line saying what is wrong. */
#ifndef HERD_NFSURL_H
#define HERD_NFSURL_H

#include <stddef.h>

#include "urlserver.h"

struct nfsurl {
    struct urlserver server; /* server.port: the URL's SERVER:PORT, 0 = none */
    const char *path;        /* PATH, path_len bytes of the text parsed */
    size_t path_len;
    const char *options; /* the text after '?' (options_len bytes; 0 = no '?') */
    size_t options_len;
    unsigned short nfsport;   /* the NFS server's port: SERVER:PORT or nfsport=; 0 = neither */
    unsigned short mountport; /* mountport=; 0 = not given */
    int version;              /* version=: 3 or 4; 0 = not given */
};

/* Parse url into *u: 0, or -1 with one line in why (*u is then
 * unspecified). */
int nfsurl_parse(const char *url, struct nfsurl *u, char *why, size_t whylen);

/* The URL of a parsed u as libnfs 4.0 reads it, into buf:
 * "nfs://HOST/PATH?OPTIONS", with an IPv6 HOST without its brackets
 * (libnfs 4.0 takes everything up to the first '/' as the server name)
 * and a SERVER:PORT as the option nfsport=PORT (libnfs 4.0 would take
 * "HOST:PORT" for a name). Its length, or -1 when it does not fit in
 * len bytes. */
int nfsurl_format_libnfs(const struct nfsurl *u, char *buf, size_t len);

#endif
