/* webhook_window.h: what seckill-webhooks holds of one endpoint's events
 * between its cursor (the last event id the endpoint is done with, kept in
 * webhook_endpoints.after_event) and the last event it read: which may go
 * now, which wait behind an earlier event of their order, which must become
 * a row of webhook_deliveries (a failure, or an event of an order that has
 * one), and how far the cursor may move. Pure: the deliverer does the I/O.
 *
 * The rules, the same as when every delivery was a row:
 * - In order per order: an event goes only once every earlier event of its
 *   order at this endpoint is done *and written down* (the cursor in
 *   PostgreSQL is past it), so a repeat after a crash never comes after a
 *   later event of its order. An event of an order with a row (failing,
 *   retrying, dead) is parked: it becomes a row too, behind that one.
 * - At least once: the cursor passes an event only once it was answered
 *   2xx or is a row in PostgreSQL. */
#ifndef SECKILL_WEBHOOK_WINDOW_H
#define SECKILL_WEBHOOK_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "outbox.h"

typedef enum webhook_slot_state {
    WEBHOOK_PENDING,   /* read, not sent yet */
    WEBHOOK_IN_FLIGHT, /* sent, no answer yet */
    WEBHOOK_DONE,      /* answered 2xx */
    WEBHOOK_PARKED     /* a row of webhook_deliveries now (failed, or behind one) */
} webhook_slot_state;

/* What the next pending event needs. */
typedef enum webhook_action {
    WEBHOOK_WAIT, /* nothing can go now */
    WEBHOOK_SEND, /* post it */
    WEBHOOK_PARK  /* write it as a row, behind its order's row */
} webhook_action;

typedef struct webhook_slot {
    outbox_event ev;
    webhook_slot_state state;
    int must_park; /* its order has a row at this endpoint */
    uint64_t prev; /* seq + 1 of the previous event of its order read, 0: none */
} webhook_slot;

/* A ring of cap slots, numbered by seq (ever increasing): [head, tail) are
 * held, [head, resolved) are done or parked. */
typedef struct webhook_window {
    webhook_slot *slots;
    int64_t *orders; /* each slot's order id, packed: the scan for an order's last event */
    size_t cap;
    uint64_t head, resolved, tail;
    uint64_t pending;  /* no pending event before it */
    int64_t cursor;    /* as PostgreSQL has it */
    int64_t read_upto; /* the last event id read (cursor when none) */
} webhook_window;

/* Room for cap events, after cursor. 0 or -1 (out of memory). */
int webhook_window_init(webhook_window *w, size_t cap, int64_t cursor);
void webhook_window_close(webhook_window *w);
/* Forgets every event held and starts again after cursor. */
void webhook_window_reset(webhook_window *w, int64_t cursor);

/* Events that can still be read in. */
size_t webhook_window_room(const webhook_window *w);

/* Reads in the next event (ids must grow); has_row: its order has a row at
 * this endpoint. Returns its seq, or -1 when full or out of order. */
int64_t webhook_window_push(webhook_window *w, const outbox_event *ev, int has_row);

/* Reads in what it lacks of a page: the n events page holds, every event
 * after the id after up to the last of them. Only when the page reaches
 * the window (after <= read_upto): one that starts further on would leave
 * a gap. has_row[k] >> bit & 1: the order of page[k] has a row. Returns how
 * many it took. */
size_t webhook_window_take(webhook_window *w, int64_t after, const outbox_event *page,
                           const uint32_t *has_row, size_t n, unsigned bit);

/* The next pending event from *pos on that can do something (sending or
 * parking; those waiting are passed over): *seq is it, *pos moves past it.
 * Start *pos at 0. WEBHOOK_WAIT when there is none. */
webhook_action webhook_window_next(const webhook_window *w, uint64_t *pos, uint64_t *seq);

webhook_slot *webhook_window_at(webhook_window *w, uint64_t seq);

/* Marks the event at seq in flight, done (2xx) or parked (its row is
 * written); parking it parks the later events of its order held. */
void webhook_window_mark(webhook_window *w, uint64_t seq, webhook_slot_state state);

/* How far the cursor may move now: the id of the last event of the done or
 * parked run from head, else the cursor. When everything read is resolved,
 * read_upto. */
int64_t webhook_window_movable(const webhook_window *w);

/* PostgreSQL has the cursor at cursor (a webhook_window_movable answer):
 * the events up to it are let go. */
void webhook_window_moved(webhook_window *w, int64_t cursor);

/* Whether an event held waits for nothing but the cursor to be written
 * down: the previous event of its order is answered and within the run the
 * cursor may pass (a scan of the events pending). */
int webhook_window_waits_on_cursor(const webhook_window *w);

/* Whether the window's endpoint, with in_flight deliveries of its own, is
 * busy for webhook_window_write_due: any in flight, or an event it can send
 * or park now (an idle moment between its answers during a backlog). Its
 * events that wait on the cursor are not: they wait for that write. */
int webhook_window_busy(const webhook_window *w, int in_flight);

/* Whether the cursor should be written down now, for an endpoint that is
 * busy (webhook_window_busy: its own transfers and events alone), the
 * cursor movable since waited_ms.
 * Never when it cannot move. Else at once when nothing is in flight
 * (nothing is coming to be written with it); when half the window is
 * resolved (the next page is read into that room); when look (the caller
 * looks now and then: it is a scan) and an event waits on it; and once it
 * has waited late_ms (a crash sends again the answers of at most that
 * long). Fewer writes, each for more events: each costs PostgreSQL about
 * what a page read does. */
int webhook_window_write_due(const webhook_window *w, int busy, int64_t waited_ms, int look,
                             int64_t late_ms);

#endif
