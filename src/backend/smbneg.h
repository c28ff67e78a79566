/* smbneg.h — the SMB2 NEGOTIATE exchange, to learn what a server agrees
 * to: libsmbclient has no call that returns the negotiated dialect or the
 * server's signing mode, so the smb backend asks the server itself, once
 * per rank, with the same dialect range it gives libsmbclient (a server
 * picks the highest dialect both sides offer, so the answer is the one the
 * data connection gets).
 *
 * smbneg_request and smbneg_parse are pure functions on bytes (MS-SMB2
 * 2.2.3 and 2.2.4; unit-tested); smbneg_probe does the TCP exchange.
 * Invariants: a request is at most SMBNEG_REQUEST_MAX bytes, offers only
 * SMB2+ dialects within [min, max], and carries the negotiate contexts
 * SMB 3.1.1 requires (preauth integrity SHA-512, encryption ciphers) only
 * when 3.1.1 is offered; a response is accepted only if it is a complete
 * SMB2 NEGOTIATE response with a dialect that was offered. */
#ifndef HERD_SMBNEG_H
#define HERD_SMBNEG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SMBNEG_REQUEST_MAX 256

struct smbneg_result {
    uint16_t dialect; /* 0x0202 ... 0x0311 */
    bool signing_enabled, signing_required;
    uint32_t capabilities;
    uint32_t max_read, max_write;
    uint16_t cipher; /* 3.1.1: the encryption cipher the server chose; 0 = none */
};

/* The dialect code of the index-th of NT1, SMB2_02, SMB2_10, SMB3_00,
 * SMB3_02, SMB3_11 (smb_min/max_protocol's order; NT1 -> 0: not SMB2). */
uint16_t smbneg_dialect_code(int protocol_index);

/* "SMB3_11" etc. for a code; "unknown" otherwise. */
const char *smbneg_dialect_name(uint16_t code);

/* "AES-128-GCM" etc. for a cipher id; "none" for 0. */
const char *smbneg_cipher_name(uint16_t cipher);

/* A NEGOTIATE request offering the SMB2+ dialects of [min, max]
 * (protocol indexes) with a 4-byte direct-TCP header, into buf. Returns its
 * length, or 0 when no SMB2 dialect is in the range or len is too small. */
size_t smbneg_request(int min, int max, const uint8_t guid[16], const uint8_t salt[32],
                      uint8_t *buf, size_t len);

/* Parse a response message (after the 4-byte header) to a request built
 * for [min, max]: 0, or -EPROTO (not an SMB2 NEGOTIATE response, a dialect
 * not offered), -EBADMSG (truncated or inconsistent), -ECONNREFUSED (the
 * server answered with an error status). */
int smbneg_parse(const uint8_t *msg, size_t len, int min, int max, struct smbneg_result *out);

/* Connect to host:port, negotiate, close. 0 or -errno; at most timeout_ms
 * (> 0) in all. */
int smbneg_probe(const char *host, int port, int min, int max, int timeout_ms,
                 struct smbneg_result *out);

#endif
