/* order.h: an accepted order, its unique 64-bit id, and its wire format on
 * the Redis queue:
 *   {"order_id":"<id>","item_id":<n>,"user_id":<n>,"round":<n>,"created_ms":<n>,
 *    "quantity":<n>,"first_unit":<n>}
 * with, for an order of a segmented item only, ,"segment":<key id>,"home":<key id>
 * before the closing brace.
 * The reserve script (lua/reserve_batch.lua) writes exactly this shape.
 * Orders queued before quantities existed lack the last two: one unit, the
 * buyer's first. */
#ifndef SECKILL_ORDER_H
#define SECKILL_ORDER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* The most units one order holds (an item's per_buyer_limit is at most this). */
#define ORDER_QUANTITY_MAX 1000

typedef struct order {
    int64_t id;
    int64_t item_id;
    int64_t user_id;
    int64_t round;      /* the item's sale round; a reset starts a new one */
    int64_t created_ms; /* Unix time of acceptance, in milliseconds */
    int quantity;       /* units */
    int64_t first_unit; /* the buyer's units of the round before this order, plus one */
    /* A segmented item's order (keys.h): the key ids of the segment its
     * units came from and of its buyer's home; 0 and 0 otherwise. */
    int64_t segment_id;
    int64_t home_id;
} order;

/* Order ids: 41 bits of milliseconds since ORDER_EPOCH_MS, 12 bits of
 * sequence, 10 bits of node (one per server instance). Ids of one node
 * strictly increase; a burst of more than 4096 a millisecond borrows from
 * the next millisecond instead of repeating, and the node bits never change,
 * so two nodes cannot collide. */
#define ORDER_EPOCH_MS 1767225600000LL /* 2026-01-01T00:00:00Z */
#define ORDER_NODE_BITS 10
#define ORDER_NODE_MAX ((1 << ORDER_NODE_BITS) - 1)

typedef struct order_id_gen {
    _Atomic uint64_t last;
    uint64_t node;
} order_id_gen;

/* node must be in [0, ORDER_NODE_MAX]. */
void order_id_gen_init(order_id_gen *gen, unsigned node);

/* The next id for a clock reading of now_ms (Unix milliseconds). Safe to call
 * from many threads at once. */
int64_t order_id_next(order_id_gen *gen, int64_t now_ms);

/* Encodes o in the queue format into buf. Returns the length, or -1 when buf
 * is too small. */
int order_encode(const order *o, char *buf, size_t len);

/* Decodes the queue format. Returns 0, or -1 when the text is not an order.
 * The exact bytes order_encode writes are read in place; any other JSON goes
 * to order_decode_json, so both give the same answer for every text. */
int order_decode(const char *text, size_t len, order *o);

/* The general decoder (jansson): any JSON object of the queue format's
 * members. Returns 0, or -1 when the text is not an order. */
int order_decode_json(const char *text, size_t len, order *o);

#endif
