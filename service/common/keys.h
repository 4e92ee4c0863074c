/* keys.h: the Redis key layout. Every key of one item carries the item's
 * hash tag ({item:42}), its order queue, pending hash, dead letters and the
 * workers' processing lists included, so all of them live in one Redis
 * Cluster slot and every script call (and every MULTI) stays in one slot
 * when the data set is sharded. The few global keys (the item registry,
 * events, locks, heartbeats) are only ever touched by single-key commands. */
#ifndef SECKILL_KEYS_H
#define SECKILL_KEYS_H

#include <stddef.h>
#include <stdint.h>

/* Large enough for any key below (with a worker id of up to 64 bytes). */
#define KEYS_MAX 128

/* Set of the ids of every item whose queue may hold orders: added to on
 * every create and reset (beside lua/item_reset.lua, not in it: another
 * slot), read by the worker to find the queues it drains, by the sweep,
 * the metrics, the order lookup and reconcile. */
#define KEYS_ITEMS "seckill:items"
/* Pub/sub channel of cross-instance events ("reset <item>"). */
#define KEYS_EVENTS "seckill:events"
/* Counter that hands every server instance its order-id node number. */
#define KEYS_NODE_SEQ "seckill:node_seq"
/* What the sweep SCANs for: every worker's processing list of every item
 * (keys_processing); keys_parse_processing reads one back. */
#define KEYS_PROCESSING_PATTERN "seckill:{item:*}:processing:*"
/* The lock (SET NX PX <period>) that elects one worker per period to run
 * the recovery sweep; its value says who holds it. */
#define KEYS_SWEEP_LOCK "seckill:sweep"
/* The lock that elects one worker per period to expire unpaid orders and
 * finish the returns a crash interrupted. */
#define KEYS_EXPIRY_LOCK "seckill:expiry"

/* Hash of an item's round {stock, initial, round, restocks, restocked,
 * returns, returned, starts, ends, limit} (lua/item_reset.lua). Each returns snprintf's length. */
int keys_item_state(char *buf, size_t len, int64_t item);
/* Hash {user_id -> units bought} of the item's buyers this round. */
int keys_item_buyers(char *buf, size_t len, int64_t item);
/* Hash {order_id -> units} of the round's cancelled and expired orders
 * whose units went back on sale (lua/order_return.lua): the return of an
 * order happens once whoever retries it. */
int keys_item_returned(char *buf, size_t len, int64_t item);
/* Hash {order_id -> units} of the draw orders whose units Redis took
 * (lua/draw_grant.lua), or 0 for one returned before its grant (issue 28):
 * a draw order's grant happens once whoever retries it. */
int keys_item_granted(char *buf, size_t len, int64_t item);
/* Hash {user_id -> units} the buyer gave back this round (returned orders,
 * released holds): the buyer's next order numbers its units after every
 * unit the buyer ever held. */
int keys_item_given_back(char *buf, size_t len, int64_t item);
/* The name under which reconcile's rebuild writes the new contents of an
 * item's key (buyers, returned, given_back) before it renames them in: key
 * with ":staged" after it, in key's slot (the hash tag comes first). */
int keys_staged(char *buf, size_t len, const char *key);
/* The item's order queue, that the reserve script pushes to and workers
 * move from. */
int keys_queue(char *buf, size_t len, int64_t item);
/* Hash {order_id -> order} of the item's orders accepted and not yet
 * persisted: the reserve script adds, the worker removes after its commit. */
int keys_pending(char *buf, size_t len, int64_t item);
/* The item's payloads a worker could not decode: kept for a human, never
 * dropped. */
int keys_dead(char *buf, size_t len, int64_t item);
/* A worker's processing list for the item's queue: in the queue's slot, so
 * that the move from one to the other is one atomic command. */
int keys_processing(char *buf, size_t len, int64_t item, const char *worker_id);
/* The token of the worker run that last claimed its processing list of the
 * item (set before the run reads or moves into it): the sweep moves a
 * dead worker's list only while the claim it read is still there. */
