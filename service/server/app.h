/* app.h: the one application context of seckill-server, built in main and
 * handed to every handler. No globals: everything a request needs is here.
 *
 * The laboratory is a part that the server's main plugs in (app_plugin): it
 * answers the routes the product leaves to it, maps its own outcomes
 * (SK_STATUS_PART on), and hears of every new round, as any part of the
 * server would. The product knows of it only the route table it registers
 * (router.h's router_part_routes, linked into every build: answered 404
 * lab_off when no part is plugged in) and the "lab" flag of the items it
 * creates; none of its code. */
#ifndef SECKILL_APP_H
#define SECKILL_APP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "credentials.h"
#include "events.h"
#include "http_server.h"
#include "metrics.h"
#include "metrics_http.h"
#include "order.h"
#include "pool.h"
#include "pow_gate.h"
#include "ratelimit.h"
#include "redis_clock.h"
#include "redis_conn.h"
#include "room_cache.h"
#include "room_joins.h"
#include "router.h"
#include "scripts.h"
#include "gate.h"
#include "status.h"

/* A part plugged into the server (the laboratory). Every callback may be
 * NULL; ctx is handed to each. */
typedef struct app_plugin {
    void *ctx;
    /* Answers a request for one of the plugin's routes (ROUTE_PART on), on
     * the HTTP thread: at once, or deferred to a thread of its own. */
    void (*handle)(void *ctx, http_exchange *ex, const route_match *m);
    /* The item was created or reset through this instance: a new round
     * with this initial stock began. Called on a pool thread before the
     * admin is answered, so state the plugin keeps in Redis or PostgreSQL
     * is cleared by the time the answer arrives. SK_OK or
     * SK_BACKEND_DOWN (the reset answers 503 and may be repeated). */
    sk_status (*item_round)(void *ctx, int64_t item, int64_t initial_stock);
    /* A round began on any instance (the round announcement; events
     * thread): state kept in this process is stale. */
    void (*new_round)(void *ctx, int64_t item, int64_t round);
    /* Announcements may have been missed: all of it is stale. */
    void (*resync)(void *ctx);
    /* Stops and frees the plugin; after the server's threads stopped. */
    void (*free)(void *ctx);
} app_plugin;

typedef struct app {
    const config *cfg;
    credentials *creds; /* the shop's: admin_token and the *_tokens lists */
    scripts scripts;
    order_id_gen ids;
    gate *gate;
    room_cache *rooms; /* the waiting rooms as this instance last read them (room.h) */
    pow_gate *pow;     /* the items' proof-of-work terms and key (pow_gate.h) */
    redis_clock clock; /* bounds on Redis's clock, from the reserve calls */
    /* One Redis connection of the purchase path per HTTP loop, made on the
     * loop's base when the server starts (app_start) and used only on that
     * loop's thread; connected() is read by any. */
    _Atomic(redis_conn *) *conns;
    int nconns;
    pool *pool;
    /* The waiting room's joins, group-committed on the pool (room.c makes
     * it at the first join). */
    _Atomic(room_joins *) joins;
    app_plugin plugin; /* all NULL when none is plugged in */
    events *events;
    metrics *metrics;
    ratelimit *ratelimit;                   /* per buyer; NULL when rate_limit_per_s is 0 */
    const char *route_names[ROUTE_IDS_MAX]; /* the metrics' labels */
    http_server *http;
    int access_fd; /* the access log's: access_log_file, or stderr */
    /* metrics_listen's listener, and the Redis connections of its gauges
     * (used on its one thread only, made at its first scrape); NULL when
     * /metrics is on port alone. */
    metrics_http *metrics_http;
    struct pool_session *metrics_session;
} app;

/* Connects to Redis (scripts, node number), starts the pool.
 * Nothing is served yet: app_start() does that. Returns NULL with err set;
 * the config must outlive the app. */
app *app_create(const config *cfg, char *err, size_t errlen);

/* Plugs p in (copied); before app_start(). app_free() frees it. */
void app_plug(app *a, const app_plugin *p);

/* Subscribes to the round announcements and serves HTTP with handler (ctx:
 * the app), each HTTP loop with a Redis connection of its own; and /metrics
 * on metrics_listen when set. Returns 0, or -1 with err set. */
int app_start(app *a, http_handler handler, char *err, size_t errlen);

/* The text of /metrics: the counters, and the gauges read now, those in
 * Redis through s (NULL: unknown). The caller frees it; NULL when out of
 * memory. */
char *app_metrics_text(app *a, struct pool_session *s);

/* The purchase path's Redis connection of the loop that holds ex; on that
 * loop's thread (the handler's). */
redis_conn *app_exchange_conn(const http_exchange *ex);

/* Stops in the order that loses nothing: no new connections, the answers
 * still owed, then the threads, then the plugin. NULL is a no-op. */
void app_free(app *a);

#endif
