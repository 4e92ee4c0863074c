/* unit_webhook_window.c: an endpoint's window of events between its cursor
 * and the last read (webhook_window.h): what may go at once, what waits
 * behind its order, what becomes a row, and how far the cursor may move. */
#include <criterion/criterion.h>

#include "webhook_window.h"

static webhook_window win;

static void open_window(void)
{
    cr_assert_eq(webhook_window_init(&win, 8, 100), 0);
}

static void close_window(void)
{
    webhook_window_close(&win);
}

TestSuite(webhook_window, .init = open_window, .fini = close_window);

/* Reads in event id of order_id; has_row: its order has a row. Its seq. */
static uint64_t push(int64_t id, int64_t order_id, int has_row)
{
    outbox_event ev = {.id = id};
    ev.order.o.id = order_id;
    int64_t seq = webhook_window_push(&win, &ev, has_row);
    cr_assert_geq(seq, 0, "event %lld read in", (long long)id);
    return (uint64_t)seq;
}

/* The event ids that can do something now, as "s101 p102" (send, park),
 * each marked as the deliverer would (in flight; parked). */
static void act_all(char *out, size_t cap)
{
    uint64_t pos = 0, seq;
    webhook_action act;
    size_t len = 0;
    out[0] = '\0';
    while ((act = webhook_window_next(&win, &pos, &seq)) != WEBHOOK_WAIT) {
        webhook_slot *s = webhook_window_at(&win, seq);
        len += (size_t)snprintf(out + len, cap - len, "%s%c%lld", len ? " " : "",
                                act == WEBHOOK_SEND ? 's' : 'p', (long long)s->ev.id);
        webhook_window_mark(&win, seq, act == WEBHOOK_SEND ? WEBHOOK_IN_FLIGHT : WEBHOOK_PARKED);
    }
}

Test(webhook_window, events_of_different_orders_all_go_at_once_and_the_cursor_follows_the_answers)
{
    char acts[128];
    uint64_t a = push(101, 1, 0), b = push(102, 2, 0), c = push(103, 3, 0);
    act_all(acts, sizeof(acts));
    cr_assert_str_eq(acts, "s101 s102 s103");
    cr_assert_eq(webhook_window_movable(&win), 100, "nothing answered yet");
    webhook_window_mark(&win, b, WEBHOOK_DONE);
    webhook_window_mark(&win, c, WEBHOOK_DONE);
    cr_assert_eq(webhook_window_movable(&win), 100,
                 "102 and 103 answered, 101 not: the cursor cannot pass it (at least once)");
    webhook_window_mark(&win, a, WEBHOOK_DONE);
    cr_assert_eq(webhook_window_movable(&win), 103);
    cr_assert_eq(webhook_window_room(&win), 5);
    webhook_window_moved(&win, 103);
    cr_assert_eq(win.cursor, 103);
    cr_assert_eq(webhook_window_room(&win), 8, "written down: let go");
}

Test(webhook_window, an_orders_next_event_waits_until_the_one_before_is_written_down)
{
    char acts[128];
    uint64_t first = push(101, 1, 0);
    push(102, 2, 0);
    push(103, 1, 0);
    act_all(acts, sizeof(acts));
    cr_assert_str_eq(acts, "s101 s102", "103 waits behind 101, 102 goes");
    webhook_window_mark(&win, first, WEBHOOK_DONE);
    act_all(acts, sizeof(acts));
    cr_assert_str_eq(acts, "",
                     "101 answered but not written down: after a crash it would go again, so "
                     "103 may not go before that");
    cr_assert_eq(webhook_window_movable(&win), 101);
    webhook_window_moved(&win, 101);
    act_all(acts, sizeof(acts));
    cr_assert_str_eq(acts, "s103");
}

