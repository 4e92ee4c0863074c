/* backoff.h: the one exponential back-off of every retry loop (the worker's
 * reconnects and inserts, the HTTP loops' Redis connections and the subscriber's reconnects).
 * Pure. */
#ifndef SECKILL_BACKOFF_H
#define SECKILL_BACKOFF_H

#include <stdint.h>

/* The first delay after a failure, in milliseconds. */
#define BACKOFF_MIN_MS 50

/* The delay to wait after one more failure, given the last one (0: no
 * failure yet): BACKOFF_MIN_MS, then doubled each time, at most max_ms. */
int64_t backoff_next(int64_t delay_ms, int64_t max_ms);

/* The delay after the failures-th failure in a row (1 and on) of a schedule
 * that starts at first_ms and doubles up to max_ms, for a retry whose count
 * is kept rather than its last delay (a webhook's attempts, in PostgreSQL). */
int64_t backoff_after(int failures, int64_t first_ms, int64_t max_ms);

#endif
