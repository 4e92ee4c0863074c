/* webhook_sign.c: a webhook's signature over "<t>.<body>" (digest.h's HMAC). */
#include "webhook_sign.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"

int webhook_sign(const char *secret, int64_t t, const char *body, size_t len, char *out, size_t cap)
{
    char ts[24];
    int tlen = snprintf(ts, sizeof(ts), "%" PRId64 ".", t);
    /* The HMAC over one buffer: a body is small. */
    unsigned char mac[DIGEST_LEN];
    unsigned char *signed_text = malloc((size_t)tlen + len + 1);
    int ok = signed_text != NULL;
    if (ok) {
        memcpy(signed_text, ts, (size_t)tlen);
        memcpy(signed_text + tlen, body, len);
        ok = digest_hmac(secret, strlen(secret), signed_text, (size_t)tlen + len, mac) == 0;
    }
    free(signed_text);
    if (!ok || cap < WEBHOOK_SIGNATURE_MAX)
        return -1;
    int n = snprintf(out, cap, "t=%" PRId64 ",v1=", t);
    digest_hex(mac, DIGEST_LEN, out + n);
    return 0;
}
