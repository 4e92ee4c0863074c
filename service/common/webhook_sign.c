/* webhook_sign.c: a webhook's signature over "<t>.<body>" (OpenSSL HMAC). */
#include "webhook_sign.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

int webhook_sign(const char *secret, int64_t t, const char *body, size_t len, char *out, size_t cap)
{
    char ts[24];
    int tlen = snprintf(ts, sizeof(ts), "%" PRId64 ".", t);
    /* The one-shot HMAC over one buffer: its streaming form is deprecated
     * since OpenSSL 3, and a body is small. */
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int maclen = 0;
    unsigned char *signed_text = malloc((size_t)tlen + len + 1);
    int ok = signed_text != NULL;
    if (ok) {
        memcpy(signed_text, ts, (size_t)tlen);
        memcpy(signed_text + tlen, body, len);
        ok = HMAC(EVP_sha256(), secret, (int)strlen(secret), signed_text, (size_t)tlen + len, mac,
                  &maclen) != NULL;
    }
    free(signed_text);
    if (!ok || cap < WEBHOOK_SIGNATURE_MAX)
        return -1;
    int n = snprintf(out, cap, "t=%" PRId64 ",v1=", t);
    for (unsigned i = 0; i < maclen; i++)
        n += snprintf(out + n, cap - (size_t)n, "%02x", mac[i]);
    return 0;
}
