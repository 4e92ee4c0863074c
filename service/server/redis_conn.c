/* redis_conn.c: hiredis async connections attached to their owner's
 * libevent base, one a node, with reconnects on a backoff timer; on a Redis
 * Cluster, the slot map those nodes are chosen by, read on the loop itself.
 * libevent brings the timers and the hiredis adapter
 * (hiredis/adapters/libevent.h) that we would otherwise write ourselves. */
#include "redis_conn.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <hiredis/adapters/libevent.h>

#include "clock.h"
#include "backoff.h"
#include "log.h"

/* Nodes one loop knows at most: the seeds, the masters and the nodes that
 * redirects named. A cluster of more masters than this is beyond a loop. */
#define REDIS_CONN_MAX_NODES 64

/* Reconnects (and the refreshes of the map that failed) are retried at most
 * this far apart. */
#define REDIS_CONN_BACKOFF_MAX_MS 1000

typedef struct node {
    redis_conn *owner;
    redis_cluster_node addr;
    redisAsyncContext *ac; /* NULL while disconnected */
    int connected;         /* the connect callback said yes */
    int backoff_ms;
    int64_t connect_ms; /* when the last connect began (monotonic) */
    struct event *reconnect_ev;
} node;

/* A redirect to a node in backoff connects at once, at most this often. */
#define REDIS_CONN_REDIRECT_CONNECT_MS 100

/* With reserve_wait_replicas = auto the map says which masters have a
 * replica to wait for, so it is read again this often: CLUSTER SLOTS lists a
 * replica only once it has replicated something (a fresh cluster's replicas
 * appear seconds after its masters), and drops one that failed. */
#define REDIS_CONN_RESYNC_MS 5000

struct redis_conn {
    const config *cfg;
    struct event_base *base;
    struct event *close_timer_ev; /* redis_conn_close's bound on the wait */

    /* Only grows, so a node's pointer stays valid for the loop's life. On a
     * single Redis it holds that one; on a cluster the seeds come first. */
    node *nodes[REDIS_CONN_MAX_NODES];
    int nnodes;
    int nseeds;

    int cluster;
    redis_cluster_map *map; /* cluster: NULL until the first CLUSTER SLOTS */
    int stale;              /* the map is known to be out of date */
    int refreshing;         /* a CLUSTER SLOTS is on its way */
    int refresh_backoff_ms;
    struct event *refresh_ev; /* the retry of a refresh that failed */
    struct event *resync_ev;  /* the map read again now and then (REDIS_CONN_RESYNC_MS) */

    atomic_int ready; /* redis_conn_connected; read by any thread */
    int closing;      /* redis_conn_close began: no reconnect, no refresh */

    void *local; /* redis_conn_set_local */
    void (*local_free)(void *);
};

static void connect_now(node *n);
static void request_refresh(redis_conn *c);

/* --- nodes -------------------------------------------------------------- */

static node *node_find(redis_conn *c, const redis_cluster_node *addr)
{
    for (int i = 0; i < c->nnodes; i++)
        if (redis_cluster_node_equal(&c->nodes[i]->addr, addr))
            return c->nodes[i];
    return NULL;
}

static void on_reconnect_timer(evutil_socket_t fd, short what, void *arg);

/* The node at addr, added (and connecting) when new. NULL when the table is
 * full or out of memory. */
static node *node_get(redis_conn *c, const redis_cluster_node *addr)
{
    node *n = node_find(c, addr);
    if (n)
        return n;
    if (c->nnodes == REDIS_CONN_MAX_NODES)
        return NULL;
    n = calloc(1, sizeof(*n));
    if (!n)
        return NULL;
    n->owner = c;
    n->addr = *addr;
    n->reconnect_ev = evtimer_new(c->base, on_reconnect_timer, n);
    if (!n->reconnect_ev) {
        free(n);
        return NULL;
    }
    c->nodes[c->nnodes++] = n;
    if (!c->closing)
        connect_now(n);
    return n;
}

/* Whether n is worth reconnecting to: on a single Redis always; on a
 * cluster, a master of the map, or a seed while there is no map (a failed
 * master's replica took its slots: it is left alone until a map names it
 * again). */
static int node_wanted(const node *n)
{
    redis_conn *c = n->owner;
    if (!c->cluster)
        return 1;
    if (!c->map) {
        for (int i = 0; i < c->nseeds; i++)
            if (c->nodes[i] == n)
                return 1;
        return 0;
    }
    for (size_t i = 0; i < redis_cluster_map_masters(c->map); i++)
        if (redis_cluster_node_equal(redis_cluster_map_master_at(c->map, i), &n->addr))
            return 1;
    return 0;
}

