/* lab_redis.h: the Redis strategies of the laboratory without a lock:
 * their stock is the string {item:N}:lab:stock:<strategy>, created from the
 * item's initial stock on first use; lua_reserve is the production path. */
#ifndef SECKILL_LAB_REDIS_H
#define SECKILL_LAB_REDIS_H

#include "lab_strategy.h"

/* GET, check in code, work, DECR: oversells. */
lab_strategy_fn lab_redis_read_check_decr;
/* WATCH, GET, check, work, MULTI/DECR/EXEC; retried when EXEC fails, until
 * the wait runs out (429 busy). */
lab_strategy_fn lab_redis_watch;
/* The production reserve script (lua/reserve_batch.lua) for a new buyer
 * each call: stock check, decrement, the order queued for the worker and
 * (order_guard = lock) the buyer's order lock taken, atomically; the
 * business work follows (the script is the critical section). */
lab_strategy_fn lab_redis_lua_reserve;

/* The stock string of r->strategy (the initial stock before first use). */
lab_remaining_fn lab_redis_remaining;
/* The production stock ({item:N}:state "stock"). */
lab_remaining_fn lab_redis_state_remaining;

/* GET then SET <read - 1> on the stock string of r->strategy: correct only
 * under a lock, for the lock strategies. arg is ignored. */
extern const lab_counter lab_redis_key_stock;

#endif
