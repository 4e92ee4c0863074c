/* webhook_sign.h: the signature of a webhook delivery, in the style of
 * Stripe's: the header
 *   Seckill-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>
 * The receiver recomputes it over the raw body and refuses a mismatch or a
 * t too far from its clock (a replay). Pure; OpenSSL's HMAC. */
#ifndef SECKILL_WEBHOOK_SIGN_H
#define SECKILL_WEBHOOK_SIGN_H

#include <stddef.h>
#include <stdint.h>

/* The header's name, and its value's length at most, with the terminator. */
#define WEBHOOK_SIGNATURE_HEADER "Seckill-Signature"
#define WEBHOOK_SIGNATURE_MAX 96

/* Writes the header's value for body (len bytes) signed at t into out (cap
 * bytes, at least WEBHOOK_SIGNATURE_MAX). Returns 0, or -1 when HMAC fails
 * or out is too small. */
int webhook_sign(const char *secret, int64_t t, const char *body, size_t len, char *out,
                 size_t cap);

/* Whether header (a Seckill-Signature value; NULL reads as none) signs body
 * (len bytes) with secret at a t within tolerance_s seconds of now, as
 * docs/WEBHOOKS.md tells a receiver to check: recomputed by webhook_sign,
 * compared in constant time, every v1 of the header tried (a sender rotating
 * its secret may send two). Returns 1 genuine, 0 forged, stale or
 * malformed. */
int webhook_verify(const char *secret, const char *header, const char *body, size_t len,
                   int64_t now, int64_t tolerance_s);

#endif
