/* redis_nodes.c: one thread's blocking Redis connections, routed by key to
 * the one Redis or to the master of the key's slot in a Redis Cluster. */
#include "redis_nodes.h"

#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "backend.h"
#include "backoff.h"
#include "clock.h"
#include "log.h"
#include "redis_cluster.h"
#include "redis_nodes_state.h"
#include "redis_reply.h"

/* How long a command told TRYAGAIN (a slot migrating, some of its keys not
 * on this node) waits at most before it is sent again: the pause is the
 * back-off's (backoff.h: 50 ms, doubled with each redirect followed), so
 * that the attempt's bound of retries waits out a move of about 1.5 s. */
#define TRYAGAIN_PAUSE_MAX_MS 800

/* A connection idle this long is looked at before it is used again: its
 * node may have closed it meanwhile (see closed_while_idle). */
#define IDLE_CHECK_MS 1000

/* --- the table of nodes ------------------------------------------------------ */

/* The index of the node at addr, added when new; -1 when out of memory. */
static int node_add(redis_nodes *rn, const redis_cluster_node *addr)
{
    for (size_t i = 0; i < rn->nnodes; i++)
        if (redis_cluster_node_equal(&rn->nodes[i].addr, addr))
            return (int)i;
    node *grown = array_grow(rn->nodes, &rn->cap, rn->nnodes + 1, sizeof(*grown), 8);
    if (!grown) {
        log_msg(LOG_ERROR, rn->component, "redis nodes: out of memory");
        return -1;
    }
    rn->nodes = grown;
    rn->nodes[rn->nnodes].addr = *addr;
    rn->nodes[rn->nnodes].c = NULL;
    rn->nodes[rn->nnodes].used_ms = 0;
    return (int)rn->nnodes++;
}

/* Drops node i's connection after what failed on it (logged with the
 * context's error); the next use remakes it, after a fresh map. */
void redis_nodes_lost(redis_nodes *rn, size_t i, const char *what)
{
    node *n = &rn->nodes[i];
    const char *why = n->c && n->c->errstr[0] ? n->c->errstr : "connection lost";
    if (rn->nseeds)
        log_msg(LOG_WARN, rn->component, "redis %s on %s:%d: %s", what ? what : "command",
                n->addr.host, n->addr.port, why);
    else
        log_msg(LOG_WARN, rn->component, "redis%s%s: %s", what ? " " : "", what ? what : "", why);
    redisFree(n->c);
    n->c = NULL;
    rn->stale = 1;
}

/* Whether node n's connection, idle for IDLE_CHECK_MS or more, was closed by
 * its node meanwhile: a Redis restarted, killed in a failover, or one that
 * drops idle clients (its `timeout`). hiredis learns it only from the next
 * command, which would then fail though nothing was sent; so a pool thread
 * idle through a failover answered its first request 503. Nothing is owed
 * on an idle connection (redis_nodes.h: callers read every reply before
 * they come back), so anything to read, or a hang-up, means it is gone.
 * One poll that does not wait; a busy connection is not looked at. */
static int closed_while_idle(const node *n, int64_t now)
{
    if (!n->c || n->c->err || now - n->used_ms < IDLE_CHECK_MS)
        return 0;
    struct pollfd p = {.fd = n->c->fd, .events = POLLIN | POLLRDHUP};
    return poll(&p, 1, 0) > 0;
}

/* Node i's connection as redis_nodes_conn_of, its use noted at now. */
static redisContext *conn_at(redis_nodes *rn, size_t i, int64_t now)
{
    node *n = &rn->nodes[i];
    n->used_ms = now;
    if (!rn->nseeds)
        return backend_redis_ensure(&n->c, rn->cfg, rn->component) == 0 ? n->c : NULL;
    if (n->c && !n->c->err)
        return n->c;
    redisFree(n->c);
    char err[256];
    n->c = backend_redis_connect_to(rn->cfg, n->addr.host, n->addr.port, err, sizeof(err));
    if (!n->c) {
        log_msg(LOG_WARN, rn->component, "%s", err);
        rn->stale = 1;
    }
    return n->c;
}

redisContext *redis_nodes_conn_fresh(redis_nodes *rn, size_t i)
{
    node *n = &rn->nodes[i];
    int64_t now = clock_mono_ms();
    if (closed_while_idle(n, now)) {
        log_msg(LOG_INFO, rn->component, "redis %s:%d closed an idle connection; making a new one",
                n->addr.host, n->addr.port);
        redisFree(n->c);
        n->c = NULL;
        if (rn->nseeds)
            rn->stale = 1; /* the node may be gone: read the map again */
    }
    return conn_at(rn, i, now);
}

/* Node i's connection, made when missing or broken; NULL (logged) when the
 * node does not answer. A single Redis keeps backend_redis_ensure's ways. */
