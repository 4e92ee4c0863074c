/* registry.h: the set of items whose queues may hold orders (KEYS_ITEMS),
 * how everything that must visit every item's queue, pending hash or
 * processing lists finds them without a scan: an item joins it when it is
 * created or reset, and never leaves it. */
#ifndef SECKILL_REGISTRY_H
#define SECKILL_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "redis_nodes.h"

/* Reads the item ids of an SMEMBERS reply, sorted ascending, into a new
 * array (*items, the caller frees; NULL when none); members that are not
 * ids are skipped. Pure. Returns 0, or -1 when r is not an array or out of
 * memory. */
int registry_from_reply(const redisReply *r, int64_t **items, size_t *n);

/* Sorts ids[0..n) ascending and keeps each id once, at the front. Pure.
 * Returns how many remain. */
size_t registry_sort_unique(int64_t *ids, size_t n);

/* Reads the registry (SMEMBERS KEYS_ITEMS, one key: one node of a cluster)
 * through rn as registry_from_reply() does. Returns 0, or -1 on a Redis
 * error (logged for rn's owner). */
int registry_read(redis_nodes *rn, int64_t **items, size_t *n);

/* Adds item to the registry through rn (SADD). Returns 0, or -1 on a Redis
 * error (logged for rn's owner). */
int registry_add(redis_nodes *rn, int64_t item);

#endif
