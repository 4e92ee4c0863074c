/* webhook_sign.c: a webhook's signature over "<t>.<body>" (digest.h's HMAC). */
#include "webhook_sign.h"

#include <errno.h>
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

/* The t of header's fields, or -1 when it has none or it is not a number. */
static int64_t header_t(const char *header)
{
    for (const char *f = header; f; f = strchr(f, ',')) {
        f += *f == ',';
        f += strspn(f, " ");
        if (strncmp(f, "t=", 2) != 0)
            continue;
        char *end;
        errno = 0;
        /* Digits only: strtoll alone would take "t= 5" and "t=+5". */
        long long t = strtoll(f + 2, &end, 10);
        if (f[2] < '0' || f[2] > '9' || errno || t < 0 ||
            (*end != ',' && *end != ' ' && *end != '\0'))
            return -1;
        return t;
    }
    return -1;
}

int webhook_verify(const char *secret, const char *header, const char *body, size_t len,
                   int64_t now, int64_t tolerance_s)
{
    int64_t t = header ? header_t(header) : -1;
    if (t < 0 || t > now + tolerance_s || t < now - tolerance_s)
        return 0;
    char want[WEBHOOK_SIGNATURE_MAX];
    if (webhook_sign(secret, t, body, len, want, sizeof(want)) != 0)
        return 0;
    const char *hex = strstr(want, ",v1=") + 4;
    size_t hex_len = strlen(hex);
    int genuine = 0;
    for (const char *f = header; f; f = strchr(f, ',')) {
        f += *f == ',';
        f += strspn(f, " ");
        if (strncmp(f, "v1=", 3) != 0)
            continue;
        size_t n = strcspn(f + 3, ", ");
        /* Every v1 compared whole, whichever matched: the time taken tells
         * nothing of how much of a guess was right. */
        genuine |= n == hex_len && digest_equal(f + 3, hex, hex_len);
    }
    return genuine;
}