Test(webhook_window, a_failed_event_parks_its_orders_later_events_while_other_orders_flow)
{
    char acts[128];
    uint64_t failed = push(101, 1, 0);
    push(102, 2, 0);
    push(103, 1, 0);
    push(104, 3, 0);
    act_all(acts, sizeof(acts));
    cr_assert_str_eq(acts, "s101 s102 s104");
    webhook_window_mark(&win, failed, WEBHOOK_PARKED); /* its first attempt failed: a row */
    push(105, 1, 0);
    push(106, 4, 0);
    act_all(acts, sizeof(acts));
    cr_assert_str_eq(acts, "p103 p105 s106",
                     "order 1's later events become rows behind 101; order 4's goes");
    cr_assert_eq(webhook_window_movable(&win), 101,
                 "the cursor passes the row of 101, stops at 102 in flight");
}

Test(webhook_window, an_event_of_an_order_with_a_row_is_parked_and_so_are_its_orders_later_ones)
{
    char acts[128];
    push(101, 1, 1);
    push(102, 2, 0);
    webhook_window_moved(&win, 100);
    act_all(acts, sizeof(acts));
    cr_assert_str_eq(acts, "p101 s102");
    webhook_window_moved(&win, webhook_window_movable(&win));
    cr_assert_eq(win.cursor, 101);
    /* Read after 101's row left the window: PostgreSQL's page says its order
     * has a row. */
    push(103, 1, 1);
    push(104, 1, 0);
    act_all(acts, sizeof(acts));
    cr_assert_str_eq(acts, "p103 p104");
}

Test(webhook_window, a_full_window_or_an_id_not_above_the_last_is_refused)
{
    outbox_event ev = {.id = 100};
    cr_assert_eq(webhook_window_push(&win, &ev, 0), -1, "the cursor's own id");
    for (int64_t i = 0; i < 8; i++)
        push(101 + i, i, 0);
    ev.id = 200;
    cr_assert_eq(webhook_window_push(&win, &ev, 0), -1, "full");
    webhook_window_reset(&win, 150);
    cr_assert_eq(webhook_window_room(&win), 8);
    cr_assert_eq(webhook_window_movable(&win), 150);
    char acts[128];
    act_all(acts, sizeof(acts));
    cr_assert_str_eq(acts, "", "forgotten: read again from the cursor");
}

Test(webhook_window, an_orders_events_are_found_across_the_rings_end)
{
    char acts[128];
    for (int64_t id = 101; id <= 106; id++) { /* six events go and are let go */
        uint64_t seq = push(id, id, 0);
        act_all(acts, sizeof(acts));
        webhook_window_mark(&win, seq, WEBHOOK_DONE);
        webhook_window_moved(&win, id);
    }
    push(107, 50, 0); /* slots 6 and 7 of 8 */
    push(108, 51, 0);
    push(109, 50, 0); /* slot 0: its order's event is at slot 6 */
    push(110, 51, 0);
    act_all(acts, sizeof(acts));
    cr_assert_str_eq(acts, "s107 s108", "109 and 110 wait behind 107 and 108 across the wrap");
}

Test(webhook_window, a_page_that_starts_past_the_window_is_not_taken_it_would_leave_a_gap)
{
    outbox_event page[3] = {{.id = 121}, {.id = 122}, {.id = 123}};
    uint32_t has_row[3] = {0, 1u << 2, 0};
    for (int k = 0; k < 3; k++)
        page[k].order.o.id = 10 + k;
    cr_assert_eq(webhook_window_take(&win, 120, page, has_row, 3, 2), 0,
                 "the window stands at 100: events 101 to 120 are not in this page");
    cr_assert_eq(win.read_upto, 100);
    push(101, 1, 0);
    cr_assert_eq(webhook_window_take(&win, 100, page, has_row, 3, 2), 3,
                 "a page after 100 (ids skip where transactions rolled back): 101 it has, the rest "
                 "it takes");
    char acts[128];
    act_all(acts, sizeof(acts));
    cr_assert_str_eq(acts, "s101 s121 p122 s123", "122's order has a row at endpoint bit 2");
}

/* Reads in events 101, 102, ... of orders[0], orders[1], ... and sends
 * what may go; into acts, as act_all. The seq of 101. */
static uint64_t read_and_send(const int64_t *orders, size_t n, char *acts, size_t cap)
{
    uint64_t first = push(101, orders[0], 0);
    for (size_t k = 1; k < n; k++)
        push(101 + (int64_t)k, orders[k], 0);
    act_all(acts, cap);
    return first;
}

