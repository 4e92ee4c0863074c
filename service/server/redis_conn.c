/* redis_conn.c: a hiredis async connection attached to its owner's libevent
 * base, with reconnects on a backoff timer. libevent brings the timers and
 * the hiredis adapter (hiredis/adapters/libevent.h) that we would otherwise
 * write ourselves. */
#include "redis_conn.h"

#include <stdatomic.h>
#include <stdlib.h>

#include <event2/event.h>
#include <hiredis/adapters/libevent.h>

#include "backend.h"
#include "backoff.h"
#include "log.h"

struct redis_conn {
    const config *cfg;
    struct event_base *base;
    struct event *reconnect_ev;
    struct event *close_timer_ev; /* redis_conn_free's bound on the wait */

    redisAsyncContext *ac; /* NULL while disconnected */
    atomic_int connected;  /* the connect callback said yes; read by any thread */
    int backoff_ms;
    int closing; /* redis_conn_free began: no reconnect */

    void *local; /* redis_conn_set_local */
    void (*local_free)(void *);
};

/* Reconnects are retried at most this far apart. */
#define REDIS_CONN_BACKOFF_MAX_MS 1000

static void schedule_reconnect(redis_conn *c)
{
    c->backoff_ms = (int)backoff_next(c->backoff_ms, REDIS_CONN_BACKOFF_MAX_MS);
    struct timeval tv = {c->backoff_ms / 1000, (c->backoff_ms % 1000) * 1000};
    evtimer_add(c->reconnect_ev, &tv);
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    redis_conn *c = ac->data;
    if (status != REDIS_OK) {
        /* hiredis frees the context after this callback. */
        log_msg(LOG_WARN, "redis", "connect to %s:%d failed: %s", c->cfg->redis_host,
                c->cfg->redis_port, ac->errstr);
        c->ac = NULL;
        c->connected = 0;
        if (!c->closing)
            schedule_reconnect(c);
        return;
    }
    c->connected = 1;
    c->backoff_ms = 0;
    log_msg(LOG_DEBUG, "redis", "connected to %s:%d", c->cfg->redis_host, c->cfg->redis_port);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    redis_conn *c = ac->data;
    c->ac = NULL;
    c->connected = 0;
    if (status != REDIS_OK)
        log_msg(LOG_WARN, "redis", "connection lost: %s", ac->errstr);
    if (!c->closing)
        schedule_reconnect(c);
}

static void connect_now(redis_conn *c)
{
    redisAsyncContext *ac = redisAsyncConnect(c->cfg->redis_host, c->cfg->redis_port);
    if (!ac || ac->err) {
        log_msg(LOG_WARN, "redis", "connect: %s", ac ? ac->errstr : "out of memory");
        if (ac)
            redisAsyncFree(ac);
        schedule_reconnect(c);
        return;
    }
    ac->data = c;
    redisLibeventAttach(ac, c->base);
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    if (c->cfg->redis_password && *c->cfg->redis_password)
        redisAsyncCommand(ac, NULL, NULL, "AUTH %s", c->cfg->redis_password);
    c->ac = ac;
}

static void on_reconnect_timer(evutil_socket_t fd, short what, void *arg)
{
    redis_conn *c = arg;
    (void)fd;
    (void)what;
    if (!c->closing && !c->ac)
        connect_now(c);
}

static void on_close_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg; /* only ends the loop's wait in redis_conn_free */
}

static void release_events(redis_conn *c)
{
    if (c->close_timer_ev)
        event_free(c->close_timer_ev);
    if (c->reconnect_ev)
        event_free(c->reconnect_ev);
    c->close_timer_ev = c->reconnect_ev = NULL;
}

redis_conn *redis_conn_create(const config *cfg, struct event_base *base)
{
    redis_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->cfg = cfg;
    c->base = base;
    c->reconnect_ev = evtimer_new(base, on_reconnect_timer, c);
    c->close_timer_ev = evtimer_new(base, on_close_timer, c);
    if (!c->reconnect_ev || !c->close_timer_ev) {
        release_events(c);
        free(c);
        return NULL;
    }
    connect_now(c);
    return c;
}

int redis_conn_connected(const redis_conn *c)
{
    return atomic_load(&c->connected);
}

redisAsyncContext *redis_conn_context(redis_conn *c)
{
    return c->connected ? c->ac : NULL;
}

void redis_conn_flush(redis_conn *c)
{
    if (c->connected && c->ac)
        redisAsyncHandleWrite(c->ac);
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

void redis_conn_close(redis_conn *c, int timeout_ms)
{
    if (!c || c->closing)
        return;
    c->closing = 1;
    if (c->reconnect_ev)
        evtimer_del(c->reconnect_ev);
    if (c->ac && c->connected) {
        /* Frees the context once every reply owed has come (at once when
         * none is), calling on_disconnect, which clears c->ac. */
        redisAsyncDisconnect(c->ac);
        int64_t deadline = backend_mono_ms() + timeout_ms;
        while (c->ac && backend_mono_ms() < deadline) {
            int64_t left = deadline - backend_mono_ms();
            struct timeval tv = {(time_t)(left / 1000), (suseconds_t)(left % 1000) * 1000};
            evtimer_add(c->close_timer_ev, &tv);
            event_base_loop(c->base, EVLOOP_ONCE);
        }
    }
    if (c->ac) {
        /* Still connecting, or Redis did not answer in time: the callbacks
         * still owed get a NULL reply. */
        redisAsyncContext *ac = c->ac;
        c->ac = NULL;
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
    free(c);
}
