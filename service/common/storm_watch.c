/* storm_watch.c: a sale's storm told from a growing counter's looks. */
#include "storm_watch.h"

/* Whether the counter grew at rate a second or more since the last look:
 * at least rate's share of the time between them, rounded up (a gap so long
 * that the share would not fit in 64 bits wants more than any growth). */
static int at_rate(const storm_watch *s, int64_t head, int64_t now, int64_t rate)
{
    int64_t grew = head - s->head, ms = now - s->head_ms;
    if (s->head_ms <= 0 || ms <= 0 || grew <= 0 || ms > (INT64_MAX - 999) / rate)
        return 0;
    return grew >= (rate * ms + 999) / 1000;
}

int storm_watch_look(storm_watch *s, int64_t head, int64_t now, int64_t rate, int64_t wait_ms)
{
    if (at_rate(s, head, now, rate)) {
        s->quiet_ms = 0;
        if (s->since_ms == 0)
            s->since_ms = now;
    } else if (s->since_ms != 0) {
        /* Quiet since the look before: this look's growth covers the time
         * from it. */
        if (s->quiet_ms == 0)
            s->quiet_ms = s->head_ms;
        if (now - s->quiet_ms >= STORM_QUIET_MS)
            s->since_ms = s->quiet_ms = 0;
    }
    s->head = head;
    s->head_ms = now;
    s->waits = s->since_ms != 0 && now - s->since_ms < wait_ms;
    return s->waits;
}