redisContext *redis_nodes_conn_of(redis_nodes *rn, size_t i)
{
    return conn_at(rn, i, clock_mono_ms());
}

/* The node index of context c, or -1 when it is none of rn's. */
static int node_of_context(const redis_nodes *rn, const redisContext *c)
{
    for (size_t i = 0; c && i < rn->nnodes; i++)
        if (rn->nodes[i].c == c)
            return (int)i;
    return -1;
}

/* --- the slot map -------------------------------------------------------------- */

/* The map, asked of the nodes rn is connected to (alive a moment ago),
 * then of the seeds, then of the other nodes it knows: a master learnt from
 * a map may answer when every seed is gone. Each is asked on a connection
 * of its own, as rn's may hold what a caller pipelined. NULL with err. */
static redis_cluster_map *map_fetch(redis_nodes *rn, char *err, size_t errlen)
{
    size_t n = 0;
    redis_cluster_node *from = malloc((rn->nnodes + rn->nseeds) * sizeof(*from));
    if (!from) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < rn->nnodes; i++)
        if (rn->nodes[i].c)
            from[n++] = rn->nodes[i].addr;
    for (size_t s = 0; s < rn->nseeds; s++)
        from[n++] = rn->seeds[s];
    for (size_t i = 0; i < rn->nnodes; i++)
        if (!rn->nodes[i].c)
            from[n++] = rn->nodes[i].addr;
    redis_cluster_map *map = backend_redis_cluster_map(from, n, rn->cfg->redis_timeout_ms,
                                                       rn->cfg->redis_password, err, errlen);
    free(from);
    return map;
}

/* Makes map rn's: its masters become nodes (sorted by index, so that a map
 * read again with the same masters lists them in the same order). Returns
 * 0, or -1 when out of memory (the old map stays). */
static int map_install(redis_nodes *rn, redis_cluster_map *map)
{
    size_t n = redis_cluster_map_masters(map);
    size_t *masters = malloc((n ? n : 1) * sizeof(*masters));
    if (!masters)
        return -1;
    for (size_t m = 0; m < n; m++) {
        int idx = node_add(rn, redis_cluster_map_master_at(map, m));
        if (idx < 0) {
            free(masters);
            return -1;
        }
        size_t at = m; /* insertion sort: a handful of masters */
        for (; at > 0 && masters[at - 1] > (size_t)idx; at--)
            masters[at] = masters[at - 1];
        masters[at] = (size_t)idx;
    }
    free(rn->masters);
    redis_cluster_map_free(rn->map);
    rn->masters = masters;
    rn->nmasters = n;
    rn->map = map;
    rn->stale = 0;
    return 0;
}

/* After a failed read of the map, the next waits this long: a read asks
 * every node in turn, each up to redis_timeout_ms, and must not precede
 * every command while the cluster cannot give one. */
#define MAP_RETRY_MS 1000

/* Reads the map when there is none or it is stale. Returns 0 when rn has a
 * map (the old one when no node answered: still the best guess, and a call
 * MAP_RETRY_MS later tries again), -1 when it has none. */
static int map_ready(redis_nodes *rn)
{
    if (rn->map && !rn->stale && !redis_cluster_map_stale(rn->map))
        return 0;
    int64_t now = clock_mono_ms();
    if (rn->fetch_failed_ms && now - rn->fetch_failed_ms < MAP_RETRY_MS)
        return rn->map ? 0 : -1;
    char err[1024];
    redis_cluster_map *map = map_fetch(rn, err, sizeof(err));
    if (!map) {
        log_msg(LOG_WARN, rn->component, "redis cluster: no slot map: %s", err);
        rn->fetch_failed_ms = now;
        return rn->map ? 0 : -1;
    }
    rn->fetch_failed_ms = 0;
    if (map_install(rn, map) < 0) {
        log_msg(LOG_ERROR, rn->component, "redis cluster: out of memory");
        redis_cluster_map_free(map);
        return rn->map ? 0 : -1;
    }
    return 0;
}

/* The index of the node serving key; -1 (logged) when no map or no owner. */
int redis_nodes_index_of_key(redis_nodes *rn, const char *key, size_t len)
{
    if (!rn->nseeds)
        return 0;
    if (map_ready(rn) < 0)
        return -1;
    int slot = redis_cluster_slot(key, len);
    const redis_cluster_node *master = redis_cluster_map_master(rn->map, slot);
    if (!master) {
        log_msg(LOG_WARN, rn->component, "redis cluster: slot %d has no master", slot);
        rn->stale = 1;
        return -1;
    }
    return node_add(rn, master);
}

/* --- commands and redirects ----------------------------------------------------- */

/* Sends cmd to node i (after ASKING when asking) and reads its reply as it
 * comes, an error included; NULL when the node failed (dropped, logged). */
