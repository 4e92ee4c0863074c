/* lab_watchdog.c: one renewal thread per lab thread. */
#include "lab_watchdog.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "keys.h"
#include "log.h"
#include "redis_nodes.h"

struct lab_watchdog {
    const config *cfg;
    const script *renew;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond; /* CLOCK_MONOTONIC */
    int quit;
    int watching;
    int renewing; /* a renewal is on the wire (mu released) */
    long renewals;
    char key[KEYS_MAX];
    char owner[48];
    redis_nodes *redis; /* the thread's own connections, by key */
};

/* One renewal of key for owner: 1 renewed, 0 not held any more, -1 down. */
static int renew_once(lab_watchdog *w, const char *key, const char *owner)
{
    char ttl[16];
    snprintf(ttl, sizeof(ttl), "%d", w->cfg->lab_lock_ttl_ms);
    const char *ka[] = {key, owner, ttl};
    redisReply *r = redis_nodes_script(w->redis, w->renew, 1, 2, ka);
    int out = r && r->type == REDIS_REPLY_INTEGER ? (r->integer == 1) : -1;
    freeReplyObject(r);
    return out;
}

static void *run(void *arg)
{
    lab_watchdog *w = arg;
    int period = w->cfg->lab_lock_ttl_ms / 3 > 0 ? w->cfg->lab_lock_ttl_ms / 3 : 1;
    pthread_mutex_lock(&w->mu);
    while (!w->quit) {
        if (!w->watching) {
            pthread_cond_wait(&w->cond, &w->mu);
            continue;
        }
        /* Sleep a period unless told otherwise; a new lock, an unwatch or
         * the quit wakes us and the loop looks again. */
        struct timespec ts = clock_after(CLOCK_MONOTONIC, period);
        char key[KEYS_MAX], owner[sizeof(w->owner)];
        snprintf(key, sizeof(key), "%s", w->key);
        snprintf(owner, sizeof(owner), "%s", w->owner);
        if (pthread_cond_timedwait(&w->cond, &w->mu, &ts) != ETIMEDOUT)
            continue;
        if (!w->watching || w->quit || strcmp(owner, w->owner) != 0)
            continue;
        w->renewing = 1;
        pthread_mutex_unlock(&w->mu);
        int renewed = renew_once(w, key, owner);
        pthread_mutex_lock(&w->mu);
        w->renewing = 0;
        pthread_cond_broadcast(&w->cond);
        if (renewed > 0) {
            w->renewals++;
        } else if (renewed == 0 && w->watching && strcmp(owner, w->owner) == 0) {
            log_msg(LOG_WARN, "lab", "watchdog: %s was lost before its holder let it go", key);
            w->watching = 0;
        }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

lab_watchdog *lab_watchdog_create(const config *cfg, const script *renew)
{
    lab_watchdog *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->cfg = cfg;
    w->renew = renew;
    if (!(w->redis = redis_nodes_create(cfg, "lab")))
        goto fail_cond;
    if (clock_cond_init(&w->cond) < 0)
        goto fail_cond;
    if (pthread_mutex_init(&w->mu, NULL) != 0)
        goto fail_mutex;
    if (pthread_create(&w->thread, NULL, run, w) != 0)
        goto fail_thread;
    return w;
fail_thread:
    pthread_mutex_destroy(&w->mu);
fail_mutex:
    pthread_cond_destroy(&w->cond);
fail_cond:
    redis_nodes_free(w->redis);
    free(w);
    return NULL;
}

void lab_watchdog_free(lab_watchdog *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->quit = 1;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    redis_nodes_free(w->redis);
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

void lab_watchdog_watch(lab_watchdog *w, const char *key, const char *owner)
{
    pthread_mutex_lock(&w->mu);
    snprintf(w->key, sizeof(w->key), "%s", key);
    snprintf(w->owner, sizeof(w->owner), "%s", owner);
    w->watching = 1;
    w->renewals = 0;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->mu);
}

long lab_watchdog_unwatch(lab_watchdog *w)
{
    pthread_mutex_lock(&w->mu);
    w->watching = 0;
    pthread_cond_broadcast(&w->cond);
    /* A renewal on the wire lands before the unlock that follows: harmless
     * after it too (the renew script checks the owner), but plainer. */
    while (w->renewing)
        pthread_cond_wait(&w->cond, &w->mu);
    long n = w->renewals;
    pthread_mutex_unlock(&w->mu);
    return n;
}
