/* backoff.h: the one exponential back-off of every retry loop (the worker's
 * reconnects and inserts, the HTTP loops' Redis connections, the
 * subscriber's reconnects, the reconciler's retries, the webhooks'
 * deliveries, and the pauses between the redirects and retries of one Redis
 * command, blocking and asynchronous: the batcher's 10 to 160 ms), and the
 * one sleep that waits out a pause, cut short by a stop request. */
#ifndef SECKILL_BACKOFF_H
#define SECKILL_BACKOFF_H

#include <stdatomic.h>
#include <stdint.h>

/* The first delay after a failure, in milliseconds. */
#define BACKOFF_MIN_MS 50

/* The delay to wait after one more failure, given the last one (0: no
 * failure yet): BACKOFF_MIN_MS, then doubled each time, at most max_ms. Pure. */
int64_t backoff_next(int64_t delay_ms, int64_t max_ms);

/* The same rule from another first delay: min_ms after the first failure,
 * doubled with each one after it, at most max_ms; failures <= 1 is the first.
 * For a loop that counts its failures rather than keeping its delay. Pure. */
int64_t backoff_after(int failures, int64_t min_ms, int64_t max_ms);

/* Sleeps ms (a signal does not cut it short). With stop (may be NULL), in
 * naps of BACKOFF_NAP_MS, returning as soon as *stop is non-zero. */
#define BACKOFF_NAP_MS 50
void backoff_sleep_ms(int64_t ms, const atomic_int *stop);

#endif
