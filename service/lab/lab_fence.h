/* lab_fence.h: fencing tokens (Kleppmann, "How to do distributed locking"):
 * redis_lock plus a token that grows with every acquisition, checked by the
 * stock itself, so a holder whose lock expired mid-work cannot sell. */
#ifndef SECKILL_LAB_FENCE_H
#define SECKILL_LAB_FENCE_H

#include "keys.h"
#include "lab_strategy.h"

/* A holder's token and the keys its fenced reads and writes go through. */
typedef struct lab_fence {
    char token[24];
    char stock_key[KEYS_MAX];
    char seen_key[KEYS_MAX];
} lab_fence;

/* Issues the next token of the strategy's lock on the item (INCR of
 * {item:N}:lab:fence:issued:<strategy>) into *f. Call it holding the lock,
 * so that tokens follow the order in which the lock was won. SK_OK or
 * SK_BACKEND_DOWN. */
sk_status lab_fence_issue(lab_ctx *c, const lab_request *r, lab_fence *f);

/* The strategy's stock string read and written only through
 * lua/lab/fence_read.lua and lua/lab/fence_take.lua, with a lab_fence as
 * the counter's argument: a token older than the newest seen gets
 * SK_FENCED and changes nothing. */
extern const lab_counter lab_fence_stock;

/* Takes redis_lock's lock of the strategy, then a token, and sells through
 * lab_fence_stock. A holder that lost its lock to a newer one gets
 * SK_FENCED (409 "fenced") and sells nothing. */
lab_strategy_fn lab_fence_redis_lock;

#endif
