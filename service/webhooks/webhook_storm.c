/* webhook_storm.c: the deliverer waits out a sale's storm. While the
 * worker writes events faster than webhook_storm_rate a second, a delivery
 * started now takes CPU from the sale, SCHED_IDLE or not: in make bench's
 * row 7, purchases with a deliverer delivering during the storm ran at 0.87
 * of those without webhooks, 0.98 with it waiting the storm out
 * (docs/WEBHOOKS.md, "What it costs a sale"). So while the storm lasts, no
 * delivery starts and no page of the feed is read for one; the events wait
 * in PostgreSQL, as any backlog does, and go when it is over: when the
 * head has grown slower than the rate for a second (a lull inside the sale
 * ends nothing). A storm longer than webhook_storm_wait_ms is waited out no
 * longer: its events go while it lasts (storm_watch.h).
 *
 * The head is the sequence's last value, one short statement every
 * STORM_LOOK_MS; the rate is over the time since the last look. */
#include <inttypes.h>

#include "log.h"
#include "webhooks_state.h"

void webhook_storm_reset(webhooks *w)
{
    w->storm = (storm_watch){0};
    w->storm_next_ms = 0;
    w->storm_failing = 0;
    atomic_store(&w->storm_waiting, 0);
}

/* The feed's head could not be read, the session still up (a role that may
 * not read the sequence, a statement cancelled): no storm is waited out
 * until it is read again, tried every STORM_RETRY_MS; said once. */
static void look_failed(webhooks *w, int64_t now)
{
    if (!w->storm_failing)
        log_msg(LOG_WARN, COMPONENT,
                "cannot read the feed's head (the sequence order_events_ids): storms are not "
                "waited out until it can, tried every %d s",
                STORM_RETRY_MS / 1000);
    webhook_storm_reset(w);
    w->storm_failing = 1;
    w->storm_next_ms = now + STORM_RETRY_MS;
}

int webhook_storm_holds(webhooks *w, int64_t now)
{
    if (w->cfg->webhook_storm_rate == 0 || now < w->storm_next_ms)
        return w->storm.waits;
    w->storm_next_ms = now + STORM_LOOK_MS;
    int64_t head = webhook_store_head(w->pg);
    if (head < 0) {
        if (PQstatus(w->pg) == CONNECTION_OK)
            look_failed(w, now);
        else
            webhooks_drop_pg(w);
        return 0;
    }
    if (w->storm_failing)
        log_msg(LOG_INFO, COMPONENT, "the feed's head is read again: storms are waited out");
    w->storm_failing = 0;
    int waited = w->storm.waits;
    int waits = storm_watch_look(&w->storm, head, now, w->cfg->webhook_storm_rate,
                                 w->cfg->webhook_storm_wait_ms);
    if (waits && !waited)
        log_msg(LOG_INFO, COMPONENT,
                "a storm of events: deliveries wait until it is over (%d ms at most)",
                w->cfg->webhook_storm_wait_ms);
    else if (waited && !waits)
        log_msg(LOG_INFO, COMPONENT, "delivering again: %s",
                w->storm.since_ms ? "the storm goes on past webhook_storm_wait_ms"
                                  : "the storm is over");
    atomic_store(&w->storm_waiting, waits);
    return waits;
}
