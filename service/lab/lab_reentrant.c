/* lab_reentrant.c: the reentrant lock with its watchdog and its wake-ups. */
#include "lab_reentrant.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "clock.h"
#include "keys.h"
#include "lab_fence.h"
#include "lab_keys.h"
#include "lab_watchdog.h"
#include "log.h"

/* The lock as one request holds it. */
typedef struct reentrant {
    char key[KEYS_MAX];
    char channel[KEYS_MAX];
    char owner[32];
    char lease[16];
    lab_fence fence; /* the token of this hold */
} reentrant;

/* One attempt: 1 taken (or re-entered), 0 held by another (*left_ms: its
 * lease), -1 backend down. */
static int try_lock(lab_ctx *c, const reentrant *l, int64_t *left_ms)
{
    const char *keys_args[] = {l->key, l->owner, l->lease};
    redisReply *rep = lab_ctx_script(c, SCRIPT_LAB_REENTRANT_LOCK, 1, 2, keys_args);
    if (!rep)
        return -1;
    int out = -1;
    if (rep->type == REDIS_REPLY_INTEGER) {
        out = rep->integer == 0;
        *left_ms = rep->integer;
    }
    freeReplyObject(rep);
    return out;
}

/* Leaves the lock once: the holds left, or -1 when it was not held. */
static long long unlock(lab_ctx *c, const reentrant *l)
{
    const char *keys_args[] = {l->key, l->owner, l->lease, l->channel};
    redisReply *rep = lab_ctx_script(c, SCRIPT_LAB_REENTRANT_UNLOCK, 1, 3, keys_args);
    long long left = rep && rep->type == REDIS_REPLY_INTEGER ? rep->integer : -1;
    freeReplyObject(rep);
    if (left < 0)
        log_msg(LOG_WARN, "lab", "%s: left by %s, who no longer held it", l->key, l->owner);
    return left;
}

/* Drops the thread's subscriber connection (broken, or in an unknown state). */
static void drop_subscriber(lab_ctx *c)
{
    redisFree(c->subscriber);
    c->subscriber = NULL;
}

/* The thread's subscriber connection, subscribed to the lock's channel, or
 * NULL. The connection is made once per thread and kept: a wait costs a
 * SUBSCRIBE and an UNSUBSCRIBE, not a connection. On a cluster it goes to
 * any node: a cluster hands every PUBLISH to all of its nodes. */
static redisContext *subscribe(lab_ctx *c, const reentrant *l)
{
    if (!c->subscriber) {
        char err[256];
        c->subscriber = backend_redis_connect_any(c->cfg, err, sizeof(err));
        if (!c->subscriber) {
            log_msg(LOG_WARN, "lab", "%s", err);
            return NULL;
        }
    }
    redisReply *rep = redisCommand(c->subscriber, "SUBSCRIBE %s", l->channel);
    int ok = rep && rep->type == REDIS_REPLY_ARRAY;
    freeReplyObject(rep);
    if (!ok) {
        drop_subscriber(c);
        return NULL;
    }
    return c->subscriber;
}

/* Leaves the channel; the releases announced meanwhile are read and dropped
 * on the way to the confirmation, so the next wait starts clean. */
static void unsubscribe(lab_ctx *c, const reentrant *l)
{
    if (redisAppendCommand(c->subscriber, "UNSUBSCRIBE %s", l->channel) != REDIS_OK) {
        drop_subscriber(c);
        return;
    }
    for (;;) {
        void *msg = NULL;
        if (redisGetReply(c->subscriber, &msg) != REDIS_OK || !msg) {
            drop_subscriber(c);
            return;
        }
        redisReply *rep = msg;
        int done = rep->type == REDIS_REPLY_ARRAY && rep->elements >= 1 &&
                   rep->element[0]->type == REDIS_REPLY_STRING &&
                   strcmp(rep->element[0]->str, "unsubscribe") == 0;
        freeReplyObject(rep);
        if (done)
            return;
    }
}

/* Waits up to ms for a message on sub (a release), and drops what came.
 * Returns 0, or -1 when the connection broke. */
