/* backoff.c: exponential back-off. */
#include "backoff.h"

int64_t backoff_next(int64_t delay_ms, int64_t max_ms)
{
    int64_t next = delay_ms > 0 ? delay_ms * 2 : BACKOFF_MIN_MS;
    return next > max_ms ? max_ms : next;
}

int64_t backoff_after(int failures, int64_t first_ms, int64_t max_ms)
{
    int64_t delay = first_ms;
    for (int i = 1; i < failures && delay < max_ms; i++)
        delay *= 2;
    return delay > max_ms ? max_ms : delay;
}
