/* unit_identity.c: whom a request speaks for, under buyer_auth none and
 * token, and what each scope of the shop's credentials may call. */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "buyer_token.h"
#include "identity.h"

#define ADMIN "admin-token"
#define PAYMENTS "payments-token-0123456789"
#define READER "orders-read-token-0123456789"
#define SECRET "unit-identity-secret-of-at-least-32-bytes!"
#define NOW 2000000000LL

static credentials *creds;
static identity_rules none, tokens;

static void setup(void)
{
    char why[128];
    creds = credentials_create();
    cr_assert_not_null(creds);
    cr_assert_eq(credentials_add(creds, ADMIN, CREDENTIAL_ADMIN, why, sizeof(why)), 0);
    cr_assert_eq(credentials_add(creds, PAYMENTS, CREDENTIAL_PAYMENTS, why, sizeof(why)), 0);
    cr_assert_eq(credentials_add(creds, READER, CREDENTIAL_ORDERS_READ, why, sizeof(why)), 0);
    none = (identity_rules){creds, 0, ""};
    tokens = (identity_rules){creds, 1, SECRET};
}

static void teardown(void)
{
    credentials_free(creds);
}

TestSuite(identity, .init = setup, .fini = teardown);

static void bearer(char *buf, size_t cap, int64_t user, int64_t expiry)
{
    char t[BUYER_TOKEN_MAX];
    cr_assert_gt(buyer_token_mint(SECRET, user, expiry, t, sizeof(t)), 0);
    snprintf(buf, cap, "Bearer %s", t);
}

Test(identity, without_buyer_tokens_the_buyer_is_whom_the_request_names)
{
    identity who;
    const char *why = NULL;
    cr_assert_eq(identity_of(&none, NULL, 42, NOW, &who, &why), SK_OK);
    cr_assert_eq(who.buyer, 42);
    cr_assert_eq(who.scopes, 0);
    cr_assert_eq(identity_of(&none, "Bearer " ADMIN, 7, NOW, &who, &why), SK_OK);
    cr_assert(who.scopes & CREDENTIAL_ADMIN);
    cr_assert_eq(who.buyer, 7);
}

Test(identity, with_buyer_tokens_only_the_token_says_who_buys)
{
    identity who;
    const char *why = NULL;
    char auth[200];
    bearer(auth, sizeof(auth), 41, NOW + 60);
    cr_assert_eq(identity_of(&tokens, auth, 0, NOW, &who, &why), SK_OK);
    cr_assert_eq(who.buyer, 41);
    cr_assert_eq(who.scopes, 0, "a buyer's token is no credential of the shop");
    cr_assert_eq(identity_of(&tokens, auth, 41, NOW, &who, &why), SK_OK, "naming oneself is fine");
    cr_assert_eq(identity_of(&tokens, auth, 42, NOW, &who, &why), SK_FORBIDDEN);
    cr_assert(strstr(why, "user_id"), "%s", why);
    cr_assert_eq(identity_of(&tokens, NULL, 41, NOW, &who, &why), SK_UNAUTHORIZED, "no token");
    bearer(auth, sizeof(auth), 41, NOW);
    cr_assert_eq(identity_of(&tokens, auth, 0, NOW, &who, &why), SK_UNAUTHORIZED, "expired");
    cr_assert(strstr(why, "expired"), "%s", why);
    cr_assert_eq(identity_of(&tokens, "Bearer 41.9999999999.AAAA", 0, NOW, &who, &why),
                 SK_UNAUTHORIZED, "forged");
    cr_assert_eq(identity_of(&tokens, "Bearer " ADMIN, 9, NOW, &who, &why), SK_OK,
                 "the admin acts for any buyer");
    cr_assert(who.scopes & CREDENTIAL_ADMIN);
    cr_assert_eq(who.buyer, 9);
    cr_assert(identity_acts_for_buyer(&who));
}

Test(identity, only_an_admin_credential_or_the_buyer_acts_for_a_buyer)
{
    identity who;
    const char *why = NULL;
    char auth[200];
    cr_assert_eq(identity_of(&tokens, "Bearer " PAYMENTS, 9, NOW, &who, &why), SK_OK);
    cr_assert_eq(who.scopes, CREDENTIAL_PAYMENTS | CREDENTIAL_ORDERS_READ);
    cr_assert_not(identity_acts_for_buyer(&who), "payments may not buy or cancel for a buyer");
    cr_assert_eq(identity_of(&tokens, "Bearer " READER, 9, NOW, &who, &why), SK_OK);
    cr_assert_eq(who.scopes, CREDENTIAL_ORDERS_READ);
    cr_assert_not(identity_acts_for_buyer(&who));
    bearer(auth, sizeof(auth), 9, NOW + 60);
    cr_assert_eq(identity_of(&tokens, auth, 9, NOW, &who, &why), SK_OK);
    cr_assert(identity_acts_for_buyer(&who), "a buyer acts for themselves");
}

Test(identity, a_route_needs_a_credential_of_its_scope_or_one_that_implies_it)
{
    const char *why = NULL;
    cr_assert_eq(identity_require(&none, NULL, CREDENTIAL_NONE, &why), SK_OK, "a public route");
    cr_assert_eq(identity_require(&none, "Bearer " ADMIN, CREDENTIAL_ADMIN, &why), SK_OK);
    cr_assert_eq(identity_require(&none, "Bearer " ADMIN, CREDENTIAL_PAYMENTS, &why), SK_OK,
                 "today's admin token still pays");
    cr_assert_eq(identity_require(&none, "Bearer " ADMIN, CREDENTIAL_ORDERS_READ, &why), SK_OK);
    cr_assert_eq(identity_require(&none, "Bearer " PAYMENTS, CREDENTIAL_PAYMENTS, &why), SK_OK);
    cr_assert_eq(identity_require(&none, "Bearer " PAYMENTS, CREDENTIAL_ORDERS_READ, &why), SK_OK);
    cr_assert_eq(identity_require(&none, "Bearer " READER, CREDENTIAL_ORDERS_READ, &why), SK_OK);

    cr_assert_eq(identity_require(&none, "Bearer " PAYMENTS, CREDENTIAL_ADMIN, &why), SK_FORBIDDEN);
    cr_assert(strstr(why, "scope admin"), "the 403 names the scope needed: %s", why);
    cr_assert_eq(identity_require(&none, "Bearer " READER, CREDENTIAL_PAYMENTS, &why),
                 SK_FORBIDDEN);
    cr_assert(strstr(why, "scope payments"), "%s", why);
    cr_assert_eq(identity_require(&none, "Bearer " READER, CREDENTIAL_ADMIN, &why), SK_FORBIDDEN);

    cr_assert_eq(identity_require(&none, NULL, CREDENTIAL_ORDERS_READ, &why), SK_UNAUTHORIZED);
    cr_assert(strstr(why, "orders:read"), "%s", why);
    cr_assert_eq(identity_require(&none, "Bearer wrong", CREDENTIAL_ADMIN, &why), SK_UNAUTHORIZED);
    char auth[200];
    bearer(auth, sizeof(auth), 9, NOW + 60);
    cr_assert_eq(identity_require(&tokens, auth, CREDENTIAL_ORDERS_READ, &why), SK_UNAUTHORIZED,
                 "a buyer's token is not a credential of the shop");
}
