/* order_node.h: a process's node number for the order ids it makes
 * (order.h), taken from Redis so that no two live processes share one:
 * every server instance at its start, and a worker before its draw chore
 * makes the orders of waitlisted entrants (waitlist.h). */
#ifndef SECKILL_ORDER_NODE_H
#define SECKILL_ORDER_NODE_H

#include "redis_nodes.h"

/* INCR KEYS_NODE_SEQ through rn, into *node in [0, ORDER_NODE_MAX].
 * Returns 0, or -1 on a Redis error (logged for rn's owner). */
int order_node_take(redis_nodes *rn, unsigned *node);

#endif
