/* draw_store.h: an item's draw in PostgreSQL (issue 28), over a pool
 * thread's session: a buyer's entry (draw_entries, one per buyer and round:
 * its primary key is what keeps it one across instances), the draw's counts
 * for the item's view, the draw itself (draw_run.c) and its audit. Every
 * decision is PostgreSQL's, by its clock: the entries window, and the draw
 * that runs once, its transaction opening with the item row FOR UPDATE
 * (which an entry's FOR SHARE waits for, so no entry lands after the draw
 * read them). */
#ifndef SECKILL_DRAW_STORE_H
#define SECKILL_DRAW_STORE_H

#include <stdint.h>

#include "draw_entry.h"
#include "json_io.h"
#include "pool_session.h"

/* An item's row as the draw's routes read it. */
typedef struct draw_item {
    int64_t id, round;
    int draw, archived, drawn;
    int per_buyer_limit, payment_timeout_s;
    int64_t opens_ms, closes_ms; /* the entries window: [opens, closes) */
    int64_t now_ms;              /* PostgreSQL's clock when read */
    int64_t stock;               /* the round's units: initial stock and restocks */
    char k_hex[ROOM_HEX_LEN + 1];
} draw_item;

/* The item row of item into *it, with lock appended to the SELECT ("" or
 * " FOR UPDATE": inside the caller's transaction). SK_OK, SK_NOT_FOUND or
 * SK_BACKEND_DOWN. */
sk_status draw_store_item(pool_session *s, int64_t item, const char *lock, draw_item *it);

/* Enters user in item's draw with quantity units (1..per_buyer_limit):
 * SK_CREATED with *out the new entry, SK_OK with *out the one stored before
 * (entering again changes nothing), or a refusal with *it read (its
 * window): SK_NOT_FOUND, SK_ARCHIVED, SK_NOT_A_DRAW, SK_ENTRIES_NOT_OPEN,
 * SK_ENTRIES_CLOSED, SK_INVALID (*why: the quantity), SK_BACKEND_DOWN. Once
 * the window and the quantity allow the entry, just before the insert, the
 * buyer's proof-of-work solution is marked used (pow_gate_use of mark; NULL:
 * none) and a refusal of that is the entry's: a refused entry leaves the
 * solution unused. */
struct pow_gate_mark;
sk_status draw_store_enter(pool_session *s, int64_t item, int64_t user, int quantity,
                           const struct pow_gate_mark *mark, draw_entry *out, draw_item *it,
                           const char **why);

/* user's entry of item's current round into *out: SK_OK, SK_NOT_FOUND,
 * SK_NOT_A_DRAW, SK_NOT_ENTERED or SK_BACKEND_DOWN. */
sk_status draw_store_entry(pool_session *s, int64_t item, int64_t user, draw_entry *out);

/* Completes a draw item's view (its K's hex in v->counts.secret, as
 * room_store_read left it) with K's commitment and the draw's counts of the
 * round. SK_OK, SK_INTERNAL (no K) or SK_BACKEND_DOWN. */
sk_status draw_store_counts(pool_session *s, item_view *v);

/* The most entrants an audit page lists. */
#define DRAW_AUDIT_MAX 1000

/* The audit page of item's draw after position `after`, at most limit
 * entrants, as JSON text (the caller frees it): {item_id, round,
 * commitment, secret, beacon, stock, entrants: [{position, entrant,
 * quantity, outcome, ticket}], next_after}. NULL with *st: SK_NOT_FOUND,
 * SK_NOT_A_DRAW, SK_NOT_DRAWN, SK_INTERNAL or SK_BACKEND_DOWN. */
char *draw_store_audit(pool_session *s, int64_t item, int64_t after, int64_t limit, sk_status *st);

/* The draw of item (draw_run.c): in one transaction opening with the item
 * row FOR UPDATE, every entrant of the round ordered by ticket under K and
 * beacon (beacon_len bytes, at most DRAW_BEACON_MAX), served by the rule,
 * each entry's position, ticket and outcome written, the winners' orders
 * inserted (ids from ids, awaiting payment for the item's
 * payment_timeout_s), an entry.waitlisted event for each entrant put on the
 * waitlist (keyed by the order id reserved for it from ids, which the
 * waitlist gives its order: sql/017_entry_events.sql), and the item marked
 * drawn with its beacon and the units on offer; then the winners' units
 * granted in Redis (draw_grant.h: a grant left owed is the worker's to
 * finish). Runs once: a draw drawn already answers SK_OK and changes
 * nothing. SK_OK, SK_NOT_FOUND, SK_ARCHIVED, SK_NOT_A_DRAW,
 * SK_ENTRIES_OPEN (its window in *it), SK_INTERNAL or SK_BACKEND_DOWN. */
sk_status draw_run(pool_session *s, order_id_gen *ids, int64_t item, const char *beacon,
                   size_t beacon_len, draw_item *it);

#endif
