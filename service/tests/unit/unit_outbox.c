/* unit_outbox.c: the orders' events and the shop's reads without a server:
 * an event's JSON, a page's, the query parameters of the item's orders and
 * of the feed, and the routes' scopes. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "feed.h"
#include "outbox.h"
#include "router.h"

static outbox_event paid_event(void)
{
    outbox_event e;
    memset(&e, 0, sizeof(e));
    e.id = 42;
    strcpy(e.type, "order.paid");
    e.at_ms = 1795000000250;
    e.order.o.id = 7263849102938475;
    e.order.o.item_id = 7;
    e.order.o.user_id = 9;
    e.order.o.round = 1;
    e.order.o.quantity = 2;
    e.order.o.created_ms = 1795000000000;
    e.order.state = ORDER_PAID;
    e.order.pay_by_ms = 1795000060000;
    e.order.paid_ms = 1795000000250;
    return e;
}

Test(outbox, an_event_is_its_id_type_time_and_the_order_as_of_then)
{
    outbox_event e = paid_event();
    char *text = outbox_event_json(&e);
    cr_assert_not_null(text);
    const char *head =
        "{\"id\":42,\"type\":\"order.paid\",\"created_at\":\"2026-11-18T11:06:40.250Z\","
        "\"order\":{\"order_id\":\"7263849102938475\",\"status\":\"paid\",";
    cr_assert(strncmp(text, head, strlen(head)) == 0, "%s", text);
    /* pay_in_ms counts from the event: a paid order has none left. */
    cr_assert(strstr(text, "\"pay_in_ms\":0"), "%s", text);
    char *again = outbox_event_json(&e);
    cr_assert_str_eq(again, text, "the same event always reads the same (a retry's body)");
    free(again);
    free(text);
}

Test(outbox, an_order_awaiting_payment_shows_the_time_left_at_its_event)
{
    outbox_event e = paid_event();
    strcpy(e.type, "order.persisted");
    e.order.state = ORDER_PERSISTED;
    e.order.paid_ms = 0;
    char *text = outbox_event_json(&e);
    cr_assert(strstr(text, "\"pay_in_ms\":59750"), "%s", text);
    free(text);
}

Test(outbox, an_entry_event_carries_the_entry_with_its_buyer_and_no_order)
{
    outbox_event e;
    memset(&e, 0, sizeof(e));
    e.id = 43;
    strcpy(e.type, "entry.waitlisted");
    e.at_ms = 1795000000250;
    e.is_entry = 1;
    e.order.o.id = 7263849102938476; /* the key only: never shown */
    e.entry = (draw_entry){.item_id = 9,
                           .round = 2,
                           .user_id = 42,
                           .quantity = 3,
                           .entered_ms = 1794999000000,
                           .position = 1204};
    memset(e.entry.entrant, 'a', ROOM_HEX_LEN);
    strcpy(e.entry.outcome, "skipped");
    char *text = outbox_event_json(&e);
    cr_assert_not_null(text);
    const char *want =
        "{\"id\":43,\"type\":\"entry.waitlisted\",\"created_at\":\"2026-11-18T11:06:40.250Z\","
        "\"entry\":{\"item_id\":9,\"round\":2,\"entrant\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"quantity\":3,\"entered_at\":"
        "\"2026-11-18T10:50:00Z\",\"position\":1204,\"outcome\":\"skipped\",\"order_id\":null,"
        "\"user_id\":\"42\"}}";
    cr_assert_str_eq(text, want);
    cr_assert_null(strstr(text, "7263849102938476"), "the reserved order id is not shown");
    free(text);
}

Test(outbox, a_feed_page_ends_with_its_last_id_or_null_when_empty)
{
    outbox_event e[2] = {paid_event(), paid_event()};
    e[1].id = 43;
    char *text = outbox_feed_json(e, 2);
    cr_assert(strncmp(text, "{\"events\":[{\"id\":42,", 20) == 0, "%s", text);
    cr_assert(strstr(text, "},{\"id\":43,"), "%s", text);
    const char *tail = "}],\"next_after\":43}";
    cr_assert_str_eq(text + strlen(text) - strlen(tail), tail);
    free(text);
    text = outbox_feed_json(NULL, 0);
    cr_assert_str_eq(text, "{\"events\":[],\"next_after\":null}");
    free(text);
}

