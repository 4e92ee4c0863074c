/* outbox.h: the orders' events as PostgreSQL writes them (sql/010_outbox.sql:
 * a trigger on orders appends one in the transaction of each change, ids in
 * commit order) and as the pull feed and the webhooks send them. The query
 * and the JSON are here; who runs the query (a server's pool thread, the
 * webhook deliverer) is not. */
#ifndef SECKILL_OUTBOX_H
#define SECKILL_OUTBOX_H

#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "draw_entry.h"
#include "order_life.h"
#include "order_row.h"

/* Events one page of the feed holds at most, and by default. */
#define OUTBOX_PAGE_MAX 1000
#define OUTBOX_PAGE_DEFAULT 100

/* The longest event type ("order.cancelled"), with its terminator. */
#define OUTBOX_TYPE_MAX 24

/* The channel the trigger notifies after a transaction that wrote events. */
#define OUTBOX_CHANNEL "order_events"

/* One event: its id (strictly increasing in commit order), its type
 * ("order.persisted", "order.won", "order.paid", "order.cancelled",
 * "order.expired", "order.returned", or a draw's "entry.waitlisted"), when,
 * and the order as of the change. An entry.* event is of an entry, which
 * has no order: its entry as of the change is in entry, and of its order
 * only order.o.id is set, to the id the draw reserved for the entrant's
 * order (sql/017_entry_events.sql): the key by which the webhooks keep
 * order per order, shared with the events of that order should the
 * waitlist serve the entrant. */
typedef struct outbox_event {
    int64_t id;
    char type[OUTBOX_TYPE_MAX];
    int64_t at_ms;
    order_record order;
    int is_entry;
    draw_entry entry;
} outbox_event;

/* For a query of other tables joined to order_events e: the inner SELECT's
 * columns and the join that reads the order kept, and the outer SELECT's
 * columns that outbox_events_read reads (its own may follow them). */
#define OUTBOX_EVENT_INNER                                                                         \
    "e.id AS ev_id, e.type AS ev_type, (extract(epoch FROM e.created_at) * 1000)::bigint AS "      \
    "ev_ms, e.order_id AS ev_key, CASE WHEN e.type LIKE 'entry.%' THEN e.order_row END AS "        \
    "ev_entry, o.*"
#define OUTBOX_EVENT_ORDER "CROSS JOIN LATERAL jsonb_populate_record(NULL::orders, e.order_row) o"
/* An entry.* event's entry, from the draw_entries row it kept (zeros and
 * "" for an order's event), in draw_entry_read's order (no order: 0). */
#define OUTBOX_ENTRY_COLUMNS                                                                       \
    "coalesce((ev_entry->>'item_id')::bigint, 0), coalesce((ev_entry->>'round')::bigint, 0), "     \
    "coalesce((ev_entry->>'user_id')::bigint, 0), coalesce(ev_entry->>'entrant', ''), "            \
    "coalesce((ev_entry->>'quantity')::int, 0), coalesce((extract(epoch FROM "                     \
    "(ev_entry->>'entered_at')::timestamptz) * 1000)::bigint, 0), "                                \
    "coalesce((ev_entry->>'position')::bigint, 0), coalesce(ev_entry->>'outcome', ''), 0"
#define OUTBOX_EVENT_COLUMNS                                                                       \
    ORDER_ROW_COLUMNS ", ev_id, ev_type, ev_ms, ev_key, " OUTBOX_ENTRY_COLUMNS
#define OUTBOX_EVENT_NCOLUMNS (ORDER_ROW_NCOLUMNS + 13)

/* The events with ids above $1, in id order, at most $2 ($1, $2 as text);
 * read the result with outbox_events_read. */
extern const char outbox_events_sql[];

/* Reads up to cap events of a result of outbox_events_sql into out. Returns
 * how many, or -1 (logged) when a row is not an event's. */
int outbox_events_read(const PGresult *res, outbox_event *out, int cap);

/* One event as JSON: {"id":N,"type":"order.paid","created_at":"<RFC 3339>",
 * "order":<the order as GET /api/v1/orders/{id} shows it, as of the event>};
 * an entry.* event's has "entry":<the entry as GET
 * /api/v1/items/{id}/entries shows it, with its "user_id"> in place of
 * "order".
 * The same event always gives the same text (a webhook's retry, a replay).
 * NULL when out of memory; the caller frees. */
char *outbox_event_json(const outbox_event *e);

/* A page of JSON values: {"<key>":[v[0],...],"next_after":<next>}, next
 * already JSON ("12", "\"12\"" or "null"). NULL when out of memory; the
 * caller frees. */
char *outbox_page_json(const char *key, char *const *values, size_t n, const char *next);

/* The feed's page of n events: {"events":[...],"next_after":<the last
 * event's id, or null when there are none>}. NULL when out of memory. */
char *outbox_feed_json(const outbox_event *e, size_t n);

#endif