static void update_ready(redis_conn *c)
{
    int ready;
    if (!c->cluster) {
        ready = c->nodes[0]->connected;
    } else {
        /* on_slots takes only maps that cover every slot. */
        ready = c->map != NULL;
        for (size_t i = 0; ready && i < redis_cluster_map_masters(c->map); i++) {
            node *n = node_find(c, redis_cluster_map_master_at(c->map, i));
            ready = n && n->connected;
        }
    }
    atomic_store(&c->ready, ready);
}

/* --- one node's connection ------------------------------------------------ */

static void schedule_reconnect(node *n)
{
    if (n->owner->closing || !node_wanted(n))
        return;
    n->backoff_ms = (int)backoff_next(n->backoff_ms, REDIS_CONN_BACKOFF_MAX_MS);
    struct timeval tv = {n->backoff_ms / 1000, (n->backoff_ms % 1000) * 1000};
    evtimer_add(n->reconnect_ev, &tv);
}

/* A node lost or unreachable: on a cluster its slots may have a new owner
 * (a failover), so the map is read again. */
static void node_down(node *n)
{
    redis_conn *c = n->owner;
    n->ac = NULL;
    n->connected = 0;
    update_ready(c);
    if (c->cluster) {
        c->stale = 1;
        request_refresh(c);
    }
    schedule_reconnect(n);
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    node *n = ac->data;
    if (status != REDIS_OK) {
        /* hiredis frees the context after this callback. */
        log_msg(LOG_WARN, "redis", "connect to %s:%d failed: %s", n->addr.host, n->addr.port,
                ac->errstr);
        node_down(n);
        return;
    }
    redis_conn *c = n->owner;
    n->connected = 1;
    n->backoff_ms = 0;
    log_msg(LOG_DEBUG, "redis", "connected to %s:%d", n->addr.host, n->addr.port);
    update_ready(c);
    if (c->cluster && (!c->map || c->stale))
        request_refresh(c);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    node *n = ac->data;
    if (status != REDIS_OK)
        log_msg(LOG_WARN, "redis", "connection to %s:%d lost: %s", n->addr.host, n->addr.port,
                ac->errstr);
    node_down(n);
}

static void connect_now(node *n)
{
    redis_conn *c = n->owner;
    redisAsyncContext *ac = redisAsyncConnect(n->addr.host, n->addr.port);
    if (!ac || ac->err) {
        log_msg(LOG_WARN, "redis", "connect to %s:%d: %s", n->addr.host, n->addr.port,
                ac ? ac->errstr : "out of memory");
        if (ac)
            redisAsyncFree(ac);
        schedule_reconnect(n);
        return;
    }
    ac->data = n;
    n->connect_ms = clock_mono_ms();
    redisLibeventAttach(ac, c->base);
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    if (c->cfg->redis_password && *c->cfg->redis_password)
        redisAsyncCommand(ac, NULL, NULL, "AUTH %s", c->cfg->redis_password);
    n->ac = ac;
}

static void on_reconnect_timer(evutil_socket_t fd, short what, void *arg)
{
    node *n = arg;
    (void)fd;
    (void)what;
    if (!n->owner->closing && !n->ac && node_wanted(n))
        connect_now(n);
}

/* --- the slot map (cluster) -------------------------------------------------- */

static void schedule_refresh(redis_conn *c)
{
    c->refresh_backoff_ms = (int)backoff_next(c->refresh_backoff_ms, REDIS_CONN_BACKOFF_MAX_MS);
    struct timeval tv = {c->refresh_backoff_ms / 1000, (c->refresh_backoff_ms % 1000) * 1000};
    evtimer_add(c->refresh_ev, &tv);
}

/* Takes a new map: connects to its masters (the nodes already known keep
 * their connections). */
static void take_map(redis_conn *c, redis_cluster_map *map)
{
    redis_cluster_map_free(c->map);
    c->map = map;
    c->stale = 0;
    c->refresh_backoff_ms = 0;
    for (size_t i = 0; i < redis_cluster_map_masters(map); i++) {
        node *n = node_get(c, redis_cluster_map_master_at(map, i));
        if (!n)
            log_msg(LOG_ERROR, "redis", "more than %d cluster nodes: some slots are unserved",
                    REDIS_CONN_MAX_NODES);
        else if (!n->ac && !evtimer_pending(n->reconnect_ev, NULL) && !c->closing)
            connect_now(n); /* left alone while it was no master: a master now */
    }
    update_ready(c);
}

