/* test_smbneg.c — unit tests for smbneg.c, the SMB2 NEGOTIATE encoder
 * and parser: a request offers exactly the SMB2 dialects of the range, in
 * order, with the 3.1.1 negotiate contexts (8-byte aligned, preauth
 * SHA-512 with the salt, four ciphers) only when 3.1.1 is offered, and a
 * direct-TCP length that matches; a response is parsed for dialect,
 * signing mode, sizes and the chosen cipher, and refused when it is
 * truncated, not a NEGOTIATE response, an error status, or names a
 * dialect that was not offered (also with every truncation length and
 * with random bytes: no read past the end, never a crash). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "smbneg.h"

enum { NT1, SMB2_02, SMB2_10, SMB3_00, SMB3_02, SMB3_11 };

static const uint8_t guid[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
static const uint8_t salt[32] = {0xaa, 0xbb};

static uint16_t le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)le16(p) | (uint32_t)le16(p + 2) << 16;
}

static void test_request_range(void **state)
{
    (void)state;
    uint8_t buf[SMBNEG_REQUEST_MAX];
    size_t n = smbneg_request(SMB2_10, SMB3_02, guid, salt, buf, sizeof buf);
    assert_true(n > 4 + 64 + 36);
    size_t msg = (size_t)buf[1] << 16 | (size_t)buf[2] << 8 | buf[3];
    assert_int_equal(buf[0], 0);
    assert_int_equal(msg + 4, n);
    const uint8_t *h = buf + 4, *b = h + 64;
    assert_memory_equal(h, "\xfeSMB", 4);
    assert_int_equal(le16(h + 12), 0); /* NEGOTIATE */
    assert_int_equal(le16(b), 36);
    assert_int_equal(le16(b + 2), 3); /* 2.1, 3.0, 3.0.2 */
    assert_int_equal(le16(b + 36), 0x0210);
    assert_int_equal(le16(b + 38), 0x0300);
    assert_int_equal(le16(b + 40), 0x0302);
    assert_memory_equal(b + 12, guid, 16);
    assert_int_equal(le32(b + 28), 0); /* no contexts without 3.1.1 */
    assert_int_equal(n, 4 + 64 + 36 + 6);
}

static void test_request_311_contexts(void **state)
{
    (void)state;
    uint8_t buf[SMBNEG_REQUEST_MAX];
    size_t n = smbneg_request(NT1, SMB3_11, guid, salt, buf, sizeof buf);
    const uint8_t *h = buf + 4, *b = h + 64;
    assert_int_equal(le16(b + 2), 5); /* NT1 is not SMB2: not offered */
    assert_int_equal(le16(b + 36 + 8), 0x0311);
    uint32_t off = le32(b + 28);
    assert_int_equal(off % 8, 0);
    assert_int_equal(le16(b + 32), 2);
    assert_int_equal(le16(h + off), 1);      /* preauth integrity */
    assert_int_equal(le16(h + off + 2), 38); /* its data length */
    assert_int_equal(le16(h + off + 12), 1); /* SHA-512 */
    assert_memory_equal(h + off + 14, salt, 32);
    uint32_t enc = (off + 8 + 38 + 7) / 8 * 8;
    assert_int_equal(le16(h + enc), 2); /* encryption */
    assert_int_equal(le16(h + enc + 8), 4);
    assert_int_equal(n, 4 + enc + 8 + 10);
}

static void test_request_refuses(void **state)
{
    (void)state;
    uint8_t buf[SMBNEG_REQUEST_MAX];
    assert_int_equal(smbneg_request(NT1, NT1, guid, salt, buf, sizeof buf), 0);
    assert_int_equal(smbneg_request(SMB3_11, SMB2_02, guid, salt, buf, sizeof buf), 0);
    assert_int_equal(smbneg_request(SMB2_02, SMB3_11, guid, salt, buf, 100), 0);
}

/* A response choosing dialect with mode, and for 3.1.1 one encryption
 * context naming cipher; returns its length. */
