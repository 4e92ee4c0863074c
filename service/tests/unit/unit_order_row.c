/* unit_order_row.c: the insert's statement and its callers agree on its
 * parameters: the statement names exactly $1..$ORDER_INSERT_PARAMS, and one
 * order's parameters are its fields in order_insert_values' order. */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "order.h"
#include "order_row.h"

/* The highest $N sql names, and in *seen which of 1..31 it names. */
static int highest_param(const char *sql, unsigned *seen)
{
    int top = 0;
    *seen = 0;
    for (const char *p = strchr(sql, '$'); p; p = strchr(p + 1, '$')) {
        int n = atoi(p + 1);
        cr_assert(n > 0 && n < 32, "a parameter $%d", n);
        *seen |= 1u << n;
        top = n > top ? n : top;
    }
    return top;
}

Test(order_row, the_insert_names_every_parameter_its_callers_pass)
{
    const char *sql[] = {order_insert_sql, order_insert_fresh_sql};
    for (int i = 0; i < 2; i++) {
        unsigned seen;
        cr_expect_eq(highest_param(sql[i], &seen), ORDER_INSERT_PARAMS);
        for (int n = 1; n <= ORDER_INSERT_PARAMS; n++)
            cr_expect(seen & (1u << n), "$%d is used", n);
    }
    cr_expect_not_null(strstr(order_insert_sql, "ON CONFLICT DO NOTHING"));
    cr_expect_null(strstr(order_insert_fresh_sql, "ON CONFLICT"));
}

Test(order_row, one_orders_parameters_are_its_fields_in_the_statements_order)
{
    /* id, item_id, user_id, round, created_ms, quantity, first_unit, segment_id, home_id */
    order o = {11, 22, 33, 44, 55, 6, 77, 88, 99};
    char text[ORDER_INSERT_PARAMS][24];
    const char *params[ORDER_INSERT_PARAMS];
    order_insert_one(&o, text, params);
    const char *want[] = {"{11}", "{22}", "{33}", "{44}", "{55}", "{6}", "{77}", "{88}", "{99}"};
    cr_assert_eq(sizeof(want) / sizeof(want[0]), ORDER_INSERT_PARAMS);
    for (int i = 0; i < ORDER_INSERT_PARAMS; i++)
        cr_expect_str_eq(params[i], want[i], "parameter $%d", i + 1);
}
