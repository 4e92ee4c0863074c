/* webhook_storm.c: the deliverer waits out a sale's storm. While the
 * worker writes events faster than webhook_storm_rate a second, a delivery
 * started now takes CPU from the sale, SCHED_IDLE or not: in make bench's
 * row 7, purchases with a deliverer delivering during the storm ran at 0.87
 * of those without webhooks, 0.98 with it waiting the storm out
 * (docs/WEBHOOKS.md, "What it costs a sale"). So while the storm lasts, no
 * delivery starts and no page of the feed is read for one; the events wait
 * in PostgreSQL, as any backlog does, and go when it is over. A storm
 * longer than webhook_storm_wait_ms is waited out no longer: its events go
 * while it lasts.
 *
 * The head is the sequence's last value, one short statement every
 * STORM_LOOK_MS; the rate is over the time since the last look. */
#include <inttypes.h>

#include "log.h"
#include "webhooks_state.h"

void webhook_storm_reset(webhooks *w)
{
    w->storm.head = w->storm.head_ms = w->storm.since_ms = w->storm.next_ms = 0;
    w->storm.holds = 0;
    atomic_store(&w->storm_waiting, 0);
}

/* Whether events came at the storm's rate since the last look (never at
 * the first one, nor when the sequence went back). */
static int storming(const webhooks *w, int64_t head, int64_t now)
{
    int64_t events = head - w->storm.head, ms = now - w->storm.head_ms;
    return w->storm.head_ms > 0 && ms > 0 && events > 0 &&
           events * 1000 >= (int64_t)w->cfg->webhook_storm_rate * ms;
}

/* Deliveries wait (holds) or go; said in the log when it changes, with how
 * long the storm has lasted and whether it goes on. */
static void set_holds(webhooks *w, int holds, int64_t lasted_ms, int on)
{
    if (holds == w->storm.holds)
        return;
    if (holds)
        log_msg(LOG_INFO, COMPONENT,
                "a storm of events: deliveries wait until it is over (%d ms at most)",
                w->cfg->webhook_storm_wait_ms);
    else
        log_msg(LOG_INFO, COMPONENT, "delivering again after %" PRId64 " ms of a storm (%s)",
                lasted_ms, on ? "it goes on" : "it is over");
    w->storm.holds = holds;
    atomic_store(&w->storm_waiting, holds);
}

int webhook_storm_holds(webhooks *w, int64_t now)
{
    if (w->cfg->webhook_storm_rate == 0 || now < w->storm.next_ms)
        return w->storm.holds;
    w->storm.next_ms = now + STORM_LOOK_MS;
    int64_t head = webhook_store_head(w->pg);
    if (head < 0) {
        webhooks_drop_pg(w);
        webhook_storm_reset(w);
        return 0;
    }
    int on = storming(w, head, now);
    w->storm.head = head;
    w->storm.head_ms = now;
    if (on && w->storm.since_ms == 0)
        w->storm.since_ms = now;
    int64_t lasted = w->storm.since_ms ? now - w->storm.since_ms : 0;
    set_holds(w, on && lasted < w->cfg->webhook_storm_wait_ms, lasted, on);
    if (!on)
        w->storm.since_ms = 0;
    return w->storm.holds;
}