Test(webhook_window, a_cursor_that_cannot_move_is_never_written)
{
    char acts[128];
    read_and_send((int64_t[]){1}, 1, acts, sizeof(acts));
    cr_assert_not(webhook_window_write_due(&win, 0, 5000, 1, 1000),
                  "101 in flight: nothing to write, however long and idle");
}

Test(webhook_window, a_cursor_is_written_at_once_when_nothing_is_in_flight_else_when_late)
{
    char acts[128];
    uint64_t a = read_and_send((int64_t[]){1, 2}, 2, acts, sizeof(acts));
    webhook_window_mark(&win, a, WEBHOOK_DONE);
    cr_assert(webhook_window_write_due(&win, 0, 0, 0, 1000),
              "nothing in flight: nothing else is coming to be written with it");
    cr_assert_not(webhook_window_write_due(&win, 1, 999, 1, 1000),
                  "102 in flight, no event waits on 101: it waits for more answers");
    cr_assert(webhook_window_write_due(&win, 1, 1000, 0, 1000),
              "after late_ms it goes whatever waits: a crash sends again at most that much");
}

Test(webhook_window, an_endpoint_whose_events_all_wait_on_the_cursor_writes_it_at_once)
{
    char acts[128];
    uint64_t a = read_and_send((int64_t[]){1, 1}, 2, acts, sizeof(acts));
    cr_assert_str_eq(acts, "s101", "102 waits behind 101");
    cr_assert(webhook_window_busy(&win, 1), "101 in flight");
    webhook_window_mark(&win, a, WEBHOOK_DONE);
    cr_assert_not(webhook_window_busy(&win, 0), "102 waits for the write: nothing else to send");
    cr_assert(webhook_window_write_due(&win, webhook_window_busy(&win, 0), 0, 0, 1000),
              "written at once, not at the next look");
    push(103, 3, 0);
    cr_assert(webhook_window_busy(&win, 0), "103 can go: an idle moment between answers");
}

Test(webhook_window, a_cursor_an_orders_next_event_waits_on_is_written_when_looked_at)
{
    char acts[128];
    uint64_t a = read_and_send((int64_t[]){1, 2, 1}, 3, acts, sizeof(acts));
    cr_assert_str_eq(acts, "s101 s102");
    cr_assert_not(webhook_window_waits_on_cursor(&win),
                  "103 waits on 101's answer, not on a write");
    webhook_window_mark(&win, a, WEBHOOK_DONE);
    cr_assert(webhook_window_waits_on_cursor(&win), "101 answered: 103 waits only for the write");
    cr_assert_not(webhook_window_write_due(&win, 1, 60, 0, 1000), "not looked at: not yet");
    cr_assert(webhook_window_write_due(&win, 1, 60, 1, 1000));
}

Test(webhook_window, an_answer_past_one_in_flight_is_not_what_an_event_waits_on_the_cursor_for)
{
    char acts[128];
    uint64_t a = read_and_send((int64_t[]){1, 2, 2}, 3, acts, sizeof(acts));
    webhook_window_mark(&win, a + 1, WEBHOOK_DONE);
    cr_assert_not(webhook_window_waits_on_cursor(&win),
                  "102 answered but 101 is not: a write cannot pass 102, 103 waits on 101");
    cr_assert_not(webhook_window_write_due(&win, 1, 60, 1, 1000));
}

Test(webhook_window, a_cursor_is_written_once_half_the_window_is_resolved)
{
    char acts[128];
    uint64_t a = read_and_send((int64_t[]){1, 2, 3, 4, 9}, 5, acts, sizeof(acts));
    for (uint64_t k = 0; k < 3; k++)
        webhook_window_mark(&win, a + k, WEBHOOK_DONE);
    cr_assert_not(webhook_window_write_due(&win, 1, 10, 1, 1000), "3 of 8 resolved");
    webhook_window_mark(&win, a + 3, WEBHOOK_PARKED);
    cr_assert(webhook_window_write_due(&win, 1, 10, 0, 1000),
              "4 of 8 resolved (answered or parked): the next page needs that room");
}
