/* pow.c: ALTCHA's v1 challenge and its check. The hashes are digest.h's
 * (OpenSSL's); a solution's shape is checked strictly before anything is
 * hashed, and signatures are compared in constant time. */
#include "pow.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "digest.h"
#include "validate.h"

static const char algorithm[] = "SHA-256";

/* hex HMAC-SHA256(key, msg) into out (POW_HEX_LEN + 1). */
static int hmac_hex(const unsigned char *key, const char *msg, char *out)
{
    return digest_hmac_hex(key, POW_KEY_LEN, msg, strlen(msg), out);
}

int pow_hash(const char *salt, int64_t number, char *out)
{
    char text[POW_SALT_MAX + 24];
    int n = snprintf(text, sizeof(text), "%s%" PRId64, salt, number);
    if (n < 0 || (size_t)n >= sizeof(text))
        return -1;
    return digest_sha256_hex(text, (size_t)n, out);
}

int pow_key_derive(const unsigned char *master, unsigned char *key)
{
    static const char label[] = "seckill-pow-key-v1";
    return digest_hmac(master, POW_KEY_LEN, label, sizeof(label) - 1, key);
}

int pow_challenge_build(const unsigned char *key, const char *nonce, int64_t number,
                        int64_t maxnumber, int64_t item, int64_t user, int64_t expires_s,
                        pow_challenge *c)
{
    unsigned char raw[POW_NONCE_HEX / 2];
    memset(c, 0, sizeof(*c));
    if (digest_unhex(nonce, raw, sizeof(raw)) < 0 || number < 0 || number > maxnumber)
        return -1;
    int n = snprintf(c->salt, sizeof(c->salt),
                     "%s?expires=%" PRId64 "&item=%" PRId64 "&user=%" PRId64 "&", nonce, expires_s,
                     item, user);
    if (n < 0 || (size_t)n >= sizeof(c->salt) || pow_hash(c->salt, number, c->challenge) < 0 ||
        hmac_hex(key, c->challenge, c->signature) < 0)
        return -1;
    c->maxnumber = maxnumber;
    return 0;
}

int pow_challenge_make(const unsigned char *key, int64_t maxnumber, int64_t item, int64_t user,
                       int64_t expires_s, pow_challenge *c)
{
    unsigned char raw[POW_NONCE_HEX / 2];
    uint64_t r = 0;
    char nonce[POW_NONCE_HEX + 1];
    if (maxnumber < 0 || RAND_bytes(raw, sizeof(raw)) != 1 ||
        RAND_bytes((unsigned char *)&r, sizeof(r)) != 1)
        return -1;
    digest_hex(raw, sizeof(raw), nonce);
    /* The bias of a 64-bit draw modulo at most 10^7 is below 10^-12. */
    return pow_challenge_build(key, nonce, (int64_t)(r % (uint64_t)(maxnumber + 1)), maxnumber,
                               item, user, expires_s, c);
}

/* The salt's parameters expires, item and user (each once, decimal) into
 * got. Returns 0, or -1 when one is missing or out of shape. Every
 * parameter ends with '&', the last too (ALTCHA's fix): otherwise the
 * number's first digits could be read as the last parameter's last ones
 * ("user=12" + "345" hashes as "user=123" + "45"). */
static int salt_params(const char *salt, pow_solution *got)
{
    const char *p = strchr(salt, '?');
    int seen = 0;
    while (p && *p && p[1]) {
        p++;
        const char *end = strchr(p, '&');
        if (!end)
            return -1;
        size_t len = (size_t)(end - p);
        const char *eq = memchr(p, '=', len);
        if (!eq)
            return -1;
        size_t name = (size_t)(eq - p), vlen = len - name - 1;
        int64_t *v = name == 7 && memcmp(p, "expires", 7) == 0 ? &got->expires_s
                     : name == 4 && memcmp(p, "item", 4) == 0  ? &got->item
                     : name == 4 && memcmp(p, "user", 4) == 0  ? &got->user
                                                               : NULL;
        int bit = v == &got->expires_s ? 1 : v == &got->item ? 2 : 4;
        if (v && ((seen & bit) || validate_i64(eq + 1, vlen, v) < 0))
            return -1;
        seen |= v ? bit : 0;
        p = end;
    }
    return seen == 7 ? 0 : -1;
}

/* A string member of at most max bytes, or NULL. */
static const char *member(json_t *o, const char *key, size_t max)
{
    json_t *v = json_object_get(o, key);
    return json_is_string(v) && json_string_length(v) <= max &&
                   strlen(json_string_value(v)) == json_string_length(v)
               ? json_string_value(v)
               : NULL;
}

/* The JSON of a base64 payload, or NULL. The caller frees it. */
static json_t *decode(const char *payload)
{
    size_t len = strlen(payload);
    unsigned char text[POW_PAYLOAD_MAX];
    if (len == 0 || len % 4 != 0 || len > POW_PAYLOAD_MAX)
        return NULL;
    int n = EVP_DecodeBlock(text, (const unsigned char *)payload, (int)len);
    if (n < 0)
        return NULL;
    n -= payload[len - 1] == '=' ? (payload[len - 2] == '=' ? 2 : 1) : 0;
    json_t *o = json_loadb((const char *)text, (size_t)n, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Reads payload's members into got, salt and signature. POW_OK or
 * POW_MALFORMED. */
static pow_result read_payload(const char *payload, pow_solution *got, char *salt, char *signature)
{
    json_t *o = decode(payload);
    if (!o)
        return POW_MALFORMED;
    const char *alg = member(o, "algorithm", 16), *ch = member(o, "challenge", POW_HEX_LEN),
               *s = member(o, "salt", POW_SALT_MAX), *sig = member(o, "signature", POW_HEX_LEN);
    json_t *number = json_object_get(o, "number");
    unsigned char raw[32];
    int ok = alg && strcmp(alg, algorithm) == 0 && ch && digest_unhex(ch, raw, 32) == 0 && s &&
             sig && digest_unhex(sig, raw, 32) == 0 && json_is_integer(number) &&
             json_integer_value(number) >= 0;
    if (ok) {
        memcpy(got->challenge, ch, POW_HEX_LEN + 1);
        memcpy(salt, s, strlen(s) + 1);
        memcpy(signature, sig, POW_HEX_LEN + 1);
        got->number = json_integer_value(number);
    }
    json_decref(o);
    return ok && salt_params(salt, got) == 0 ? POW_OK : POW_MALFORMED;
}

pow_result pow_verify(const unsigned char *key, const char *payload, int64_t maxnumber,
                      int64_t item, int64_t user, int64_t now_s, pow_solution *got)
{
    char salt[POW_SALT_MAX + 1], signature[POW_HEX_LEN + 1], expected[POW_HEX_LEN + 1];
    memset(got, 0, sizeof(*got));
    if (!payload || !payload[0])
        return POW_MISSING;
    pow_result r = read_payload(payload, got, salt, signature);
    if (r != POW_OK)
        return r;
    if (hmac_hex(key, got->challenge, expected) < 0 ||
        !digest_equal(expected, signature, POW_HEX_LEN))
        return POW_FORGED;
    if (got->number > maxnumber || pow_hash(salt, got->number, expected) < 0 ||
        !digest_equal(expected, got->challenge, POW_HEX_LEN))
        return POW_WRONG_NUMBER;
    if (now_s > got->expires_s)
        return POW_EXPIRED;
    if (got->item != item)
        return POW_WRONG_ITEM;
    return got->user != user ? POW_WRONG_BUYER : POW_OK;
}