static size_t make_response(uint8_t *m, uint16_t dialect, uint16_t mode, uint16_t cipher)
{
    memset(m, 0, 512);
    memcpy(m, "\xfeSMB", 4);
    m[4] = 64;
    m[16] = 1; /* a response */
    uint8_t *b = m + 64;
    b[0] = 65;
    b[2] = (uint8_t)mode;
    b[4] = (uint8_t)dialect;
    b[5] = (uint8_t)(dialect >> 8);
    b[32] = 0x00, b[33] = 0x00, b[34] = 0x80; /* max read 8 MiB */
    b[38] = 0x10;                             /* max write 1 MiB */
    size_t len = 64 + 64 + 8;
    if (dialect == 0x0311) {
        b[6] = 1;                   /* one context */
        b[60] = (uint8_t)len;       /* at its offset from the header */
        m[len] = 2, m[len + 2] = 4; /* encryption, 4 bytes */
        m[len + 8] = 1;             /* one cipher */
        m[len + 10] = (uint8_t)cipher;
        len += 8 + 4;
    }
    return len;
}

static void test_parse_ok(void **state)
{
    (void)state;
    uint8_t m[512];
    struct smbneg_result r;
    size_t len = make_response(m, 0x0311, 3, 2);
    assert_int_equal(smbneg_parse(m, len, SMB2_02, SMB3_11, &r), 0);
    assert_int_equal(r.dialect, 0x0311);
    assert_string_equal(smbneg_dialect_name(r.dialect), "SMB3_11");
    assert_true(r.signing_enabled && r.signing_required);
    assert_int_equal(r.max_read, 8u << 20);
    assert_int_equal(r.max_write, 1u << 20);
    assert_string_equal(smbneg_cipher_name(r.cipher), "AES-128-GCM");
    len = make_response(m, 0x0210, 1, 0);
    assert_int_equal(smbneg_parse(m, len, SMB2_02, SMB3_02, &r), 0);
    assert_true(r.signing_enabled && !r.signing_required);
    assert_int_equal(r.cipher, 0);
}

static void test_parse_refuses(void **state)
{
    (void)state;
    uint8_t m[512];
    struct smbneg_result r;
    size_t len = make_response(m, 0x0311, 1, 2);
    /* a dialect not offered */
    assert_int_equal(smbneg_parse(m, len, SMB2_02, SMB3_02, &r), -EPROTO);
    /* every truncation */
    for (size_t cut = 0; cut < 64 + 64; cut++)
        assert_true(smbneg_parse(m, cut, SMB2_02, SMB3_11, &r) < 0);
    /* an error status */
    m[8] = 0x22, m[11] = 0xc0;
    assert_int_equal(smbneg_parse(m, len, SMB2_02, SMB3_11, &r), -ECONNREFUSED);
    m[8] = m[11] = 0;
    /* a request, not a response */
    m[16] = 0;
    assert_int_equal(smbneg_parse(m, len, SMB2_02, SMB3_11, &r), -EPROTO);
    m[16] = 1;
    /* a context offset past the end: no cipher, no read past it */
    m[64 + 60] = 0xf0, m[64 + 61] = 0xff;
    assert_int_equal(smbneg_parse(m, len, SMB2_02, SMB3_11, &r), 0);
    assert_int_equal(r.cipher, 0);
    /* SMB1 */
    memcpy(m, "\xffSMB", 4);
    assert_int_equal(smbneg_parse(m, len, SMB2_02, SMB3_11, &r), -EPROTO);
}

static void test_parse_random(void **state)
{
    (void)state;
    srand(14);
    uint8_t m[512];
    struct smbneg_result r;
    for (int i = 0; i < 20000; i++) {
        size_t len = make_response(m, 0x0311, 1, 2);
        for (int k = 0; k < 4; k++)
            m[rand() % (int)len] = (uint8_t)rand();
        size_t cut = (size_t)rand() % (len + 1);
        uint8_t *copy = malloc(cut ? cut : 1); /* exact size: ASan sees any overread */
        memcpy(copy, m, cut);
        int rc = smbneg_parse(copy, cut, SMB2_02, SMB3_11, &r);
        assert_true(rc == 0 || rc == -EPROTO || rc == -EBADMSG || rc == -ECONNREFUSED);
        free(copy);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_range),   cmocka_unit_test(test_request_311_contexts),
        cmocka_unit_test(test_request_refuses), cmocka_unit_test(test_parse_ok),
        cmocka_unit_test(test_parse_refuses),   cmocka_unit_test(test_parse_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
