/* backoff.c: exponential back-off. */
#include "backoff.h"

int64_t backoff_next(int64_t delay_ms, int64_t max_ms)
{
    int64_t next = delay_ms > 0 ? delay_ms * 2 : BACKOFF_MIN_MS;
    return next > max_ms ? max_ms : next;
}
