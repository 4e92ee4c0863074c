/* reserve.h: one call of the reserve script (lua/reserve.lua), the purchase's
 * only step in Redis, built and read in one place for every caller: the
 * product's purchase path and the laboratory's lua_reserve strategy. Pure:
 * it fills argument vectors and reads replies, and sends nothing. */
#ifndef SECKILL_RESERVE_H
#define SECKILL_RESERVE_H

#include <stdint.h>

#include <hiredis/hiredis.h>

#include "keys.h"
#include "status.h"

/* What the script decided for one buyer. */
typedef enum reserve_outcome {
    RESERVE_QUEUED,            /* a unit taken, the order queued */
    RESERVE_SOLD_OUT,          /* no stock left */
    RESERVE_ALREADY_PURCHASED, /* the buyer has an order of this round */
    RESERVE_IN_PROGRESS,       /* the buyer's lock is another request's */
    RESERVE_QUEUE_FULL,        /* max_pending_orders orders wait for PostgreSQL */
    RESERVE_UNKNOWN_ITEM,      /* no round of this item in Redis */
    RESERVE_BAD_REPLY          /* not an answer of the script */
} reserve_outcome;

#define RESERVE_NKEYS 5
#define RESERVE_NARGS 8

/* The keys and arguments of one call, and the text they point to. */
typedef struct reserve_call {
    const char *keys_args[RESERVE_NKEYS + RESERVE_NARGS];
    char state_key[KEYS_MAX], buyers_key[KEYS_MAX], lock_key[KEYS_MAX];
    char item_s[24], user_s[24], order_s[24], time_s[24], bound_s[24];
} reserve_call;

/* Fills c for buyer user (ignored when anonymous: the order id stands for
 * the buyer) of item: the order id is also the lock's token, now_ms the
 * acceptance time, max_pending the bound of orders waiting for PostgreSQL
 * (0: none). With release_lock the script frees the buyer's lock before it
 * returns. c must not move while keys_args is in use. */
void reserve_call_init(reserve_call *c, int64_t item, int64_t user, int anonymous, int64_t order_id,
                       int64_t now_ms, int max_pending, int release_lock);

/* The buyer's id as the script sees it (the order id for an anonymous one). */
int64_t reserve_buyer(int64_t user, int anonymous, int64_t order_id);

/* Reads the script's reply {outcome, remaining, round}. Returns the outcome
 * with *remaining and *round set, or RESERVE_BAD_REPLY (r NULL, an error,
 * another shape or an unknown outcome). */
reserve_outcome reserve_parse(const redisReply *r, int64_t *remaining, int64_t *round);

/* The same for the three entries from e[0] (outcome, remaining, round): one
 * buyer's answer in a reply of the batch script too. */
reserve_outcome reserve_parse_triple(redisReply *const *e, int64_t *remaining, int64_t *round);

/* The domain outcome of a reserve outcome (RESERVE_QUEUED: SK_QUEUED). */
sk_status reserve_status(reserve_outcome o);

#endif
