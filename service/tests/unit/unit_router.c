/* unit_router.c: method + path -> route of router.c, fed with strings. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "router.h"

/* Expects method path to match route r; returns the match. */
static route_match expect_route(const char *method, const char *path, route_id r)
{
    route_match m;
    sk_status s = router_match(method, path, &m);
    cr_assert_eq(s, SK_OK, "%s %s: status %d", method, path, (int)s);
    cr_assert_eq(m.route, r, "%s %s: route %s, expected %s", method, path, router_name(m.route),
                 router_name(r));
    cr_assert_null(m.allow, "%s %s: allow set on a match", method, path);
    return m;
}

/* The route of a path of the part's table (the laboratory's, linked into
 * every build), which the product's router does not name. */
static route_id part_route(const char *method, const char *path)
{
    route_match m;
    cr_assert_eq(router_match(method, path, &m), SK_OK, "%s %s", method, path);
    cr_assert_geq(m.route, ROUTE_PART, "%s %s: %s", method, path, router_name(m.route));
    return m.route;
}

static void expect_not_found(const char *method, const char *path)
{
    route_match m;
    sk_status s = router_match(method, path, &m);
    cr_assert_eq(s, SK_NOT_FOUND, "%s %s: status %d, expected 404", method, path, (int)s);
    cr_assert_eq(m.route, ROUTE_NONE);
}

static void expect_not_allowed(const char *method, const char *path, const char *allow)
{
    route_match m;
    sk_status s = router_match(method, path, &m);
    cr_assert_eq(s, SK_METHOD_NOT_ALLOWED, "%s %s: status %d, expected 405", method, path, (int)s);
    cr_assert_not_null(m.allow, "%s %s: 405 without Allow", method, path);
    cr_assert_str_eq(m.allow, allow, "%s %s", method, path);
}

Test(router, health_and_ready)
{
    expect_route("GET", "/health", ROUTE_HEALTH);
    expect_route("GET", "/ready", ROUTE_READY);
}

Test(router, item_create)
{
    route_match m = expect_route("POST", "/api/v1/items", ROUTE_ITEM_CREATE);
    cr_assert_eq(m.item_id, 0);
}

Test(router, item_reset_carries_the_item_id)
{
    route_match m = expect_route("POST", "/api/v1/items/42/reset", ROUTE_ITEM_RESET);
    cr_assert_eq(m.item_id, 42);
    cr_assert_eq(m.order_id, 0);
}

Test(router, item_get_carries_the_item_id)
{
    route_match m = expect_route("GET", "/api/v1/items/7", ROUTE_ITEM_GET);
    cr_assert_eq(m.item_id, 7);
}

Test(router, an_item_is_archived_by_a_delete_of_its_path)
{
    route_match m = expect_route("DELETE", "/api/v1/items/7", ROUTE_ITEM_ARCHIVE);
    cr_assert_eq(m.item_id, 7);
    cr_assert_str_eq(router_name(ROUTE_ITEM_ARCHIVE), "item_archive");
}

Test(router, purchase_carries_the_item_id)
{
    route_match m = expect_route("POST", "/api/v1/items/1/purchase", ROUTE_PURCHASE);
    cr_assert_eq(m.item_id, 1);
    m = expect_route("POST", "/api/v1/items/9223372036854775807/purchase", ROUTE_PURCHASE);
    cr_assert_eq(m.item_id, INT64_MAX);
}

Test(router, order_get_carries_the_order_id)
{
    route_match m = expect_route("GET", "/api/v1/orders/123456789012345", ROUTE_ORDER_GET);
    cr_assert_eq(m.order_id, 123456789012345LL);
    cr_assert_eq(m.item_id, 0);
}

Test(router, an_order_is_paid_cancelled_and_listed_on_its_own_paths)
{
    route_match m = expect_route("POST", "/api/v1/orders/42/pay", ROUTE_ORDER_PAY);
    cr_assert_eq(m.order_id, 42);
    m = expect_route("POST", "/api/v1/orders/43/cancel", ROUTE_ORDER_CANCEL);
    cr_assert_eq(m.order_id, 43);
    m = expect_route("GET", "/api/v1/orders", ROUTE_ORDER_LIST);
    cr_assert_eq(m.order_id, 0);
    expect_not_allowed("GET", "/api/v1/orders/42/pay", "POST");
    expect_not_allowed("POST", "/api/v1/orders", "GET, HEAD");
}

