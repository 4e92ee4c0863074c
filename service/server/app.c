/* app.c: start-up and shut-down of the server's parts, in dependency order. */
#include "app.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "keys.h"
#include "order_node.h"
#include "redis_nodes.h"
#include "reserve.h"
#include "room_store.h"
#include "log.h"
#include "pool_session.h"

/* How long a graceful stop waits for the requests in flight. */
#define APP_DRAIN_MS 10000

/* Loads every script on every master (a Redis Cluster's too), which also
 * learns their digests. Returns 0, or -1 when a master failed. */
static int load_scripts(scripts *sc, redis_nodes *rn)
{
    size_t n = redis_nodes_count(rn);
    for (size_t i = 0; i < n; i++) {
        redisContext *c = redis_nodes_at(rn, i);
        if (!c || scripts_load(sc, c) < 0)
            return -1;
    }
    return n > 0 ? 0 : -1;
}

static void *make_session(void *arg)
{
    app *a = arg;
    return pool_session_create(a->cfg, &a->scripts, a->metrics);
}

static void free_session(void *s)
{
    pool_session_free(s);
}

/* Each HTTP loop's Redis connection: made on the loop's base, freed on its
 * thread after it stopped serving, when the replies still owed (a drain that
 * timed out) have come or this long has passed. */
#define APP_REDIS_CLOSE_MS 2000

static void *start_conn(void *ctx, int index, struct event_base *base)
{
    app *a = ctx;
    redis_conn *c = redis_conn_create(a->cfg, base);
    atomic_store(&a->conns[index], c);
    return c;
}

static void stop_conn(void *ctx, int index, void *local)
{
    (void)ctx;
    (void)index;
    redis_conn_close(local, APP_REDIS_CLOSE_MS);
}

/* A sale round began or its stock changed (on any instance): the sold-out
 * flags of older stock versions, and on a new round the plugin's state of
 * older rounds, stop counting. An archived item is answered 404 from now on. */
static void on_message(void *ctx, const events_message *m)
{
    app *a = ctx;
    if (m->kind == EVENTS_ARCHIVE) {
        gate_set_archived(a->gate, m->item);
        return;
    }
    gate_new_version(a->gate, m->item, reserve_stock_version(m->round, m->changes));
    if (m->kind == EVENTS_ROUND) {
        room_cache_forget(a->rooms, keys_segment_item(m->item));
        pow_cache_forget(a->pow, keys_segment_item(m->item));
    }
    if (m->kind == EVENTS_ROUND && a->plugin.new_round)
        a->plugin.new_round(a->plugin.ctx, m->item, m->round);
}

static void on_resync(void *ctx)
{
    app *a = ctx;
    gate_clear_all(a->gate);
    room_cache_forget(a->rooms, 0);
    pow_cache_forget(a->pow, 0);
    if (a->plugin.resync)
        a->plugin.resync(a->plugin.ctx);
}

/* Every answer: counted for /metrics, and one access-log line when on. */
static void observe_answer(void *ctx, int tag, int status, double seconds, const char *method,
                           const char *path, const char *request_id)
{
    app *a = ctx;
    metrics_request(a->metrics, tag, status, seconds);
    if (a->cfg->access_log)
        log_msg_to(a->access_fd, LOG_INFO, "access", "id=%s method=%s path=%s status=%d ms=%.3f",
                   request_id, method, path, status, seconds * 1000);
}

/* The shop's credentials of the config: admin_token (an admin one, as
 * before scopes) and the lists of each scope. Returns NULL with err set. */
static credentials *credentials_of(const config *cfg, char *err, size_t errlen)
{
    credentials *c = credentials_create();
    char why[CONFIG_ERRLEN];
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if ((cfg->admin_token[0] &&
         credentials_add(c, cfg->admin_token, CREDENTIAL_ADMIN, why, sizeof(why)) < 0) ||
        credentials_add_list(c, cfg->admin_tokens, CREDENTIAL_ADMIN, why, sizeof(why)) < 0 ||
        credentials_add_list(c, cfg->payments_tokens, CREDENTIAL_PAYMENTS, why, sizeof(why)) < 0 ||
        credentials_add_list(c, cfg->orders_read_tokens, CREDENTIAL_ORDERS_READ, why, sizeof(why)) <
            0) {
        snprintf(err, errlen, "credentials: %s", why);
        credentials_free(c);
        return NULL;
    }
    return c;
}

