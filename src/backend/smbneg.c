/* smbneg.c — the SMB2 NEGOTIATE exchange (smbneg.h). */
#include "smbneg.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"

#define SMB2_HEADER 64
#define SMB2_NEGOTIATE 0
#define NEG_REQ_FIXED 36  /* the request body before its dialects */
#define NEG_RESP_FIXED 64 /* the response body before its security buffer */
#define CTX_PREAUTH 1
#define CTX_ENCRYPTION 2
#define SMBNEG_RESPONSE_MAX 65536

static const uint16_t dialect_codes[] = {0, 0x0202, 0x0210, 0x0300, 0x0302, 0x0311};
#define NDIALECTS (int)(sizeof dialect_codes / sizeof dialect_codes[0])

uint16_t smbneg_dialect_code(int index)
{
    return index >= 0 && index < NDIALECTS ? dialect_codes[index] : 0;
}

const char *smbneg_dialect_name(uint16_t code)
{
    switch (code) {
    case 0x0202:
        return "SMB2_02";
    case 0x0210:
        return "SMB2_10";
    case 0x0300:
        return "SMB3_00";
    case 0x0302:
        return "SMB3_02";
    case 0x0311:
        return "SMB3_11";
    default:
        return "unknown";
    }
}

const char *smbneg_cipher_name(uint16_t cipher)
{
    switch (cipher) {
    case 0:
        return "none";
    case 1:
        return "AES-128-CCM";
    case 2:
        return "AES-128-GCM";
    case 3:
        return "AES-256-CCM";
    case 4:
        return "AES-256-GCM";
    default:
        return "unknown";
    }
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
    put16(p, (uint16_t)v);
    put16(p + 2, (uint16_t)(v >> 16));
}

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)get16(p) | (uint32_t)get16(p + 2) << 16;
}

/* The SMB2 dialects of [min, max] in dialects[]; their count. */
static int smbneg_offered(int min, int max, uint16_t dialects[NDIALECTS])
{
    int n = 0;
    for (int i = min < 1 ? 1 : min; i <= max && i < NDIALECTS; i++)
        dialects[n++] = dialect_codes[i];
    return n;
}

size_t smbneg_request(int min, int max, const uint8_t guid[16], const uint8_t salt[32],
                      uint8_t *buf, size_t len)
{
    uint16_t dialects[NDIALECTS];
    int n = smbneg_offered(min, max, dialects);
    if (n == 0 || len < SMBNEG_REQUEST_MAX)
        return 0;
    bool v311 = dialects[n - 1] == 0x0311;
    memset(buf, 0, SMBNEG_REQUEST_MAX);
    uint8_t *h = buf + 4; /* after the direct-TCP length */
    memcpy(h, "\xfeSMB", 4);
    put16(h + 4, SMB2_HEADER);
    put16(h + 12, SMB2_NEGOTIATE);
    put16(h + 14, 1); /* credits asked */
    uint8_t *b = h + SMB2_HEADER;
    put16(b, NEG_REQ_FIXED);
    put16(b + 2, (uint16_t)n);
    put16(b + 4, 1);    /* SecurityMode: signing enabled */
    put32(b + 8, 0x7f); /* Capabilities: what SMB 3 clients announce */
    memcpy(b + 12, guid, 16);
    size_t end = NEG_REQ_FIXED;
    for (int i = 0; i < n; i++, end += 2)
        put16(b + end, dialects[i]);
    if (v311) {
        end = (SMB2_HEADER + end + 7) / 8 * 8 - SMB2_HEADER; /* contexts are 8-aligned */
        put32(b + 28, (uint32_t)(SMB2_HEADER + end));        /* NegotiateContextOffset */
        put16(b + 32, 2);                                    /* NegotiateContextCount */
        uint8_t *ctx = b + end;                              /* preauth integrity: SHA-512 */
        put16(ctx, CTX_PREAUTH);
        put16(ctx + 2, 38);
        put16(ctx + 8, 1);   /* HashAlgorithmCount */
        put16(ctx + 10, 32); /* SaltLength */
        put16(ctx + 12, 1);  /* SHA-512 */
        memcpy(ctx + 14, salt, 32);
        end += 8 + 38;
        end = (SMB2_HEADER + end + 7) / 8 * 8 - SMB2_HEADER;
        ctx = b + end; /* encryption: the ciphers Samba knows */
        put16(ctx, CTX_ENCRYPTION);
        put16(ctx + 2, 10);
        put16(ctx + 8, 4);
        put16(ctx + 10, 4); /* AES-256-GCM, AES-128-GCM, AES-256-CCM, AES-128-CCM */
        put16(ctx + 12, 2);
        put16(ctx + 14, 3);
        put16(ctx + 16, 1);
        end += 8 + 10;
    }
    size_t msg = SMB2_HEADER + end;
    buf[0] = 0;
    buf[1] = (uint8_t)(msg >> 16);
    buf[2] = (uint8_t)(msg >> 8);
    buf[3] = (uint8_t)msg;
    return 4 + msg;
}