Test(outbox, the_query_of_an_items_orders_is_checked_and_defaults_to_everything)
{
    feed_query q;
    const char *why = NULL;
    feed_params none = {0};
    cr_assert_eq(feed_parse(ROUTE_ITEM_ORDERS, &none, &q, &why), SK_OK);
    cr_assert_eq(q.after, 0);
    cr_assert_eq(q.limit, FEED_ORDERS_DEFAULT);
    cr_assert_eq(q.round, 0);
    cr_assert_eq(q.has_status, 0);
    feed_params all = {"0", "1000", "3", "expired", NULL};
    cr_assert_eq(feed_parse(ROUTE_ITEM_ORDERS, &all, &q, &why), SK_OK);
    cr_assert_eq(q.limit, 1000);
    cr_assert_eq(q.round, 3);
    cr_assert(q.has_status && q.status == ORDER_EXPIRED);
    const char *bad[][4] = {
        {"-1", NULL, NULL, NULL},      {"1x", NULL, NULL, NULL},
        {NULL, "0", NULL, NULL},       {NULL, "1001", NULL, NULL},
        {NULL, NULL, "0", NULL},       {NULL, NULL, NULL, "queued"},
        {NULL, NULL, NULL, "shipped"}, {"99999999999999999999", NULL, NULL, NULL}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        why = NULL;
        feed_params p = {bad[i][0], bad[i][1], bad[i][2], bad[i][3], NULL};
        cr_assert_eq(feed_parse(ROUTE_ITEM_ORDERS, &p, &q, &why), SK_INVALID, "case %zu", i);
        cr_assert_not_null(why, "case %zu says why", i);
    }
}

Test(outbox, the_feed_takes_after_and_limit_and_ignores_the_lists_filters)
{
    feed_query q;
    const char *why = NULL;
    feed_params ignored = {"12", NULL, "0", "nonsense", "x"};
    cr_assert_eq(feed_parse(ROUTE_EVENTS, &ignored, &q, &why), SK_OK);
    cr_assert_eq(q.after, 12);
    cr_assert_eq(q.limit, OUTBOX_PAGE_DEFAULT);
    feed_params big = {NULL, "1001", NULL, NULL, NULL};
    cr_assert_eq(feed_parse(ROUTE_EVENTS, &big, &q, &why), SK_INVALID);
    cr_assert_str_eq(why, "limit must be an integer from 1 to 1000");
}

Test(outbox, the_dead_letter_takes_an_endpoint_and_its_routes_are_the_admins)
{
    feed_query q;
    const char *why = NULL;
    feed_params one = {"7", "50", NULL, NULL, "2"};
    cr_assert_eq(feed_parse(ROUTE_WEBHOOK_DEAD, &one, &q, &why), SK_OK);
    cr_assert_eq(q.endpoint_id, 2);
    cr_assert_eq(q.after, 7);
    cr_assert_eq(q.limit, 50);
    feed_params bad = {NULL, NULL, NULL, NULL, "0"};
    cr_assert_eq(feed_parse(ROUTE_WEBHOOK_REPLAY, &bad, &q, &why), SK_INVALID);
    cr_assert_eq(router_scope(ROUTE_WEBHOOK_DEAD, "GET"), CREDENTIAL_ADMIN);
    cr_assert_eq(router_scope(ROUTE_WEBHOOK_REPLAY, "POST"), CREDENTIAL_ADMIN);
}

Test(outbox, both_reads_are_routed_and_need_orders_read)
{
    route_match m;
    cr_assert_eq(router_match("GET", "/api/v1/items/5/orders", &m), SK_OK);
    cr_assert_eq(m.route, ROUTE_ITEM_ORDERS);
    cr_assert_eq(m.item_id, 5);
    cr_assert_eq(router_match("GET", "/api/v1/events", &m), SK_OK);
    cr_assert_eq(m.route, ROUTE_EVENTS);
    cr_assert_eq(router_match("POST", "/api/v1/events", &m), SK_METHOD_NOT_ALLOWED);
    cr_assert_eq(router_scope(ROUTE_ITEM_ORDERS, "GET"), CREDENTIAL_ORDERS_READ);
    cr_assert_eq(router_scope(ROUTE_EVENTS, "GET"), CREDENTIAL_ORDERS_READ);
    cr_assert_eq(router_cross_origin(ROUTE_EVENTS), 0, "the shop's reads are not a page's");
}