app *app_create(const config *cfg, char *err, size_t errlen)
{
    app *a = calloc(1, sizeof(*a));
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    a->cfg = cfg;
    a->access_fd = STDERR_FILENO;
    redis_clock_init(&a->clock);
    a->creds = credentials_of(cfg, err, errlen);
    if (!a->creds)
        goto fail;
    if (cfg->access_log && cfg->access_log_file[0]) {
        a->access_fd = open(cfg->access_log_file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (a->access_fd < 0) {
            snprintf(err, errlen, "access_log_file %s: %s", cfg->access_log_file, strerror(errno));
            goto fail;
        }
    }
    if (scripts_init(&a->scripts) < 0) {
        snprintf(err, errlen, "a Lua script is missing from the build");
        goto fail;
    }
    redis_nodes *rn = redis_nodes_create(cfg, "server");
    if (!rn) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    /* Each server instance takes a node number for its order ids, so that
     * several instances behind a load balancer never make the same id. */
    unsigned node = 0;
    int loaded = load_scripts(&a->scripts, rn) == 0 && order_node_take(rn, &node) == 0;
    redis_nodes_free(rn);
    if (!loaded) {
        snprintf(err, errlen, "redis: cannot load the scripts or take a node number");
        goto fail;
    }
    order_id_gen_init(&a->ids, node);
    log_msg(LOG_INFO, "server", "order-id node %u", node);

    int nroutes = router_ids() < ROUTE_IDS_MAX ? (int)router_ids() : ROUTE_IDS_MAX;
    for (int r = 0; r < nroutes; r++)
        a->route_names[r] = router_name((route_id)r);
    a->metrics = metrics_create(a->route_names, nroutes);
    if (!a->metrics) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (cfg->rate_limit_per_s > 0) {
        a->ratelimit = ratelimit_create(cfg->rate_limit_per_s, cfg->rate_limit_burst, 262144);
        if (!a->ratelimit) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
    }
    a->gate = gate_create(65536);
    a->rooms = room_cache_create((size_t)cfg->room_places);
    a->pow = pow_cache_create();
    a->nconns = http_server_loop_count(cfg);
    a->conns = calloc((size_t)a->nconns, sizeof(*a->conns));
    if (!a->gate || !a->rooms || !a->pow || !a->conns) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    a->pool = pool_create(cfg->pool_threads, make_session, free_session, a);
    if (!a->pool) {
        snprintf(err, errlen, "cannot start the pool threads");
        goto fail;
    }
    return a;
fail:
    app_free(a);
    return NULL;
}

void app_plug(app *a, const app_plugin *p)
{
    a->plugin = *p;
}

char *app_metrics_text(app *a, pool_session *s)
{
    metrics_gauges g = {.soldout_flags = gate_sold_out_count(a->gate), -1, -1, -1, -1};
    if (s)
        pool_session_gauges(s, &g);
    text_buf t = TEXT_BUF_INIT;
    metrics_render_into(a->metrics, &g, &t);
    if (s)
        room_store_metrics(s, &t);
    room_cache_metrics(a->rooms, &t);
    return text_buf_take(&t);
}

/* metrics_listen's answer, on its listener's thread. */
static char *render_listened(void *ctx)
{
    app *a = ctx;
    if (!a->metrics_session)
        a->metrics_session = pool_session_create(a->cfg, &a->scripts, a->metrics);
    return app_metrics_text(a, a->metrics_session);
}

int app_start(app *a, http_handler handler, char *err, size_t errlen)
{
    events_handler h = {on_message, on_resync, a};
    a->events = events_create(a->cfg, &h);
    if (!a->events) {
        snprintf(err, errlen, "cannot start the events subscriber");
        return -1;
    }
    http_loop_hooks hooks = {start_conn, stop_conn, a};
    a->http = http_server_create(a->cfg, handler, a, &hooks, err, errlen);
    if (!a->http)
        return -1;
    http_server_observe(a->http, observe_answer, a);
    if (a->cfg->metrics_listen[0]) {
        char host[METRICS_HTTP_HOST_MAX];
        int port;
        if (metrics_http_parse_address(a->cfg->metrics_listen, host, &port, err, errlen) < 0)
            return -1;
        a->metrics_http = metrics_http_start(host, port, render_listened, a, err, errlen);
        if (!a->metrics_http)
            return -1;
        log_msg(LOG_INFO, "server", "/metrics on http://%s:%d/metrics", host, port);
    }
    return 0;
}

redis_conn *app_exchange_conn(const http_exchange *ex)
{
    return http_exchange_loop_local(ex);
}

void app_free(app *a)
{
    if (!a)
        return;
    /* Scrapes first: they read the gate and the metrics freed below. */
    metrics_http_stop(a->metrics_http);
    pool_session_free(a->metrics_session);
    /* No new connections; then every request read gets its answer (with
     * Connection: close) while the loops and the pool still run. */
    http_server_quiesce(a->http);
    int left = http_server_drain(a->http, APP_DRAIN_MS);
    if (left > 0)
        log_msg(LOG_WARN, "server", "%d requests still open after %d ms", left, APP_DRAIN_MS);
    /* The pool and the plugin answer whatever they still hold (a drain
     * that timed out) before they stop; only then may the HTTP server go,
     * each loop's Redis connection with it (stop_conn). */
    /* No announcement may reach the plugin once it is gone. */
    events_free(a->events);
    pool_free(a->pool);
    room_joins_free(atomic_load(&a->joins)); /* its drainers ran on the pool */
    if (a->plugin.free)
        a->plugin.free(a->plugin.ctx); /* its own threads answer what they hold */
    http_server_free(a->http);
    gate_free(a->gate);
    room_cache_free(a->rooms);
    pow_cache_free(a->pow);
    redis_clock_close(&a->clock);
    metrics_free(a->metrics);
    ratelimit_free(a->ratelimit);
    credentials_free(a->creds);
    for (int i = 0; a->conns && i < a->nconns; i++)
        redis_conn_free(a->conns[i]);
    free(a->conns);
    if (a->access_fd > STDERR_FILENO)
        close(a->access_fd);
    free(a);
}
