/* buyer_token.c: the HMAC-SHA256 is digest.h's (OpenSSL's); a token's shape
 * is checked strictly before anything is hashed, and signatures are compared
 * as text in constant time. */
#include "buyer_token.h"

#include <stdio.h>
#include <string.h>

#include "digest.h"
#include "validate.h"

/* base64url of DIGEST_LEN bytes without padding. */
#define SIGNATURE_LEN 43

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Writes the base64url text of n bytes without padding, and a NUL. */
static void base64url(const unsigned char *in, size_t n, char *out)
{
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        *out++ = alphabet[v >> 18 & 63];
        *out++ = alphabet[v >> 12 & 63];
        *out++ = alphabet[v >> 6 & 63];
        *out++ = alphabet[v & 63];
    }
    if (n - i > 0) {
        uint32_t v = (uint32_t)in[i] << 16 | (n - i == 2 ? (uint32_t)in[i + 1] << 8 : 0);
        *out++ = alphabet[v >> 18 & 63];
        *out++ = alphabet[v >> 12 & 63];
        if (n - i == 2)
            *out++ = alphabet[v >> 6 & 63];
    }
    *out = '\0';
}

/* The signature text of the len bytes of payload ("<user_id>.<expiry>").
 * Returns 0, or -1 when there is no secret or libcrypto failed. */
static int sign(const char *secret, const char *payload, size_t len, char sig[SIGNATURE_LEN + 1])
{
    unsigned char mac[DIGEST_LEN];
    if (!secret || digest_hmac(secret, strlen(secret), payload, len, mac) < 0)
        return -1;
    base64url(mac, DIGEST_LEN, sig);
    return 0;
}

int buyer_token_mint(const char *secret, int64_t user_id, int64_t expiry_s, char *buf, size_t len)
{
    char payload[48], sig[SIGNATURE_LEN + 1];
    if (!buf || user_id < 1 || user_id > BUYER_TOKEN_USER_MAX || expiry_s < 1)
        return -1;
    int n =
        snprintf(payload, sizeof(payload), "%lld.%lld", (long long)user_id, (long long)expiry_s);
    if (sign(secret, payload, (size_t)n, sig) < 0)
        return -1;
    n = snprintf(buf, len, "%s.%s", payload, sig);
    return n < 0 || (size_t)n >= len ? -1 : n;
}

static int in_alphabet(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] == '\0' || !strchr(alphabet, s[i]))
            return 0;
    return 1;
}

buyer_token_result buyer_token_verify(const char *secret, const char *authorization, int64_t now_s,
                                      int64_t *user_id)
{
    /* The scheme exactly as the admin calls take it: "Bearer", one space. */
    static const char bearer[] = "Bearer ";
    if (!authorization || strncmp(authorization, bearer, sizeof(bearer) - 1) != 0)
        return BUYER_TOKEN_MISSING;
    const char *token = authorization + sizeof(bearer) - 1;
    size_t len = strnlen(token, BUYER_TOKEN_MAX + 1);
    if (len > BUYER_TOKEN_MAX)
        return BUYER_TOKEN_MALFORMED;
    const char *dot1 = memchr(token, '.', len);
    const char *dot2 = dot1 ? memchr(dot1 + 1, '.', len - (size_t)(dot1 + 1 - token)) : NULL;
    if (!dot2)
        return BUYER_TOKEN_MALFORMED;
    const char *sig = dot2 + 1;
    size_t id_len = (size_t)(dot1 - token), expiry_len = (size_t)(dot2 - dot1 - 1);
    size_t sig_len = len - (size_t)(sig - token);
    /* validate_id takes digits only, without sign or leading zeros, and
     * above 0; a third dot or a space fails the alphabet. */
    int64_t id, expiry;
    if (validate_id(token, id_len, &id) < 0 || id > BUYER_TOKEN_USER_MAX ||
        validate_id(dot1 + 1, expiry_len, &expiry) < 0 || sig_len != SIGNATURE_LEN ||
        !in_alphabet(sig, sig_len))
        return BUYER_TOKEN_MALFORMED;
    /* Comparing the text rather than the decoded bytes also refuses the
     * other spellings of the last character (its two unused bits). A failed
     * HMAC lets nobody in. */
    char expected[SIGNATURE_LEN + 1];
    if (sign(secret, token, (size_t)(dot2 - token), expected) < 0 ||
        !digest_equal(expected, sig, SIGNATURE_LEN))
        return BUYER_TOKEN_FORGED;
    if (expiry <= now_s)
        return BUYER_TOKEN_EXPIRED;
    *user_id = id;
    return BUYER_TOKEN_OK;
}

const char *buyer_token_result_text(buyer_token_result r)
{
    switch (r) {
    case BUYER_TOKEN_OK:
        return "the buyer token is valid";
    case BUYER_TOKEN_MISSING:
        return "a buyer token is required: Authorization: Bearer <token>";
    case BUYER_TOKEN_MALFORMED:
        return "the buyer token is malformed (expected <user_id>.<expiry>.<signature>)";
    case BUYER_TOKEN_FORGED:
        return "the buyer token's signature is not valid";
    case BUYER_TOKEN_EXPIRED:
        return "the buyer token has expired";
    }
    return "the buyer token is not valid";
}