Test(router, head_is_routed_as_get)
{
    expect_route("HEAD", "/health", ROUTE_HEALTH);
    expect_route("HEAD", "/ready", ROUTE_READY);
    route_match m = expect_route("HEAD", "/api/v1/items/5", ROUTE_ITEM_GET);
    cr_assert_eq(m.item_id, 5);
    m = expect_route("HEAD", "/api/v1/orders/9", ROUTE_ORDER_GET);
    cr_assert_eq(m.order_id, 9);
}

Test(router, wrong_method_answers_405_with_allow)
{
    expect_not_allowed("POST", "/health", "GET, HEAD");
    expect_not_allowed("DELETE", "/ready", "GET, HEAD");
    expect_not_allowed("PUT", "/api/v1/items", "GET, HEAD, POST");
    expect_not_allowed("DELETE", "/api/v1/items", "GET, HEAD, POST");
    expect_not_allowed("POST", "/", "GET, HEAD");
    expect_not_allowed("POST", "/static/app.js", "GET, HEAD");
    expect_not_allowed("GET", "/api/v1/items/3/reset", "POST");
    expect_not_allowed("PUT", "/api/v1/items/3", "DELETE, GET, HEAD");
    expect_not_allowed("PATCH", "/api/v1/items/3", "DELETE, GET, HEAD");
    expect_not_allowed("GET", "/api/v1/items/3/purchase", "POST");
    expect_not_allowed("HEAD", "/api/v1/items/3/purchase", "POST");
    expect_not_allowed("POST", "/api/v1/orders/3", "GET, HEAD");
}

Test(router, a_405_names_the_route_of_its_path_for_the_metrics)
{
    route_match m;
    cr_assert_eq(router_match("GET", "/api/v1/items/3/purchase", &m), SK_METHOD_NOT_ALLOWED);
    cr_assert_eq(m.route, ROUTE_PURCHASE);
    cr_assert_eq(router_match("DELETE", "/metrics", &m), SK_METHOD_NOT_ALLOWED);
    cr_assert_eq(m.route, ROUTE_METRICS);
    cr_assert_eq(router_match("POST", "/api/v1/items/3/stock", &m), SK_OK);
    cr_assert_eq(m.route, ROUTE_ITEM_RESTOCK);
}

Test(router, methods_are_case_sensitive)
{
    expect_not_allowed("get", "/health", "GET, HEAD");
    expect_not_allowed("post", "/api/v1/items/1/purchase", "POST");
}

Test(router, unknown_paths_answer_404)
{
    const char *paths[] = {"",
                           "/healthz",
                           "/HEALTH",
                           "/api",
                           "/api/v1",
                           "/api/v1/",
                           "/api/v2/items",
                           "/api/v1/item",
                           "/api/v1/items/1/buy",
                           "/api/v1/items/1/purchase/now",
                           "/api/v1/items/1/2",
                           "/api/v1/orders/",
                           "/api/v1/orders/1/items",
                           "/api/v1/orders/1/refund",
                           "//health",
                           "/api/v1/items/1/purchase?user_id=1"};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        expect_not_found("GET", paths[i]);
        expect_not_found("POST", paths[i]);
    }
}

Test(router, the_item_list_is_a_get_of_the_items_path)
{
    expect_route("GET", "/api/v1/items", ROUTE_ITEM_LIST);
    expect_route("HEAD", "/api/v1/items", ROUTE_ITEM_LIST);
    expect_route("POST", "/api/v1/items", ROUTE_ITEM_CREATE);
}

