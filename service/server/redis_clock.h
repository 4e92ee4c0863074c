/* redis_clock.h: this server's bounds on Redis's clock, learnt from the time
 * each reserve call carries back (lua/reserve_batch.lua reads TIME); not a
 * reader of this machine's clock (that is clock.h).
 *
 * Redis's clock is the sale window's one authority. A server may answer the
 * pre-start storm not_started from memory only while it is sure the start is
 * still ahead, so it keeps bounds, not an estimate: Redis read its clock T
 * somewhere between our send (local monotonic s) and our receipt (r), so at
 * local time L Redis's clock is at most T + (L - s) and at least T + (L - r).
 * Each call gives such a pair; the tightest of the last one or two seconds
 * count, so a clock that steps is forgotten within two seconds. Writers (the
 * HTTP loops, on their Redis replies) take a lock once a call; readers (every purchase) only load
 * atomics. */
#ifndef SECKILL_REDIS_CLOCK_H
#define SECKILL_REDIS_CLOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

typedef struct redis_clock {
    pthread_mutex_t lock;
    int64_t bucket_ms;           /* start of the current second, local monotonic */
    int64_t hi[2], lo[2];        /* the bounds' offsets of this second and the last */
    _Atomic int64_t hi_offset;   /* published: Redis's clock - local monotonic, at most */
    _Atomic int64_t lo_offset;   /* at least */
    _Atomic int64_t valid_until; /* local monotonic ms; before any sample: 0 */
} redis_clock;

void redis_clock_init(redis_clock *c);
void redis_clock_close(redis_clock *c);

/* One call: sent and received at local monotonic ms, Redis's clock read
 * redis_ms meanwhile. */
void redis_clock_sample(redis_clock *c, int64_t sent_ms, int64_t received_ms, int64_t redis_ms);

/* Bounds on Redis's clock (Unix ms) at local monotonic now_ms. Returns 1
 * with *lo <= Redis's clock <= *hi, or 0 when no recent call says. */
int redis_clock_bounds(redis_clock *c, int64_t now_ms, int64_t *lo, int64_t *hi);

#endif