/* The cipher in a response's encryption context, or 0. */
static uint16_t smbneg_cipher(const uint8_t *msg, size_t len, uint32_t offset, uint16_t count)
{
    for (uint16_t i = 0; i < count; i++) {
        if (offset > len || len - offset < 8)
            return 0;
        uint16_t type = get16(msg + offset), dlen = get16(msg + offset + 2);
        if (len - offset - 8 < dlen)
            return 0;
        if (type == CTX_ENCRYPTION && dlen >= 4 && get16(msg + offset + 8) >= 1)
            return get16(msg + offset + 10);
        offset = (offset + 8 + dlen + 7) / 8 * 8;
    }
    return 0;
}

int smbneg_parse(const uint8_t *msg, size_t len, int min, int max, struct smbneg_result *out)
{
    memset(out, 0, sizeof *out);
    if (len < 4 || memcmp(msg, "\xfeSMB", 4) != 0)
        return -EPROTO;
    if (len < SMB2_HEADER + NEG_RESP_FIXED || get16(msg + 4) != SMB2_HEADER)
        return -EBADMSG;
    if (get16(msg + 12) != SMB2_NEGOTIATE || !(get32(msg + 16) & 1)) /* a response */
        return -EPROTO;
    if (get32(msg + 8) != 0)
        return -ECONNREFUSED;
    const uint8_t *b = msg + SMB2_HEADER;
    if (get16(b) != 65)
        return -EBADMSG;
    uint16_t dialects[NDIALECTS];
    int n = smbneg_offered(min, max, dialects);
    out->dialect = get16(b + 4);
    bool offered = false;
    for (int i = 0; i < n; i++)
        offered |= dialects[i] == out->dialect;
    if (!offered)
        return -EPROTO;
    uint16_t mode = get16(b + 2);
    out->signing_enabled = mode & 1;
    out->signing_required = mode & 2;
    out->capabilities = get32(b + 24);
    out->max_read = get32(b + 32);
    out->max_write = get32(b + 36);
    if (out->dialect == 0x0311)
        out->cipher = smbneg_cipher(msg, len, get32(b + 60), get16(b + 6));
    return 0;
}

/* Wait for fd to be ready for events, until deadline (clock_mono). */
static int smbneg_wait(int fd, short events, double deadline)
{
    double left = deadline - clock_mono();
    if (left <= 0)
        return -ETIMEDOUT;
    struct pollfd p = {.fd = fd, .events = events};
    int n = poll(&p, 1, (int)(left * 1000) + 1);
    if (n < 0)
        return errno == EINTR ? -EINTR : -errno;
    return n == 0 ? -ETIMEDOUT : 0;
}

static int smbneg_io(int fd, uint8_t *buf, size_t len, bool send_it, double deadline)
{
    for (size_t done = 0; done < len;) {
        int rc = smbneg_wait(fd, send_it ? POLLOUT : POLLIN, deadline);
        if (rc < 0)
            return rc;
        ssize_t n = send_it ? send(fd, buf + done, len - done, MSG_NOSIGNAL)
                            : recv(fd, buf + done, len - done, 0);
        if (n < 0 && errno != EINTR && errno != EAGAIN)
            return -errno;
        if (n == 0)
            return -ECONNRESET;
        if (n > 0)
            done += (size_t)n;
    }
    return 0;
}

static int smbneg_connect(const char *host, int port, double deadline)
{
    char service[8];
    snprintf(service, sizeof service, "%d", port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
    if (getaddrinfo(host, service, &hints, &ai) != 0)
        return -EHOSTUNREACH;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int rc = fd < 0 ? -errno : 0;
    if (rc == 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS)
        rc = -errno;
    freeaddrinfo(ai);
    if (rc == 0 && (rc = smbneg_wait(fd, POLLOUT, deadline)) == 0) {
        int err = 0;
        socklen_t n = sizeof err;
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &n);
        rc = -err;
    }
    if (rc < 0 && fd >= 0)
        close(fd);
    return rc < 0 ? rc : fd;
}

int smbneg_probe(const char *host, int port, int min, int max, int timeout_ms,
                 struct smbneg_result *out)
{
    uint8_t resp[SMBNEG_RESPONSE_MAX];
    uint8_t req[SMBNEG_REQUEST_MAX], guid[16], salt[32];
    double t = clock_mono();
    for (size_t i = 0; i < sizeof salt; i++) /* no secret: a nonce for the exchange */
        salt[i] = (uint8_t)((uint64_t)(t * 1e9) >> (i % 8 * 8)) ^ (uint8_t)i;
    memcpy(guid, salt + 8, sizeof guid);
    size_t n = smbneg_request(min, max, guid, salt, req, sizeof req);
    if (n == 0)
        return -EPROTONOSUPPORT;
    double deadline = t + (timeout_ms > 0 ? timeout_ms : 10000) / 1000.0;
    int fd = smbneg_connect(host, port, deadline);
    if (fd < 0)
        return fd;
    uint8_t head[4];
    int rc = smbneg_io(fd, req, n, true, deadline);
    if (rc == 0)
        rc = smbneg_io(fd, head, sizeof head, false, deadline);
    size_t len = rc == 0 ? (size_t)head[1] << 16 | (size_t)head[2] << 8 | head[3] : 0;
    if (rc == 0 && (head[0] != 0 || len > sizeof resp))
        rc = -EPROTO;
    if (rc == 0)
        rc = smbneg_io(fd, resp, len, false, deadline);
    close(fd);
    return rc < 0 ? rc : smbneg_parse(resp, len, min, max, out);
}