Test(router, pages_and_their_assets_are_routed_to_web)
{
    expect_route("GET", "/", ROUTE_PAGE);
    expect_route("GET", "/lab", ROUTE_PAGE);
    expect_route("GET", "/admin", ROUTE_PAGE);
    route_match m = expect_route("GET", "/static/app.js", ROUTE_PAGE);
    cr_assert_eq(m.name_len, 6);
    cr_assert_eq(strncmp(m.name, "app.js", 6), 0);
    expect_route("GET", "/static/Style-2.min.css", ROUTE_PAGE);
    cr_assert_str_eq(router_name(part_route("GET", "/lab/results.json")), "lab_results");
}

Test(router, asset_names_cannot_climb_or_hide)
{
    expect_not_found("GET", "/static/../config");
    expect_not_found("GET", "/static/.hidden");
    expect_not_found("GET", "/static/");
    expect_not_found("GET", "/static/a/b.js");
    expect_not_found("GET", "/static/a%2fb.js");
    expect_not_found("GET", "/lab/");
    expect_not_found("GET", "/lab/results");
}

Test(router, trailing_slash_is_another_path)
{
    expect_not_found("GET", "/health/");
    expect_not_found("GET", "/ready/");
    expect_not_found("POST", "/api/v1/items/");
    expect_not_found("GET", "/api/v1/items/1/");
    expect_not_found("POST", "/api/v1/items/1/reset/");
    expect_not_found("POST", "/api/v1/items/1/purchase/");
    expect_not_found("GET", "/api/v1/orders/1/");
    expect_not_found("GET", "/api/v1/orders/");
}

Test(router, ids_that_are_not_positive_integers_answer_404)
{
    const char *ids[] = {"0",
                         "-1",
                         "-0",
                         "00",
                         "01",
                         "+1",
                         "abc",
                         "1a",
                         "1.5",
                         "0x1",
                         "%31",
                         " 1",
                         "",
                         "9223372036854775808",
                         "99999999999999999999"};
    char path[128];
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        snprintf(path, sizeof(path), "/api/v1/items/%s", ids[i]);
        expect_not_found("GET", path);
        snprintf(path, sizeof(path), "/api/v1/items/%s/purchase", ids[i]);
        expect_not_found("POST", path);
        snprintf(path, sizeof(path), "/api/v1/items/%s/reset", ids[i]);
        expect_not_found("POST", path);
        snprintf(path, sizeof(path), "/api/v1/orders/%s", ids[i]);
        expect_not_found("GET", path);
    }
}

Test(router, a_bad_id_is_404_even_with_the_wrong_method)
{
    expect_not_found("DELETE", "/api/v1/items/0");
    expect_not_found("GET", "/api/v1/items/abc/purchase");
}

Test(router, every_route_has_a_distinct_name)
{
    for (int a = ROUTE_HEALTH; a < (int)router_ids(); a++) {
        const char *name = router_name((route_id)a);
        cr_assert_not_null(name);
        cr_assert_str_neq(name, "unknown", "route %d has no name", a);
        for (int b = ROUTE_HEALTH; b < a; b++)
            cr_assert_str_neq(name, router_name((route_id)b), "routes %d and %d share %s", a, b,
                              name);
    }
    cr_assert_str_eq(router_name(ROUTE_PURCHASE), "purchase");
    cr_assert_str_eq(router_name(ROUTE_NONE), "unknown");
    cr_assert_str_eq(router_name((route_id)router_ids()), "unknown");
}

Test(router, each_route_needs_the_scope_of_what_it_does)
{
    cr_assert_eq(router_scope(ROUTE_ITEM_CREATE, "POST"), CREDENTIAL_ADMIN);
    cr_assert_eq(router_scope(ROUTE_ITEM_RESET, "POST"), CREDENTIAL_ADMIN);
    cr_assert_eq(router_scope(ROUTE_ITEM_RESTOCK, "POST"), CREDENTIAL_ADMIN);
    cr_assert_eq(router_scope(ROUTE_ORDER_PAY, "POST"), CREDENTIAL_PAYMENTS);
    cr_assert_eq(router_scope(ROUTE_METRICS, "GET"), CREDENTIAL_ORDERS_READ);
    cr_assert_eq(router_scope(ROUTE_METRICS, "HEAD"), CREDENTIAL_ORDERS_READ);
    cr_assert_eq(router_scope(ROUTE_PURCHASE, "POST"), CREDENTIAL_NONE, "a buyer's own");
    cr_assert_eq(router_scope(ROUTE_ORDER_CANCEL, "POST"), CREDENTIAL_NONE, "a buyer's own");
    cr_assert_eq(router_scope(ROUTE_ORDER_GET, "GET"), CREDENTIAL_NONE);
    cr_assert_eq(router_scope(ROUTE_ITEM_GET, "GET"), CREDENTIAL_NONE);
    cr_assert_eq(router_scope(ROUTE_HEALTH, "GET"), CREDENTIAL_NONE);
    cr_assert_eq(router_scope(part_route("POST", "/api/v1/experiments/x/purchase"), "POST"),
                 CREDENTIAL_NONE, "the part's row says so");
}