static int wait_release(redisContext *sub, int64_t ms)
{
    void *msg = NULL;
    if (redisGetReplyFromReader(sub, &msg) != REDIS_OK)
        return -1;
    if (msg) {
        freeReplyObject(msg);
        return 0;
    }
    struct pollfd p = {.fd = sub->fd, .events = POLLIN};
    int n = poll(&p, 1, (int)(ms > 0 ? ms : 1));
    if (n < 0)
        return errno == EINTR ? 0 : -1;
    if (n == 0)
        return 0;
    if (redisBufferRead(sub) != REDIS_OK)
        return -1;
    while (redisGetReplyFromReader(sub, &msg) == REDIS_OK && msg) {
        freeReplyObject(msg);
        msg = NULL;
    }
    return sub->err ? -1 : 0;
}

/* Takes the lock, waiting for releases: one attempt, and when it is held,
 * a subscription made before the next attempt (so that a release between
 * the two is not missed), then sleeps until a release is announced or the
 * holder's lease runs out (a holder that died announces nothing). */
static sk_status acquire(lab_ctx *c, const reentrant *l)
{
    int64_t deadline = lab_deadline(c);
    redisContext *sub = NULL;
    sk_status st;
    for (;;) {
        int64_t left_ms = 0;
        int won = try_lock(c, l, &left_ms);
        if (won != 0) {
            st = won > 0 ? SK_OK : SK_BACKEND_DOWN;
            break;
        }
        int64_t now = clock_mono_ms();
        if (now >= deadline) {
            st = SK_BUSY;
            break;
        }
        if (!sub) {
            sub = subscribe(c, l);
            if (!sub) {
                st = SK_BACKEND_DOWN;
                break;
            }
            continue;
        }
        if (wait_release(sub, left_ms < deadline - now ? left_ms : deadline - now) < 0) {
            st = SK_BACKEND_DOWN;
            break;
        }
    }
    if (sub && st != SK_BACKEND_DOWN)
        unsubscribe(c, l);
    else if (sub)
        drop_subscriber(c);
    return st;
}

static sk_status reentrant_read(lab_ctx *c, const lab_request *r, void *arg, int64_t *value)
{
    reentrant *l = arg;
    return lab_fence_stock.read(c, r, &l->fence, value);
}

/* The take re-enters the lock it runs under, and leaves it once. Re-entry
 * alone cannot tell a holder that was paused past its lease (a pause stops
 * the watchdog too) and whose successor has come and gone; the token can:
 * the stock refuses it once a newer holder has read. */
static sk_status reentrant_take(lab_ctx *c, const lab_request *r, void *arg, int64_t seen,
                                int64_t *remaining)
{
    reentrant *l = arg;
    int64_t left_ms;
    int won = try_lock(c, l, &left_ms);
    if (won <= 0)
        /* Another holder has it: our lease ran out, so we must not sell. */
        return won < 0 ? SK_BACKEND_DOWN : SK_BUSY;
    sk_status st = lab_fence_stock.take(c, r, &l->fence, seen, remaining);
    unlock(c, l);
    return st;
}

static const lab_counter reentrant_stock = {reentrant_read, reentrant_take, NULL};

sk_status lab_reentrant_lock(lab_ctx *c, const lab_request *r, int64_t *remaining)
{
    if (!c->watchdog) {
        c->watchdog = lab_watchdog_create(c->cfg, &c->sc->s[SCRIPT_LAB_REENTRANT_RENEW]);
        if (!c->watchdog)
            return SK_INTERNAL;
    }
    reentrant l;
    lab_keys_lock(l.key, sizeof(l.key), r->item, r->strategy);
    lab_keys_lock_channel(l.channel, sizeof(l.channel), r->item, r->strategy);
    lab_ctx_token(c, l.owner, sizeof(l.owner));
    snprintf(l.lease, sizeof(l.lease), "%d", c->cfg->lab_lock_ttl_ms);
    sk_status st = acquire(c, &l);
    if (st != SK_OK)
        return st;
    st = lab_fence_issue(c, r, &l.fence);
    if (st != SK_OK) {
        unlock(c, &l);
        return st;
    }
    lab_watchdog_watch(c->watchdog, l.key, l.owner);
    st = lab_check_work_take(c, r, &reentrant_stock, &l, remaining);
    lab_watchdog_unwatch(c->watchdog);
    unlock(c, &l);
    return st;
}
