/* unit_identity.c: whom a request speaks for, under buyer_auth none and
 * token. */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "buyer_token.h"
#include "identity.h"

#define ADMIN "admin-token"
#define SECRET "unit-identity-secret-of-at-least-32-bytes!"
#define NOW 2000000000LL

static const identity_rules none = {ADMIN, 0, ""};
static const identity_rules tokens = {ADMIN, 1, SECRET};

static void bearer(char *buf, size_t cap, int64_t user, int64_t expiry)
{
    char t[BUYER_TOKEN_MAX];
    cr_assert_gt(buyer_token_mint(SECRET, user, expiry, t, sizeof(t)), 0);
    snprintf(buf, cap, "Bearer %s", t);
}

Test(identity, the_admin_token_is_compared_whole)
{
    cr_assert(identity_is_admin("Bearer " ADMIN, ADMIN));
    cr_assert_not(identity_is_admin("Bearer " ADMIN "x", ADMIN));
    cr_assert_not(identity_is_admin("Bearer admin-toke", ADMIN));
    cr_assert_not(identity_is_admin("bearer " ADMIN, ADMIN));
    cr_assert_not(identity_is_admin(NULL, ADMIN));
    cr_assert_not(identity_is_admin("Bearer ", ""), "an empty admin token refuses everyone");
}

Test(identity, without_buyer_tokens_the_buyer_is_whom_the_request_names)
{
    identity who;
    const char *why = NULL;
    cr_assert_eq(identity_of(&none, NULL, 42, NOW, &who, &why), SK_OK);
    cr_assert_eq(who.buyer, 42);
    cr_assert_not(who.admin);
    cr_assert_eq(identity_of(&none, "Bearer " ADMIN, 7, NOW, &who, &why), SK_OK);
    cr_assert(who.admin);
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
    cr_assert(who.admin);
    cr_assert_eq(who.buyer, 9);
}
