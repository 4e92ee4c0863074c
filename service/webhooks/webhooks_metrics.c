/* webhooks_metrics.c: the deliverer's counters as Prometheus text, read by
 * the /metrics listener's thread while the deliverer runs (the counters are
 * atomics). */
#include <inttypes.h>
#include <stddef.h>

#include "text_buf.h"
#include "webhooks.h"
#include "webhooks_state.h"

char *webhooks_metrics(void *ctx)
{
    webhooks *w = ctx;
    text_buf t = TEXT_BUF_INIT;
    static const struct {
        const char *name, *type, *help;
        size_t offset;
    } series[] = {
        {"seckill_webhook_delivered_total", "counter", "Events an endpoint answered 2xx to.",
         offsetof(endpoint_state, delivered)},
        {"seckill_webhook_failed_total", "counter",
         "Attempts that failed (an answer not 2xx, a timeout, no connection).",
         offsetof(endpoint_state, failed)},
        {"seckill_webhook_dead_lettered_total", "counter",
         "Events that went to the endpoint's dead-letter after their last attempt.",
         offsetof(endpoint_state, dead)},
    };
    for (size_t s = 0; s < sizeof(series) / sizeof(series[0]); s++) {
        text_buf_printf(&t, "# HELP %s %s\n# TYPE %s %s\n", series[s].name, series[s].help,
                        series[s].name, series[s].type);
        for (size_t i = 0; i < w->nendpoints; i++)
            text_buf_printf(
                &t, "%s{endpoint=\"%" PRId64 "\"} %lld\n", series[s].name, w->endpoints[i].id,
                atomic_load((atomic_llong *)((char *)&w->endpoints[i] + series[s].offset)));
    }
    text_buf_printf(
        &t, "# HELP seckill_webhook_lag_seconds Age of the oldest event an endpoint has not "
            "had yet (the dead-letter aside).\n# TYPE seckill_webhook_lag_seconds gauge\n");
    for (size_t i = 0; i < w->nendpoints; i++)
        text_buf_printf(&t, "seckill_webhook_lag_seconds{endpoint=\"%" PRId64 "\"} %.3f\n",
                        w->endpoints[i].id, atomic_load(&w->endpoints[i].lag_ms) / 1000.0);
    text_buf_printf(&t,
                    "# HELP seckill_webhook_leader 1 while this deliverer leads.\n"
                    "# TYPE seckill_webhook_leader gauge\nseckill_webhook_leader %d\n"
                    "# HELP seckill_webhook_storm_waiting 1 while deliveries wait out a sale's "
                    "storm (webhook_storm_rate).\n# TYPE seckill_webhook_storm_waiting gauge\n"
                    "seckill_webhook_storm_waiting %d\n",
                    atomic_load(&w->leading), atomic_load(&w->storm_waiting));
    return text_buf_take(&t);
}
