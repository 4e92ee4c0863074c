/* backoff.c: exponential back-off, and the sleep between two attempts. */
#include "backoff.h"

#include <errno.h>
#include <time.h>

static int64_t doubled(int64_t delay_ms, int64_t min_ms, int64_t max_ms)
{
    int64_t next = delay_ms > 0 ? delay_ms * 2 : min_ms;
    return next > max_ms ? max_ms : next;
}

int64_t backoff_next(int64_t delay_ms, int64_t max_ms)
{
    return doubled(delay_ms, BACKOFF_MIN_MS, max_ms);
}

int64_t backoff_after(int failures, int64_t min_ms, int64_t max_ms)
{
    int64_t delay = doubled(0, min_ms, max_ms);
    for (int k = 1; k < failures && delay < max_ms; k++)
        delay = doubled(delay, min_ms, max_ms);
    return delay;
}

/* Sleeps ms whole, resuming after a signal. */
static void sleep_whole(int64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

void backoff_sleep_ms(int64_t ms, const atomic_int *stop)
{
    if (!stop) {
        if (ms > 0)
            sleep_whole(ms);
        return;
    }
    while (ms > 0 && !atomic_load(stop)) {
        int64_t step = ms < BACKOFF_NAP_MS ? ms : BACKOFF_NAP_MS;
        sleep_whole(step);
        ms -= step;
    }
}
