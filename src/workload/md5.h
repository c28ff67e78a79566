/* md5.h — incremental MD5 through OpenSSL's EVP interface. */
#ifndef HERD_MD5_H
#define HERD_MD5_H

#include <stddef.h>

struct md5 {
    void *ctx; /* EVP_MD_CTX */
};

int md5_begin(struct md5 *m); /* 0 or -1 */
int md5_update(struct md5 *m, const void *data, size_t len);
int md5_end(struct md5 *m, unsigned char digest[16]); /* frees the context */
void md5_hex(const unsigned char digest[16], char hex[33]);
/* The OpenSSL library MD5 runs on, as it names itself at run time
 * ("OpenSSL 3.0.19 27 Jan 2026"). For herd version. */
const char *md5_library_version(void);

#endif
