/* procfs.c — parsers for the /proc texts the monitor samples on a server
 * host (/proc/stat, loadavg, meminfo, PID/stat, diskstats, nfsd pool_stats).
 * Every parser walks (text, len) with a textscan.h cursor that never reads
 * text[len]: lines end at '\n' (a '\r' before it is blank space), tokens
 * are runs of anything but blanks, and numbers are checked for digits and
 * overflow. */
#include "procfs.h"

#include "textscan.h"

#include <limits.h>
#include <string.h>

/* A signed decimal that fits int64_t. */
static int span_i64(struct textscan s, int64_t *v)
{
    uint64_t x;
    int neg = s.p < s.end && *s.p == '-';

    if (neg)
        s.p++;
    if (textscan_u64(s, &x) < 0 || x > (uint64_t)INT64_MAX + (uint64_t)neg)
        return -1;
    *v = neg ? (int64_t)(0 - x) : (int64_t)x;
    return 0;
}

/* A plain decimal fraction "D[.D]" (no sign, exponent, inf or nan). */
static int span_double(struct textscan s, double *v)
{
    const char *p = s.p;
    struct textscan ip = {p, p};
    uint64_t whole, frac = 0, scale = 1;

    while (ip.end < s.end && *ip.end != '.')
        ip.end++;
    if (textscan_u64(ip, &whole) < 0)
        return -1;
    p = ip.end;
    if (p < s.end) {
        if (++p == s.end)
            return -1; /* "1." */
        for (; p < s.end; p++) {
            unsigned d = (unsigned)(*p - '0');
            if (d > 9)
                return -1;
            if (scale < 1000000000000000000u) { /* 18 digits are plenty */
                frac = frac * 10 + d;
                scale *= 10;
            }
        }
    }
    *v = (double)whole + (double)frac / (double)scale;
    return 0;
}

static void span_copy(struct textscan s, char *buf, size_t size)
{
    size_t n = textscan_len(s) < size - 1 ? textscan_len(s) : size - 1;
    memcpy(buf, s.p, n);
    buf[n] = '\0';
}

int procfs_parse_stat(const char *text, size_t len, struct cpu_times *out)
{
    struct textscan rest, line, tok;
    int found = 0;

    if (!text || !out)
        return -1;
    rest.p = text;
    rest.end = text + len;
    memset(out, 0, sizeof *out);
    while (textscan_line(&rest, &line)) {
        if (!textscan_field(&line, &tok))
            continue;
        if (textscan_eq(tok, "cpu")) {
            size_t n;
            memset(out->ticks, 0, sizeof out->ticks);
            if (textscan_u64s(&line, out->ticks, CPU_MODES, &n) < 0 || n < 4)
                return -1;
            found = 1;
        } else if (textscan_len(tok) > 3 && memcmp(tok.p, "cpu", 3) == 0) {
            uint64_t id;
            struct textscan num = {tok.p + 3, tok.end};
            if (textscan_u64(num, &id) == 0 && out->ncpus < INT_MAX)
                out->ncpus++;
        }
    }
    return found ? 0 : -1;
}

const char *procfs_cpu_mode_name(enum cpu_mode m)
{
    static const char *const names[CPU_MODES] = {
        "user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal",
    };
    return (unsigned)m < CPU_MODES ? names[m] : "?";
}

/* "0.52 0.58 0.59 3/1201 81234": three loads, running/total, last pid. */
int procfs_parse_loadavg(const char *text, size_t len, struct loadavg *out)
{
    struct textscan rest, line, tok, part;
    uint64_t last_pid;

    if (!text || !out)
        return -1;
    rest.p = text;
    rest.end = text + len;
    memset(out, 0, sizeof *out);
    double *loads[3] = {&out->load1, &out->load5, &out->load15};
    if (!textscan_line(&rest, &line))
        return -1;
    for (int i = 0; i < 3; i++)
        if (!textscan_field(&line, &tok) || span_double(tok, loads[i]) < 0)
            return -1;
    if (!textscan_field(&line, &tok))
        return -1;
    part.p = part.end = tok.p;
    while (part.end < tok.end && *part.end != '/')
        part.end++;
    if (part.end == tok.end || span_i64(part, &out->running) < 0 || out->running < 0)
        return -1;
    part.p = part.end + 1;
    part.end = tok.end;
    if (span_i64(part, &out->total) < 0 || out->total < 0)
        return -1;
    if (!textscan_field(&line, &tok) || textscan_u64(tok, &last_pid) < 0)
        return -1;
    return textscan_field(&line, &tok) ? -1 : 0;
}

