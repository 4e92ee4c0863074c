/* unit_json_io.c: request bodies are validated fully; responses are JSON. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "json_io.h"

#define PARSE_PURCHASE(text, req, why) json_io_parse_purchase(text, strlen(text), req, why)

Test(json_io, a_purchase_body_gives_its_user_id_and_quantity)
{
    purchase_request req;
    const char *why = NULL;
    cr_assert_eq(PARSE_PURCHASE("{\"user_id\": 42}", &req, &why), SK_OK);
    cr_assert_eq(req.user_id, 42);
    cr_assert_eq(req.quantity, 1, "one unit unless asked");
    cr_assert_eq(PARSE_PURCHASE("{\"user_id\": 9223372036854775807, \"x\": 1}", &req, &why), SK_OK);
    cr_assert_eq(req.user_id, INT64_MAX);
    cr_assert_eq(
        PARSE_PURCHASE("{\"user_id\": \"9223372036854775807\", \"quantity\": 1000}", &req, &why),
        SK_OK, "ids go out as strings and come back as strings");
    cr_assert_eq(req.user_id, INT64_MAX);
    cr_assert_eq(req.quantity, 1000);
    cr_assert_eq(PARSE_PURCHASE("{\"quantity\": 3}", &req, &why), SK_OK);
    cr_assert_eq(req.user_id, 0, "no buyer: the caller decides whether anonymous is allowed");
    cr_assert_eq(req.quantity, 3);
}

Test(json_io, purchase_bodies_with_a_wrong_field_are_invalid)
{
    const char *bad[] = {
        "",
        "{",
        "null",
        "[]",
        "{\"user_id\": \"\"}",
        "{\"user_id\": \"4 2\"}",
        "{\"user_id\": \"042\"}",
        "{\"user_id\": \"9223372036854775808\"}",
        "{\"user_id\": 0}",
        "{\"user_id\": -3}",
        "{\"user_id\": 4.0}",
        "{\"user_id\": true}",
        "{\"user_id\": 92233720368547758070}",
        "{\"user_id\": 1, \"user_id\": 2}",
        "{\"user_id\": 1} trailing",
        "{\"user_id\": 1, \"n\": \"\\u0000\"}",
        "{\"user_id\": 1, \"n\": \"\xff\"}",
        "{\"user_id\": 1, \"quantity\": 0}",
        "{\"user_id\": 1, \"quantity\": 1001}",
        "{\"user_id\": 1, \"quantity\": \"2\"}",
        "{\"user_id\": 1, \"quantity\": 1.5}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        purchase_request req;
        const char *why = NULL;
        cr_expect_eq(PARSE_PURCHASE(bad[i], &req, &why), SK_INVALID, "accepted: %s", bad[i]);
        cr_expect_not_null(why);
    }
}

Test(json_io, a_purchase_query_has_the_bodys_bounds)
{
    purchase_request req;
    const char *why = NULL;
    cr_assert_eq(json_io_parse_purchase_query("42", "3", &req, &why), SK_OK);
    cr_assert_eq(req.user_id, 42);
    cr_assert_eq(req.quantity, 3);
    cr_assert_eq(json_io_parse_purchase_query(NULL, NULL, &req, &why), SK_OK);
    cr_assert_eq(req.user_id, 0);
    cr_assert_eq(req.quantity, 1);
    const char *bad[][2] = {{"0", NULL}, {"x", NULL}, {"1", "0"}, {"1", "1001"}, {"1", "-2"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_expect_eq(json_io_parse_purchase_query(bad[i][0], bad[i][1], &req, &why), SK_INVALID,
                     "%s, %s", bad[i][0], bad[i][1] ? bad[i][1] : "-");
}

Test(json_io, a_nul_byte_in_a_body_is_refused_not_cut_at)
{
    purchase_request req;
    const char *why = NULL;
    static const char body[] = "{\"user_id\":1\0}";
    cr_assert_eq(json_io_parse_purchase(body, sizeof(body) - 1, &req, &why), SK_INVALID);
    cr_assert_str_eq(why, "body contains a NUL byte");
    static const char spec[] = "{\"name\":\"x\",\"stock\":1}\0";
    item_spec is;
    cr_assert_eq(json_io_parse_item_spec(spec, sizeof(spec) - 1, &is, &why), SK_INVALID);
}

Test(json_io, a_number_out_of_range_says_so)
{
    purchase_request req;
    const char *why = NULL;
    cr_assert_eq(PARSE_PURCHASE("{\"user_id\": 92233720368547758070}", &req, &why), SK_INVALID);
    cr_assert(strstr(why, "out of range"), "%s", why);
    item_spec spec;
    const char *big = "{\"name\": \"x\", \"stock\": 9223372036854775807}";
    cr_assert_eq(json_io_parse_item_spec(big, strlen(big), &spec, &why), SK_INVALID);
    cr_assert(strstr(why, "out of range"), "%s", why);
}

Test(json_io, deep_nesting_is_refused_without_a_crash)
{
    size_t depth = 100000;
    char *text = malloc(depth * 2 + 1);
    memset(text, '[', depth);
    memset(text + depth, ']', depth);
    text[depth * 2] = '\0';
    purchase_request req;
    const char *why;
    cr_assert_eq(json_io_parse_purchase(text, depth * 2, &req, &why), SK_INVALID);
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
    cr_assert_eq(spec.terms.per_buyer_limit, 1, "one unit a buyer unless said");
    cr_assert_eq(spec.terms.starts_ms, 0);
    const char *sale = "{\"name\": \"x\", \"stock\": 1000000000000, \"starts_at\": "
                       "\"2026-11-22T20:00:00Z\", \"ends_at\": \"2026-11-22T22:00:00+01:00\", "
                       "\"per_buyer_limit\": 1000, \"id\": 9007199254740991}";
    cr_assert_eq(json_io_parse_item_spec(sale, strlen(sale), &spec, &why), SK_OK, "%s", why);
    cr_assert_eq(spec.stock, 1000000000000LL);
    cr_assert_eq(spec.terms.starts_ms, 1795377600000LL);
    cr_assert_eq(spec.terms.ends_ms, 1795377600000LL + 3600000, "22:00+01:00 is 21:00Z");
    cr_assert_eq(spec.terms.per_buyer_limit, 1000);
    cr_assert_eq(spec.terms.given, SALE_STARTS | SALE_ENDS | SALE_LIMIT);

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
                         "{\"name\": \"x\", \"stock\": 1, \"id\": 9007199254740992}",
                         "{\"name\": \"x\", \"stock\": 1000000000001}",
                         "{\"name\": \"x\", \"stock\": 1, \"per_buyer_limit\": 0}",
                         "{\"name\": \"x\", \"stock\": 1, \"per_buyer_limit\": 1001}",
                         "{\"name\": \"x\", \"stock\": 1, \"per_buyer_limit\": \"2\"}",
                         "{\"name\": \"x\", \"stock\": 1, \"starts_at\": \"tomorrow\"}",
                         "{\"name\": \"x\", \"stock\": 1, \"starts_at\": 1795377600000}",
                         "{\"name\": \"x\", \"stock\": 1, \"ends_at\": \"2026-11-22\"}",
                         "{\"name\": \"x\", \"stock\": 1, \"starts_at\": "
                         "\"2026-11-22T20:00:00Z\", \"ends_at\": \"2026-11-22T20:00:00Z\"}",
                         "{\"name\": \"x\", \"stock\": 1, \"lab\": 1}",
                         too_long};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_expect_eq(json_io_parse_item_spec(bad[i], strlen(bad[i]), &spec, &why), SK_INVALID,
                     "accepted: %s", bad[i]);
}

Test(json_io, a_reset_needs_a_stock_and_names_the_terms_it_changes)
{
    item_reset r;
    const char *why;
    cr_assert_eq(json_io_parse_reset("{\"stock\": 0}", 12, &r, &why), SK_OK);
    cr_assert_eq(r.stock, 0);
    cr_assert_eq(r.terms.given, 0, "nothing named: every term kept");
    const char *clear = "{\"stock\": 5, \"starts_at\": null, \"per_buyer_limit\": 2}";
    cr_assert_eq(json_io_parse_reset(clear, strlen(clear), &r, &why), SK_OK);
    cr_assert_eq(r.terms.given, SALE_STARTS | SALE_LIMIT);
    cr_assert_eq(r.terms.starts_ms, 0, "null clears the bound");
    cr_assert_eq(r.terms.per_buyer_limit, 2);
    cr_assert_eq(json_io_parse_reset("{\"stock\": -1}", 13, &r, &why), SK_INVALID);
    cr_assert_eq(json_io_parse_reset("{}", 2, &r, &why), SK_INVALID);
}

Test(json_io, a_restock_adds_one_to_ten_to_the_twelfth_units)
{
    int64_t add;
    const char *why;
    cr_assert_eq(json_io_parse_restock("{\"add\": 5}", 10, &add, &why), SK_OK);
    cr_assert_eq(add, 5);
    const char *bad[] = {"{}", "{\"add\": 0}", "{\"add\": -2}", "{\"add\": 1000000000001}",
                         "{\"add\": \"5\"}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_expect_eq(json_io_parse_restock(bad[i], strlen(bad[i]), &add, &why), SK_INVALID, "%s",
                     bad[i]);
}

Test(json_io, refusals_carry_what_the_buyer_needs)
{
    char buf[512];
    purchase_refusal r = {
        .status = SK_NOT_STARTED, .starts_ms = 1795377600000LL, .starts_in_ms = 1500};
    cr_assert_gt(json_io_purchase_refused(buf, sizeof(buf), &r), 0);
    json_error_t e;
    json_t *v = json_loads(buf, 0, &e);
    cr_assert_not_null(v, "%s", buf);
    cr_assert_str_eq(json_string_value(json_object_get(v, "error")), "not_started");
    cr_assert_str_eq(json_string_value(json_object_get(v, "starts_at")), "2026-11-22T20:00:00Z");
    cr_assert_eq(json_integer_value(json_object_get(v, "starts_in_ms")), 1500);
    json_decref(v);
    r = (purchase_refusal){
        .status = SK_LIMIT_REACHED, .bought = 2, .per_buyer_limit = 3, .quantity = 2};
    cr_assert_gt(json_io_purchase_refused(buf, sizeof(buf), &r), 0);
    v = json_loads(buf, 0, &e);
    cr_assert_not_null(v, "%s", buf);
    cr_assert_eq(json_integer_value(json_object_get(v, "bought")), 2);
    cr_assert_eq(json_integer_value(json_object_get(v, "per_buyer_limit")), 3);
    cr_assert_eq(json_integer_value(json_object_get(v, "quantity")), 2);
    cr_assert(strstr(json_string_value(json_object_get(v, "message")), "has 2 of the 3"), "%s",
              buf);
    json_decref(v);
    /* More than the limit at once: the message says the limit is per buyer,
     * not that the buyer has 0 of it. */
    r = (purchase_refusal){
        .status = SK_LIMIT_REACHED, .bought = 0, .per_buyer_limit = 2, .quantity = 3};
    cr_assert_gt(json_io_purchase_refused(buf, sizeof(buf), &r), 0);
    v = json_loads(buf, 0, &e);
    cr_assert_not_null(v, "%s", buf);
    cr_assert_str_eq(json_string_value(json_object_get(v, "message")),
                     "3 units asked, and one buyer may have at most 2 (the limit is per buyer)");
    json_decref(v);
    r = (purchase_refusal){.status = SK_INSUFFICIENT_STOCK, .remaining = 1};
    cr_assert_gt(json_io_purchase_refused(buf, sizeof(buf), &r), 0);
    cr_assert(strstr(buf, "\"remaining\":1}"), "%s", buf);
    r = (purchase_refusal){.status = SK_ENDED, .ends_ms = 1795377600000LL};
    cr_assert_gt(json_io_purchase_refused(buf, sizeof(buf), &r), 0);
    cr_assert(strstr(buf, "\"ends_at\":\"2026-11-22T20:00:00Z\""), "%s", buf);
    r = (purchase_refusal){.status = SK_SOLD_OUT};
    cr_assert_gt(json_io_purchase_refused(buf, sizeof(buf), &r), 0);
    cr_assert_str_eq(buf, "{\"error\":\"sold_out\",\"message\":\"the item is sold out\"}");
}

