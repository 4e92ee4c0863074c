/* app.h: the one application context of seckill-server, built in main and
 * handed to every handler. No globals: everything a request needs is here. */
#ifndef SECKILL_APP_H
#define SECKILL_APP_H

#include <stdatomic.h>
#include <stddef.h>

#include "config.h"
#include "events.h"
#include "http_server.h"
#include "metrics.h"
#include "ratelimit.h"
#include "router.h"
#include "lab_local.h"
#include "lab_zookeeper.h"
#include "order.h"
#include "pool.h"
#include "redis_loop.h"
#include "scripts.h"
#include "soldout.h"

typedef struct app {
    const config *cfg;
    scripts scripts;
    order_id_gen ids;
    soldout *soldout;
    redis_loop **loops;
    int nloops;
    atomic_uint next_loop;
    pool *pool;
    lab_local *lab_local;  /* the laboratory's in-process counters */
    pool *lab_pool;        /* the laboratory's blocking strategies */
    lab_zookeeper *lab_zk; /* the laboratory's ZooKeeper session (zookeeper_lock) */
    events *events;
    metrics *metrics;
    ratelimit *ratelimit;                 /* per buyer; NULL when rate_limit_per_s is 0 */
    const char *route_names[ROUTE_COUNT]; /* the metrics' labels */
    http_server *http;
} app;

/* Connects to Redis (scripts, node number), starts the loops, the pools, the
 * subscriber and finally the HTTP server. Returns NULL with err set; the
 * config must outlive the app. */
app *app_create(const config *cfg, char *err, size_t errlen);

/* The Redis loop for the next asynchronous job (round robin). */
redis_loop *app_next_loop(app *a);

/* Stops in the order that loses nothing: no new connections, the answers
 * still owed, then the threads. NULL is a no-op. */
void app_free(app *a);

#endif
