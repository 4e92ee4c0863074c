/* redis_loop.c: libevent loop + hiredis async connection + an inbox of jobs
 * woken by an eventfd. libevent brings the timers and the hiredis adapter
 * (hiredis/adapters/libevent.h) that we would otherwise write ourselves. */
#include "redis_loop.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <event2/event.h>
#include <hiredis/adapters/libevent.h>

#include "backoff.h"
#include "log.h"

typedef struct job {
    redis_job_fn fn;
    void *arg;
    struct job *next;
} job;

struct redis_loop {
    const config *cfg;
    struct event_base *base;
    struct event *wake_ev;
    struct event *reconnect_ev;
    int wake_fd;
    pthread_t thread;
    int thread_started;

    redisAsyncContext *ac; /* loop thread only; NULL while disconnected */
    atomic_int connected;  /* the connect callback said yes; read by any thread */
    int backoff_ms;

    void *local; /* redis_loop_set_local */
    void (*local_free)(void *);

    pthread_mutex_t lock; /* guards inbox and stopping */
    job *head, *tail;
    int stopping;
};

/* Reconnects are retried at most this far apart. */
#define REDIS_LOOP_BACKOFF_MAX_MS 1000

static void connect_now(redis_loop *l);

static void schedule_reconnect(redis_loop *l)
{
    l->backoff_ms = (int)backoff_next(l->backoff_ms, REDIS_LOOP_BACKOFF_MAX_MS);
    struct timeval tv = {l->backoff_ms / 1000, (l->backoff_ms % 1000) * 1000};
    evtimer_add(l->reconnect_ev, &tv);
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    redis_loop *l = ac->data;
    if (status != REDIS_OK) {
        /* hiredis frees the context after this callback. */
        log_msg(LOG_WARN, "redis", "connect to %s:%d failed: %s", l->cfg->redis_host,
                l->cfg->redis_port, ac->errstr);
        l->ac = NULL;
        l->connected = 0;
        if (!l->stopping)
            schedule_reconnect(l);
        else
            event_base_loopexit(l->base, NULL);
        return;
    }
    l->connected = 1;
    l->backoff_ms = 0;
    log_msg(LOG_INFO, "redis", "connected to %s:%d", l->cfg->redis_host, l->cfg->redis_port);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    redis_loop *l = ac->data;
    l->ac = NULL;
    l->connected = 0;
    if (status != REDIS_OK)
        log_msg(LOG_WARN, "redis", "connection lost: %s", ac->errstr);
    if (!l->stopping)
        schedule_reconnect(l);
    else
        event_base_loopexit(l->base, NULL);
}

static void connect_now(redis_loop *l)
{
    redisAsyncContext *ac = redisAsyncConnect(l->cfg->redis_host, l->cfg->redis_port);
    if (!ac || ac->err) {
        log_msg(LOG_WARN, "redis", "connect: %s", ac ? ac->errstr : "out of memory");
        if (ac)
            redisAsyncFree(ac);
        schedule_reconnect(l);
        return;
    }
    ac->data = l;
    redisLibeventAttach(ac, l->base);
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    if (l->cfg->redis_password && *l->cfg->redis_password)
        redisAsyncCommand(ac, NULL, NULL, "AUTH %s", l->cfg->redis_password);
    l->ac = ac;
}

static void on_reconnect_timer(evutil_socket_t fd, short what, void *arg)
{
    redis_loop *l = arg;
    (void)fd;
    (void)what;
    if (!l->stopping && !l->ac)
        connect_now(l);
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    redis_loop *l = arg;
    uint64_t n;
    (void)what;
    if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
        log_msg(LOG_ERROR, "redis", "eventfd read: %s", strerror(errno));

    pthread_mutex_lock(&l->lock);
    job *j = l->head;
    l->head = l->tail = NULL;
    int stopping = l->stopping;
    pthread_mutex_unlock(&l->lock);

    /* Commands are only buffered here; hiredis writes them all at once when
     * the loop next sees the socket writable. Jobs that arrived before a stop
     * still run on the connection: they were accepted. */
    redisAsyncContext *ac = redis_loop_context(l);
    while (j) {
        job *next = j->next;
        j->fn(ac, j->arg);
        free(j);
        j = next;
    }
    if (stopping) {
        if (l->ac)
            redisAsyncDisconnect(l->ac); /* after the replies still owed */
        else
            event_base_loopexit(l->base, NULL);
        evtimer_del(l->reconnect_ev);
    }
}

