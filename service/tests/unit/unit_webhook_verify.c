/* unit_webhook_verify.c: a receiver's check of a delivery's signature
 * (webhook_verify), as docs/WEBHOOKS.md tells a shop to make it: genuine
 * within the tolerance, refused when forged, stale, from the future, or
 * malformed; a second v1 (a secret being rotated) accepted. */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "webhook_sign.h"

#define SECRET "whsec-0123456789abcdef"
#define NOW 1795000000

static const char body[] = "{\"id\":7,\"type\":\"order.paid\"}";

static int verify_at(const char *header, int64_t now)
{
    return webhook_verify(SECRET, header, body, strlen(body), now, 300);
}

Test(webhook_verify, a_signature_made_by_webhook_sign_is_genuine_within_the_tolerance)
{
    char sig[WEBHOOK_SIGNATURE_MAX];
    cr_assert_eq(webhook_sign(SECRET, NOW, body, strlen(body), sig, sizeof(sig)), 0);
    cr_assert_eq(verify_at(sig, NOW), 1);
    cr_assert_eq(verify_at(sig, NOW + 300), 1, "five minutes late: still genuine");
    cr_assert_eq(verify_at(sig, NOW - 300), 1, "five minutes early: still genuine");
}

Test(webhook_verify, a_stale_or_future_t_is_refused)
{
    char sig[WEBHOOK_SIGNATURE_MAX];
    webhook_sign(SECRET, NOW, body, strlen(body), sig, sizeof(sig));
    cr_assert_eq(verify_at(sig, NOW + 301), 0, "a replay after the tolerance");
    cr_assert_eq(verify_at(sig, NOW - 301), 0, "a t ahead of the clock");
}

Test(webhook_verify, another_secret_or_a_changed_body_is_refused)
{
    char sig[WEBHOOK_SIGNATURE_MAX];
    webhook_sign("whsec-another", NOW, body, strlen(body), sig, sizeof(sig));
    cr_assert_eq(verify_at(sig, NOW), 0, "another endpoint's secret");
    webhook_sign(SECRET, NOW, body, strlen(body), sig, sizeof(sig));
    const char changed[] = "{\"id\":8,\"type\":\"order.paid\"}";
    cr_assert_eq(webhook_verify(SECRET, sig, changed, strlen(changed), NOW, 300), 0);
    cr_assert_eq(webhook_verify(SECRET, sig, body, strlen(body) - 1, NOW, 300), 0, "a byte cut");
}

Test(webhook_verify, a_second_v1_is_tried_as_a_rotating_sender_sends_it)
{
    char sig[WEBHOOK_SIGNATURE_MAX], header[2 * WEBHOOK_SIGNATURE_MAX];
    webhook_sign(SECRET, NOW, body, strlen(body), sig, sizeof(sig));
    snprintf(header, sizeof(header), "t=%d,v1=%064d,%s", NOW, 0, strchr(sig, ',') + 1);
    cr_assert_eq(verify_at(header, NOW), 1, "%s", header);
    snprintf(header, sizeof(header), "t=%d, %s", NOW, strchr(sig, ',') + 1);
    cr_assert_eq(verify_at(header, NOW), 1, "spaces after the commas: %s", header);
}

Test(webhook_verify, a_malformed_header_is_refused)
{
    char sig[WEBHOOK_SIGNATURE_MAX], header[2 * WEBHOOK_SIGNATURE_MAX];
    webhook_sign(SECRET, NOW, body, strlen(body), sig, sizeof(sig));
    const char *v1 = strstr(sig, "v1=");
    cr_assert_eq(verify_at(NULL, NOW), 0, "no header");
    cr_assert_eq(verify_at("", NOW), 0, "an empty header");
    cr_assert_eq(verify_at(v1, NOW), 0, "no t");
    snprintf(header, sizeof(header), "t=%dx,%s", NOW, v1);
    cr_assert_eq(verify_at(header, NOW), 0, "t not a number");
    snprintf(header, sizeof(header), "t=+%d,%s", NOW, v1);
    cr_assert_eq(verify_at(header, NOW), 0, "a sign before t's digits");
    snprintf(header, sizeof(header), "t= %d,%s", NOW, v1);
    cr_assert_eq(verify_at(header, NOW), 0, "a space before t's digits");
    snprintf(header, sizeof(header), "t=%d", NOW);
    cr_assert_eq(verify_at(header, NOW), 0, "no v1");
    snprintf(header, sizeof(header), "t=%d,v1=%.63s", NOW, v1 + 3);
    cr_assert_eq(verify_at(header, NOW), 0, "a v1 one digit short");
    snprintf(header, sizeof(header), "t=%d,v1=%s0", NOW, v1 + 3);
    cr_assert_eq(verify_at(header, NOW), 0, "a v1 one digit long");
}