Test(router, a_route_not_named_in_the_scopes_changes_nothing_without_admin)
{
    /* The id past the last stands for a route added later (an archive): the shop's. */
    route_id later = (route_id)router_ids();
    cr_assert_eq(router_scope(later, "DELETE"), CREDENTIAL_ADMIN);
    cr_assert_eq(router_scope(later, "POST"), CREDENTIAL_ADMIN);
    cr_assert_eq(router_scope(later, "PATCH"), CREDENTIAL_ADMIN);
    cr_assert_eq(router_scope(later, "GET"), CREDENTIAL_NONE);
}

Test(router, only_the_buyers_routes_and_public_reads_answer_other_origins)
{
    cr_assert(router_cross_origin(ROUTE_PURCHASE));
    cr_assert(router_cross_origin(ROUTE_ORDER_LIST));
    cr_assert(router_cross_origin(ROUTE_ORDER_GET));
    cr_assert(router_cross_origin(ROUTE_ORDER_CANCEL));
    cr_assert(router_cross_origin(ROUTE_ITEM_GET));
    cr_assert(router_cross_origin(ROUTE_ITEM_LIST));
    cr_assert_not(router_cross_origin(ROUTE_ITEM_CREATE));
    cr_assert_not(router_cross_origin(ROUTE_ITEM_RESET));
    cr_assert_not(router_cross_origin(ROUTE_ITEM_RESTOCK));
    cr_assert_not(router_cross_origin(ROUTE_ORDER_PAY));
    cr_assert_not(router_cross_origin(ROUTE_METRICS));
    cr_assert_not(router_cross_origin(part_route("POST", "/api/v1/experiments/x/purchase")));
    cr_assert_not(router_cross_origin(ROUTE_PAGE));
}

Test(router, a_parts_routes_follow_the_products_and_are_known_in_every_build)
{
    route_id list = part_route("GET", "/api/v1/experiments");
    route_id buy = part_route("GET", "/api/v1/experiments/redis_lock/purchase");
    cr_assert_eq(part_route("POST", "/api/v1/experiments/redis_lock/purchase"), buy);
    cr_assert_neq(list, buy);
    cr_assert_str_eq(router_name(list), "experiments");
    cr_assert_str_eq(router_name(buy), "experiment_purchase");
    cr_assert_lt(list, (route_id)router_ids());
    cr_assert_lt(buy, (route_id)router_ids());
    cr_assert_leq(router_ids(), ROUTE_IDS_MAX, "the metrics' table holds every route's name");
    expect_not_allowed("DELETE", "/api/v1/experiments", "GET, HEAD");
    expect_not_allowed("PUT", "/api/v1/experiments/redis_lock/purchase", "GET, HEAD, POST");
    expect_not_allowed("POST", "/lab/results.json", "GET, HEAD");
    expect_not_found("GET", "/api/v1/experiments/Redis/purchase");
    /* router_at, which the spec's test reads, lists the part's rows too. */
    int seen = 0;
    for (size_t i = 0; i < router_count(); i++) {
        const char *method, *pattern;
        router_at(i, &method, &pattern);
        seen += strcmp(pattern, "/api/v1/experiments/{name}/purchase") == 0;
    }
    cr_assert_eq(seen, 2, "its GET and its POST");
    const char *method, *pattern;
    router_at(router_count(), &method, &pattern);
    cr_assert_null(method);
    cr_assert_null(pattern);
}
