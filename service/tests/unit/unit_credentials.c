/* unit_credentials.c: the shop's scoped credentials: the lists of the
 * config, what each scope implies, and whole-token matching. */
#include <string.h>

#include <criterion/criterion.h>

#include "credentials.h"

#define A1 "admin-one-0123456789"
#define A2 "admin-two-0123456789"
#define P1 "payments-one-0123456789"
#define P2 "payments-two-0123456789"
#define R1 "reader-one-0123456789"

static credentials *of(const char *admin, const char *payments, const char *reader)
{
    char why[128];
    credentials *c = credentials_create();
    cr_assert_not_null(c);
    cr_assert_eq(credentials_add_list(c, admin, CREDENTIAL_ADMIN, why, sizeof(why)), 0, "%s", why);
    cr_assert_eq(credentials_add_list(c, payments, CREDENTIAL_PAYMENTS, why, sizeof(why)), 0, "%s",
                 why);
    cr_assert_eq(credentials_add_list(c, reader, CREDENTIAL_ORDERS_READ, why, sizeof(why)), 0, "%s",
                 why);
    return c;
}

Test(credentials, each_scope_carries_what_it_implies)
{
    credentials *c = of(A1, P1, R1);
    unsigned all = CREDENTIAL_ADMIN | CREDENTIAL_PAYMENTS | CREDENTIAL_ORDERS_READ;
    cr_assert_eq(credentials_scopes(c, "Bearer " A1), all, "admin may do everything");
    cr_assert_eq(credentials_scopes(c, "Bearer " P1), CREDENTIAL_PAYMENTS | CREDENTIAL_ORDERS_READ);
    cr_assert_eq(credentials_scopes(c, "Bearer " R1), CREDENTIAL_ORDERS_READ);
    credentials_free(c);
}

Test(credentials, both_tokens_of_a_rotated_pair_work)
{
    credentials *c = of(" " A1 " , " A2, P1 "," P2, "");
    cr_assert_eq(credentials_count(c), 4);
    cr_assert(credentials_scopes(c, "Bearer " A1) & CREDENTIAL_ADMIN);
    cr_assert(credentials_scopes(c, "Bearer " A2) & CREDENTIAL_ADMIN);
    cr_assert_eq(credentials_scopes(c, "Bearer " P1), credentials_scopes(c, "Bearer " P2));
    cr_assert_eq(credentials_scopes(c, "Bearer " R1), CREDENTIAL_NONE, "an empty list holds none");
    credentials_free(c);
}

Test(credentials, a_token_matches_only_whole)
{
    credentials *c = of(A1, "", "");
    cr_assert_eq(credentials_scopes(c, "Bearer " A1 "x"), CREDENTIAL_NONE);
    cr_assert_eq(credentials_scopes(c, "Bearer admin-one-012345678"), CREDENTIAL_NONE);
    cr_assert_eq(credentials_scopes(c, "bearer " A1), CREDENTIAL_NONE);
    cr_assert_eq(credentials_scopes(c, A1), CREDENTIAL_NONE);
    cr_assert_eq(credentials_scopes(c, "Bearer "), CREDENTIAL_NONE);
    cr_assert_eq(credentials_scopes(c, NULL), CREDENTIAL_NONE);
    cr_assert_eq(credentials_scopes(NULL, "Bearer " A1), CREDENTIAL_NONE);
    credentials_free(c);
}

Test(credentials, the_single_admin_token_of_old_configs_is_taken_as_it_is)
{
    char why[128];
    credentials *c = credentials_create();
    cr_assert_eq(credentials_add(c, "short", CREDENTIAL_ADMIN, why, sizeof(why)), 0);
    cr_assert(credentials_scopes(c, "Bearer short") & CREDENTIAL_PAYMENTS,
              "today's admin token pays orders");
    cr_assert_eq(credentials_add(c, "", CREDENTIAL_ADMIN, why, sizeof(why)), -1);
    credentials_free(c);
}

Test(credentials, a_bad_list_is_refused_naming_the_entry_never_its_text)
{
    char why[160];
    cr_assert_eq(credentials_check_list("", why, sizeof(why)), 0);
    cr_assert_eq(credentials_check_list("  ", why, sizeof(why)), 0);
    cr_assert_eq(credentials_check_list(A1 "," A2, why, sizeof(why)), 0);
    cr_assert_eq(credentials_check_list(A1 ",tooshort-secret", why, sizeof(why)), -1);
    cr_assert(strstr(why, "token 2"), "%s", why);
    cr_assert_null(strstr(why, "tooshort"), "the message never shows a token: %s", why);
    cr_assert_eq(credentials_check_list(A1 ",", why, sizeof(why)), -1, "an empty entry");
    cr_assert_eq(credentials_check_list(A1 ",,", why, sizeof(why)), -1);
    cr_assert_eq(credentials_check_list("admin one 0123456789", why, sizeof(why)), -1);
    cr_assert(strstr(why, "space"), "%s", why);
    cr_assert_eq(credentials_check_list("admin-\xc3\xa9-0123456789", why, sizeof(why)), -1);
    char many[16 * 22 + 32] = "";
    for (int i = 0; i < 17; i++)
        strcat(many, i ? "," A1 : A1);
    cr_assert_eq(credentials_check_list(many, why, sizeof(why)), -1);
    cr_assert(strstr(why, "more than 16"), "%s", why);
}

Test(credentials, scopes_are_named_as_the_config_says_them)
{
    cr_assert_str_eq(credentials_scope_name(CREDENTIAL_ADMIN), "admin");
    cr_assert_str_eq(credentials_scope_name(CREDENTIAL_PAYMENTS), "payments");
    cr_assert_str_eq(credentials_scope_name(CREDENTIAL_ORDERS_READ), "orders:read");
}