static void on_slots(redisAsyncContext *ac, void *reply, void *privdata)
{
    redis_conn *c = privdata;
    const node *n = ac->data;
    c->refreshing = 0;
    if (c->closing)
        return;
    char err[256] = "no reply";
    redis_cluster_map *map =
        reply ? redis_cluster_map_from_slots(reply, n->addr.host, err, sizeof(err)) : NULL;
    if (map && redis_cluster_map_unowned(map) > 0) {
        snprintf(err, sizeof(err), "%d slots have no owner", redis_cluster_map_unowned(map));
        redis_cluster_map_free(map);
        map = NULL;
    }
    if (!map) {
        log_msg(LOG_WARN, "redis", "CLUSTER SLOTS from %s:%d: %s", n->addr.host, n->addr.port, err);
        schedule_refresh(c);
        return;
    }
    take_map(c, map);
}

/* Sends CLUSTER SLOTS to a connected node, unless one is on its way. With no
 * node connected, the next connect asks (on_connect). */
static void request_refresh(redis_conn *c)
{
    if (!c->cluster || c->closing || c->refreshing)
        return;
    for (int i = 0; i < c->nnodes; i++) {
        node *n = c->nodes[i];
        if (n->connected && redisAsyncCommand(n->ac, on_slots, c, "CLUSTER SLOTS") == REDIS_OK) {
            c->refreshing = 1;
            return;
        }
    }
}

static void on_refresh_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    request_refresh(arg);
}

/* --- the connection set ------------------------------------------------------ */

static void on_close_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg; /* only ends the loop's wait in redis_conn_close */
}

static void release_events(redis_conn *c)
{
    for (int i = 0; i < c->nnodes; i++) {
        if (c->nodes[i]->reconnect_ev)
            event_free(c->nodes[i]->reconnect_ev);
        c->nodes[i]->reconnect_ev = NULL;
    }
    if (c->close_timer_ev)
        event_free(c->close_timer_ev);
    if (c->refresh_ev)
        event_free(c->refresh_ev);
    if (c->resync_ev)
        event_free(c->resync_ev);
    c->close_timer_ev = c->refresh_ev = c->resync_ev = NULL;
}

/* The seeds of a cluster, or the one Redis, as the first nodes. */
static int add_first_nodes(redis_conn *c)
{
    redis_cluster_node seeds[REDIS_CLUSTER_MAX_SEEDS];
    char err[256];
    int n = redis_cluster_seeds_parse(c->cfg->redis_cluster ? c->cfg->redis_cluster : "", seeds,
                                      REDIS_CLUSTER_MAX_SEEDS, err, sizeof(err));
    if (n < 0) {
        log_msg(LOG_ERROR, "redis", "redis_cluster: %s", err);
        return -1;
    }
    c->cluster = n > 0;
    if (n == 0) {
        n = 1;
        snprintf(seeds[0].host, sizeof(seeds[0].host), "%s", c->cfg->redis_host);
        seeds[0].port = c->cfg->redis_port;
    }
    for (int i = 0; i < n; i++)
        if (!node_get(c, &seeds[i])) /* a seed named twice is one node */
            return -1;
    c->nseeds = c->nnodes;
    return 0;
}

redis_conn *redis_conn_create(const config *cfg, struct event_base *base)
{
    redis_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->cfg = cfg;
    c->base = base;
    c->close_timer_ev = evtimer_new(base, on_close_timer, c);
    c->refresh_ev = evtimer_new(base, on_refresh_timer, c);
    if (!c->close_timer_ev || !c->refresh_ev || add_first_nodes(c) < 0) {
        c->closing = 1;
        for (int i = 0; i < c->nnodes; i++)
            if (c->nodes[i]->ac) {
                redisAsyncContext *ac = c->nodes[i]->ac;
                c->nodes[i]->ac = NULL;
                redisAsyncFree(ac);
            }
        release_events(c);
        redis_conn_free(c);
        return NULL;
    }
    if (c->cluster && cfg->reserve_wait_replicas == CONFIG_WAIT_AUTO) {
        struct timeval tv = {REDIS_CONN_RESYNC_MS / 1000, 0};
        c->resync_ev = event_new(base, -1, EV_PERSIST, on_refresh_timer, c);
        if (c->resync_ev)
            evtimer_add(c->resync_ev, &tv);
        else
            log_msg(LOG_WARN, "redis", "out of memory: the slot map is read only after a change");
    }
    return c;
}

int redis_conn_replicas_for(const redis_conn *c, int slot)
{
    size_t n = 0;
    if (c->cluster && c->map)
        redis_cluster_map_replicas(c->map, slot, &n);
    return (int)n;
}

int redis_conn_connected(const redis_conn *c)
{
    return atomic_load(&c->ready);
}

/* The node serving slot, or NULL. */
static node *node_for(redis_conn *c, int slot)
{
    if (!c->cluster)
        return c->nodes[0];
    const redis_cluster_node *owner = c->map ? redis_cluster_map_master(c->map, slot) : NULL;
    return owner ? node_get(c, owner) : NULL;
}

