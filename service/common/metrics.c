/* metrics.c: fixed arrays of atomic counters; rendering walks them once. */
#include "metrics.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text_buf.h"

/* Upper bounds of the latency buckets, in seconds; +Inf is implicit. */
static const double bucket_le[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                   0.05,   0.1,   0.25,   0.5,   1,    2.5};
#define NBUCKETS (sizeof(bucket_le) / sizeof(bucket_le[0]))
#define STATUS_MIN 100
#define STATUS_MAX 599

static const char *outcome_names[METRICS_OUTCOME_COUNT] = {
    "queued",         "sold_out",           "sold_out_flag",
    "not_started",    "not_started_memory", "ended",
    "ended_memory",   "limit_reached",      "insufficient_stock",
    "unknown_item",   "queue_full",         "rate_limited",
    "failed",         "unconfirmed",        "archived",
    "buyer_required", "in_progress",        "admission_refused",
};
static const char *backend_names[METRICS_BACKEND_COUNT] = {"redis", "postgresql"};
static const char *redirect_names[METRICS_REDIRECT_COUNT] = {"moved", "ask", "tryagain"};

typedef struct route_counters {
    _Atomic uint64_t by_status[STATUS_MAX - STATUS_MIN + 1];
    _Atomic uint64_t buckets[NBUCKETS + 1]; /* the last one is +Inf */
    _Atomic uint64_t sum_us;                /* total time in microseconds */
} route_counters;

struct metrics {
    const char *const *names;
    int nroutes;
    route_counters *routes;
    _Atomic uint64_t outcomes[METRICS_OUTCOME_COUNT];
    _Atomic uint64_t backend_errors[METRICS_BACKEND_COUNT];
    _Atomic uint64_t redirects[METRICS_REDIRECT_COUNT];
    _Atomic uint64_t batches;        /* reserve_batch calls sent */
    _Atomic uint64_t batched_buyers; /* buyers in them */
};

metrics *metrics_create(const char *const *names, int nroutes)
{
    metrics *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->routes = calloc((size_t)nroutes, sizeof(*m->routes));
    if (!m->routes) {
        free(m);
        return NULL;
    }
    m->names = names;
    m->nroutes = nroutes;
    return m;
}

void metrics_free(metrics *m)
{
    if (!m)
        return;
    free(m->routes);
    free(m);
}

