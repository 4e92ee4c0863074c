/* redis_nodes.c: one thread's blocking Redis connections, routed by key to
 * the one Redis or to the master of the key's slot in a Redis Cluster. */
#include "redis_nodes.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "backoff.h"
#include "clock.h"
#include "log.h"
#include "redis_cluster.h"

/* How long a command told TRYAGAIN (a slot migrating, some of its keys not
 * on this node) waits at most before it is sent again: the pause is the
 * back-off's (backoff.h: 50 ms, doubled with each redirect followed), so
 * that the attempt's bound of retries waits out a move of about 1.5 s. */
#define TRYAGAIN_PAUSE_MAX_MS 800

/* A node and its connection (NULL until needed, or after it broke). */
typedef struct node {
    redis_cluster_node addr;
    redisContext *c;
} node;

/* The table of nodes only grows: an index, once handed out, names the same
 * node for rn's life, whatever maps come and go. That keeps a caller's loop
 * over redis_nodes_at, and a scan whose callback sends commands (and so may
 * refresh the map), on solid ground. */
struct redis_nodes {
    const config *cfg;
    char *component;
    redis_cluster_node seeds[REDIS_CLUSTER_MAX_SEEDS];
    size_t nseeds; /* 0: a single Redis, node 0 */
    node *nodes;
    size_t nnodes, cap;
    redis_cluster_map *map;  /* NULL until first read */
    int stale;               /* a node failed or a redirect came: read the map again */
    int64_t fetch_failed_ms; /* when the last read of the map failed (monotonic), 0: never */
    size_t *masters;         /* the map's masters as node indices, ascending */
    size_t nmasters;
};

/* One command: its arguments, or the whole of it already in the protocol
 * (formatted, as hiredis' printf format makes it), and its name in the logs. */
typedef struct command {
    int argc;
    const char **argv;
    const size_t *lens; /* NULL: strlen */
    const char *formatted;
    size_t formatted_len;
    const char *what;
} command;

static void pause_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* --- the table of nodes ------------------------------------------------------ */

/* The index of the node at addr, added when new; -1 when out of memory. */
static int node_add(redis_nodes *rn, const redis_cluster_node *addr)
{
    for (size_t i = 0; i < rn->nnodes; i++)
        if (redis_cluster_node_equal(&rn->nodes[i].addr, addr))
            return (int)i;
    if (rn->nnodes == rn->cap) {
        size_t cap = rn->cap ? rn->cap * 2 : 8;
        node *grown = realloc(rn->nodes, cap * sizeof(*grown));
        if (!grown) {
            log_msg(LOG_ERROR, rn->component, "redis nodes: out of memory");
            return -1;
        }
        rn->nodes = grown;
        rn->cap = cap;
    }
    rn->nodes[rn->nnodes].addr = *addr;
    rn->nodes[rn->nnodes].c = NULL;
    return (int)rn->nnodes++;
}

/* Drops node i's connection after what failed on it (logged with the
 * context's error); the next use remakes it, after a fresh map. */
static void node_lost(redis_nodes *rn, size_t i, const char *what)
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

/* Node i's connection, made when missing or broken; NULL (logged) when the
 * node does not answer. A single Redis keeps backend_redis_ensure's ways. */
