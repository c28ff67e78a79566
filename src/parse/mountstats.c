/* mountstats.c — parser for /proc/self/mountstats: finds the entry of one
 * NFS mount point and reads its opts, bytes, xprt and per-op counters
 * (see mountstats.h). Works on [text, text + len) through a line cursor;
 * never reads text[len]. */
#include "mountstats.h"

#include "textscan.h"

#include <stdbool.h>
#include <string.h>

/* A span of the input text: [p, e). */
struct span {
    const char *p, *e;
};

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

static struct span span_trim(struct span s)
{
    while (s.p < s.e && is_blank(*s.p))
        s.p++;
    while (s.e > s.p && is_blank(s.e[-1]))
        s.e--;
    return s;
}

static bool span_starts(struct span s, const char *prefix)
{
    size_t n = strlen(prefix);
    return (size_t)(s.e - s.p) >= n && memcmp(s.p, prefix, n) == 0;
}

/* First (last when `last`) occurrence of needle in s, or NULL. */
static const char *span_find(struct span s, const char *needle, bool last)
{
    size_t n = strlen(needle);
    if ((size_t)(s.e - s.p) < n)
        return NULL;
    const char *found = NULL;
    for (const char *q = s.p; q + n <= s.e; q++) {
        if (memcmp(q, needle, n) == 0) {
            found = q;
            if (!last)
                break;
        }
    }
    return found;
}

/* The next line at *pos (without its '\n'); *nl tells whether the line
 * ended with '\n'. Returns false at the end of the text. */
static bool line_next(const char **pos, const char *end, struct span *line, bool *nl)
{
    if (*pos >= end)
        return false;
    const char *q = memchr(*pos, '\n', (size_t)(end - *pos));
    line->p = *pos;
    line->e = q ? q : end;
    *nl = q != NULL;
    *pos = q ? q + 1 : end;
    return true;
}

/* The next blank-separated token of *s, consumed; false when none. */
static bool token_next(struct span *s, struct span *tok)
{
    const char *q = s->p;
    while (q < s->e && is_blank(*q))
        q++;
    if (q == s->e)
        return false;
    tok->p = q;
    while (q < s->e && !is_blank(*q))
        q++;
    tok->e = q;
    s->p = q;
    return true;
}

/* All tokens of s as u64 (textscan_u64: digits only, no overflow): keeps
 * the first max in v and returns how many there were, or -1 when one is
 * not a number. */
static int parse_u64s(struct span s, uint64_t *v, int max)
{
    struct span tok;
    int n = 0;
    while (token_next(&s, &tok)) {
        uint64_t x;
        if (textscan_u64((struct textscan){tok.p, tok.e}, &x) < 0)
            return -1;
        if (n < max)
            v[n] = x;
        if (n < 1000000)
            n++;
    }
    return n;
}

/* Copy s into buf (size cap), undoing the kernel's octal escapes (\040
 * for a space in a path). Returns false when it does not fit. */
static bool copy_unescaped(struct span s, char *buf, size_t cap)
{
    size_t n = 0;
    for (const char *q = s.p; q < s.e; q++) {
        char c = *q;
        if (c == '\\' && s.e - q >= 4 && q[1] >= '0' && q[1] <= '3' && q[2] >= '0' && q[2] <= '7' &&
            q[3] >= '0' && q[3] <= '7') {
            c = (char)((q[1] - '0') * 64 + (q[2] - '0') * 8 + (q[3] - '0'));
            q += 3;
        }
        if (n + 1 >= cap)
            return false;
        buf[n++] = c;
    }
    buf[n] = '\0';
    return true;
}

/* Whether the (escaped) span s names the path mp. */
static bool path_equal(struct span s, const char *mp)
{
    char buf[4096];
    return copy_unescaped(s, buf, sizeof buf) && strcmp(buf, mp) == 0;
}

static bool copy_plain(struct span s, char *buf, size_t cap)
{
    size_t n = (size_t)(s.e - s.p);
    if (n >= cap)
        return false;
    memcpy(buf, s.p, n);
    buf[n] = '\0';
    return true;
}

/* "device DEV mounted on MP with fstype FS[ statvers=V]" */
struct devline {
    struct span dev, mp, fstype, statvers;
};

