/* events.c: a blocking subscriber on its own thread; poll() with a short
 * timeout lets it notice the stop flag without tearing the connection down.
 * One connection is enough in a Redis Cluster too: a PUBLISH on any node
 * reaches the subscribers of every node, so any seed that answers will do. */
#include "events.h"

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "backend.h"
#include "backoff.h"
#include "keys.h"
#include "log.h"
#include "validate.h"

struct events {
    const config *cfg;
    events_handler h;
    pthread_t thread;
    atomic_int stop;
};

/* Reads n space-separated positive integers that follow prefix. */
static int parse_ids(const char *msg, size_t len, const char *prefix, int64_t *out, int n)
{
    size_t plen = strlen(prefix);
    if (len < plen || memcmp(msg, prefix, plen) != 0)
        return -1;
    const char *a = msg + plen, *end = msg + len;
    for (int i = 0; i < n; i++) {
        const char *stop = i + 1 < n ? memchr(a, ' ', (size_t)(end - a)) : end;
        if (!stop || validate_id(a, (size_t)(stop - a), &out[i]) < 0)
            return -1;
        a = stop + 1;
    }
    return 0;
}

int events_parse(const char *msg, size_t len, events_message *m)
{
    int64_t v[3];
    if (parse_ids(msg, len, "round ", v, 2) == 0) {
        *m = (events_message){EVENTS_ROUND, v[0], v[1], 0};
        return 0;
    }
    if (parse_ids(msg, len, "archive ", v, 1) == 0) {
        *m = (events_message){EVENTS_ARCHIVE, v[0], 0, 0};
        return 0;
    }
    if (parse_ids(msg, len, "restock ", v, 3) == 0 || parse_ids(msg, len, "return ", v, 3) == 0) {
        *m = (events_message){EVENTS_STOCK, v[0], v[1], v[2]};
        return 0;
    }
    return -1;
}

static void handle(events *e, redisReply *r)
{
    /* ["message", channel, payload] */
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 || !r->element[0]->str ||
        strcmp(r->element[0]->str, "message") != 0)
        return;
    events_message m;
    if (events_parse(r->element[2]->str, r->element[2]->len, &m) == 0)
        e->h.on_message(e->h.ctx, &m);
    else
        log_msg(LOG_WARN, "events", "unknown event '%.*s'", (int)r->element[2]->len,
                r->element[2]->str);
}

/* One subscription until it breaks or we stop. */
static void listen_once(events *e, redisContext *c)
{
    redisReply *r = redisCommand(c, "SUBSCRIBE %s", KEYS_EVENTS);
    if (!r)
        return;
    freeReplyObject(r);
    e->h.on_resync(e->h.ctx);
    log_msg(LOG_INFO, "events", "subscribed to %s", KEYS_EVENTS);
    while (!atomic_load(&e->stop)) {
        struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
        int n = poll(&pfd, 1, 200);
        if (n == 0)
            continue;
        if (n < 0 || redisBufferRead(c) != REDIS_OK)
            return;
        void *reply;
        while (redisGetReplyFromReader(c, &reply) == REDIS_OK && reply) {
            handle(e, reply);
            freeReplyObject(reply);
        }
        if (c->err)
            return;
    }
}

/* Resubscriptions are retried at most this far apart. */
#define EVENTS_BACKOFF_MAX_MS 1000

static void *events_main(void *arg)
{
    events *e = arg;
    int64_t delay = 0;
    while (!atomic_load(&e->stop)) {
        char err[256];
        redisContext *c = backend_redis_connect_any(e->cfg, err, sizeof(err));
        if (c) {
            /* A subscriber waits for messages: no read timeout. */
            struct timeval none = {0, 0};
            redisSetTimeout(c, none);
            listen_once(e, c);
            redisFree(c);
            delay = 0;
            if (!atomic_load(&e->stop))
                log_msg(LOG_WARN, "events", "subscription lost; resubscribing");
        } else {
            log_msg(LOG_WARN, "events", "%s", err);
        }
        delay = backoff_next(delay, EVENTS_BACKOFF_MAX_MS);
        backoff_sleep_ms(delay, &e->stop);
    }
    return NULL;
}

events *events_create(const config *cfg, const events_handler *h)
{
    events *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->cfg = cfg;
    e->h = *h;
    atomic_init(&e->stop, 0);
    if (pthread_create(&e->thread, NULL, events_main, e) != 0) {
        free(e);
        return NULL;
    }
    return e;
}

void events_free(events *e)
{
    if (!e)
        return;
    atomic_store(&e->stop, 1);
    pthread_join(e->thread, NULL);
    free(e);
}