static redisContext *node_conn(redis_nodes *rn, size_t i)
{
    node *n = &rn->nodes[i];
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
    redis_cluster_map *map = redis_cluster_fetch_map(from, n, rn->cfg->redis_timeout_ms,
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
static int node_of_key(redis_nodes *rn, const char *key, size_t len)
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
    redisContext *c = node_conn(rn, i);
    if (!c)
        return NULL;
    int sent = !asking || redisAppendCommand(c, "ASKING") == REDIS_OK;
    if (sent)
        sent = (cmd->formatted
                    ? redisAppendFormattedCommand(c, cmd->formatted, cmd->formatted_len)
                    : redisAppendCommandArgv(c, cmd->argc, cmd->argv, cmd->lens)) == REDIS_OK;
    if (!sent) {
        node_lost(rn, i, cmd->what); /* out of memory: c may hold half a command */
        return NULL;
    }
    redisReply *r = NULL;
    if (asking && redisGetReply(c, (void **)&r) == REDIS_OK)
        freeReplyObject(r); /* +OK; the command's reply tells the rest */
    r = NULL;
    if (redisGetReply(c, (void **)&r) != REDIS_OK || !r) {
        node_lost(rn, i, cmd->what);
        return NULL;
    }
    return r;
}

/* Follows the redirects of cmd, whose reply r came from node i, one hop at a
 * time as redis_cluster_follow decides: MOVED retried at the named node (the
 * map's slot updated, the map marked stale), ASK retried there once after
 * ASKING, TRYAGAIN retried at i after a pause. Returns the final reply as it
 * came (an error included), or NULL when a node failed. */
static redisReply *settle(redis_nodes *rn, size_t i, redisReply *r, const command *cmd)
{
    redis_cluster_attempt a;
    redis_cluster_attempt_init(&a, 0);
    int asking = 0;
    int64_t pause = 0;
    while (rn->map && r && r->type == REDIS_REPLY_ERROR) {
        redis_cluster_node next;
        redis_cluster_action act =
            redis_cluster_follow(rn->map, &a, r->str, r->len, &rn->nodes[i].addr, &next);
        if (act == REDIS_CLUSTER_DELIVER || act == REDIS_CLUSTER_TOO_MANY)
            break;
        freeReplyObject(r);
        pause = backoff_next(pause, TRYAGAIN_PAUSE_MAX_MS); /* grows with every redirect */
        if (act == REDIS_CLUSTER_RETRY_LATER) {
            pause_ms((int)pause); /* to the same node, ASKING again if it was asked */
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

/* An error reply is logged and freed (its node named in a cluster); any
 * other reply is returned as is. */
static redisReply *judge(redis_nodes *rn, redisReply *r, const char *what)
{
    if (!r || r->type != REDIS_REPLY_ERROR)
        return r;
    log_msg(LOG_WARN, rn->component, "redis%s%s: %s", what ? " " : "", what ? what : "", r->str);
    freeReplyObject(r);
    return NULL;
}

/* cmd on the node serving key, redirects followed, error replies judged. */
static redisReply *run(redis_nodes *rn, const char *key, size_t keylen, const command *cmd)
{
    int i = node_of_key(rn, key, keylen);
    if (i < 0)
        return NULL;
    return settle(rn, (size_t)i, send_to(rn, (size_t)i, 0, cmd), cmd);
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
    int i = node_of_key(rn, key, strlen(key));
    return i < 0 ? NULL : node_conn(rn, (size_t)i);
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
        return i == 0 ? node_conn(rn, 0) : NULL;
    if (!rn->map && map_ready(rn) < 0)
        return NULL;
    return i < rn->nmasters ? node_conn(rn, rn->masters[i]) : NULL;
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
        redisContext *c = i < 0 ? NULL : node_conn(rn, (size_t)i);
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
            node_lost(rn, (size_t)i, what);
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
    return judge(rn, r, what);
}

redisReply *redis_nodes_command(redis_nodes *rn, const char *key, int argc, const char **argv,
                                const size_t *lens)
{
    command cmd = {.argc = argc, .argv = argv, .lens = lens, .what = argv[0]};
    return judge(rn, run(rn, key, strlen(key), &cmd), argv[0]);
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
    redisReply *r = judge(rn, run(rn, key, strlen(key), &cmd), what);
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

/* The script call's vector, EVALSHA or EVAL (by_text), in a block of its
 * own: a batch's call may hold more than SCRIPTS_ARGV_MAX entries. */
static redisReply *script_run(redis_nodes *rn, const script *sc, int by_text, int nkeys, int nargs,
                              const char *const *keys_args)
{
    int cap = 3 + nkeys + nargs;
    const char **argv = malloc((size_t)cap * sizeof(*argv));
    size_t *lens = malloc((size_t)cap * sizeof(*lens));
    char numkeys[12];
    redisReply *r = NULL;
    int argc = argv && lens
                   ? scripts_argv(sc, by_text, nkeys, nargs, keys_args, argv, lens, cap, numkeys)
                   : -1;
    if (argc < 0) {
        log_msg(LOG_ERROR, rn->component, "redis %s: cannot build the call", sc->name);
    } else {
        command cmd = {.argc = argc, .argv = argv, .lens = lens, .what = sc->name};
        const char *key = nkeys > 0 ? keys_args[0] : "";
        r = run(rn, key, strlen(key), &cmd);
    }
    free(argv);
    free(lens);
    return r;
}

redisReply *redis_nodes_script(redis_nodes *rn, const script *sc, int nkeys, int nargs,
                               const char *const *keys_args)
{
    redisReply *r = script_run(rn, sc, 0, nkeys, nargs, keys_args);
    /* The node that answered forgot the script (restarted, or a new master
     * after a failover): the text this once, which also loads it there. */
    if (scripts_is_noscript(r)) {
        freeReplyObject(r);
        r = script_run(rn, sc, 1, nkeys, nargs, keys_args);
    }
    return judge(rn, r, sc->name);
}

/* --- pipelines ----------------------------------------------------------------------- */

/* The node of each of the n commands (at[k]), every one of them connected.
 * Returns 0, or -1 (logged) when a node is unknown or does not answer. */
static int pipeline_route(redis_nodes *rn, size_t n, int argc, const char **argv, size_t *at)
{
    for (size_t k = 0; k < n; k++) {
        const char *key = argv[k * (size_t)argc + 1];
        int i = node_of_key(rn, key, strlen(key));
        if (i < 0)
            return -1;
        at[k] = (size_t)i;
    }
    for (size_t k = 0; k < n; k++)
        if (!node_conn(rn, at[k]))
            return -1;
    return 0;
}

/* Whether any of the n commands goes to node i. */
static int pipeline_has(size_t i, size_t n, const size_t *at)
{
    for (size_t k = 0; k < n; k++)
        if (at[k] == i)
            return 1;
    return 0;
}

/* Writes node i's share of the commands at once. Returns 0, or -1 when the
 * node failed (dropped, logged). */
static int pipeline_write(redis_nodes *rn, size_t i, size_t n, int argc, const char **argv,
                          const size_t *at)
{
    redisContext *c = rn->nodes[i].c;
    int done = 0;
    for (size_t k = 0; k < n; k++)
        if (at[k] == i &&
            redisAppendCommandArgv(c, argc, argv + k * (size_t)argc, NULL) != REDIS_OK)
            goto fail;
    while (!done)
        if (redisBufferWrite(c, &done) != REDIS_OK)
            goto fail;
    return 0;
fail:
    node_lost(rn, i, "pipeline");
    return -1;
}

/* Reads node i's replies into replies[k], as they come. Returns 0, or -1
 * when the node failed (dropped, logged). */
static int pipeline_read(redis_nodes *rn, size_t i, size_t n, const size_t *at,
                         redisReply **replies)
{
    for (size_t k = 0; k < n; k++) {
        if (at[k] != i)
            continue;
        if (redisGetReply(rn->nodes[i].c, (void **)&replies[k]) != REDIS_OK || !replies[k]) {
            node_lost(rn, i, "pipeline");
            return -1;
        }
    }
    return 0;
}

/* Writes every node's share first, so the nodes work at once, then reads
 * every node that took its share, also when another failed: a connection
 * must not be left with replies to read. Returns 0 or -1. */
static int pipeline_exchange(redis_nodes *rn, size_t n, int argc, const char **argv,
                             const size_t *at, redisReply **replies)
{
    int rc = 0;
    for (size_t i = 0; i < rn->nnodes; i++)
        if (pipeline_has(i, n, at) && pipeline_write(rn, i, n, argc, argv, at) < 0)
            rc = -1;
    for (size_t i = 0; i < rn->nnodes; i++)
        if (pipeline_has(i, n, at) && rn->nodes[i].c && pipeline_read(rn, i, n, at, replies) < 0)
            rc = -1;
    return rc;
}

int redis_nodes_pipeline(redis_nodes *rn, size_t n, int argc, const char **argv,
                         redisReply **replies)
{
    for (size_t k = 0; k < n; k++)
        replies[k] = NULL;
    size_t *at = malloc((n ? n : 1) * sizeof(*at));
    int rc = at ? pipeline_route(rn, n, argc, argv, at) : -1;
    if (rc == 0)
        rc = pipeline_exchange(rn, n, argc, argv, at, replies);
    /* Only now the redirects, one command at a time: a follow sends on
     * connections that must have nothing left to read. */
    for (size_t k = 0; rc == 0 && k < n; k++) {
        command cmd = {
            .argc = argc, .argv = argv + k * (size_t)argc, .what = argv[k * (size_t)argc]};
        redisReply *r = settle(rn, at[k], replies[k], &cmd);
        if (!r)
            rc = -1;
        replies[k] = judge(rn, r, cmd.what);
    }
    for (size_t k = 0; rc < 0 && k < n; k++) {
        freeReplyObject(replies[k]);
        replies[k] = NULL;
    }
    free(at);
    return rc;
}

/* --- scans ---------------------------------------------------------------------------- */

/* One SCAN page on node i from cursor (updated), each called per key. The
 * connection is looked up anew per page: a callback's command may have
 * dropped it, and a cursor outlives its connection. Returns as
 * redis_nodes_scan. */
static int scan_page(redis_nodes *rn, size_t i, char *cursor, size_t cap, const char *pattern,
                     redis_nodes_scan_fn each, void *ctx)
{
    redisContext *c = node_conn(rn, i);
    if (!c)
        return -1;
    int lost;
    int rc = backend_redis_scan_page(c, cursor, cap, pattern, each, ctx, rn->component, &lost);
    if (lost)
        node_lost(rn, i, "SCAN");
    return rc;
}

int redis_nodes_scan(redis_nodes *rn, const char *pattern, redis_nodes_scan_fn each, void *ctx)
{
    /* The masters as they are now, by node index: a callback's command may
     * read the map again, and every master of this moment is scanned once. */
    size_t n = redis_nodes_count(rn);
    if (n == 0)
        return -1;
    size_t *nodes = malloc(n * sizeof(*nodes));
    if (!nodes)
        return -1;
    for (size_t m = 0; m < n; m++)
        nodes[m] = rn->nseeds ? rn->masters[m] : 0;
    int rc = 0;
    for (size_t m = 0; rc == 0 && m < n; m++) {
        char cursor[32] = "0";
        do
            rc = scan_page(rn, nodes[m], cursor, sizeof(cursor), pattern, each, ctx);
        while (rc == 0 && strcmp(cursor, "0") != 0);
    }
    free(nodes);
    return rc;
}