static bool devline_parse(struct span line, struct devline *d)
{
    static const char on[] = " mounted on ", with[] = " with fstype ";
    if (!span_starts(line, "device "))
        return false;
    struct span rest = {line.p + strlen("device "), line.e};
    const char *a = span_find(rest, on, false);
    if (!a)
        return false;
    d->dev = (struct span){rest.p, a};
    struct span tail = {a + strlen(on), line.e};
    const char *b = span_find(tail, with, true);
    if (!b)
        return false;
    d->mp = (struct span){tail.p, b};
    struct span r = {b + strlen(with), line.e};
    if (!token_next(&r, &d->fstype))
        return false;
    d->statvers = (struct span){NULL, NULL};
    struct span tok;
    while (token_next(&r, &tok))
        if (span_starts(tok, "statvers="))
            d->statvers = (struct span){tok.p + strlen("statvers="), tok.e};
    return true;
}

static bool is_nfs(struct span fstype)
{
    size_t n = (size_t)(fstype.e - fstype.p);
    return (n == 3 && memcmp(fstype.p, "nfs", 3) == 0) ||
           (n == 4 && memcmp(fstype.p, "nfs4", 4) == 0);
}

/* One "xprt:" line (after the label), added into x. */
static int xprt_add(struct span s, bool statvers10, struct mountstats_xprt *x)
{
    struct span proto;
    uint64_t v[13];
    if (!token_next(&s, &proto))
        return -1;
    int n = parse_u64s(s, v, 13);
    if (n < 0)
        return -1;
    if (x->count == 0 && !copy_plain(proto, x->proto, sizeof x->proto))
        return -1;
    x->count++;
    bool tcp = span_starts(proto, "tcp") && proto.e - proto.p == 3;
    bool udp = span_starts(proto, "udp") && proto.e - proto.p == 3;
    if (!tcp && !udp)
        return 0; /* rdma, local: counted, counters left 0 */
    /* tcp: srcport bind connect connect_time idle sends recvs bad_xids
     * req_u bklog_u [max_slots sending_u pending_u];
     * udp: srcport bind sends recvs bad_xids req_u bklog_u [...the same 3] */
    int base = tcp ? 5 : 2;
    int full = base + 8, old = base + 5;
    bool have_new = n >= full;
    if (!have_new && !(statvers10 && n >= old))
        return -1;
    if (tcp)
        x->connects += v[2];
    x->sends += v[base];
    x->recvs += v[base + 1];
    x->bad_xids += v[base + 2];
    x->req_u += v[base + 3];
    x->backlog_u += v[base + 4];
    if (have_new) {
        if (v[base + 5] > x->max_slots)
            x->max_slots = v[base + 5];
        x->sending_u += v[base + 6];
        x->pending_u += v[base + 7];
    }
    return 0;
}

/* One per-op line "NAME: ops trans timeouts sent recv queue rtt execute [errors]". */
static int op_add(struct span line, struct mountstats *out)
{
    const char *colon = memchr(line.p, ':', (size_t)(line.e - line.p));
    if (!colon)
        return -1;
    struct span name = {line.p, colon};
    if (name.p == name.e)
        return -1;
    for (const char *q = name.p; q < name.e; q++)
        if (is_blank(*q))
            return -1;
    uint64_t v[9] = {0};
    int n = parse_u64s((struct span){colon + 1, line.e}, v, 9);
    if (n < 8)
        return -1;
    if (out->nops >= MOUNTSTATS_OPS_MAX)
        return 0;
    struct mountstats_op *op = &out->ops[out->nops];
    if (!copy_plain(name, op->name, sizeof op->name))
        return -1;
    op->ops = v[0];
    op->trans = v[1];
    op->timeouts = v[2];
    op->bytes_sent = v[3];
    op->bytes_recv = v[4];
    op->queue_ms = v[5];
    op->rtt_ms = v[6];
    op->execute_ms = v[7];
    op->errors = n >= 9 ? v[8] : 0;
    out->nops++;
    return 0;
}

