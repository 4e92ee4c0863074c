/* ratelimit.h: a token bucket per buyer, in memory: `rate` purchases a
 * second, bursts of `burst`. Per server instance (behind a balancer that
 * spreads one buyer over n instances, a buyer gets n times the rate): it
 * exists to keep one client's flood off Redis, not to ration units (the Lua
 * script does that). Thread-safe; time is passed in, so it is pure. */
#ifndef SECKILL_RATELIMIT_H
#define SECKILL_RATELIMIT_H

#include <stdint.h>

typedef struct ratelimit ratelimit;

/* capacity: buyers tracked at once (rounded up); past it the buyer whose
 * bucket is fullest is forgotten, which only ever errs on the lenient side.
 * NULL when out of memory. */
ratelimit *ratelimit_create(double rate_per_s, double burst, unsigned capacity);
void ratelimit_free(ratelimit *r);

/* Takes one token of buyer `key` at now_ms. Returns 0 when there was one,
 * else how many milliseconds until there is (at least 1). */
int64_t ratelimit_take(ratelimit *r, int64_t key, int64_t now_ms);

#endif
