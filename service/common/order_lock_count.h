/* order_lock_count.h: how many buyers' order locks (order_lock.h) of an item
 * stand now, counted where they live: SCAN MATCH on the lock keys of the
 * item (of each of its segments) at the node that owns its slot. No script
 * keeps this figure: a lock that expires (its worker never came) is seen by
 * none, so only the keys themselves say it exactly. Not for a hot path:
 * the item's detail shows it to a shop's credential only (api.c), the
 * laboratory's audit of lua_reserve reads it. */
#ifndef SECKILL_ORDER_LOCK_COUNT_H
#define SECKILL_ORDER_LOCK_COUNT_H

#include <stdint.h>

#include "redis_nodes.h"

/* The most SCAN pages (COUNT 1000 each) a count reads on one node: a node of
 * more than about a million keys is not counted to the end. */
#define ORDER_LOCK_COUNT_PAGES 1000

/* Counts the order locks of item (of its segments: segments > 1) into
 * *held. Returns 1 when every lock was counted; 0 when a node held more
 * keys than ORDER_LOCK_COUNT_PAGES pages (*held is then a lower bound); -1
 * when Redis failed (logged). */
int order_lock_count(redis_nodes *rn, int64_t item, int segments, int64_t *held);

#endif
