/* reserve_batch.h: one call of the reserve script (lua/reserve_batch.lua):
 * the purchases of one item that a loop turn gathered, sent to Redis as one
 * script call and answered buyer by buyer (group commit). Pure: it fills the
 * argument vector and reads the reply, and sends nothing. */
#ifndef SECKILL_RESERVE_BATCH_H
#define SECKILL_RESERVE_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "keys.h"
#include "reserve.h"
#include "scripts.h"

/* The most buyers of one call. Redis's cost per buyer falls from one buyer a
 * call to a few dozen and rises again past that (docs/PERFORMANCE.md); the
 * configured batch size is at most this. */
#define RESERVE_BATCH_MAX 64

/* The longest mode of a buyer (lua/reserve_batch.lua):
 * "t<unit>:<key id>:<round>", three 64-bit integers. */
#define RESERVE_MODE_MAX 64

typedef struct reserve_batch_buyer {
    char user_s[24], order_s[24], quantity_s[12];
    char mode[RESERVE_MODE_MAX];
    char lock[KEYS_MAX]; /* the buyer's order lock on these keys (keys_order_lock) */
} reserve_batch_buyer;

/* EVALSHA, digest, numkeys, the item's 5 keys, a guarded batch's lock key a
 * buyer, 4 arguments, then four arguments a buyer. */
#define RESERVE_BATCH_NKEYS 5 /* an unguarded batch's keys; reserve_batch_nkeys */
#define RESERVE_BATCH_ARGV (3 + RESERVE_BATCH_NKEYS + 4 + 5 * RESERVE_BATCH_MAX)

typedef struct reserve_batch {
    int64_t item;
    int64_t key_id; /* the keys': the item's, or one of its segments' (keys.h) */
    int n;          /* buyers so far */
    int guarded;    /* the buyers' order locks are taken (reserve_batch_guard) */
    char state_key[KEYS_MAX], buyers_key[KEYS_MAX], queue_key[KEYS_MAX], pending_key[KEYS_MAX],
        given_back_key[KEYS_MAX]; /* all in the slot of key_id */
    char item_s[24], bound_s[24], key_id_s[24], lock_ttl_s[12], numkeys[12];
    reserve_batch_buyer buyer[RESERVE_BATCH_MAX];
    const char *keys_args[RESERVE_BATCH_ARGV]; /* filled by reserve_batch_argv: */
    const char *argv[RESERVE_BATCH_ARGV];      /* the call, from keys_args */
    size_t lens[RESERVE_BATCH_ARGV];
} reserve_batch;

/* An empty batch of item; max_pending bounds the orders waiting for
 * PostgreSQL (0: none). It takes no order lock (reserve_batch_guard). */
void reserve_batch_init(reserve_batch *b, int64_t item, int max_pending);

/* An empty batch of the segment of item whose keys are key_id's. */
void reserve_batch_init_segment(reserve_batch *b, int64_t item, int64_t key_id, int max_pending);

/* Makes the batch take, for each buyer it counts and accepts, the buyer's
 * order lock (keys_order_lock) for ttl_ms, and answer in_progress to a buyer
 * whose lock stands (order_guard = lock); 0: no lock (order_guard = script). */
void reserve_batch_guard(reserve_batch *b, int ttl_ms);

/* Adds a buyer (user, ignored when anonymous: the order id stands for the
 * buyer) asking for quantity units (>= 1) under order id order_id. Returns
 * the buyer's index in the batch, or -1 when the batch is full. */
int reserve_batch_add(reserve_batch *b, int64_t user, int anonymous, int64_t order_id,
                      int quantity);

/* Adds a buyer of a segmented item with one of the script's modes ("h",
 * "r<round>", "a" or "t<first unit>:<home key id>:<round>";
 * lua/reserve_batch.lua). Returns the index, or -1 when the batch is full. */
int reserve_batch_add_mode(reserve_batch *b, int64_t buyer, int64_t order_id, int quantity,
                           const char *mode);

/* The buyer's id as the script sees it (the order id for an anonymous one). */
int64_t reserve_buyer(int64_t user, int anonymous, int64_t order_id);

/* The keys of b's call: the item's RESERVE_BATCH_NKEYS, and when guarded
 * each buyer's lock (declared, so that Redis Cluster checks them with the
 * rest before the script runs, during a slot's migration too). */
int reserve_batch_nkeys(const reserve_batch *b);

/* Fills b->keys_args: reserve_batch_nkeys keys, then the arguments, whose
 * number it returns (for a caller with a script call of its own). */
int reserve_batch_keys_args(reserve_batch *b);

/* Fills b->argv and b->lens for a call of sc (EVALSHA, or EVAL with the text
 * when by_text: Redis forgot the script). Returns argc. b must not move while
 * the vector is in use. */
int reserve_batch_argv(reserve_batch *b, const script *sc, int by_text);

/* Reads what the reply r to a batch of n buyers says of the item. Returns 0,
 * or -1 when r is not such a reply (NULL, an error, another shape). */
int reserve_batch_item(const redisReply *r, int n, reserve_item *item);

/* Reads buyer i's answer from the reply r to a batch of n buyers: the
 * outcome (RESERVE_BAD_REPLY when r is not such a reply) with *a set. */
reserve_outcome reserve_batch_answer(const redisReply *r, int n, int i, reserve_answer *a);

#endif
