/* redis_clock.c: two one-second buckets of the tightest bounds. */
#include "redis_clock.h"

#define BUCKET_MS 1000

void redis_clock_init(redis_clock *c)
{
    pthread_mutex_init(&c->lock, NULL);
    c->bucket_ms = 0;
    c->hi[0] = c->hi[1] = INT64_MAX;
    c->lo[0] = c->lo[1] = INT64_MIN;
    atomic_init(&c->hi_offset, 0);
    atomic_init(&c->lo_offset, 0);
    atomic_init(&c->valid_until, 0);
}

void redis_clock_close(redis_clock *c)
{
    pthread_mutex_destroy(&c->lock);
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

void redis_clock_sample(redis_clock *c, int64_t sent_ms, int64_t received_ms, int64_t redis_ms)
{
    if (received_ms < sent_ms || redis_ms <= 0)
        return;
    pthread_mutex_lock(&c->lock);
    if (received_ms >= c->bucket_ms + BUCKET_MS) {
        /* A new second: the current bucket becomes the last one, or both
         * are stale when a whole second passed without a call. */
        int keep = received_ms < c->bucket_ms + 2 * BUCKET_MS;
        c->hi[1] = keep ? c->hi[0] : INT64_MAX;
        c->lo[1] = keep ? c->lo[0] : INT64_MIN;
        c->hi[0] = INT64_MAX;
        c->lo[0] = INT64_MIN;
        c->bucket_ms = received_ms;
    }
    c->hi[0] = min64(c->hi[0], redis_ms - sent_ms);
    c->lo[0] = max64(c->lo[0], redis_ms - received_ms);
    int64_t hi = min64(c->hi[0], c->hi[1]), lo = max64(c->lo[0], c->lo[1]);
    /* Bounds that cross mean the clock stepped: keep only this call's. */
    if (lo > hi) {
        hi = c->hi[1] = c->hi[0] = redis_ms - sent_ms;
        lo = c->lo[1] = c->lo[0] = redis_ms - received_ms;
    }
    atomic_store(&c->hi_offset, hi);
    atomic_store(&c->lo_offset, lo);
    atomic_store(&c->valid_until, c->bucket_ms + 2 * BUCKET_MS);
    pthread_mutex_unlock(&c->lock);
}

int redis_clock_bounds(redis_clock *c, int64_t now_ms, int64_t *lo, int64_t *hi)
{
    if (now_ms >= atomic_load(&c->valid_until))
        return 0;
    *hi = now_ms + atomic_load(&c->hi_offset);
    *lo = now_ms + atomic_load(&c->lo_offset);
    return 1;
}
