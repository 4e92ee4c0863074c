/* redis_nodes_state.h: redis_nodes' state and the steps its files share,
 * private to redis_nodes.c (one command, the map, redirects) and
 * redis_nodes_many.c (pipelines and scans, over many nodes at once). */
#ifndef SECKILL_REDIS_NODES_STATE_H
#define SECKILL_REDIS_NODES_STATE_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "config.h"
#include "redis_cluster.h"

/* A node and its connection (NULL until needed, or after it broke). */
typedef struct node {
    redis_cluster_node addr;
    redisContext *c;
    int64_t used_ms; /* when c was last handed out (monotonic) */
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

/* Node i's connection, made when missing or broken; NULL (logged) when the
 * node does not answer. */
redisContext *redis_nodes_conn_of(struct redis_nodes *rn, size_t i);

/* As redis_nodes_conn_of, for a command that needs nothing of the
 * connection's past (one command, a pipeline, a SCAN page): one its node
 * closed while it sat idle is remade first (closed_while_idle). Not for a
 * context handed to a caller (redis_nodes_for_key, _at, _any), which may
 * hold a WATCH or a transaction that a new connection would silently lack:
 * there the dead connection fails its command, as it always did. */
redisContext *redis_nodes_conn_fresh(struct redis_nodes *rn, size_t i);

/* Drops node i's connection after what failed on it (logged); the next use
 * remakes it, after a fresh map. */
void redis_nodes_lost(struct redis_nodes *rn, size_t i, const char *what);

/* The index of the node serving key; -1 (logged) when no map or no owner. */
int redis_nodes_index_of_key(struct redis_nodes *rn, const char *key, size_t len);

/* Follows the redirects of cmd, whose reply r came from node i. Returns the
 * final reply as it came (an error included), or NULL when a node failed. */
redisReply *redis_nodes_settle(struct redis_nodes *rn, size_t i, redisReply *r, const command *cmd);

/* An error reply is logged and freed (NULL); any other is returned as is. */
redisReply *redis_nodes_judge(struct redis_nodes *rn, redisReply *r, const char *what);

#endif
