/* unit_webhooks.c: the webhooks' pure parts: the signature (held against
 * Python's hmac, as the docs verify it), the config's list of endpoints,
 * and the retry schedule. */
#include <string.h>

#include <criterion/criterion.h>

#include "backoff.h"
#include "webhook_endpoints.h"
#include "webhook_sign.h"

Test(webhooks, the_signature_is_hmac_sha256_of_t_dot_body_in_hex)
{
    char sig[WEBHOOK_SIGNATURE_MAX];
    const char body[] = "{\"id\":1}";
    cr_assert_eq(
        webhook_sign("whsec-0123456789abcdef", 1795000000, body, strlen(body), sig, sizeof(sig)),
        0);
    /* python3 -c 'import hmac,hashlib; print(hmac.new(b"whsec-0123456789abcdef",
     *   b"1795000000.{\"id\":1}", hashlib.sha256).hexdigest())' */
    cr_assert_str_eq(sig, "t=1795000000,v1="
                          "fd0e4ac05ce8c2724863b8b8335df654e22ca17f3f2208c3c613aa398e3199c5");
    char other[WEBHOOK_SIGNATURE_MAX];
    webhook_sign("whsec-0123456789abcdeF", 1795000000, body, strlen(body), other, sizeof(other));
    cr_assert_str_neq(sig, other, "another secret signs differently");
    webhook_sign("whsec-0123456789abcdef", 1795000001, body, strlen(body), other, sizeof(other));
    cr_assert_str_neq(sig + 16, other + 16, "the time is signed too");
    cr_assert_eq(webhook_sign("whsec-0123456789abcdef", 1, body, strlen(body), other, 20), -1,
                 "no room: refused, not cut");
}

Test(webhooks, endpoints_are_url_and_secret_pairs)
{
    webhook_endpoint e[4];
    char why[128];
    cr_assert_eq(webhook_endpoints_parse("", e, 4, why, sizeof(why)), 0);
    cr_assert_eq(webhook_endpoints_parse("  ", e, 4, why, sizeof(why)), 0);
    cr_assert_eq(webhook_endpoints_parse(" http://127.0.0.1:9000/hook  secret-one-0123456789 ,"
                                         "https://shop.example/h?x=1 secret-two-0123456789",
                                         e, 4, why, sizeof(why)),
                 2, "%s", why);
    cr_assert_str_eq(e[0].url, "http://127.0.0.1:9000/hook");
    cr_assert_str_eq(e[0].secret, "secret-one-0123456789");
    cr_assert_str_eq(e[1].url, "https://shop.example/h?x=1");
    cr_assert_str_eq(e[1].secret, "secret-two-0123456789");
    /* A comma that ends the list ends it; a blank entry after it is refused. */
    cr_assert_eq(
        webhook_endpoints_parse("http://a/h secret-0123456789abcdef,", e, 4, why, sizeof(why)), 1,
        "%s", why);
    cr_assert_eq(
        webhook_endpoints_parse("http://a/h secret-0123456789abcdef,  ", e, 4, why, sizeof(why)),
        -1);
    cr_assert_eq(
        webhook_endpoints_parse(",http://a/h secret-0123456789abcdef", e, 4, why, sizeof(why)), -1);
}

Test(webhooks, a_bad_endpoint_is_named_by_position_never_by_its_secret)
{
    webhook_endpoint e[4];
    char why[128];
    const char *bad[] = {
        "http://a/h short",
        "ftp://a/h secret-0123456789abcdef",
        "http://a/h",
        "http://a/h secret-0123456789abcdef extra",
        "http://a/h secret-0123456789abcdef,http://a/h secret-0123456789abcdeg",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why[0] = '\0';
        cr_assert_eq(webhook_endpoints_parse(bad[i], e, 4, why, sizeof(why)), -1, "%s", bad[i]);
        cr_assert(strstr(why, "entry "), "%s: %s", bad[i], why);
        cr_assert_null(strstr(why, "secret-0123"), "the secret stays out of the message: %s", why);
    }
    cr_assert_eq(webhook_endpoints_check("http://a/h s", why, sizeof(why)), -1);
    cr_assert_eq(webhook_endpoints_check("http://a/h secret-0123456789abcdef", why, sizeof(why)),
                 0);
}

Test(webhooks, retries_wait_the_first_delay_doubled_up_to_the_longest)
{
    cr_assert_eq(backoff_after(1, 1000, 3600000), 1000);
    cr_assert_eq(backoff_after(2, 1000, 3600000), 2000);
    cr_assert_eq(backoff_after(12, 1000, 3600000), 2048000);
    cr_assert_eq(backoff_after(13, 1000, 3600000), 3600000, "an hour at most");
    cr_assert_eq(backoff_after(1000, 1000, 3600000), 3600000, "and no overflow past it");
}
