/* soldout.h: the in-memory sold-out flags of one server instance. Once Redis
 * said an item is sold out, purchases of it are answered 409 without a round
 * trip. A flag belongs to a sale round: a reset announces the new round and
 * a flag of an older round no longer counts, even if it is set late by a
 * request that was still in flight during the reset. Lock-free. */
#ifndef SECKILL_SOLDOUT_H
#define SECKILL_SOLDOUT_H

#include <stdint.h>

typedef struct soldout soldout;

/* capacity: items tracked at most (rounded up to a power of two); items past
 * it are simply never flagged, which costs speed, not correctness. */
soldout *soldout_create(unsigned capacity);
void soldout_free(soldout *s);

/* Redis said item is sold out in round. */
void soldout_set(soldout *s, int64_t item, int64_t round);

/* Round `round` of item began: flags of older rounds stop counting. */
void soldout_new_round(soldout *s, int64_t item, int64_t round);

/* Forgets every flag (after missed announcements, e.g. a lost subscription). */
void soldout_clear_all(soldout *s);

/* How many items are flagged sold out now (for the metrics). */
int64_t soldout_count(soldout *s);

/* True when item is flagged sold out in its latest known round. */
int soldout_is_set(soldout *s, int64_t item);

#endif
