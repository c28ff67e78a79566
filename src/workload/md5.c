/* md5.c — incremental MD5 over OpenSSL 3's EVP interface, for checking
 * whole files against the digest their pattern predicts. */
#include "md5.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

const char *md5_library_version(void)
{
    return OpenSSL_version(OPENSSL_VERSION);
}

int md5_begin(struct md5 *m)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();

    m->ctx = NULL;
    if (!ctx)
        return -1;
    if (EVP_DigestInit_ex(ctx, EVP_md5(), NULL) != 1) {
        EVP_MD_CTX_free(ctx);
        return -1;
    }
    m->ctx = ctx;
    return 0;
}

int md5_update(struct md5 *m, const void *data, size_t len)
{
    if (!m->ctx)
        return -1;
    if (len == 0)
        return 0;
    return EVP_DigestUpdate(m->ctx, data, len) == 1 ? 0 : -1;
}

int md5_end(struct md5 *m, unsigned char digest[16])
{
    unsigned int n = 0;
    int rc = -1;

    if (!m->ctx)
        return -1;
    if (EVP_DigestFinal_ex(m->ctx, digest, &n) == 1 && n == 16)
        rc = 0;
    EVP_MD_CTX_free(m->ctx);
    m->ctx = NULL;
    return rc;
}

void md5_hex(const unsigned char digest[16], char hex[33])
{
    static const char digits[] = "0123456789abcdef";

    for (int i = 0; i < 16; i++) {
        hex[2 * i] = digits[digest[i] >> 4];
        hex[2 * i + 1] = digits[digest[i] & 15];
    }
    hex[32] = '\0';
}
