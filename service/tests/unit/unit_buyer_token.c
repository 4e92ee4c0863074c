/* unit_buyer_token.c: buyer tokens minted and verified, against answers
 * computed apart with `openssl dgst -hmac`, and every way one can be wrong. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "buyer_token.h"

#define SECRET "seckill-known-answer-secret-0123456789" /* 38 bytes */
#define NOW 1700000000LL

/* "Bearer <token>" in a static buffer. */
static const char *bearer(const char *token)
{
    static char header[512];
    snprintf(header, sizeof(header), "Bearer %s", token);
    return header;
}

/* What verifying the token at NOW answers. */
static buyer_token_result verify(const char *token)
{
    int64_t user = -1;
    return buyer_token_verify(SECRET, bearer(token), NOW, &user);
}

Test(buyer_token, a_minted_token_verifies_as_its_buyer)
{
    char token[BUYER_TOKEN_MAX];
    int n = buyer_token_mint(SECRET, 42, NOW + 3600, token, sizeof(token));
    cr_assert_gt(n, 0);
    cr_assert_eq((size_t)n, strlen(token));
    int64_t user = -1;
    cr_assert_eq(buyer_token_verify(SECRET, bearer(token), NOW, &user), BUYER_TOKEN_OK);
    cr_assert_eq(user, 42);
}

