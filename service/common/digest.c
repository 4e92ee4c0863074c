/* digest.c: libcrypto's implementations are looked up once, not at every
 * call: EVP_sha256() and HMAC() alone look theirs up again each time (OpenSSL
 * 3), a third of a poll's hashing, and a join's proof-of-work is checked with
 * one HMAC and one SHA-256. */
#include "digest.h"

#include <limits.h>
#include <pthread.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
#include <openssl/core_names.h>
#endif

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const EVP_MD *sha256_md;
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
static EVP_MAC *hmac_mac;
#endif

static void fetch(void)
{
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
    sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
    hmac_mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
#endif
    if (!sha256_md)
        sha256_md = EVP_sha256();
}

int digest_hmac(const void *key, size_t key_len, const void *msg, size_t len,
                unsigned char mac[DIGEST_LEN])
{
    pthread_once(&once, fetch);
    if (!key) /* an empty key is a key: libcrypto wants a pointer all the same */
        key = "";
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
    if (hmac_mac) {
        char digest[] = "SHA256";
        OSSL_PARAM params[] = {
            OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
            OSSL_PARAM_construct_end(),
        };
        size_t n = 0;
        EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(hmac_mac);
        int ok = ctx && EVP_MAC_init(ctx, key, key_len, params) && EVP_MAC_update(ctx, msg, len) &&
                 EVP_MAC_final(ctx, mac, &n, DIGEST_LEN) && n == DIGEST_LEN;
        EVP_MAC_CTX_free(ctx);
        return ok ? 0 : -1;
    }
#endif
    unsigned int n = 0;
    return key_len <= INT_MAX && HMAC(sha256_md, key, (int)key_len, msg, len, mac, &n) &&
                   n == DIGEST_LEN
               ? 0
               : -1;
}

int digest_sha256(const void *msg, size_t len, unsigned char md[DIGEST_LEN])
{
    unsigned int n = 0;
    pthread_once(&once, fetch);
    return EVP_Digest(msg, len, md, &n, sha256_md, NULL) && n == DIGEST_LEN ? 0 : -1;
}

int digest_hmac_hex(const void *key, size_t key_len, const void *msg, size_t len,
                    char out[DIGEST_HEX_LEN + 1])
{
    unsigned char mac[DIGEST_LEN];
    if (digest_hmac(key, key_len, msg, len, mac) < 0)
        return -1;
    digest_hex(mac, DIGEST_LEN, out);
    return 0;
}

int digest_sha256_hex(const void *msg, size_t len, char out[DIGEST_HEX_LEN + 1])
{
    unsigned char md[DIGEST_LEN];
    if (digest_sha256(msg, len, md) < 0)
        return -1;
    digest_hex(md, DIGEST_LEN, out);
    return 0;
}

static const char hexdigits[] = "0123456789abcdef";

void digest_hex(const unsigned char *in, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hexdigits[in[i] >> 4];
        out[2 * i + 1] = hexdigits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

int digest_unhex(const char *hex, unsigned char *out, size_t n)
{
    if (!hex || strlen(hex) != 2 * n)
        return -1;
    for (size_t i = 0; i < 2 * n; i++) {
        const char *d = memchr(hexdigits, hex[i], 16);
        if (!d || hex[i] == '\0')
            return -1;
        if (i % 2 == 0)
            out[i / 2] = (unsigned char)((d - hexdigits) << 4);
        else
            out[i / 2] |= (unsigned char)(d - hexdigits);
    }
    return 0;
}

int digest_equal(const void *a, const void *b, size_t n)
{
    return CRYPTO_memcmp(a, b, n) == 0;
}
