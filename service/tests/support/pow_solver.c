/* pow_solver.c: a buyer's brute force, with pow.h's own hash. */
#include "pow_solver.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "pow.h"

int pow_solver_payload(const char *challenge, int64_t number, const char *salt,
                       const char *signature, char *out, size_t cap)
{
    json_t *o =
        json_pack("{s:s, s:s, s:I, s:s, s:s}", "algorithm", "SHA-256", "challenge", challenge,
                  "number", (json_int_t)number, "salt", salt, "signature", signature);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!text)
        return -1;
    size_t len = strlen(text);
    int ok = 4 * ((len + 2) / 3) + 1 <= cap;
    if (ok)
        EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)text, (int)len);
    free(text);
    return ok ? 0 : -1;
}

int pow_solver_solve(const char *challenge_json, char *out, size_t cap, int64_t *number)
{
    json_t *c = json_loads(challenge_json, 0, NULL);
    const char *challenge = json_string_value(json_object_get(c, "challenge"));
    const char *salt = json_string_value(json_object_get(c, "salt"));
    const char *signature = json_string_value(json_object_get(c, "signature"));
    json_int_t max = json_integer_value(json_object_get(c, "maxnumber"));
    int rc = -1;
    char hash[POW_HEX_LEN + 1];
    for (int64_t n = 0; challenge && salt && signature && n <= max; n++) {
        if (pow_hash(salt, n, hash) == 0 && strcmp(hash, challenge) == 0) {
            rc = pow_solver_payload(challenge, n, salt, signature, out, cap);
            if (number)
                *number = n;
            break;
        }
    }
    json_decref(c);
    return rc;
}
