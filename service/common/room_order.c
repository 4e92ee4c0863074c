/* room_order.c: the hashes are OpenSSL's (libcrypto), never our own; a token's
 * shape is checked strictly before anything is hashed, and signatures are
 * compared in constant time. */
#include "room_order.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "validate.h"

static const char hexdigits[] = "0123456789abcdef";

void room_hex(const unsigned char *in, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hexdigits[in[i] >> 4];
        out[2 * i + 1] = hexdigits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

int room_unhex(const char *hex, unsigned char *out, size_t n)
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

/* HMAC-SHA256 of len bytes of msg under a 32-byte key into mac (32 bytes). */
static int hmac(const unsigned char *key, const char *msg, size_t len, unsigned char *mac)
{
    unsigned int mac_len = 0;
    return HMAC(EVP_sha256(), key, ROOM_SECRET_LEN, (const unsigned char *)msg, len, mac,
                &mac_len) &&
                   mac_len == 32
               ? 0
               : -1;
}

static const EVP_MD *sha256_md;

static void fetch_sha256(void)
{
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
    /* Fetched once: EVP_sha256() alone makes every digest look its
     * implementation up again (OpenSSL 3), a third of a poll's hashing. */
    sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
#endif
    if (!sha256_md)
        sha256_md = EVP_sha256();
}

static int sha256_hex(const char *msg, size_t len, char out[ROOM_HEX_LEN + 1])
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    pthread_once(&once, fetch_sha256);
    if (!EVP_Digest(msg, len, md, &md_len, sha256_md, NULL) || md_len != 32)
        return -1;
    room_hex(md, 32, out);
    return 0;
}

int room_entrant(int64_t item, int64_t round, int64_t user, char e[ROOM_HEX_LEN + 1])
{
    char msg[96];
    int n = snprintf(msg, sizeof(msg), "seckill-entrant|%" PRId64 "|%" PRId64 "|%" PRId64, item,
                     round, user);
    return sha256_hex(msg, (size_t)n, e);
}

int room_commitment(const unsigned char *k, char out[ROOM_HEX_LEN + 1])
{
    return sha256_hex((const char *)k, ROOM_SECRET_LEN, out);
}

double room_score(const unsigned char *k, const char *e)
{
    char msg[32 + ROOM_HEX_LEN];
    unsigned char mac[32];
    int n = snprintf(msg, sizeof(msg), "seckill-room-v1|%s", e);
    if (n < 0 || (size_t)n >= sizeof(msg) || hmac(k, msg, (size_t)n, mac) < 0)
        return -1;
    /* The leading 52 bits, big-endian: the order of the HMACs compared as
     * bytes, up to ties in those bits. */
    uint64_t v = 0;
    for (int i = 0; i < 7; i++)
        v = v << 8 | mac[i];
    return (double)(v >> 4);
}

double room_late_score(int64_t seq)
{
    return ROOM_LATE_SCORE + (double)seq;
}

int room_score_prestart(double score)
{
    return score < ROOM_LATE_SCORE;
}

int64_t room_admit_target(int64_t joined, int64_t burst, double per_s, int64_t starts_ms,
                          int64_t now_ms)
{
    if (now_ms < starts_ms)
        return 0;
    /* Truncation is floor here: the product is not negative. */
    int64_t metered = burst + (int64_t)(per_s * (double)(now_ms - starts_ms) / 1000.0);
    return metered < joined ? metered : joined;
}

/* The round's key A (32 bytes) under master. */
static int round_key(const unsigned char *master, int64_t item, int64_t round, unsigned char *a)
{
    char msg[96];
    int n =
        snprintf(msg, sizeof(msg), "seckill-admission-key-v1|%" PRId64 "|%" PRId64, item, round);
    return hmac(master, msg, (size_t)n, a);
}

/* The signature's hex of payload ("<item>.<round>.<user>.<expiry>"). */
static int sign(const unsigned char *master, const room_token *t, const char *payload, size_t len,
                char sig[ROOM_HEX_LEN + 1])
{
    unsigned char a[32], mac[32];
    char msg[ROOM_TOKEN_MAX];
    int n = snprintf(msg, sizeof(msg), "seckill-admission-v1|%.*s", (int)len, payload);
    if (!master || n < 0 || (size_t)n >= sizeof(msg) ||
        round_key(master, t->item, t->round, a) < 0 || hmac(a, msg, (size_t)n, mac) < 0)
        return -1;
    room_hex(mac, 32, sig);
    return 0;
}

int room_token_mint(const unsigned char *master, const room_token *t, char *buf, size_t len)
{
    char payload[96], sig[ROOM_HEX_LEN + 1];
    int n = snprintf(payload, sizeof(payload), "%" PRId64 ".%" PRId64 ".%" PRId64 ".%" PRId64,
                     t->item, t->round, t->user, t->expiry_ms);
    if (sign(master, t, payload, (size_t)n, sig) < 0)
        return -1;
    n = snprintf(buf, len, "%s.%s", payload, sig);
    return n < 0 || (size_t)n >= len ? -1 : n;
}

/* Reads "<item>.<round>.<user>.<expiry>." of token into t; the signature's
 * start into *sig. Returns 0, or -1 when the shape is wrong. */
static int parse(const char *token, size_t len, room_token *t, const char **sig)
{
    int64_t *fields[4] = {&t->item, &t->round, &t->user, &t->expiry_ms};
    const char *p = token, *end = token + len;
    for (int i = 0; i < 4; i++) {
        const char *dot = memchr(p, '.', (size_t)(end - p));
        if (!dot || validate_id(p, (size_t)(dot - p), fields[i]) < 0)
            return -1;
        p = dot + 1;
    }
    *sig = p;
    return (size_t)(end - p) == ROOM_HEX_LEN ? 0 : -1;
}

room_token_result room_token_verify(const unsigned char *master, const char *token, int64_t item,
                                    int64_t round, int64_t user, int64_t now_ms, room_token *got)
{
    if (!token || !token[0])
        return ROOM_TOKEN_MISSING;
    size_t len = strnlen(token, ROOM_TOKEN_MAX + 1);
    room_token t;
    const char *sig;
    char expected[ROOM_HEX_LEN + 1];
    if (len > ROOM_TOKEN_MAX || parse(token, len, &t, &sig) < 0 ||
        sign(master, &t, token, (size_t)(sig - 1 - token), expected) < 0 ||
        CRYPTO_memcmp(expected, sig, ROOM_HEX_LEN) != 0)
        return ROOM_TOKEN_FORGED;
    *got = t;
    if (t.item != item)
        return ROOM_TOKEN_WRONG_ITEM;
    if (round > 0 && t.round != round)
        return ROOM_TOKEN_WRONG_ROUND;
    if (t.user != user)
        return ROOM_TOKEN_WRONG_BUYER;
    return t.expiry_ms <= now_ms ? ROOM_TOKEN_EXPIRED : ROOM_TOKEN_OK;
}
