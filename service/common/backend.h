/* backend.h: blocking connections to Redis and PostgreSQL made from the
 * config: PostgreSQL's for pg_session.h (the worker's, the pool's and the
 * laboratory's sessions) and the admin tool; Redis's one at a time, for redis_nodes.h (which routes
 * the product's commands by key), the events subscriber, the laboratory and the tests. */
#ifndef SECKILL_BACKEND_H
#define SECKILL_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>
#include <libpq-fe.h>

#include "config.h"
#include "redis_cluster.h"

/* Connects (and AUTHs) with cfg->redis_timeout_ms as connect and command
 * timeout. Returns a context the caller frees with redisFree(), or NULL with
 * err set. */
redisContext *backend_redis_connect(const config *cfg, char *err, size_t errlen);

/* The same to host:port (a node of a Redis Cluster) instead of cfg's
 * redis_host and redis_port; cfg still gives the timeout and the password. */
redisContext *backend_redis_connect_to(const config *cfg, const char *host, int port, char *err,
                                       size_t errlen);

/* The connect and AUTH under the two above, without a config: to host:port
 * with timeout_ms as connect and command timeout, AUTH password (NULL or
 * empty: none), for a server that is not one of cfg's Redis (the
 * laboratory's Redlock) and the seeds of backend_redis_cluster_map. The
 * same return; err begins "redis host:port: ". */
redisContext *backend_redis_connect_auth(const char *host, int port, int timeout_ms,
                                         const char *password, char *err, size_t errlen);

/* A connection to any node: the first of cfg's redis_cluster seeds that
 * answers (any node of a Redis Cluster passes a PUBLISH on to the others:
 * enough for a subscriber), else cfg's one Redis. NULL with err set (each
 * seed's failure) when none answers. */
redisContext *backend_redis_connect_any(const config *cfg, char *err, size_t errlen);

/* Connects to the seeds in turn (backend_redis_connect_auth) and reads the
 * slot map from the first that answers CLUSTER SLOTS with a map covering
 * every slot. For redis_nodes.h and the tests; the event
 * loops fetch their own. Returns the map (redis_cluster_map_free), or NULL
 * with err naming each seed's failure. */
redis_cluster_map *backend_redis_cluster_map(const redis_cluster_node *seeds, size_t nseeds,
                                             int timeout_ms, const char *password, char *err,
                                             size_t errlen);

/* Connects to cfg->pg_conninfo, with the program's name as its
 * application_name where the conninfo names none. Returns a connection the
 * caller closes with PQfinish(), or NULL with err set. */
PGconn *backend_pg_connect(const config *cfg, char *err, size_t errlen);

/* Makes *c usable: keeps a healthy connection, replaces a broken or missing
 * one. Returns 0, or -1 (logged for component, *c NULL) when Redis does not
 * answer. For the long-lived connections of a thread (the lab's; the
 * product's are redis_nodes.h's). */
int backend_redis_ensure(redisContext **c, const config *cfg, const char *component);

/* Called for each key a scan finds; non-zero stops the scan. */
typedef int (*backend_scan_fn)(void *ctx, const char *key, size_t len);

/* One SCAN page from cursor (cap bytes; "0" to begin, "0" again when the
 * scan is over), each called per key of the page. Returns 0; -1 when Redis
 * failed (logged for component; *lost, when not NULL, set to 1 when the
 * SCAN got no reply: the connection failed); or the first non-zero value
 * each returned (each may have used, or dropped, c: c is not read after
 * it). */
int backend_redis_scan_page(redisContext *c, char *cursor, size_t cap, const char *pattern,
                            backend_scan_fn each, void *ctx, const char *component, int *lost);

#endif
