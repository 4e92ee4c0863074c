/* array.h: a growing array's room, made by doubling, for every table that
 * grows one entry or one chunk at a time (the cluster map's shards, the
 * Redis nodes, a request body, a worker's claimed items, reconcile's pending
 * orders, the waiting room's joins, a PostgreSQL array literal, the metrics
 * text, a config file read). Pure. */
#ifndef SECKILL_ARRAY_H
#define SECKILL_ARRAY_H

#include <stddef.h>

/* Room for at least need (> 0) entries of size bytes in items, an array of
 * *cap entries (NULL when *cap is 0): items itself when it has the room,
 * else items reallocated to a capacity doubled from *cap (from first when
 * *cap is 0) until it holds need, and *cap set to that. Returns the array,
 * or NULL when out of memory or the size overflows; items and *cap are then
 * as they were (the caller still owns and frees items). */
void *array_grow(void *items, size_t *cap, size_t need, size_t size, size_t first);

#endif
