/* unit_status.c: the one mapping of domain outcomes to HTTP in status.c. */
#include <string.h>

#include <criterion/criterion.h>

#include "status.h"

Test(status, every_outcome_has_an_http_status_and_a_code)
{
    for (int s = 0; s < SK_STATUS_COUNT; s++) {
        int http = sk_status_http((sk_status)s);
        const char *code = sk_status_code((sk_status)s);
        cr_assert(http >= 100 && http <= 599, "status %d maps to HTTP %d", s, http);
        cr_assert_not_null(code, "status %d has no code", s);
        cr_assert_gt(strlen(code), 0, "status %d has an empty code", s);
        for (const char *p = code; *p; p++)
            cr_assert((*p >= 'a' && *p <= 'z') || *p == '_', "code '%s' is not snake_case", code);
    }
}

Test(status, codes_are_distinct)
{
    for (int a = 0; a < SK_STATUS_COUNT; a++)
        for (int b = 0; b < a; b++)
            cr_assert_str_neq(sk_status_code((sk_status)a), sk_status_code((sk_status)b),
                              "statuses %d and %d share a code", a, b);
}

Test(status, purchase_outcomes)
{
    cr_assert_eq(sk_status_http(SK_QUEUED), 202);
    cr_assert_str_eq(sk_status_code(SK_QUEUED), "queued");
    cr_assert_eq(sk_status_http(SK_SOLD_OUT), 409);
    cr_assert_str_eq(sk_status_code(SK_SOLD_OUT), "sold_out");
    const struct {
        sk_status s;
        const char *code;
    } refusals[] = {{SK_LIMIT_REACHED, "limit_reached"},
                    {SK_INSUFFICIENT_STOCK, "insufficient_stock"},
                    {SK_NOT_STARTED, "not_started"},
                    {SK_ENDED, "ended"}};
    for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
        cr_assert_eq(sk_status_http(refusals[i].s), 409);
        cr_assert_str_eq(sk_status_code(refusals[i].s), refusals[i].code);
    }
}

Test(status, other_outcomes)
{
    cr_assert_eq(sk_status_http(SK_OK), 200);
    cr_assert_eq(sk_status_http(SK_CREATED), 201);
    cr_assert_eq(sk_status_http(SK_NOT_FOUND), 404);
    cr_assert_eq(sk_status_http(SK_ITEM_EXISTS), 409);
    cr_assert_eq(sk_status_http(SK_INVALID), 400);
    cr_assert_eq(sk_status_http(SK_UNAUTHORIZED), 401);
    cr_assert_eq(sk_status_http(SK_METHOD_NOT_ALLOWED), 405);
    cr_assert_eq(sk_status_http(SK_TOO_LARGE), 413);
    cr_assert_eq(sk_status_http(SK_BACKEND_DOWN), 503);
    cr_assert_eq(sk_status_http(SK_INTERNAL), 500);
}

Test(status, the_laboratory_switched_off_is_404)
{
    cr_assert_eq(sk_status_http(SK_LAB_OFF), 404);
    cr_assert_str_eq(sk_status_code(SK_LAB_OFF), "lab_off");
}

Test(status, an_outcome_of_a_plugged_in_part_is_not_the_products_to_map)
{
    cr_assert_eq(sk_status_http(SK_STATUS_PART), 500);
    cr_assert_str_eq(sk_status_code(SK_STATUS_PART + 1), "internal_error");
}

Test(status, an_outcome_out_of_range_is_an_internal_error)
{
    cr_assert_eq(sk_status_http(SK_STATUS_COUNT), 500);
    cr_assert_str_eq(sk_status_code(SK_STATUS_COUNT), "internal_error");
    cr_assert_eq(sk_status_http((sk_status)-1), 500);
    cr_assert_str_eq(sk_status_code((sk_status)1000), "internal_error");
}