static redisReply *send_to(redis_nodes *rn, size_t i, int asking, const command *cmd)
{
    redisContext *c = redis_nodes_conn_fresh(rn, i);
    if (!c)
        return NULL;
    int sent = !asking || redisAppendCommand(c, "ASKING") == REDIS_OK;
    if (sent)
        sent = (cmd->formatted
                    ? redisAppendFormattedCommand(c, cmd->formatted, cmd->formatted_len)
                    : redisAppendCommandArgv(c, cmd->argc, cmd->argv, cmd->lens)) == REDIS_OK;
    if (!sent) {
        redis_nodes_lost(rn, i, cmd->what); /* out of memory: c may hold half a command */
        return NULL;
    }
    redisReply *r = NULL;
    if (asking && redisGetReply(c, (void **)&r) == REDIS_OK)
        freeReplyObject(r); /* +OK; the command's reply tells the rest */
    r = NULL;
    if (redisGetReply(c, (void **)&r) != REDIS_OK || !r) {
        redis_nodes_lost(rn, i, cmd->what);
        return NULL;
    }
    return r;
}

/* Follows the redirects of cmd, whose reply r came from node i, one hop at a
 * time as redis_cluster_follow decides: MOVED retried at the named node (the
 * map's slot updated, the map marked stale), ASK retried there once after
 * ASKING, TRYAGAIN retried at i after a pause. Returns the final reply as it
 * came (an error included), or NULL when a node failed. */
redisReply *redis_nodes_settle(redis_nodes *rn, size_t i, redisReply *r, const command *cmd)
{
    redis_cluster_attempt a;
    redis_cluster_attempt_init(&a, 0);
    int asking = 0;
    while (rn->map && r && r->type == REDIS_REPLY_ERROR) {
        redis_cluster_node next;
        redis_cluster_action act =
            redis_cluster_follow(rn->map, &a, r->str, r->len, &rn->nodes[i].addr, &next);
        if (act == REDIS_CLUSTER_DELIVER || act == REDIS_CLUSTER_TOO_MANY)
            break;
        freeReplyObject(r);
        if (act == REDIS_CLUSTER_RETRY_LATER) {
            /* To the same node, ASKING again if it was asked; the pause
             * grows with every redirect followed, TRYAGAIN or not. */
            backoff_sleep_ms(backoff_after(a.redirects, BACKOFF_MIN_MS, TRYAGAIN_PAUSE_MAX_MS),
                             NULL);
        } else {
            int to = node_add(rn, &next);
            if (to < 0)
                return NULL;
            i = (size_t)to;
            asking = act == REDIS_CLUSTER_RETRY_ASKING;
        }
        r = send_to(rn, i, asking, cmd);
    }
    return r;
}

/* An error reply is logged (redis_reply_unexpected) and freed; any
 * other reply is returned as is. */
redisReply *redis_nodes_judge(redis_nodes *rn, redisReply *r, const char *what)
{
    if (!r || r->type != REDIS_REPLY_ERROR)
        return r;
    redis_reply_unexpected(r, rn->component, what);
    return NULL;
}

/* cmd on the node serving key, redirects followed, error replies judged. */
static redisReply *run(redis_nodes *rn, const char *key, size_t keylen, const command *cmd)
{
    int i = redis_nodes_index_of_key(rn, key, keylen);
    if (i < 0)
        return NULL;
    return redis_nodes_settle(rn, (size_t)i, send_to(rn, (size_t)i, 0, cmd), cmd);
}

/* --- the API ----------------------------------------------------------------------- */

redis_nodes *redis_nodes_create(const config *cfg, const char *component)
{
    redis_nodes *rn = calloc(1, sizeof(*rn));
    if (!rn || !(rn->component = strdup(component)))
        goto fail;
    rn->cfg = cfg;
    char err[256];
    int n = redis_cluster_seeds_parse(cfg->redis_cluster ? cfg->redis_cluster : "", rn->seeds,
                                      REDIS_CLUSTER_MAX_SEEDS, err, sizeof(err));
    if (n < 0) { /* config_check refuses such a config: a caller's mistake */
        log_msg(LOG_ERROR, component, "redis_cluster: %s", err);
        goto fail;
    }
    rn->nseeds = (size_t)n;
    if (!rn->nseeds) {
        /* The one Redis is node 0; its address is cfg's, for the logs. */
        redis_cluster_node one = {"", cfg->redis_port};
        snprintf(one.host, sizeof(one.host), "%s", cfg->redis_host);
        if (node_add(rn, &one) < 0)
            goto fail;
    }
    return rn;
fail:
    redis_nodes_free(rn);
    return NULL;
}

