/* clock.h: the one place the service reads the time: Unix time for what is
 * stored or shown (deadlines, token expiry, log lines), the monotonic clock
 * for durations and timeouts. (redis_clock.h is another thing: this server's
 * bounds on Redis's clock, the sale window's authority.) */
#ifndef SECKILL_CLOCK_H
#define SECKILL_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* Wall-clock Unix time in milliseconds. */
int64_t clock_wall_ms(void);

/* Wall-clock Unix time in seconds. */
int64_t clock_wall_s(void);

/* Monotonic milliseconds, for durations and timeouts. */
int64_t clock_mono_ms(void);

/* The time of clock `which` (CLOCK_REALTIME or CLOCK_MONOTONIC) in_ms
 * milliseconds from now (0: now), as the absolute deadline that
 * pthread_cond_timedwait and pthread_mutex_timedlock take. */
struct timespec clock_after(clockid_t which, int64_t in_ms);

/* Initialises cond to time its waits on the monotonic clock, so that
 * pthread_cond_timedwait takes a deadline of clock_after(CLOCK_MONOTONIC,
 * ...) and a change of the wall clock moves none. Returns 0, or -1 (then
 * cond is not initialised). pthread_cond_destroy frees it. */
int clock_cond_init(pthread_cond_t *cond);

/* Seconds from `since` to `until` (both from clock_after). */
double clock_seconds_between(struct timespec since, struct timespec until);

#endif