Test(json_io, an_item_view_says_its_state_by_redis_clock)
{
    item_view v = {.remaining = 5, .starts_ms = 2000, .ends_ms = 3000, .now_ms = 1999};
    cr_assert_str_eq(json_io_item_state(&v), "upcoming");
    v.now_ms = 2000;
    cr_assert_str_eq(json_io_item_state(&v), "on_sale");
    v.remaining = 0;
    cr_assert_str_eq(json_io_item_state(&v), "sold_out");
    v.now_ms = 3000;
    cr_assert_str_eq(json_io_item_state(&v), "ended");
    item_view open = {.remaining = 1, .now_ms = 5};
    cr_assert_str_eq(json_io_item_state(&open), "on_sale");
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

Test(json_io, every_error_body_is_written_by_one_function_that_escapes_and_appends_members)
{
    char buf[256];
    int n = json_io_error_body(buf, sizeof(buf), "busy", "a \\ b\t", ",\"order_id\":\"7\"");
    cr_assert_str_eq(buf,
                     "{\"error\":\"busy\",\"message\":\"a \\\\ b\\u0009\",\"order_id\":\"7\"}");
    cr_assert_eq(n, (int)strlen(buf));
    json_error_t e;
    json_t *v = json_loads(buf, 0, &e);
    cr_assert_not_null(v, "%s", buf);
    cr_expect_str_eq(json_string_value(json_object_get(v, "message")), "a \\ b\t");
    json_decref(v);
    json_io_error_body(buf, sizeof(buf), "not_found", NULL, NULL);
    cr_expect_str_eq(buf, "{\"error\":\"not_found\",\"message\":\"\"}");
    cr_expect_eq(json_io_error_body(buf, 20, "not_found", "x", NULL), -1);
}

Test(json_io, an_error_without_a_message_says_the_outcomes_own)
{
    char buf[256];
    json_io_error(buf, sizeof(buf), SK_SOLD_OUT, NULL);
    cr_assert_str_eq(buf, "{\"error\":\"sold_out\",\"message\":\"the item is sold out\"}");
    cr_assert_gt(json_io_purchase_unconfirmed(buf, sizeof(buf), 42), 0);
    json_error_t e;
    json_t *v = json_loads(buf, 0, &e);
    cr_assert_not_null(v, "%s", buf);
    cr_expect_str_eq(json_string_value(json_object_get(v, "error")), "unconfirmed");
    cr_expect_str_eq(json_string_value(json_object_get(v, "message")),
                     sk_status_message(SK_UNCONFIRMED));
    cr_expect_str_eq(json_string_value(json_object_get(v, "order_id")), "42");
    json_decref(v);
}

Test(json_io, the_queued_answer_carries_the_order_id_as_a_string)
{
    char buf[128];
    int n = json_io_purchase_queued(buf, sizeof(buf), 117867792258039809LL, 2, 41);
    cr_assert_str_eq(buf, "{\"status\":\"queued\",\"order_id\":\"117867792258039809\","
                          "\"quantity\":2,\"remaining\":41}");
    cr_assert_eq(n, (int)strlen(buf));
}

Test(json_io, item_and_order_views_are_complete_objects)
{
    item_view v = {.id = 3,
                   .initial_stock = 10,
                   .remaining = 4,
                   .sold = 6,
                   .queued = 1,
                   .persisted = 5,
                   .starts_ms = 1795377600000LL,
                   .now_ms = 1795377590000LL,
                   .per_buyer_limit = 2};
    strcpy(v.name, "tv \"55\"");
    char *text = json_io_item(&v);
    json_error_t e;
    json_t *o = json_loads(text, 0, &e);
    cr_assert_not_null(o, "%s", text);
    cr_assert_str_eq(json_string_value(json_object_get(o, "name")), "tv \"55\"");
    cr_assert_eq(json_integer_value(json_object_get(o, "persisted")), 5);
    cr_assert_str_eq(json_string_value(json_object_get(o, "starts_at")), "2026-11-22T20:00:00Z");
    cr_assert(json_is_null(json_object_get(o, "ends_at")));
    cr_assert_str_eq(json_string_value(json_object_get(o, "state")), "upcoming");
    cr_assert_eq(json_integer_value(json_object_get(o, "starts_in_ms")), 10000);
    cr_assert_eq(json_integer_value(json_object_get(o, "per_buyer_limit")), 2);
    json_decref(o);
    free(text);

    order_record rec = {.o = {.id = 99,
                              .item_id = 3,
                              .user_id = INT64_MAX,
                              .round = 4,
                              .quantity = 2,
                              .created_ms = 1795377600000LL},
                        .state = ORDER_QUEUED};
    text = json_io_order(&rec, 1795377600000LL);
    cr_assert_str_eq(text, "{\"order_id\":\"99\",\"status\":\"queued\",\"item_id\":3,"
                           "\"user_id\":\"9223372036854775807\",\"round\":4,\"quantity\":2,"
                           "\"created_at\":\"2026-11-22T20:00:00Z\",\"pay_by\":null,"
                           "\"pay_in_ms\":0,\"paid_at\":null,\"ended_at\":null,"
                           "\"returned\":false,\"return\":null}");
    free(text);
}

Test(json_io, a_settled_order_says_whether_its_units_came_back_and_why_not)
{
    order_record rec = {.o = {.id = 7, .item_id = 1, .user_id = 5, .round = 2, .quantity = 1},
                        .state = ORDER_CANCELLED};
    const struct {
        int returned, round_over;
        const char *says;
    } cases[] = {
        {0, 0, "\"returned\":false,\"return\":\"owed\""},
        {1, 0, "\"returned\":true,\"return\":\"returned\""},
        {1, 1, "\"returned\":false,\"return\":\"round_over\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        rec.returned = cases[i].returned;
        rec.round_over = cases[i].round_over;
        char *text = json_io_order(&rec, 0);
        cr_assert(strstr(text, cases[i].says), "%s", text);
        free(text);
    }
}

Test(json_io, an_order_awaiting_payment_says_how_long_is_left_and_a_settled_one_when)
{
    order_record rec = {.o = {.id = 7,
                              .item_id = 1,
                              .user_id = 5,
                              .round = 2,
                              .quantity = 1,
                              .created_ms = 1795377600000LL},
                        .state = ORDER_PERSISTED,
                        .pay_by_ms = 1795377660000LL};
    char *text = json_io_order(&rec, 1795377630000LL);
    json_error_t e;
    json_t *o = json_loads(text, 0, &e);
    cr_assert_not_null(o, "%s", text);
    cr_assert_str_eq(json_string_value(json_object_get(o, "status")), "persisted");
    cr_assert_str_eq(json_string_value(json_object_get(o, "pay_by")), "2026-11-22T20:01:00Z");
    cr_assert_eq(json_integer_value(json_object_get(o, "pay_in_ms")), 30000);
    json_decref(o);
    free(text);

    rec.state = ORDER_CANCELLED;
    rec.ended_ms = 1795377640000LL;
    rec.returned = 1;
    text = json_io_order(&rec, 1795377650000LL);
    o = json_loads(text, 0, &e);
    cr_assert_eq(json_integer_value(json_object_get(o, "pay_in_ms")), 0, "nothing left to pay");
    cr_assert_str_eq(json_string_value(json_object_get(o, "ended_at")), "2026-11-22T20:00:40Z");
    cr_assert(json_is_true(json_object_get(o, "returned")));
    json_decref(o);
    free(text);

    text =
        json_io_order_refused(SK_ORDER_PAID, &(order_record){.o = {.id = 7}, .state = ORDER_PAID});
    cr_assert_str_eq(text, "{\"error\":\"paid\",\"message\":\"the order is paid; it can no "
                           "longer be cancelled\",\"order_id\":\"7\",\"status\":\"paid\"}");
    free(text);
}

Test(json_io, a_page_of_orders_names_the_next_page_only_when_full)
{
    order_record r[2] = {{.o = {.id = 9, .quantity = 1}, .state = ORDER_PAID},
                         {.o = {.id = 4, .quantity = 1}, .state = ORDER_EXPIRED}};
    char *text = json_io_order_list(r, 2, 1, 0);
    json_error_t e;
    json_t *o = json_loads(text, 0, &e);
    cr_assert_eq(json_array_size(json_object_get(o, "orders")), 2);
    cr_assert_str_eq(json_string_value(json_object_get(o, "next_before")), "4");
    json_decref(o);
    free(text);
    text = json_io_order_list(r, 1, 0, 0);
    o = json_loads(text, 0, &e);
    cr_assert(json_is_null(json_object_get(o, "next_before")));
    json_decref(o);
    free(text);
}

Test(json_io, payment_timeout_s_is_optional_and_bounded)
{
    item_spec spec;
    const char *why = NULL;
    const char *none = "{\"name\":\"a\",\"stock\":1}";
    cr_assert_eq(json_io_parse_item_spec(none, strlen(none), &spec, &why), SK_OK);
    cr_assert_eq(spec.payment_timeout_s, -1, "not given: the config's default");
    const char *zero = "{\"name\":\"a\",\"stock\":1,\"payment_timeout_s\":0}";
    cr_assert_eq(json_io_parse_item_spec(zero, strlen(zero), &spec, &why), SK_OK);
    cr_assert_eq(spec.payment_timeout_s, 0);
    const char *bad[] = {"{\"name\":\"a\",\"stock\":1,\"payment_timeout_s\":-1}",
                         "{\"name\":\"a\",\"stock\":1,\"payment_timeout_s\":604801}",
                         "{\"name\":\"a\",\"stock\":1,\"payment_timeout_s\":\"60\"}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_expect_eq(json_io_parse_item_spec(bad[i], strlen(bad[i]), &spec, &why), SK_INVALID, "%s",
                     bad[i]);
        cr_expect(strstr(why, "payment_timeout_s"), "%s", why);
    }
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

Test(json_io, an_item_may_be_made_unlisted_and_an_archived_one_says_so)
{
    item_spec spec;
    const char *why = NULL;
    const char *plain = "{\"name\":\"a\",\"stock\":1}";
    cr_assert_eq(json_io_parse_item_spec(plain, strlen(plain), &spec, &why), SK_OK);
    cr_expect_eq(spec.unlisted, 0, "listed unless said");
    const char *hidden = "{\"name\":\"a\",\"stock\":1,\"listed\":false}";
    cr_assert_eq(json_io_parse_item_spec(hidden, strlen(hidden), &spec, &why), SK_OK);
    cr_expect_eq(spec.unlisted, 1);
    const char *bad = "{\"name\":\"a\",\"stock\":1,\"listed\":0}";
    cr_assert_eq(json_io_parse_item_spec(bad, strlen(bad), &spec, &why), SK_INVALID);
    cr_expect_str_eq(why, "listed must be true or false");

    item_view v = {.id = 3, .remaining = 4, .now_ms = 1795377600000LL, .listed = 1};
    char *text = json_io_item(&v);
    json_error_t e;
    json_t *o = json_loads(text, 0, &e);
    cr_assert_not_null(o, "%s", text);
    cr_expect(json_is_true(json_object_get(o, "listed")));
    cr_expect(json_is_false(json_object_get(o, "archived")));
    cr_expect(json_is_null(json_object_get(o, "archived_at")));
    cr_expect_str_eq(json_string_value(json_object_get(o, "state")), "on_sale");
    json_decref(o);
    free(text);
    v.archived_ms = 1795377600000LL;
    text = json_io_item(&v);
    o = json_loads(text, 0, &e);
    cr_assert_not_null(o, "%s", text);
    cr_expect(json_is_true(json_object_get(o, "archived")));
    cr_expect_str_eq(json_string_value(json_object_get(o, "archived_at")), "2026-11-22T20:00:00Z");
    cr_expect_str_eq(json_string_value(json_object_get(o, "state")), "archived");
    json_decref(o);
    free(text);
}

Test(json_io, an_item_shows_its_order_locks_only_in_a_shops_view_and_null_when_not_all_counted)
{
    item_view v = {.id = 3, .remaining = 4, .now_ms = 1795377600000LL, .listed = 1};
    json_error_t e;
    char *text = json_io_item(&v);
    json_t *o = json_loads(text, 0, &e);
    cr_assert_not_null(o, "%s", text);
    cr_expect_null(json_object_get(o, "locks_held"), "the public's view has none: %s", text);
    json_decref(o);
    free(text);

    v.locks_shown = 1;
    v.locks_held = 7;
    text = json_io_item(&v);
    o = json_loads(text, 0, &e);
    cr_assert_not_null(o, "%s", text);
    cr_expect_eq(json_integer_value(json_object_get(o, "locks_held")), 7, "%s", text);
    json_decref(o);
    free(text);

    v.locks_held = -1;
    text = json_io_item(&v);
    o = json_loads(text, 0, &e);
    cr_assert_not_null(o, "%s", text);
    cr_expect(json_is_null(json_object_get(o, "locks_held")), "not all counted: %s", text);
    json_decref(o);
    free(text);
}
