/* lab_fence.h: fencing tokens (Kleppmann, "How to do distributed locking"):
 * redis_lock plus a token that grows with every acquisition, checked by the
 * stock itself, so a holder whose lock expired mid-work cannot sell. */
#ifndef SECKILL_LAB_FENCE_H
#define SECKILL_LAB_FENCE_H

#include "lab_strategy.h"

/* Takes redis_lock's lock of the strategy, then a token (INCR of
 * {item:N}:lab:fence:issued:<strategy>); reads and writes the stock string
 * only through lua/lab_fence_read.lua and lua/lab_fence_take.lua, which
 * refuse a token older than the newest they have seen
 * ({item:N}:lab:fence:seen:<strategy>) and otherwise record it. A holder
 * that lost its lock to a newer one gets SK_FENCED (409 "fenced") and
 * sells nothing. */
sk_status lab_fence_redis_lock(lab_ctx *c, const lab_request *r, int64_t *remaining);

#endif
