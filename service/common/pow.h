/* pow.h: proof-of-work challenges in ALTCHA's v1 shape (issue 28), pure:
 * the caller brings the key, the clock and the random parts.
 *
 *   salt      = "<24 hex digits>?expires=<unix s>&item=<id>&user=<id>&"
 *   challenge = hex SHA-256(salt + decimal number), number in [0, maxnumber]
 *   signature = hex HMAC-SHA256(key, challenge)
 *
 * A solution is what ALTCHA's widget sends: the base64 of the JSON
 * {"algorithm": "SHA-256", "challenge", "number", "salt", "signature"}.
 * Checking it costs one HMAC and one SHA-256; the signature vouches for the
 * challenge, and the challenge (once the number solves it) for the salt,
 * so the expiry, item and buyer written there are the server's: the salt's
 * last parameter ends with '&', so that no digit of the number can be read
 * as one of the salt's, and a number past maxnumber is refused. */
#ifndef SECKILL_POW_H
#define SECKILL_POW_H

#include <stdint.h>

#define POW_KEY_LEN 32
#define POW_HEX_LEN 64   /* a challenge's and a signature's hex */
#define POW_NONCE_HEX 24 /* the salt's random part: 12 bytes */
#define POW_SALT_MAX 128 /* the longest salt read (ours are at most 24 + 66) */
/* The longest solution read: base64 of a JSON with a few extra members
 * (the widget adds "took"). */
#define POW_PAYLOAD_MAX 1024

/* A challenge as ALTCHA's widget takes it. */
typedef struct pow_challenge {
    char challenge[POW_HEX_LEN + 1];
    char salt[POW_SALT_MAX + 1];
    char signature[POW_HEX_LEN + 1];
    int64_t maxnumber;
} pow_challenge;

/* The challenge of nonce (POW_NONCE_HEX hex digits) and number for user of
 * item, expiring at expires_s (Unix s), under key (POW_KEY_LEN bytes).
 * Returns 0, or -1 when an argument is out of shape or libcrypto failed. */
int pow_challenge_build(const unsigned char *key, const char *nonce, int64_t number,
                        int64_t maxnumber, int64_t item, int64_t user, int64_t expires_s,
                        pow_challenge *c);

/* The same with a random nonce and a random number in [0, maxnumber]
 * (OpenSSL's RAND_bytes). Returns 0 or -1. */
int pow_challenge_make(const unsigned char *key, int64_t maxnumber, int64_t item, int64_t user,
                       int64_t expires_s, pow_challenge *c);

typedef enum pow_result {
    POW_OK = 0,
    POW_MISSING,      /* no solution */
    POW_MALFORMED,    /* not base64 of the JSON, or a salt without our parameters */
    POW_FORGED,       /* the signature is not ours */
    POW_WRONG_NUMBER, /* the number does not solve the challenge (or the salt was altered),
                       * or is past maxnumber */
    POW_EXPIRED,      /* the challenge's time is over */
    POW_WRONG_ITEM,   /* another item's challenge */
    POW_WRONG_BUYER   /* another buyer's challenge */
} pow_result;

/* What a solution says (its salt's parameters once its number holds). */
typedef struct pow_solution {
    char challenge[POW_HEX_LEN + 1];
    int64_t number, expires_s, item, user;
} pow_solution;

/* Checks payload (NULL or "" for none) for user of item at now_s under
 * key: its shape, the signature, the number (at most maxnumber, the item's
 * difficulty), then expiry, item and buyer, in that order. *got is filled
 * as far as the checks went. */
pow_result pow_verify(const unsigned char *key, const char *payload, int64_t maxnumber,
                      int64_t item, int64_t user, int64_t now_s, pow_solution *got);

/* The key of the challenges under a master secret (POW_KEY_LEN bytes):
 * HMAC-SHA256(master, "seckill-pow-key-v1"), never the master itself nor
 * another use's key. Returns 0 or -1. */
int pow_key_derive(const unsigned char *master, unsigned char *key);

/* hex SHA-256(salt + decimal number) into out (POW_HEX_LEN + 1): what a
 * solver computes. Returns 0 or -1. */
int pow_hash(const char *salt, int64_t number, char *out);

#endif