static void *loop_main(void *arg)
{
    redis_loop *l = arg;
    connect_now(l);
    event_base_dispatch(l->base);
    return NULL;
}

redis_loop *redis_loop_create(const config *cfg, char *err, size_t errlen)
{
    redis_loop *l = calloc(1, sizeof(*l));
    if (!l) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    l->cfg = cfg;
    l->wake_fd = -1;
    pthread_mutex_init(&l->lock, NULL);
    l->base = event_base_new();
    l->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (!l->base || l->wake_fd < 0) {
        snprintf(err, errlen, "event loop: %s", strerror(errno));
        goto fail;
    }
    l->wake_ev = event_new(l->base, l->wake_fd, EV_READ | EV_PERSIST, on_wake, l);
    l->reconnect_ev = evtimer_new(l->base, on_reconnect_timer, l);
    if (!l->wake_ev || !l->reconnect_ev || event_add(l->wake_ev, NULL) < 0) {
        snprintf(err, errlen, "event loop: out of memory");
        goto fail;
    }
    if (pthread_create(&l->thread, NULL, loop_main, l) != 0) {
        snprintf(err, errlen, "cannot start the Redis loop thread");
        goto fail;
    }
    l->thread_started = 1;
    return l;
fail:
    redis_loop_free(l);
    return NULL;
}

int redis_loop_connected(const redis_loop *l)
{
    return atomic_load(&l->connected);
}

redisAsyncContext *redis_loop_context(redis_loop *l)
{
    return l->connected ? l->ac : NULL;
}

struct event_base *redis_loop_base(redis_loop *l)
{
    return l->base;
}

void *redis_loop_local(redis_loop *l)
{
    return l->local;
}

void redis_loop_set_local(redis_loop *l, void *local, void (*free_fn)(void *))
{
    l->local = local;
    l->local_free = free_fn;
}

int redis_loop_submit(redis_loop *l, redis_job_fn fn, void *arg)
{
    job *j = malloc(sizeof(*j));
    if (!j)
        return -1;
    j->fn = fn;
    j->arg = arg;
    j->next = NULL;
    pthread_mutex_lock(&l->lock);
    if (l->stopping) {
        pthread_mutex_unlock(&l->lock);
        free(j);
        return -1;
    }
    /* Only the job that finds the inbox empty rings: under load one wake-up
     * carries many jobs. */
    int ring = l->head == NULL;
    if (l->tail)
        l->tail->next = j;
    else
        l->head = j;
    l->tail = j;
    pthread_mutex_unlock(&l->lock);
    if (ring) {
        uint64_t one = 1;
        ssize_t ignored = write(l->wake_fd, &one, sizeof(one));
        (void)ignored;
    }
    return 0;
}

void redis_loop_free(redis_loop *l)
{
    if (!l)
        return;
    if (l->thread_started) {
        pthread_mutex_lock(&l->lock);
        l->stopping = 1;
        pthread_mutex_unlock(&l->lock);
        uint64_t one = 1;
        ssize_t ignored = write(l->wake_fd, &one, sizeof(one));
        (void)ignored;
        pthread_join(l->thread, NULL);
    }
    if (l->local_free)
        l->local_free(l->local);
    if (l->wake_ev)
        event_free(l->wake_ev);
    if (l->reconnect_ev)
        event_free(l->reconnect_ev);
    if (l->base)
        event_base_free(l->base);
    if (l->wake_fd >= 0)
        close(l->wake_fd);
    pthread_mutex_destroy(&l->lock);
    free(l);
}