redisAsyncContext *redis_conn_context_for(redis_conn *c, int slot)
{
    node *n = node_for(c, slot);
    return n && n->connected ? n->ac : NULL;
}

int redis_conn_connecting_for(redis_conn *c, int slot)
{
    node *n = node_for(c, slot);
    return n && n->ac && !n->connected;
}

int redis_conn_drop(redis_conn *c, redisAsyncContext *ac, const char *why)
{
    node *n = ac ? ac->data : NULL;
    if (!n || n->owner != c || n->ac != ac)
        return -1;
    log_msg(LOG_WARN, "redis", "%s:%d: %s: dropping the connection", n->addr.host, n->addr.port,
            why);
    /* Cleared first: a callback owed a NULL reply must not send on it. */
    int connected = n->connected;
    n->ac = NULL;
    n->connected = 0;
    /* Calls on_disconnect (node_down) when hiredis had it connected. */
    redisAsyncFree(ac);
    if (!connected)
        node_down(n);
    return 0;
}

redis_cluster_action redis_conn_follow(redis_conn *c, const redisAsyncContext *ac,
                                       const redisReply *r, redis_cluster_attempt *attempt,
                                       redisAsyncContext **next)
{
    *next = NULL;
    if (!c->cluster || !c->map || !r || r->type != REDIS_REPLY_ERROR)
        return REDIS_CLUSTER_DELIVER;
    const node *from = ac->data;
    redis_cluster_node to;
    redis_cluster_action act =
        redis_cluster_follow(c->map, attempt, r->str, r->len, &from->addr, &to);
    if (act == REDIS_CLUSTER_RETRY) {
        c->stale = 1;
        request_refresh(c);
    }
    if (act == REDIS_CLUSTER_RETRY || act == REDIS_CLUSTER_RETRY_ASKING ||
        act == REDIS_CLUSTER_RETRY_LATER) {
        node *n = node_get(c, &to);
        /* The cluster says it serves the slot: a node in backoff (down a
         * moment ago, a master back after a failback) is tried now. */
        if (n && !n->ac && !c->closing &&
            clock_mono_ms() - n->connect_ms >= REDIS_CONN_REDIRECT_CONNECT_MS) {
            evtimer_del(n->reconnect_ev);
            connect_now(n);
        }
        *next = n && n->connected ? n->ac : NULL;
    }
    return act;
}

void redis_conn_flush(redis_conn *c)
{
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i]->connected && c->nodes[i]->ac)
            redisAsyncHandleWrite(c->nodes[i]->ac);
}

struct event_base *redis_conn_base(redis_conn *c)
{
    return c->base;
}

void *redis_conn_local(redis_conn *c)
{
    return c->local;
}

void redis_conn_set_local(redis_conn *c, void *local, void (*free_fn)(void *))
{
    c->local = local;
    c->local_free = free_fn;
}

/* Whether a connected node still has its context (the replies it owes have
 * not all come). */
static int replies_owed(const redis_conn *c)
{
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i]->ac && c->nodes[i]->connected)
            return 1;
    return 0;
}

void redis_conn_close(redis_conn *c, int timeout_ms)
{
    if (!c || c->closing)
        return;
    c->closing = 1;
    evtimer_del(c->refresh_ev);
    for (int i = 0; i < c->nnodes; i++) {
        node *n = c->nodes[i];
        evtimer_del(n->reconnect_ev);
        /* Frees the context once every reply owed has come (at once when
         * none is), calling on_disconnect, which clears n->ac. */
        if (n->ac && n->connected)
            redisAsyncDisconnect(n->ac);
    }
    int64_t deadline = clock_mono_ms() + timeout_ms;
    while (replies_owed(c) && clock_mono_ms() < deadline) {
        int64_t left = deadline - clock_mono_ms();
        struct timeval tv = {(time_t)(left / 1000), (suseconds_t)(left % 1000) * 1000};
        evtimer_add(c->close_timer_ev, &tv);
        event_base_loop(c->base, EVLOOP_ONCE);
    }
    for (int i = 0; i < c->nnodes; i++) {
        /* Still connecting, or Redis did not answer in time: the callbacks
         * still owed get a NULL reply. */
        redisAsyncContext *ac = c->nodes[i]->ac;
        c->nodes[i]->ac = NULL;
        if (ac)
            redisAsyncFree(ac);
    }
    if (c->local_free)
        c->local_free(c->local);
    c->local = NULL;
    c->local_free = NULL;
    release_events(c); /* while their base lives */
}

void redis_conn_free(redis_conn *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->nnodes; i++)
        free(c->nodes[i]);
    redis_cluster_map_free(c->map);
    free(c);
}
