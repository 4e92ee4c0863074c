/* room_order.c: the hashes are digest.h's (OpenSSL's); a token's shape is
 * checked strictly before anything is hashed, and signatures are compared in
 * constant time. */
#include "room_order.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "digest.h"
#include "validate.h"

int room_entrant(int64_t item, int64_t round, int64_t user, char e[ROOM_HEX_LEN + 1])
{
    char msg[96];
    int n = snprintf(msg, sizeof(msg), "seckill-entrant|%" PRId64 "|%" PRId64 "|%" PRId64, item,
                     round, user);
    return digest_sha256_hex(msg, (size_t)n, e);
}

int room_commitment(const unsigned char *k, char out[ROOM_HEX_LEN + 1])
{
    return digest_sha256_hex(k, ROOM_SECRET_LEN, out);
}

double room_score(const unsigned char *k, const char *e)
{
    char msg[32 + ROOM_HEX_LEN];
    unsigned char mac[32];
    int n = snprintf(msg, sizeof(msg), "seckill-room-v1|%s", e);
    if (n < 0 || (size_t)n >= sizeof(msg) ||
        digest_hmac(k, ROOM_SECRET_LEN, msg, (size_t)n, mac) < 0)
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
    return digest_hmac(master, ROOM_SECRET_LEN, msg, (size_t)n, a);
}

/* The signature's hex of payload ("<item>.<round>.<user>.<expiry>"). */
static int sign(const unsigned char *master, const room_token *t, const char *payload, size_t len,
                char sig[ROOM_HEX_LEN + 1])
{
    unsigned char a[32], mac[32];
    char msg[ROOM_TOKEN_MAX];
    int n = snprintf(msg, sizeof(msg), "seckill-admission-v1|%.*s", (int)len, payload);
    if (!master || n < 0 || (size_t)n >= sizeof(msg) ||
        round_key(master, t->item, t->round, a) < 0 ||
        digest_hmac(a, ROOM_SECRET_LEN, msg, (size_t)n, mac) < 0)
        return -1;
    digest_hex(mac, 32, sig);
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
        !digest_equal(expected, sig, ROOM_HEX_LEN))
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
