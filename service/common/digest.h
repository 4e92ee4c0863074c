/* digest.h: the one place a hash is computed: HMAC-SHA256 under a key of any
 * length, SHA-256, their lower-case hex, and the constant-time compare of
 * two MACs. The hashes are OpenSSL's (libcrypto), never our own. Thread-safe:
 * the implementations are looked up once, on first use. */
#ifndef SECKILL_DIGEST_H
#define SECKILL_DIGEST_H

#include <stddef.h>

#define DIGEST_LEN 32     /* SHA-256's bytes, and so HMAC-SHA256's */
#define DIGEST_HEX_LEN 64 /* their hex */

/* HMAC-SHA256 of the len bytes of msg under the key_len bytes of key into mac
 * (DIGEST_LEN bytes). Returns 0, or -1 when libcrypto failed. */
int digest_hmac(const void *key, size_t key_len, const void *msg, size_t len,
                unsigned char mac[DIGEST_LEN]);

/* SHA-256 of the len bytes of msg into md (DIGEST_LEN bytes). Returns 0, or
 * -1 when libcrypto failed. */
int digest_sha256(const void *msg, size_t len, unsigned char md[DIGEST_LEN]);

/* The same as hex into out (DIGEST_HEX_LEN + 1 bytes). Returns 0 or -1. */
int digest_hmac_hex(const void *key, size_t key_len, const void *msg, size_t len,
                    char out[DIGEST_HEX_LEN + 1]);
int digest_sha256_hex(const void *msg, size_t len, char out[DIGEST_HEX_LEN + 1]);

/* The lower-case hex of n bytes into out (2n + 1 bytes, NUL-terminated). */
void digest_hex(const unsigned char *in, size_t n, char *out);

/* The n bytes of hex into out: 0, or -1 when hex is not exactly 2n
 * lower-case hex digits. */
int digest_unhex(const char *hex, unsigned char *out, size_t n);

/* 1 when the n bytes at a and b are the same, else 0, in a time that does not
 * depend on where they differ (a MAC's check). */
int digest_equal(const void *a, const void *b, size_t n);

#endif