void redis_nodes_free(redis_nodes *rn)
{
    if (!rn)
        return;
    for (size_t i = 0; i < rn->nnodes; i++)
        redisFree(rn->nodes[i].c);
    free(rn->nodes);
    free(rn->masters);
    redis_cluster_map_free(rn->map);
    free(rn->component);
    free(rn);
}

int redis_nodes_is_cluster(const redis_nodes *rn)
{
    return rn->nseeds > 0;
}

redisContext *redis_nodes_for_key(redis_nodes *rn, const char *key)
{
    int i = redis_nodes_index_of_key(rn, key, strlen(key));
    return i < 0 ? NULL : redis_nodes_conn_of(rn, (size_t)i);
}

size_t redis_nodes_count(redis_nodes *rn)
{
    if (!rn->nseeds)
        return 1;
    return map_ready(rn) < 0 ? 0 : rn->nmasters;
}

/* The map is read here only when there is none: a stale one is refreshed by
 * count and by commands, so a loop's bound and its indices agree. */
redisContext *redis_nodes_at(redis_nodes *rn, size_t i)
{
    if (!rn->nseeds)
        return i == 0 ? redis_nodes_conn_of(rn, 0) : NULL;
    if (!rn->map && map_ready(rn) < 0)
        return NULL;
    return i < rn->nmasters ? redis_nodes_conn_of(rn, rn->masters[i]) : NULL;
}

redisContext *redis_nodes_any(redis_nodes *rn)
{
    size_t n = redis_nodes_count(rn);
    for (size_t i = 0; i < n; i++) {
        redisContext *c = redis_nodes_at(rn, i);
        if (c)
            return c;
    }
    for (size_t s = 0; s < rn->nseeds; s++) {
        int i = node_add(rn, &rn->seeds[s]);
        redisContext *c = i < 0 ? NULL : redis_nodes_conn_of(rn, (size_t)i);
        if (c)
            return c;
    }
    return NULL;
}

redisReply *redis_nodes_reply(redis_nodes *rn, redisContext *c, redisReply *r, const char *what)
{
    int i = node_of_context(rn, c);
    if (!r) {
        if (i >= 0)
            redis_nodes_lost(rn, (size_t)i, what);
        else
            log_msg(LOG_WARN, rn->component, "redis%s%s: no connection", what ? " " : "",
                    what ? what : "");
        return NULL;
    }
    redis_cluster_redirect rd;
    if (rn->nseeds && r->type == REDIS_REPLY_ERROR &&
        redis_cluster_redirect_parse(r->str, r->len, &rd) != REDIS_CLUSTER_NOT_REDIRECT &&
        rd.kind != REDIS_CLUSTER_TRYAGAIN)
        rn->stale = 1;
    return redis_nodes_judge(rn, r, what);
}

redisReply *redis_nodes_command(redis_nodes *rn, const char *key, int argc, const char **argv,
                                const size_t *lens)
{
    command cmd = {.argc = argc, .argv = argv, .lens = lens, .what = argv[0]};
    return redis_nodes_judge(rn, run(rn, key, strlen(key), &cmd), argv[0]);
}

redisReply *redis_nodes_vcommand(redis_nodes *rn, const char *key, const char *fmt, va_list ap)
{
    char *formatted = NULL;
    int len = redisvFormatCommand(&formatted, fmt, ap);
    /* The command's name, for the logs: fmt's first word. */
    char what[32];
    snprintf(what, sizeof(what), "%.*s", (int)strcspn(fmt, " "), fmt);
    if (len < 0) {
        log_msg(LOG_ERROR, rn->component, "redis %s: cannot build the command", what);
        return NULL;
    }
    command cmd = {.formatted = formatted, .formatted_len = (size_t)len, .what = what};
    redisReply *r = redis_nodes_judge(rn, run(rn, key, strlen(key), &cmd), what);
    redisFreeCommand(formatted);
    return r;
}

redisReply *redis_nodes_commandf(redis_nodes *rn, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redis_nodes_vcommand(rn, key, fmt, ap);
    va_end(ap);
    return r;
}

/* A script call on the node of its first key (scripts_run's sender). */
typedef struct script_call {
    redis_nodes *rn;
    const char *key;
    const char *name;
} script_call;

static redisReply *script_send(void *ctx, int argc, const char **argv, const size_t *lens)
{
    const script_call *sc = ctx;
    command cmd = {.argc = argc, .argv = argv, .lens = lens, .what = sc->name};
    return run(sc->rn, sc->key, strlen(sc->key), &cmd);
}

redisReply *redis_nodes_script(redis_nodes *rn, const script *sc, int nkeys, int nargs,
                               const char *const *keys_args)
{
    script_call call = {rn, nkeys > 0 ? keys_args[0] : "", sc->name};
    return redis_nodes_judge(rn, scripts_run(sc, nkeys, nargs, keys_args, script_send, &call),
                             sc->name);
}