int keys_claim(char *buf, size_t len, int64_t item, const char *worker_id);
/* Reads a key made by keys_processing: its item and worker id (a pointer
 * into key, NUL-terminated with it). Returns 0, or -1 when key is not one. */
int keys_parse_processing(const char *key, int64_t *item, const char **worker_id);
/* Segments: a hot item's stock split over several key sets, each in a slot
 * of its own, so that on a Redis Cluster the item's purchases spread over
 * several masters ("segments": K at creation). Segment 0 is the item's own
 * keys; segment j > 0 is keyed exactly like an item, under a key id of its
 * own, so that every part that works by item keys (the reserve script, the
 * registry, the worker's queues, the sweep, the pending lookup) works on a
 * segment unchanged. The buyer's units are counted on one segment, the
 * buyer's home (keys_segment_home). */
#define KEYS_SEGMENTS_MAX 64
/* Items that may be split have ids below this (json_io refuses others). */
#define KEYS_SEGMENT_ITEM_LIMIT (1LL << 40)

/* The key id of segment j (0 <= j < segments <= KEYS_SEGMENTS_MAX) of item
 * (below KEYS_SEGMENT_ITEM_LIMIT when segments > 1). Segment 0: item. A
 * segment j > 0: item in the low 40 bits, j in the next 8, above them a
 * salt of at least 32 (so every key id of a segment is above any item id,
 * ITEM_ID_MAX), the first salt whose {item:<id>} tag hashes to the middle
 * half of the slot range j places after segment 0's, of `segments` equal
 * ranges: on a cluster whose masters share the slots evenly, K <= masters
 * segments land on K different masters. The same on every process, always:
 * never change it (the keys of live items are named by it). */
int64_t keys_segment(int64_t item, int j, int segments);
/* The item a key id belongs to (itself for an item's own keys). */
int64_t keys_segment_item(int64_t key_id);
/* The index of the home segment of a buyer (user, or for an anonymous one
 * its order id) of an item of `segments` segments: where the buyer's units
 * are counted, and where the buyer's purchases go first. */
int keys_segment_home(int64_t buyer, int segments);
/* The key id an order names for the segment its units came from or for
 * its buyer's home: key_id, or for an order of an item of one segment (0,
 * NULL in PostgreSQL) the item's own. */
int64_t keys_of_order(int64_t item, int64_t key_id);
/* Segment j's share of a round's initial stock: the stock split evenly, the
 * first (stock % segments) segments a unit more. Restocks go to segment 0. */
int64_t keys_segment_share(int64_t stock, int j, int segments);

/* The waiting room of an item (issue 27), in the item's own slot whatever
 * its segments: part NULL, the room's hash {round, secret, prequeue, starts,
 * ends, per_s, burst, max_active, ttl, seq, joined, admitted,
 * expired_unused} (lua/room_reset.lua); "places", the ZSET of entrant
 * handles by place score; "admitted", the hash {entrant -> admission expiry
 * ms}, written once; "active", the ZSET of unexpired admissions not yet
 * used, by expiry. */
int keys_room(char *buf, size_t len, int64_t item, const char *part);

/* A proof-of-work solution used (issue 28): set NX by the join or the entry
 * it let in, expiring with its challenge, so that each solution enters
 * once. challenge: its hex. In the item's own slot, beside its room. */
int keys_pow_used(char *buf, size_t len, int64_t item, const char *challenge);

/* A buyer's order lock on the item or segment key_id (the buyer's home):
 * holds the id of the buyer's order being created, from the reserve
 * script's acceptance until the worker persisted it (lua/reserve_batch.lua
 * takes it, lua/order_lock_release.lua frees it by compare-and-delete). In
 * key_id's slot. */
int keys_order_lock(char *buf, size_t len, int64_t key_id, int64_t user);
/* The SCAN MATCH pattern of every buyer's order lock on key_id (its hash tag
 * names key_id's slot). */
int keys_order_locks_match(char *buf, size_t len, int64_t key_id);

/* A worker's heartbeat: exists (with a TTL, holding the run's token) while
 * the worker with that id lives. */
int keys_worker_alive(char *buf, size_t len, const char *worker_id);

#endif