Test(buyer_token, mint_matches_answers_computed_with_openssl_dgst)
{
    /* printf '%s' '<user>.<expiry>' | openssl dgst -sha256 -hmac "$SECRET" -binary \
     *     | basenc --base64url | tr -d '=' */
    static const struct {
        int64_t user, expiry;
        const char *token;
    } cases[] = {
        {42, 2000000000, "42.2000000000.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCo"},
        {9, 1700000000, "9.1700000000.b2-9G4nZIK5qWdDe_huSoaADpfbQwTNCDHDIDzet5I4"},
        {9007199254740991LL, 4102444800LL,
         "9007199254740991.4102444800.1rlsfTYNmk6laVuvEkJKCIe2Hz5ODM3H54qw8YBP8_s"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char token[BUYER_TOKEN_MAX];
        int n = buyer_token_mint(SECRET, cases[i].user, cases[i].expiry, token, sizeof(token));
        cr_assert_eq(n, (int)strlen(cases[i].token), "%s", token);
        cr_assert_str_eq(token, cases[i].token);
        int64_t user = -1;
        cr_assert_eq(buyer_token_verify(SECRET, bearer(cases[i].token), cases[i].expiry - 1, &user),
                     BUYER_TOKEN_OK, "%s", cases[i].token);
        cr_assert_eq(user, cases[i].user);
    }
}

Test(buyer_token, a_token_expires_at_its_expiry_second)
{
    char token[BUYER_TOKEN_MAX];
    cr_assert_gt(buyer_token_mint(SECRET, 7, NOW, token, sizeof(token)), 0);
    int64_t user = -1;
    cr_assert_eq(buyer_token_verify(SECRET, bearer(token), NOW - 1, &user), BUYER_TOKEN_OK);
    user = -1;
    cr_assert_eq(buyer_token_verify(SECRET, bearer(token), NOW, &user), BUYER_TOKEN_EXPIRED);
    cr_assert_eq(buyer_token_verify(SECRET, bearer(token), NOW + 86400, &user),
                 BUYER_TOKEN_EXPIRED);
    cr_assert_eq(user, -1, "the buyer of a refused token is not given");
}

Test(buyer_token, another_secret_makes_a_forgery)
{
    char token[BUYER_TOKEN_MAX];
    cr_assert_gt(buyer_token_mint("another-secret-of-at-least-32-bytes!!", 42, NOW + 60, token,
                                  sizeof(token)),
                 0);
    cr_assert_eq(verify(token), BUYER_TOKEN_FORGED);
}

Test(buyer_token, one_changed_character_anywhere_is_a_forgery)
{
    const char *good = "42.2000000000.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCo";
    const char *forged[] = {
        "42.2000000000.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlDo", /* signature */
        "42.2000000000.Y7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCo",
        "42.2000000000.X7RBPHC410OwTWqI-AvD1luUqYFqvBNUGeiU8WNKlCo",
        /* 'o' and 'p' differ only in the last character's two unused bits:
         * the same bytes, another text, still refused. */
        "42.2000000000.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCp",
        "43.2000000000.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCo", /* user id */
        "24.2000000000.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCo",
        "42.2000000001.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCo", /* expiry */
        "42.9000000000.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCo",
    };
    cr_assert_eq(verify(good), BUYER_TOKEN_OK);
    for (size_t i = 0; i < sizeof(forged) / sizeof(forged[0]); i++)
        cr_expect_eq(verify(forged[i]), BUYER_TOKEN_FORGED, "%s", forged[i]);
}

Test(buyer_token, a_forged_token_is_forged_even_when_expired)
{
    int64_t user = -1;
    const char *forged = "42.1000000000.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCo";
    cr_assert_eq(buyer_token_verify(SECRET, bearer(forged), NOW, &user), BUYER_TOKEN_FORGED);
    cr_assert_eq(user, -1);
}

Test(buyer_token, what_is_not_shaped_like_a_token_is_malformed)
{
    char overlong[BUYER_TOKEN_MAX + 16];
    memset(overlong, '1', sizeof(overlong) - 1);
    overlong[sizeof(overlong) - 1] = '\0';
    const char *bad[] = {
        "",
        "42",
        "42.2000000000",
        "42.2000000000.",
        ".2000000000.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCo",
        "42..X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCo",
        "42.2000000000.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlC.", /* a third dot */
        "42.2000000000.X7RBPHC410OwTWqI.AvD1luUqYFqvBNUGeiU8WNKlCo",
        "1.42.2000000000.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCo",
        "042.2000000000.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCo", /* leading zeros */
        "42.02000000000.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCo",
        "0.2000000000.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCo", /* zero */
        "42.0.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCo",
        "+42.2000000000.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCo", /* signs */
        "-42.2000000000.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCo",
        "42.-2000000000.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCo",
        "42.+2000000000.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCo",
        " 42.2000000000.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCo", /* spaces */
        "42 .2000000000.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCo",
        "42.2000000000 .X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCo",
        "42.2000000000.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCo ",
        "42.2000000000.X7RBPHC410OwTWqI AvD1luUqYFqvBNUGeiU8WNKlCo",
        "4x.2000000000.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCo", /* not digits */
        "42.2e9.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCo",
        "42.2000000000.X7RBPHC410OwTWqI/AvD1luUqYFqvBNUGeiU8WNKlCo", /* base64, not base64url */
        "42.2000000000.X7RBPHC410OwTWqI+AvD1luUqYFqvBNUGeiU8WNKlCo",
        "42.2000000000.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlC*",
        "42.2000000000.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCo=", /* padding */
        "42.2000000000.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlC=",
        "42.2000000000.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlC",                /* short */
        "42.2000000000.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCoA",              /* long */
        "9007199254740992.2000000000.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCo", /* 2^53 */
        "42.9223372036854775808.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCo",      /* > int64 */
        overlong,
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_expect_eq(verify(bad[i]), BUYER_TOKEN_MALFORMED, "'%s'", bad[i]);
}

Test(buyer_token, no_header_or_another_scheme_is_missing)
{
    const char *token = "42.2000000000.X7RBPHC410OwTWqI_AvD1luUqYFqvBNUGeiU8WNKlCo";
    char header[256];
    int64_t user = -1;
    cr_assert_eq(buyer_token_verify(SECRET, NULL, NOW, &user), BUYER_TOKEN_MISSING);
    cr_assert_eq(buyer_token_verify(SECRET, "", NOW, &user), BUYER_TOKEN_MISSING);
    cr_assert_eq(buyer_token_verify(SECRET, "Bearer", NOW, &user), BUYER_TOKEN_MISSING);
    cr_assert_eq(buyer_token_verify(SECRET, token, NOW, &user), BUYER_TOKEN_MISSING,
                 "a bare token has no scheme");
    const char *schemes[] = {"Basic %s",  "Token %s",   "bearer %s",
                             "BEARER %s", "Bearer\t%s", "Bearer:%s"};
    for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
        snprintf(header, sizeof(header), schemes[i], token);
        cr_expect_eq(buyer_token_verify(SECRET, header, NOW, &user), BUYER_TOKEN_MISSING, "%s",
                     header);
    }
    cr_assert_eq(user, -1);
    /* The scheme present, the token not: malformed rather than missing. */
    cr_assert_eq(buyer_token_verify(SECRET, "Bearer ", NOW, &user), BUYER_TOKEN_MALFORMED);
    cr_assert_eq(buyer_token_verify(SECRET, "Bearer  42.2000000000.x", NOW, &user),
                 BUYER_TOKEN_MALFORMED);
}

Test(buyer_token, mint_refuses_what_verify_would_refuse)
{
    char token[BUYER_TOKEN_MAX];
    cr_assert_eq(buyer_token_mint(SECRET, 0, NOW, token, sizeof(token)), -1);
    cr_assert_eq(buyer_token_mint(SECRET, -1, NOW, token, sizeof(token)), -1);
    cr_assert_eq(buyer_token_mint(SECRET, 9007199254740992LL, NOW, token, sizeof(token)), -1);
    cr_assert_eq(buyer_token_mint(SECRET, 42, 0, token, sizeof(token)), -1);
    cr_assert_eq(buyer_token_mint(SECRET, 42, -5, token, sizeof(token)), -1);
    cr_assert_eq(buyer_token_mint(NULL, 42, NOW, token, sizeof(token)), -1);
    cr_assert_eq(buyer_token_mint(SECRET, 42, NOW, NULL, 0), -1);
}

Test(buyer_token, mint_refuses_a_buffer_too_small_and_the_largest_fits)
{
    char token[BUYER_TOKEN_MAX];
    int n = buyer_token_mint(SECRET, 9007199254740991LL, INT64_MAX, token, sizeof(token));
    cr_assert_eq(n, 16 + 1 + 19 + 1 + 43, "the longest token: %s", token);
    int64_t user = -1;
    cr_assert_eq(buyer_token_verify(SECRET, bearer(token), NOW, &user), BUYER_TOKEN_OK);
    cr_assert_eq(user, 9007199254740991LL);
    cr_assert_eq(buyer_token_mint(SECRET, 42, NOW, token, 10), -1);
    cr_assert_eq(buyer_token_mint(SECRET, 42, NOW, token, 57), -1, "no room for the NUL");
    cr_assert_eq(buyer_token_mint(SECRET, 42, NOW, token, 58), 57);
}

Test(buyer_token, every_result_has_a_sentence)
{
    for (int r = BUYER_TOKEN_OK; r <= BUYER_TOKEN_EXPIRED; r++) {
        const char *text = buyer_token_result_text((buyer_token_result)r);
        cr_assert(text && *text, "%d", r);
    }
    cr_assert(strstr(buyer_token_result_text(BUYER_TOKEN_EXPIRED), "expired"));
    cr_assert(strstr(buyer_token_result_text(BUYER_TOKEN_MISSING), "Bearer"));
}
