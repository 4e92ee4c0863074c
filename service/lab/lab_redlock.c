/* lab_redlock.c: Redlock over the servers of cfg->redlock_servers. */
#include "lab_redlock.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "clock.h"
#include "keys.h"
#include "lab_keys.h"
#include "lab_redis.h"
#include "log.h"
#include "redis_cluster.h"

struct lab_redlock {
    const config *cfg;
    const scripts *sc;
    int n;
    redis_cluster_node servers[LAB_REDLOCK_MAX];
    redisContext *redis[LAB_REDLOCK_MAX]; /* NULL until used, or after an error */
    unsigned seed;                        /* of the pauses between attempts */
    int64_t warned_ms;                    /* when a server's failure was last logged */
};

int lab_redlock_quorum(int n)
{
    return n / 2 + 1;
}

long lab_redlock_validity_ms(long ttl_ms, long elapsed_ms)
{
    return ttl_ms - elapsed_ms - (ttl_ms / 100 + 2);
}

lab_redlock *lab_redlock_create(const config *cfg, const scripts *sc)
{
    lab_redlock *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    l->cfg = cfg;
    l->sc = sc;
    l->seed = (unsigned)clock_wall_ms() ^ (unsigned)(uintptr_t)l;
    char why[CONFIG_ERRLEN];
    l->n = redis_cluster_seeds_parse(cfg->redlock_servers ? cfg->redlock_servers : "", l->servers,
                                     LAB_REDLOCK_MAX, why, sizeof(why));
    if (l->n < 0) { /* config_load refuses it: a config made otherwise */
        log_msg(LOG_ERROR, "lab", "redlock_servers: %s", why);
        free(l);
        return NULL;
    }
    if (l->n == 0) {
        snprintf(l->servers[0].host, sizeof(l->servers[0].host), "%s", cfg->redis_host);
        l->servers[0].port = cfg->redis_port;
        l->n = 1;
    }
    return l;
}

void lab_redlock_free(lab_redlock *l)
{
    if (!l)
        return;
    for (int i = 0; i < l->n; i++)
        if (l->redis[i])
            redisFree(l->redis[i]);
    free(l);
}

/* Why server i gave no vote, logged at most once a second: a server that
 * refuses every vote (down, or asking for a password it is not given)
 * otherwise shows only as buyers answered busy. */
static void warn(lab_redlock *l, int i, const char *why)
{
    int64_t now = clock_mono_ms();
    if (now - l->warned_ms < 1000)
        return;
    l->warned_ms = now;
    log_msg(LOG_WARN, "lab", "redlock server %s:%d: %s", l->servers[i].host, l->servers[i].port,
            why);
}

/* Server i's connection, made again when it broke; NULL when it is down.
 * The main Redis (cfg's redis_host and redis_port, implied by an empty
 * redlock_servers or named in it) asks for redis_password; the independent
 * servers ask for none. */
static redisContext *server(lab_redlock *l, int i)
{
    if (l->redis[i] && !l->redis[i]->err)
        return l->redis[i];
    if (l->redis[i])
        redisFree(l->redis[i]);
    const redis_cluster_node *s = &l->servers[i];
    int main_redis = s->port == l->cfg->redis_port && strcmp(s->host, l->cfg->redis_host) == 0;
    char err[256];
    l->redis[i] =
        backend_redis_connect_auth(s->host, s->port, l->cfg->redis_timeout_ms,
                                   main_redis ? l->cfg->redis_password : NULL, err, sizeof(err));
    if (!l->redis[i])
        warn(l, i, err);
    return l->redis[i];
}

/* SET NX PX on server i: 1 granted, 0 refused or down. */
static int vote(lab_redlock *l, int i, const char *key, const char *token)
{
    redisContext *rc = server(l, i);
    if (!rc)
        return 0;
    redisReply *rep = redisCommand(rc, "SET %s %s NX PX %d", key, token, l->cfg->lab_lock_ttl_ms);
    int won = rep && rep->type == REDIS_REPLY_STATUS;
    if (rep && rep->type == REDIS_REPLY_ERROR)
        warn(l, i, rep->str);
    freeReplyObject(rep);
    return won;
}

/* Compare-and-delete on every server (also those that refused: the SET may
 * have landed after their answer timed out). */
static void release_all(lab_redlock *l, const char *key, const char *token)
{
    const script *s = &l->sc->s[SCRIPT_LOCK_RELEASE];
    for (int i = 0; i < l->n; i++) {
        redisContext *rc = server(l, i);
        if (!rc)
            continue;
        redisReply *rep = redisCommand(rc, "EVAL %b 1 %s %s", s->text, s->len, key, token);
        freeReplyObject(rep);
    }
}

/* One round over all servers: 1 won (validity left), 0 lost (released). */
static int try_all(lab_redlock *l, const char *key, const char *token)
{
    int64_t start = clock_mono_ms();
    int votes = 0;
    for (int i = 0; i < l->n; i++)
        votes += vote(l, i, key, token);
    long validity = lab_redlock_validity_ms(l->cfg->lab_lock_ttl_ms, clock_mono_ms() - start);
    if (votes >= lab_redlock_quorum(l->n) && validity > 0)
        return 1;
    release_all(l, key, token);
    return 0;
}

sk_status lab_redlock_lock(lab_ctx *c, const lab_request *r, int64_t *remaining)
{
    if (!c->redlock) {
        c->redlock = lab_redlock_create(c->cfg, c->sc);
        if (!c->redlock)
            return SK_INTERNAL;
    }
    lab_redlock *l = c->redlock;
    char key[KEYS_MAX], token[32];
    lab_keys_lock(key, sizeof(key), r->item, r->strategy);
    lab_ctx_token(c, token, sizeof(token));
    int64_t deadline = lab_deadline(c);
    for (;;) {
        if (try_all(l, key, token))
            break;
        if (clock_mono_ms() >= deadline)
            return SK_BUSY;
        /* A random pause, so that competitors that split the votes do not
         * split them again in lockstep. */
        lab_pause_ms(1 + (int)(rand_r(&l->seed) % 5));
    }
    sk_status st = lab_check_work_take(c, r, &lab_redis_key_stock, NULL, remaining);
    release_all(l, key, token);
    return st;
}
