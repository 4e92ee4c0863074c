/* room_store.h: an item's waiting room in PostgreSQL and Redis, for the
 * item's own operations (items.c): the round's secret drawn, its terms
 * read back from the items row, the room started in Redis with the round,
 * and its counts for the item's view. Over a pool thread's session. */
#ifndef SECKILL_ROOM_STORE_H
#define SECKILL_ROOM_STORE_H

#include <stdint.h>

#include "json_io.h"
#include "pg_value.h"
#include "pool_session.h"
#include "room_cache.h"
#include "text_buf.h"

/* The items columns of a round's admission terms and secret, in the order
 * room_store_read reads them: room?, prequeue ms, admit_per_s in millionths,
 * admit_burst, max_active (0: none), admission_ttl_s, K in hex ('' when
 * neither room nor draw), draw?, entries_open_at and entries_close_at ms.
 * Needs the items row as `i`. */
#define ROOM_STORE_COLUMNS                                                                         \
    "i.admission = 'room', "                                                                       \
    "coalesce((extract(epoch FROM i.prequeue_opens_at) * 1000)::bigint, 0), "                      \
    "coalesce(i.admit_per_s, 0), coalesce(i.admit_burst, 0), "                                     \
    "coalesce(i.max_active, 0), i.admission_ttl_s, coalesce(i.room_secret, ''), "                  \
    "i.admission = 'draw', "                                                                       \
    "coalesce((extract(epoch FROM i.entries_open_at) * 1000)::bigint, 0), "                        \
    "coalesce((extract(epoch FROM i.entries_close_at) * 1000)::bigint, 0) "
#define ROOM_STORE_NCOLUMNS 10

/* Reads ROOM_STORE_COLUMNS from column at of f into *r and K's hex into
 * k_hex (ROOM_HEX_LEN + 1; "" when none). */
void room_store_read(pg_row *f, int at, room_terms *r, char *k_hex);

/* Draws a round's K (32 bytes, OpenSSL RAND_bytes) as hex into k_hex.
 * Returns 0, or -1 when the generator failed. */
int room_store_draw(char *k_hex);

/* Starts item's room for round in Redis (lua/room_reset.lua), or clears it
 * when r is a race's (k_hex ""). starts_ms and ends_ms: the window;
 * if_missing: only when Redis has no room for it (a lost room started
 * again: never over one another instance started meanwhile). Returns 0, or
 * -1 when Redis failed. */
int room_store_start(pool_session *s, int64_t item, int64_t round, int64_t starts_ms,
                     int64_t ends_ms, const room_terms *r, const char *k_hex, int if_missing);

/* How long before starts_at (by the clock of whichever node the view read
 * it from) a view asks the item's node whether the room started: Redis
 * Cluster's nodes' clocks may differ by this much without the reveal
 * waiting for a buyer's call. */
#define ROOM_STORE_REVEAL_EARLY_MS 2000

/* Completes a room item's view (its K's hex in v->counts.secret, as
 * room_store_read left it) with its commitment, its counts from Redis and
 * whether it started (v->counts.started: the room's flag, set by the first
 * script call at or after the start on the item's node; from
 * ROOM_STORE_REVEAL_EARLY_MS before v->now_ms reaches starts_at, asked of
 * that node through room_store_started). SK_OK, SK_INTERNAL (no K, or an
 * unexpected reply) or SK_BACKEND_DOWN; a race item's is left as it is. */
sk_status room_store_counts(pool_session *s, item_view *v);

/* Whether item's room of round started as its own node's clock sees it:
 * its flag, set now when due (lua/room_join.lua with no joiner). From then
 * on no join counts as pre-start, so K may be shown. Returns 1, 0 (not yet,
 * or the room is of another round or missing), or -1 when Redis failed. */
int room_store_started(pool_session *s, int64_t item, int64_t round);

/* The admission tokens' master key (room_order.h) into master: drawn and
 * kept in PostgreSQL by the first server that needs it, the same for all.
 * Returns 0, or -1 when PostgreSQL failed. */
int room_store_master(pool_session *s, unsigned char *master);

/* The master key into master: from c's memory, or read now
 * (room_store_master) and kept there. Returns 0, or -1 when PostgreSQL
 * failed. */
int room_store_master_of(room_cache *c, pool_session *s, unsigned char *master);

/* item's room as Redis holds it (lua/room_reset.lua), into *out. A room
 * Redis lost (its data gone: reconcile rebuilds the rest) is started again
 * from the items row, with its K. SK_OK, SK_NOT_FOUND (no such item),
 * SK_NOT_A_ROOM, SK_ARCHIVED or SK_BACKEND_DOWN. */
sk_status room_store_info(pool_session *s, int64_t item, room_info *out);

/* The units remaining over the segments of item; -1 when Redis failed. */
int64_t room_store_remaining(pool_session *s, int64_t item, int segments);

/* The buyer of entrant e bought with their admission: it stops being active
 * (and is never counted expired_unused). Best effort. */
void room_store_used(pool_session *s, int64_t item, const char *e);

/* Appends to t the rooms' gauges in the Prometheus text format, per item
 * (seckill_room_joined, _admitted, _active, _expired_unused{item="N"}),
 * for /metrics; nothing when no item has a room or Redis failed. A write
 * lost for memory marks t failed, as text_buf does: the answer is then
 * none, not a text with gaps. */
void room_store_metrics(pool_session *s, text_buf *t);

#endif
