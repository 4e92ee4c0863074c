/* buyer_token.h: a buyer's proof of who they are, "<user_id>.<expiry>.<signature>",
 * signed by the shop's login service with a secret it shares with seckill.
 * The signature is base64url without padding (RFC 4648 section 5) of
 * HMAC-SHA256(secret, "<user_id>.<expiry>"); user_id is 1 .. 2^53-1 and expiry
 * Unix seconds, both in decimal without sign or leading zeros. Pure: the
 * caller brings the clock and the secret. */
#ifndef SECKILL_BUYER_TOKEN_H
#define SECKILL_BUYER_TOKEN_H

#include <stddef.h>
#include <stdint.h>

/* The largest user id: 2^53 - 1, the largest id every JSON parser holds
 * exactly, as for items. */
#define BUYER_TOKEN_USER_MAX 9007199254740991LL
/* The shortest secret the config accepts with buyer_auth = token: as many
 * bytes as the hash, so the key is not the weak part. */
#define BUYER_TOKEN_SECRET_MIN 32
/* The longest token read: a valid one is at most 16 + 1 + 19 + 1 + 43 = 80
 * bytes, so this is also a buffer that buyer_token_mint always fits. */
#define BUYER_TOKEN_MAX 128

typedef enum buyer_token_result {
    BUYER_TOKEN_OK = 0,
    BUYER_TOKEN_MISSING,   /* no header, or not "Bearer <token>" */
    BUYER_TOKEN_MALFORMED, /* not <user_id>.<expiry>.<signature> as above */
    BUYER_TOKEN_FORGED,    /* the signature is not the secret's */
    BUYER_TOKEN_EXPIRED    /* well signed, but expiry <= now */
} buyer_token_result;

/* Writes the token of user_id (1 .. 2^53-1) valid until expiry_s (> 0) under
 * secret into buf, NUL-terminated. Returns its length, or -1 when an argument
 * is out of range, buf is too small (BUYER_TOKEN_MAX always fits) or the HMAC
 * failed. */
int buyer_token_mint(const char *secret, int64_t user_id, int64_t expiry_s, char *buf, size_t len);

/* Checks an Authorization header's value ("Bearer <token>", NULL for none)
 * against secret at now_s (Unix seconds): its shape first, then its signature
 * (a forged token is FORGED even when also expired), then its expiry. On
 * BUYER_TOKEN_OK *user_id is the buyer; otherwise it is left alone. */
buyer_token_result buyer_token_verify(const char *secret, const char *authorization, int64_t now_s,
                                      int64_t *user_id);

/* A sentence for a client saying what is wrong with its token. Static storage. */
const char *buyer_token_result_text(buyer_token_result r);

#endif