/* "Key:   1234 kB" lines; unknown keys are skipped whatever follows them. */
int procfs_parse_meminfo(const char *text, size_t len, struct meminfo *out)
{
    /* MemTotal, MemFree and MemAvailable first: their bits are checked. */
    static const char *const keys[] = {
        "MemTotal:", "MemFree:", "MemAvailable:", "Buffers:", "Cached:", "Dirty:", "Writeback:",
    };
    enum { NKEYS = sizeof keys / sizeof keys[0] };
    struct textscan rest, line, tok;
    unsigned seen = 0;

    if (!text || !out)
        return -1;
    rest.p = text;
    rest.end = text + len;
    memset(out, 0, sizeof *out);
    uint64_t *dst[NKEYS] = {&out->total,  &out->free,  &out->available, &out->buffers,
                            &out->cached, &out->dirty, &out->writeback};
    while (textscan_line(&rest, &line)) {
        int k;
        uint64_t kb;
        if (!textscan_field(&line, &tok))
            continue;
        for (k = 0; k < NKEYS && !textscan_eq(tok, keys[k]); k++)
            ;
        if (k == NKEYS)
            continue;
        if (!textscan_field(&line, &tok) || textscan_u64(tok, &kb) < 0 || kb > UINT64_MAX / 1024)
            return -1;
        if (textscan_field(&line, &tok) && !textscan_eq(tok, "kB"))
            return -1;
        if (textscan_field(&line, &tok))
            return -1;
        *dst[k] = kb * 1024;
        seen |= 1u << k;
    }
    if ((seen & 3u) != 3u) /* MemTotal and MemFree */
        return -1;
    if (!(seen & 4u))
        out->available = out->free;
    return 0;
}

/* "pid (comm) state ppid ...": fields numbered from 1 as in proc(5). */
int procfs_parse_pid_stat(const char *text, size_t len, struct pid_stat *out)
{
    struct textscan head, comm, line, tok;
    const char *open, *close, *nl;
    size_t field;

    if (!text || !out)
        return -1;
    memset(out, 0, sizeof *out);
    open = memchr(text, '(', len);
    if (!open)
        return -1;
    for (close = text + len; close > open && close[-1] != ')';)
        close--;
    if (close == open)
        return -1;
    close--; /* the last ')' */

    head.p = text;
    head.end = open;
    if (!textscan_field(&head, &tok) || span_i64(tok, &out->pid) < 0 || out->pid < 0 ||
        textscan_field(&head, &tok))
        return -1;
    comm.p = open + 1;
    comm.end = close;
    span_copy(comm, out->comm, sizeof out->comm);

    line.p = close + 1;
    nl = memchr(line.p, '\n', (size_t)(text + len - line.p));
    line.end = nl ? nl : text + len;
    if (!textscan_field(&line, &tok) || textscan_len(tok) != 1)
        return -1;
    out->state = *tok.p;
    for (field = 4; textscan_field(&line, &tok); field++) {
        int64_t v;
        uint64_t u;
        if (span_i64(tok, &v) < 0 && textscan_u64(tok, &u) < 0)
            return -1; /* fields are integers; rsslim may exceed INT64_MAX */
        switch (field) {
        case 14:
            if (textscan_u64(tok, &out->utime) < 0)
                return -1;
            break;
        case 15:
            if (textscan_u64(tok, &out->stime) < 0)
                return -1;
            break;
        case 20:
            if (span_i64(tok, &out->num_threads) < 0)
                return -1;
            break;
        case 24:
            if (span_i64(tok, &out->rss_pages) < 0)
                return -1;
            break;
        default:
            break;
        }
    }
    return field > 24 ? 0 : -1;
}