static void add(_Atomic uint64_t *c, uint64_t n)
{
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

static uint64_t get(_Atomic uint64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

void metrics_request(metrics *m, int route, int status, double seconds)
{
    if (!m || route < 0 || route >= m->nroutes)
        return;
    route_counters *r = &m->routes[route];
    if (status >= STATUS_MIN && status <= STATUS_MAX)
        add(&r->by_status[status - STATUS_MIN], 1);
    size_t b = 0;
    while (b < NBUCKETS && seconds > bucket_le[b])
        b++;
    add(&r->buckets[b], 1);
    add(&r->sum_us, (uint64_t)(seconds > 0 ? seconds * 1e6 : 0));
}

void metrics_purchase(metrics *m, metrics_outcome outcome)
{
    if (m && (unsigned)outcome < METRICS_OUTCOME_COUNT)
        add(&m->outcomes[outcome], 1);
}

void metrics_purchase_batch(metrics *m, int buyers)
{
    if (m && buyers > 0) {
        add(&m->batches, 1);
        add(&m->batched_buyers, (uint64_t)buyers);
    }
}

void metrics_redis_redirect(metrics *m, metrics_redirect kind)
{
    if (m && (unsigned)kind < METRICS_REDIRECT_COUNT)
        add(&m->redirects[kind], 1);
}

void metrics_backend_error(metrics *m, metrics_backend backend)
{
    if (m && (unsigned)backend < METRICS_BACKEND_COUNT)
        add(&m->backend_errors[backend], 1);
}

static void gauge(text_buf *t, const char *name, const char *help, int64_t v)
{
    if (v < 0)
        return; /* unknown this time: no sample rather than a wrong one */
    text_buf_printf(t, "# HELP %s %s\n# TYPE %s gauge\n%s %" PRId64 "\n", name, help, name, name,
                    v);
}

/* A counter family of n series, series i labelled label="values[i]". */
static void counters(text_buf *t, const char *name, const char *help, const char *label,
                     const char *const *values, _Atomic uint64_t *counts, int n)
{
    text_buf_printf(t, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
    for (int i = 0; i < n; i++)
        text_buf_printf(t, "%s{%s=\"%s\"} %" PRIu64 "\n", name, label, values[i], get(&counts[i]));
}

/* The requests by route and status, and the latency histogram of each route. */
static void render_routes(text_buf *t, metrics *m)
{
    text_buf_printf(
        t, "# HELP seckill_http_requests_total HTTP requests answered, by route and status.\n"
           "# TYPE seckill_http_requests_total counter\n");
    for (int r = 0; r < m->nroutes; r++)
        for (int s = STATUS_MIN; s <= STATUS_MAX; s++) {
            uint64_t n = get(&m->routes[r].by_status[s - STATUS_MIN]);
            if (n)
                text_buf_printf(
                    t, "seckill_http_requests_total{route=\"%s\",code=\"%d\"} %" PRIu64 "\n",
                    m->names[r], s, n);
        }

    text_buf_printf(
        t, "# HELP seckill_http_request_duration_seconds Time from a request's last byte to "
           "its answer.\n# TYPE seckill_http_request_duration_seconds histogram\n");
    for (int r = 0; r < m->nroutes; r++) {
        route_counters *rc = &m->routes[r];
        uint64_t cumulative = 0;
        for (size_t b = 0; b <= NBUCKETS; b++) {
            cumulative += get(&rc->buckets[b]);
            if (b < NBUCKETS)
                text_buf_printf(
                    t,
                    "seckill_http_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} %" PRIu64
                    "\n",
                    m->names[r], bucket_le[b], cumulative);
            else
                text_buf_printf(
                    t,
                    "seckill_http_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} "
                    "%" PRIu64 "\n",
                    m->names[r], cumulative);
        }
        text_buf_printf(t, "seckill_http_request_duration_seconds_sum{route=\"%s\"} %.6f\n",
                        m->names[r], (double)get(&rc->sum_us) / 1e6);
        text_buf_printf(t,
                        "seckill_http_request_duration_seconds_count{route=\"%s\"} %" PRIu64 "\n",
                        m->names[r], cumulative);
    }
}

char *metrics_render(metrics *m, const metrics_gauges *g)
{
    text_buf t = TEXT_BUF_INIT;
    metrics_render_into(m, g, &t);
    return text_buf_take(&t);
}

void metrics_render_into(metrics *m, const metrics_gauges *g, text_buf *t)
{
    render_routes(t, m);

    counters(t, "seckill_purchases_total", "Purchases of the production path, by outcome.",
             "outcome", outcome_names, m->outcomes, METRICS_OUTCOME_COUNT);
    text_buf_printf(
        t,
        "# HELP seckill_purchase_batches_total Calls of the batch reserve script (group "
        "commit).\n"
        "# TYPE seckill_purchase_batches_total counter\n"
        "seckill_purchase_batches_total %" PRIu64 "\n",
        get(&m->batches));
    text_buf_printf(
        t,
        "# HELP seckill_purchase_batched_total Purchases sent in them (divided by the calls: "
        "buyers a call).\n"
        "# TYPE seckill_purchase_batched_total counter\n"
        "seckill_purchase_batched_total %" PRIu64 "\n",
        get(&m->batched_buyers));
    counters(t, "seckill_redis_redirects_total",
             "Purchase batches a Redis Cluster sent elsewhere (a slot moved, being moved, or "
             "split by a move).",
             "kind", redirect_names, m->redirects, METRICS_REDIRECT_COUNT);
    counters(t, "seckill_backend_errors_total", "Failed calls to Redis and PostgreSQL.", "backend",
             backend_names, m->backend_errors, METRICS_BACKEND_COUNT);

    gauge(t, "seckill_soldout_flags", "Items this instance answers sold out from memory.",
          g->soldout_flags);
    gauge(t, "seckill_queue_orders", "Orders waiting on the items' queues.", g->queue);
    gauge(t, "seckill_processing_orders", "Orders held in workers' processing lists.",
          g->processing);
    gauge(t, "seckill_pending_orders", "Orders accepted and not yet persisted.", g->pending);
    gauge(t, "seckill_dead_letter_orders", "Payloads moved to the items' dead-letter lists.",
          g->dead);
}

char *metrics_render_worker(const char *worker_id, const metrics_worker *w)
{
    text_buf t = TEXT_BUF_INIT;
    text_buf_printf(&t,
                    "# HELP seckill_worker_batches_total Batches committed and acknowledged.\n"
                    "# TYPE seckill_worker_batches_total counter\n"
                    "seckill_worker_batches_total{worker=\"%s\"} %" PRId64 "\n",
                    worker_id, w->batches);
    text_buf_printf(
        &t,
        "# HELP seckill_worker_orders_total Orders handled, by result: inserted, skipped "
        "(duplicate, old round, unknown item) or dead (not an order).\n"
        "# TYPE seckill_worker_orders_total counter\n"
        "seckill_worker_orders_total{worker=\"%s\",result=\"inserted\"} %" PRId64 "\n"
        "seckill_worker_orders_total{worker=\"%s\",result=\"skipped\"} %" PRId64 "\n"
        "seckill_worker_orders_total{worker=\"%s\",result=\"dead\"} %" PRId64 "\n",
        worker_id, w->inserted, worker_id, w->skipped, worker_id, w->dead);
    text_buf_printf(&t,
                    "# HELP seckill_worker_batch_orders Orders in the last acknowledged batch.\n"
                    "# TYPE seckill_worker_batch_orders gauge\n"
                    "seckill_worker_batch_orders{worker=\"%s\"} %" PRId64 "\n",
                    worker_id, w->last_batch);
    text_buf_printf(
        &t,
        "# HELP seckill_worker_lag_seconds Age of the last batch's oldest order when it "
        "was acknowledged.\n# TYPE seckill_worker_lag_seconds gauge\n"
        "seckill_worker_lag_seconds{worker=\"%s\"} %.3f\n",
        worker_id, (double)w->lag_ms / 1000);
    text_buf_printf(
        &t,
        "# HELP seckill_worker_backend_errors_total Failures that made the worker retry.\n"
        "# TYPE seckill_worker_backend_errors_total counter\n"
        "seckill_worker_backend_errors_total{worker=\"%s\",backend=\"postgresql\"} %" PRId64 "\n"
        "seckill_worker_backend_errors_total{worker=\"%s\",backend=\"redis\"} %" PRId64 "\n",
        worker_id, w->pg_errors, worker_id, w->redis_errors);
    text_buf_printf(
        &t,
        "# HELP seckill_worker_expired_orders_total Unpaid orders this worker's expiry passes "
        "expired.\n# TYPE seckill_worker_expired_orders_total counter\n"
        "seckill_worker_expired_orders_total{worker=\"%s\"} %" PRId64 "\n",
        worker_id, w->expired);
    text_buf_printf(
        &t,
        "# HELP seckill_worker_returned_units_total Units of expired orders (and of returns a "
        "crash left owed) this worker gave back on sale.\n"
        "# TYPE seckill_worker_returned_units_total counter\n"
        "seckill_worker_returned_units_total{worker=\"%s\"} %" PRId64 "\n",
        worker_id, w->returned);
    return text_buf_take(&t);
}
