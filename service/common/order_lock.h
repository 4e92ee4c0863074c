/* order_lock.h: a buyer's order lock, which guards the creation of one
 * buyer's order from its reservation until it is in PostgreSQL
 * (lua/reserve_batch.lua takes it with the order id, PX order_lock_ttl_ms;
 * whoever persists the order, the worker or a cancel of a still-queued
 * order, frees it by compare-and-delete with lua/order_lock_release.lua):
 * its key for an order. Pure. */
#ifndef SECKILL_ORDER_LOCK_H
#define SECKILL_ORDER_LOCK_H

#include <stddef.h>

#include "order.h"

/* The key of the lock of o's buyer (keys_order_lock, at the buyer's home).
 * Returns snprintf's length, or -1 when o is anonymous (its id stands for
 * its buyer: no lock). */
int order_lock_key(char *buf, size_t len, const order *o);

#endif
