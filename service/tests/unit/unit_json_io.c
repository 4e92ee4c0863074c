/* unit_json_io.c: request bodies are validated fully; responses are JSON. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "json_io.h"

#define PARSE_PURCHASE(text, user, why) json_io_parse_purchase(text, strlen(text), user, why)

Test(json_io, a_purchase_body_gives_its_user_id)
{
    int64_t user = 0;
    const char *why = NULL;
    cr_assert_eq(PARSE_PURCHASE("{\"user_id\": 42}", &user, &why), SK_OK);
    cr_assert_eq(user, 42);
    cr_assert_eq(PARSE_PURCHASE("{\"user_id\": 9223372036854775807, \"x\": 1}", &user, &why),
                 SK_OK);
    cr_assert_eq(user, INT64_MAX);
}

Test(json_io, purchase_bodies_that_are_not_a_positive_integer_user_are_invalid)
{
    const char *bad[] = {
        "",
        "{",
        "null",
        "[]",
        "{}",
        "{\"user_id\": \"42\"}",
        "{\"user_id\": 0}",
        "{\"user_id\": -3}",
        "{\"user_id\": 4.0}",
        "{\"user_id\": true}",
        "{\"user_id\": 92233720368547758070}",
        "{\"user_id\": 1, \"user_id\": 2}",
        "{\"user_id\": 1} trailing",
        "{\"user_id\": 1, \"n\": \"\\u0000\"}",
        "{\"user_id\": 1, \"n\": \"\xff\"}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t user = 0;
        const char *why = NULL;
        cr_expect_eq(PARSE_PURCHASE(bad[i], &user, &why), SK_INVALID, "accepted: %s", bad[i]);
        cr_expect_not_null(why);
    }
}

Test(json_io, deep_nesting_is_refused_without_a_crash)
{
    size_t depth = 100000;
    char *text = malloc(depth * 2 + 1);
    memset(text, '[', depth);
    memset(text + depth, ']', depth);
    text[depth * 2] = '\0';
    int64_t user;
    const char *why;
    cr_assert_eq(json_io_parse_purchase(text, depth * 2, &user, &why), SK_INVALID);
    free(text);
}

Test(json_io, an_item_spec_needs_a_name_and_a_stock_and_may_carry_an_id)
{
    item_spec spec;
    const char *why;
    const char *ok = "{\"name\": \"phone\", \"stock\": 100}";
    cr_assert_eq(json_io_parse_item_spec(ok, strlen(ok), &spec, &why), SK_OK);
    cr_assert_str_eq(spec.name, "phone");
    cr_assert_eq(spec.stock, 100);
    cr_assert_eq(spec.id, 0);
    const char *with_id = "{\"name\": \"x\", \"stock\": 0, \"id\": 7}";
    cr_assert_eq(json_io_parse_item_spec(with_id, strlen(with_id), &spec, &why), SK_OK);
    cr_assert_eq(spec.id, 7);

    char long_name[300];
    memset(long_name, 'a', 201);
    long_name[201] = '\0';
    char too_long[400];
    snprintf(too_long, sizeof(too_long), "{\"name\": \"%s\", \"stock\": 1}", long_name);
    const char *bad[] = {"{\"stock\": 1}",
                         "{\"name\": \"\", \"stock\": 1}",
                         "{\"name\": 5, \"stock\": 1}",
                         "{\"name\": \"x\"}",
                         "{\"name\": \"x\", \"stock\": -1}",
                         "{\"name\": \"x\", \"stock\": 1, \"id\": 0}",
                         too_long};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_expect_eq(json_io_parse_item_spec(bad[i], strlen(bad[i]), &spec, &why), SK_INVALID,
                     "accepted: %s", bad[i]);
}

Test(json_io, a_reset_needs_a_stock_of_zero_or_more)
{
    int64_t stock;
    const char *why;
    cr_assert_eq(json_io_parse_reset("{\"stock\": 0}", 12, &stock, &why), SK_OK);
    cr_assert_eq(stock, 0);
    cr_assert_eq(json_io_parse_reset("{\"stock\": -1}", 13, &stock, &why), SK_INVALID);
    cr_assert_eq(json_io_parse_reset("{}", 2, &stock, &why), SK_INVALID);
}

Test(json_io, an_error_body_is_json_even_with_quotes_in_the_message)
{
    char buf[256];
    int n = json_io_error(buf, sizeof(buf), SK_SOLD_OUT, "say \"no\"\n");
    cr_assert_gt(n, 0);
    json_error_t e;
    json_t *v = json_loads(buf, 0, &e);
    cr_assert_not_null(v, "%s", buf);
    cr_assert_str_eq(json_string_value(json_object_get(v, "error")), "sold_out");
    cr_assert_str_eq(json_string_value(json_object_get(v, "message")), "say \"no\"\n");
    json_decref(v);
    cr_assert_eq(json_io_error(buf, 10, SK_SOLD_OUT, "x"), -1, "too small a buffer is refused");
}

Test(json_io, the_queued_answer_carries_the_order_id_as_a_string)
{
    char buf[128];
    int n = json_io_purchase_queued(buf, sizeof(buf), 117867792258039809LL, 41);
    cr_assert_str_eq(
        buf, "{\"status\":\"queued\",\"order_id\":\"117867792258039809\",\"remaining\":41}");
    cr_assert_eq(n, (int)strlen(buf));
}

Test(json_io, item_and_order_views_are_complete_objects)
{
    item_view v = {
        .id = 3, .initial_stock = 10, .remaining = 4, .sold = 6, .queued = 1, .persisted = 5};
    strcpy(v.name, "tv \"55\"");
    char *text = json_io_item(&v);
    json_error_t e;
    json_t *o = json_loads(text, 0, &e);
    cr_assert_not_null(o, "%s", text);
    cr_assert_str_eq(json_string_value(json_object_get(o, "name")), "tv \"55\"");
    cr_assert_eq(json_integer_value(json_object_get(o, "persisted")), 5);
    json_decref(o);
    free(text);

    order ord = {.id = 99, .item_id = 3, .user_id = 8};
    text = json_io_order(&ord, "queued");
    cr_assert_str_eq(text,
                     "{\"order_id\":\"99\",\"status\":\"queued\",\"item_id\":3,\"user_id\":8}");
    free(text);
}

Test(json_io, the_item_list_wraps_the_views_in_items)
{
    item_view v[2] = {{.id = 2, .initial_stock = 5, .remaining = 5}, {.id = 1, .remaining = 0}};
    strcpy(v[0].name, "phone");
    strcpy(v[1].name, "tv");
    char *text = json_io_item_list(v, 2);
    json_error_t e;
    json_t *o = json_loads(text, 0, &e);
    cr_assert_not_null(o, "%s", text);
    json_t *items = json_object_get(o, "items");
    cr_assert_eq(json_array_size(items), 2);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(items, 0), "name")), "phone");
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(items, 1), "id")), 1);
    json_decref(o);
    free(text);

    text = json_io_item_list(NULL, 0);
    cr_assert_str_eq(text, "{\"items\":[]}");
    free(text);
}
