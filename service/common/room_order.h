/* room_order.h: the waiting room's rules, pure (issue 27): a buyer's
 * entrant handle, the place score of a join, the metering of admissions,
 * and the admission token. The caller brings the secrets and the clock.
 *
 *   E     = hex SHA-256("seckill-entrant|<item>|<round>|<user_id>")
 *   score = the leading 52 bits of HMAC-SHA256(K, "seckill-room-v1|<E>")
 *           for a pre-start joiner (exact in a double, Redis's ZSET score;
 *           ties, which cannot happen in practice, by E: the ZSET's member),
 *           2^52 + the arrival counter for a later one
 *   token = "<item>.<round>.<user_id>.<expiry_ms>.<hex HMAC-SHA256(A,
 *           "seckill-admission-v1|<item>.<round>.<user_id>.<expiry_ms>")>"
 *           where A = HMAC-SHA256(master, "seckill-admission-key-v1|<item>|<round>"):
 *           a key of its own per round, derived from a master that is never
 *           revealed; a buyer token (buyer_token.h: another secret, three
 *           fields) never verifies as one. */
#ifndef SECKILL_ROOM_ORDER_H
#define SECKILL_ROOM_ORDER_H

#include <stddef.h>
#include <stdint.h>

#define ROOM_SECRET_LEN 32 /* K and the master, raw bytes */
#define ROOM_HEX_LEN 64    /* their hex, and E's */
/* 2^52: the first score of a late joiner. */
#define ROOM_LATE_SCORE 4503599627370496.0
/* The longest admission token read or written (a valid one is at most
 * 16 + 19 + 16 + 19 + 64 + 4 = 138 bytes). */
#define ROOM_TOKEN_MAX 160

/* E of a buyer into e (ROOM_HEX_LEN + 1 bytes). Returns 0, or -1 when
 * libcrypto failed. */
int room_entrant(int64_t item, int64_t round, int64_t user, char e[ROOM_HEX_LEN + 1]);

/* The pre-start score of entrant e under K (ROOM_SECRET_LEN bytes): in
 * [0, 2^52). Returns -1 when libcrypto failed. */
double room_score(const unsigned char *k, const char *e);

/* The late joiner's score of the arrival counter seq (1 for the first). */
double room_late_score(int64_t seq);

/* Whether a score is a pre-start joiner's. */
int room_score_prestart(double score);

/* Places admitted by now_ms: min(joined, burst + floor(per_s * seconds since
 * starts_ms)), 0 before the start. */
int64_t room_admit_target(int64_t joined, int64_t burst, double per_s, int64_t starts_ms,
                          int64_t now_ms);

/* The commitment to K: hex SHA-256 of its raw bytes, into out (ROOM_HEX_LEN
 * + 1). Returns 0 or -1. */
int room_commitment(const unsigned char *k, char out[ROOM_HEX_LEN + 1]);

typedef enum room_token_result {
    ROOM_TOKEN_OK = 0,
    ROOM_TOKEN_MISSING,     /* no token */
    ROOM_TOKEN_FORGED,      /* not a token of ours: its shape, or its signature */
    ROOM_TOKEN_EXPIRED,     /* ours, and its admission window is over */
    ROOM_TOKEN_WRONG_BUYER, /* ours, for another buyer */
    ROOM_TOKEN_WRONG_ITEM,  /* ours, for another item */
    ROOM_TOKEN_WRONG_ROUND  /* ours, for another round of the item */
} room_token_result;

/* What a token says (room_token_verify fills it once the signature holds). */
typedef struct room_token {
    int64_t item, round, user, expiry_ms;
} room_token;

/* Writes the token of t under master (ROOM_SECRET_LEN bytes) into buf.
 * Returns its length, or -1 when buf is too small (ROOM_TOKEN_MAX fits) or
 * libcrypto failed. */
int room_token_mint(const unsigned char *master, const room_token *t, char *buf, size_t len);

/* Checks token (NULL or "" for none) for a purchase by user of item's round
 * `round` at now_ms: its shape and signature first (FORGED), then item,
 * round, buyer and expiry, in that order. On a signature that holds *got is
 * what the token says. */
room_token_result room_token_verify(const unsigned char *master, const char *token, int64_t item,
                                    int64_t round, int64_t user, int64_t now_ms, room_token *got);

#endif