int procfs_parse_diskstats(const char *text, size_t len, const char *device, struct disk_stats *out)
{
    struct textscan rest, line, tok, name;
    size_t dlen;

    if (!text || !device || !out)
        return -1;
    rest.p = text;
    rest.end = text + len;
    dlen = strlen(device);
    while (textscan_line(&rest, &line)) {
        uint64_t major, minor, v[17];
        size_t n;

        if (!textscan_field(&line, &tok))
            continue; /* a blank line */
        if (textscan_u64(tok, &major) < 0 || major > UINT_MAX)
            return -1;
        if (!textscan_field(&line, &tok) || textscan_u64(tok, &minor) < 0 || minor > UINT_MAX)
            return -1;
        if (!textscan_field(&line, &name) || textscan_len(name) >= sizeof out->name)
            return -1;
        if (textscan_u64s(&line, v, 17, &n) < 0 || n < 11)
            return -1;
        if (textscan_len(name) != dlen || memcmp(name.p, device, dlen) != 0)
            continue;
        memset(out, 0, sizeof *out);
        out->major = (unsigned)major;
        out->minor = (unsigned)minor;
        span_copy(name, out->name, sizeof out->name);
        out->reads = v[0], out->reads_merged = v[1], out->read_sectors = v[2], out->read_ms = v[3];
        out->writes = v[4], out->writes_merged = v[5], out->write_sectors = v[6];
        out->write_ms = v[7], out->in_flight = v[8], out->io_ms = v[9], out->weighted_ms = v[10];
        out->has_flushes = n >= 16;
        out->flushes = out->has_flushes ? v[15] : 0;
        return 0;
    }
    return 1;
}

/* A "# pool ..." header names the columns; each later line is one pool. */
int procfs_parse_pool_stats(const char *text, size_t len, struct pool_stats *out)
{
    static const char *const names[4] = {
        "packets-arrived",
        "sockets-enqueued",
        "threads-woken",
        "threads-timedout",
    };
    struct textscan rest, line, tok;
    int col[4] = {-1, -1, -1, -1}, ncols = -1; /* a counter's column; -1: no header yet */

    if (!text || !out)
        return -1;
    rest.p = text;
    rest.end = text + len;
    memset(out, 0, sizeof *out);
    uint64_t *sum[4] = {&out->packets_arrived, &out->sockets_enqueued, &out->threads_woken,
                        &out->threads_timedout};
    while (textscan_line(&rest, &line)) {
        int i, k;

        if (!textscan_field(&line, &tok))
            continue;
        if (*tok.p == '#') { /* "# pool ..." (or "#pool ...") */
            struct textscan names_left = {tok.p + 1, line.end};
            for (k = 0; k < 4; k++)
                col[k] = -1;
            for (ncols = 0; ncols < INT_MAX && textscan_field(&names_left, &tok); ncols++)
                for (k = 0; k < 4; k++)
                    if (textscan_eq(tok, names[k]))
                        col[k] = ncols;
            continue;
        }
        if (ncols < 0)
            return -1;
        line.p = tok.p; /* read the pool number again, as column 0 */
        for (i = 0; textscan_field(&line, &tok); i++) {
            uint64_t v;
            if (i >= ncols || textscan_u64(tok, &v) < 0)
                return -1;
            for (k = 0; k < 4; k++) {
                if (col[k] != i)
                    continue;
                if (*sum[k] > UINT64_MAX - v)
                    return -1;
                *sum[k] += v;
            }
        }
        if (i != ncols || out->pools == INT_MAX)
            return -1;
        out->pools++;
    }
    return ncols < 0 ? -1 : 0;
}
