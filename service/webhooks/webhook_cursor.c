/* webhook_cursor.c: the deliverer's windows (webhook_window.h) and
 * PostgreSQL: the feed read in pages for every endpoint at once, the events
 * that may go posted, those behind a row of their order parked as rows, and
 * the cursors written down once for many deliveries. */
#include <inttypes.h>
#include <stdint.h>

#include "clock.h"
#include "webhooks_state.h"

/* Makes the window's event at seq of endpoint ep a row (webhook_store_park:
 * error NULL, to wait behind its order's row). 0 or -1 (the session is
 * dropped). */
int webhook_cursor_park(webhooks *w, size_t ep, uint64_t seq, const webhook_delivery *d,
                        const char *error, int64_t delay_ms, int dead)
{
    if (webhook_store_park(w->pg, d, error, delay_ms, dead) < 0) {
        webhooks_drop_pg(w);
        return -1;
    }
    webhook_window_mark(&w->endpoints[ep].win, seq, WEBHOOK_PARKED);
    w->rows++;
    w->due_changed = 1;
    webhook_cursor_movable(w);
    return 0;
}

void webhook_cursor_movable(webhooks *w)
{
    if (w->first_movable_ms != 0)
        return;
    w->first_movable_ms = clock_mono_ms();
    w->next_look_ms = w->first_movable_ms + CURSOR_MS;
}

int webhook_cursor_wants_page(const webhooks *w)
{
    for (size_t i = 0; i < w->nendpoints; i++)
        if (webhook_window_room(&w->endpoints[i].win) >= WINDOW_EVENTS / 2)
            return 1;
    return 0;
}

/* Reads the feed into the windows with at least min_room free: one page
 * for all (the endpoints mostly stand at the same place), from the one of
 * them furthest behind; every window the page reaches takes the events
 * past its own last. */
void webhook_cursor_read(webhooks *w, size_t min_room)
{
    int64_t after = INT64_MAX, ids[WEBHOOK_ENDPOINTS_MAX];
    size_t room = 0;
    for (size_t i = 0; i < w->nendpoints; i++) {
        const webhook_window *win = &w->endpoints[i].win;
        size_t free_slots = webhook_window_room(win);
        ids[i] = w->endpoints[i].id;
        if (free_slots >= min_room && free_slots > 0 && win->read_upto < after)
            after = win->read_upto;
        if (free_slots >= min_room && free_slots > room)
            room = free_slots;
    }
    w->more = 0;
    if (room == 0)
        return;
    int limit = room < OUTBOX_PAGE_MAX ? (int)room : OUTBOX_PAGE_MAX;
    int n = webhook_store_page(w->pg, after, limit, ids, w->nendpoints, w->page, w->has_row);
    if (n < 0) {
        webhooks_drop_pg(w);
        return;
    }
    for (size_t i = 0; i < w->nendpoints; i++)
        webhook_window_take(&w->endpoints[i].win, after, w->page, w->has_row, (size_t)n,
                            (unsigned)i);
    w->more = n == limit;
}

/* Posts the windows' events that may go now, and parks those that wait
 * behind a row of their order. */
void webhook_cursor_send(webhooks *w)
{
    for (size_t i = 0; w->pg && i < w->nendpoints; i++) {
        endpoint_state *ep = &w->endpoints[i];
        uint64_t pos = 0, seq;
        webhook_action act;
        while (w->pg && ep->in_flight < IN_FLIGHT_PER_ENDPOINT &&
               (act = webhook_window_next(&ep->win, &pos, &seq)) != WEBHOOK_WAIT) {
            webhook_delivery d = {webhook_window_at(&ep->win, seq)->ev, ep->id, 0};
            if (act == WEBHOOK_SEND)
                webhooks_start(w, &d, (int64_t)seq);
            else
                webhook_cursor_park(w, i, seq, &d, NULL, 0, 0);
        }
    }
}

/* Whether a cursor is to be written down now (webhook_window_write_due),
 * looking for events that wait on it every CURSOR_MS while it may move.
 * Each endpoint busy by its own deliveries and events alone
 * (webhook_window_busy): not by its events that wait on the cursor (each
 * of an order's next events, a pay behind its order's event, a return
 * behind its cancel, took a look, CURSOR_MS, one after the other); nor by a
 * page still to read (the window full of them has no room for it until the
 * cursor moves); nor by another endpoint's transfers (a hanging endpoint's
 * kept every other endpoint's writes, and the events waiting on them, to
 * the look). */
static int write_due(webhooks *w, int64_t now)
{
    int look = now >= w->next_look_ms, due = 0;
    if (look)
        w->next_look_ms = now + CURSOR_MS;
    for (size_t i = 0; !due && i < w->nendpoints; i++)
        due = webhook_window_write_due(
            &w->endpoints[i].win,
            webhook_window_busy(&w->endpoints[i].win, w->endpoints[i].in_flight),
            now - w->first_movable_ms, look, CURSOR_LATE_MS);
    return due;
}

/* Writes down the cursors that may move, all in one statement, when one is
 * due (write_due): never past an event not yet answered or parked, so a
 * crash sends again what was answered since, never skips. */
void webhook_cursor_move(webhooks *w, int64_t now)
{
    if (w->first_movable_ms != 0 && write_due(w, now))
        webhook_cursor_write(w);
}

void webhook_cursor_write(webhooks *w)
{
    int64_t ids[WEBHOOK_ENDPOINTS_MAX], cursors[WEBHOOK_ENDPOINTS_MAX];
    size_t n = 0;
    for (size_t i = 0; i < w->nendpoints; i++) {
        const webhook_window *win = &w->endpoints[i].win;
        if (webhook_window_movable(win) > win->cursor) {
            ids[n] = w->endpoints[i].id;
            cursors[n++] = webhook_window_movable(win);
        }
    }
    if (n > 0 && webhook_store_move(w->pg, ids, cursors, n) < 0) {
        webhooks_drop_pg(w);
        return;
    }
    for (size_t i = 0, k = 0; i < w->nendpoints && k < n; i++)
        if (w->endpoints[i].id == ids[k])
            webhook_window_moved(&w->endpoints[i].win, cursors[k++]);
    w->first_movable_ms = 0;
}
