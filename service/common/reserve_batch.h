/* reserve_batch.h: one call of the batch reserve script (lua/reserve_batch.lua):
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
 * configured batch size is at most this. Every argument is a number or a key
 * of KEYS_MAX bytes, so a call is at most about 200 bytes a buyer. */
#define RESERVE_BATCH_MAX 64

typedef struct reserve_batch_buyer {
    char lock_key[KEYS_MAX];
    char user_s[24], order_s[24], time_s[24];
    int anonymous;
} reserve_batch_buyer;

/* EVALSHA, digest, numkeys, 4 keys, 2 arguments, then a key and four
 * arguments a buyer. */
#define RESERVE_BATCH_ARGV (9 + 5 * RESERVE_BATCH_MAX)

typedef struct reserve_batch {
    int64_t item;
    int n; /* buyers so far */
    char state_key[KEYS_MAX], buyers_key[KEYS_MAX];
    char item_s[24], bound_s[24], numkeys[12];
    reserve_batch_buyer buyer[RESERVE_BATCH_MAX];
    const char *keys_args[RESERVE_BATCH_ARGV]; /* filled by reserve_batch_argv: */
    const char *argv[RESERVE_BATCH_ARGV];      /* the call, from keys_args */
    size_t lens[RESERVE_BATCH_ARGV];
} reserve_batch;

/* An empty batch of item; max_pending bounds the orders waiting for
 * PostgreSQL (0: none), as in reserve_call_init. */
void reserve_batch_init(reserve_batch *b, int64_t item, int max_pending);

/* Adds a buyer (user, ignored when anonymous: the order id stands for the
 * buyer) whose order id is order_id, accepted at now_ms. Returns the buyer's
 * index in the batch, or -1 when the batch is full. */
int reserve_batch_add(reserve_batch *b, int64_t user, int anonymous, int64_t order_id,
                      int64_t now_ms);

/* Fills b->argv and b->lens for a call of sc (EVALSHA, or EVAL with the text
 * when by_text: Redis forgot the script). Returns argc. b must not move while
 * the vector is in use. */
int reserve_batch_argv(reserve_batch *b, const script *sc, int by_text);

/* Reads buyer i's answer from the script's reply r to a batch of n buyers:
 * the outcome with *remaining and *round set, or RESERVE_BAD_REPLY (r NULL,
 * an error, another shape). */
reserve_outcome reserve_batch_parse(const redisReply *r, int n, int i, int64_t *remaining,
                                    int64_t *round);

#endif