/* The entry with device line d (first_nl: it ended with '\n') and body at pos. */
static int entry_parse(const struct devline *d, bool first_nl, const char *pos, const char *end,
                       const char *mount_point, struct mountstats *out)
{
    memset(out, 0, sizeof *out);
    if (!first_nl)
        return -1; /* cut inside the device line */
    if (!copy_unescaped(d->dev, out->device, sizeof out->device) ||
        !copy_plain(d->fstype, out->fstype, sizeof out->fstype) ||
        (d->statvers.p && !copy_plain(d->statvers, out->statvers, sizeof out->statvers)))
        return -1;
    size_t mplen = strlen(mount_point);
    if (mplen >= sizeof out->mount_point)
        return -1;
    memcpy(out->mount_point, mount_point, mplen + 1);
    bool statvers10 = strcmp(out->statvers, "1.0") == 0;

    bool have_bytes = false, in_ops = false;
    struct span line;
    bool nl;
    while (line_next(&pos, end, &line, &nl)) {
        if (span_starts(line, "device "))
            break;
        if (!nl)
            return -1; /* the text ends inside this entry's line */
        struct span s = span_trim(line);
        if (s.p == s.e)
            continue;
        if (in_ops) {
            if (op_add(s, out) < 0)
                return -1;
        } else if (span_starts(s, "opts:")) {
            if (!copy_plain(span_trim((struct span){s.p + 5, s.e}), out->opts, sizeof out->opts))
                return -1;
        } else if (span_starts(s, "bytes:")) {
            if (parse_u64s((struct span){s.p + 6, s.e}, out->bytes, 8) < 8)
                return -1;
            have_bytes = true;
        } else if (span_starts(s, "xprt:")) {
            if (xprt_add((struct span){s.p + 5, s.e}, statvers10, &out->xprt) < 0)
                return -1;
        } else if (span_starts(s, "per-op statistics")) {
            in_ops = true;
        } else if (span_starts(s, "age:")) {
            out->has_age = parse_u64s((struct span){s.p + 4, s.e}, &out->age, 1) == 1;
        } /* caps:, sec:, events:, nfsv4:, RPC iostats...: not kept */
    }
    return have_bytes && out->xprt.count > 0 && in_ops ? 0 : -1;
}

int mountstats_parse(const char *text, size_t len, const char *mount_point, struct mountstats *out)
{
    if (!text || !mount_point || !out)
        return 1;
    const char *pos = text, *end = text + len;
    const char *found = NULL; /* body of the last entry mounted there */
    struct devline fd = {{NULL, NULL}, {NULL, NULL}, {NULL, NULL}, {NULL, NULL}};
    bool found_nl = false;
    struct span line;
    bool nl;
    while (line_next(&pos, end, &line, &nl)) {
        struct devline d;
        if (devline_parse(line, &d) && path_equal(d.mp, mount_point)) {
            found = pos;
            fd = d;
            found_nl = nl;
        }
    }
    if (!found || !is_nfs(fd.fstype))
        return 1;
    return entry_parse(&fd, found_nl, found, end, mount_point, out);
}

int mountstats_mounts(const char *text, size_t len, char (*points)[256], int max)
{
    int n = 0;
    const char *pos = text, *end = text + (text ? len : 0);
    struct span line;
    bool nl;
    while (text && line_next(&pos, end, &line, &nl)) {
        struct devline d;
        if (!devline_parse(line, &d) || !is_nfs(d.fstype))
            continue;
        char mp[256];
        if (!copy_unescaped(d.mp, mp, sizeof mp))
            continue;
        bool seen = false;
        for (int i = 0; i < n && i < max && !seen; i++)
            seen = strcmp(points[i], mp) == 0;
        if (seen)
            continue;
        if (n < max)
            memcpy(points[n], mp, sizeof mp);
        n++;
    }
    return n;
}

void mountstats_delta(const struct mountstats *before, const struct mountstats *after,
                      struct mountstats *out)
{
    struct mountstats d = *after; /* identity fields, max_slots, op names */
    d.has_age = after->has_age && before->has_age;
    d.age = after->age - before->age;
    for (int i = 0; i < 8; i++)
        d.bytes[i] = after->bytes[i] - before->bytes[i];
    const struct mountstats_xprt *xa = &after->xprt, *xb = &before->xprt;
    d.xprt.connects = xa->connects - xb->connects;
    d.xprt.sends = xa->sends - xb->sends;
    d.xprt.recvs = xa->recvs - xb->recvs;
    d.xprt.bad_xids = xa->bad_xids - xb->bad_xids;
    d.xprt.req_u = xa->req_u - xb->req_u;
    d.xprt.backlog_u = xa->backlog_u - xb->backlog_u;
    d.xprt.sending_u = xa->sending_u - xb->sending_u;
    d.xprt.pending_u = xa->pending_u - xb->pending_u;
    for (int i = 0; i < d.nops && i < MOUNTSTATS_OPS_MAX; i++) {
        struct mountstats_op *o = &d.ops[i];
        const struct mountstats_op *b = NULL;
        for (int j = 0; j < before->nops && j < MOUNTSTATS_OPS_MAX && !b; j++)
            if (strcmp(before->ops[j].name, o->name) == 0)
                b = &before->ops[j];
        if (!b)
            continue; /* only in after: counts from 0 */
        o->ops -= b->ops;
        o->trans -= b->trans;
        o->timeouts -= b->timeouts;
        o->bytes_sent -= b->bytes_sent;
        o->bytes_recv -= b->bytes_recv;
        o->queue_ms -= b->queue_ms;
        o->rtt_ms -= b->rtt_ms;
        o->execute_ms -= b->execute_ms;
        o->errors -= b->errors;
    }
    *out = d;
}
