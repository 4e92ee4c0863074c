/* redis_conn.h: the asynchronous Redis connections of one event loop (an
 * HTTP loop thread's libevent base): the one Redis of redis_host and
 * redis_port, or, when the config names redis_cluster seeds, one connection
 * to each master of that Redis Cluster, chosen by the slot of the key a
 * command is about. Commands are only buffered when sent; the loop writes
 * them, and reads the replies, on the same thread: the purchases of one loop
 * turn share one write and one read a node, and nothing crosses threads.
 *
 * On a cluster the slot map is read with CLUSTER SLOTS on the loop itself
 * (no blocking call): when the first node connects, after a MOVED, and when
 * a node's connection drops (a failover gives its slots to a replica). */
#ifndef SECKILL_REDIS_CONN_H
#define SECKILL_REDIS_CONN_H

#include <event2/event.h>
#include <hiredis/async.h>

#include "config.h"
#include "redis_cluster.h"

typedef struct redis_conn redis_conn;

/* Starts connecting on base (and reconnects with backoff whenever a
 * connection drops). Called on the base's thread, or before that thread
 * starts. NULL when out of memory or when the seeds do not parse. */
redis_conn *redis_conn_create(const config *cfg, struct event_base *base);

/* Whether commands can go now (from any thread): the one Redis is
 * connected, or the cluster's map is known and every master of it is. */
int redis_conn_connected(const redis_conn *c);

/* On the base's thread only: */

/* The connection to the node serving slot (redis_cluster_slot of the
 * command's key; any value on a single Redis); NULL while that node is down
 * or the map is not known yet. */
redisAsyncContext *redis_conn_context_for(redis_conn *c, int slot);

/* The replicas of the master serving slot, as the slot map last listed
 * them (0 on a single Redis, and until the map is known). */
int redis_conn_replicas_for(const redis_conn *c, int slot);

/* Whether the node serving slot is connecting right now (a command for it
 * may wait a moment rather than fail). */
int redis_conn_connecting_for(redis_conn *c, int slot);

/* Gives up on ac, a connection whose node did not answer in time (a host
 * gone without a reset, a frozen server: TCP would wait many minutes): it
 * is freed at once, every reply it owed is called back with NULL, and the
 * node is treated as lost (reconnected with backoff; on a cluster the map
 * is read again). Returns 0, or -1 when ac is not a connection of c now. */
int redis_conn_drop(redis_conn *c, redisAsyncContext *ac, const char *why);

/* What to do about error reply r to a command sent on ac
 * (redis_cluster_follow): REDIS_CLUSTER_RETRY (after a MOVED: the map now
 * sends the slot to the new owner, and a full refresh is on its way),
 * REDIS_CLUSTER_RETRY_ASKING (after an ASK: send ASKING then the command on
 * *next, once), REDIS_CLUSTER_RETRY_LATER (TRYAGAIN), or
 * REDIS_CLUSTER_DELIVER / REDIS_CLUSTER_TOO_MANY (r is the answer). *next
 * may be NULL for a retry when the node named is not connected yet. On a
 * single Redis every error is delivered. */
redis_cluster_action redis_conn_follow(redis_conn *c, const redisAsyncContext *ac,
                                       const redisReply *r, redis_cluster_attempt *attempt,
                                       redisAsyncContext **next);

/* Writes what the commands sent so far buffered, on every connection, now
 * rather than when the loop next sees the sockets writable: saves the loop
 * a turn (and the write events' epoll changes) when called at the end of
 * the turn's work. */
void redis_conn_flush(redis_conn *c);

/* The loop's libevent base, for events of the user's own. */
struct event_base *redis_conn_base(redis_conn *c);

/* State a user keeps per loop (NULL until set). free_fn(local) runs in
 * redis_conn_close, after the replies owed. Set once. */
void *redis_conn_local(redis_conn *c);
void redis_conn_set_local(redis_conn *c, void *local, void (*free_fn)(void *));

/* Closes, on the base's thread while its loop is not running: waits for the
 * replies still owed (running the base, timeout_ms at most); the callbacks
 * of commands still unanswered then get a NULL reply, and the local's
 * free_fn runs. Afterwards every connection stays down; NULL is a no-op. */
void redis_conn_close(redis_conn *c, int timeout_ms);

/* Frees a closed connection (from any thread, once no other can read it).
 * NULL is a no-op. */
void redis_conn_free(redis_conn *c);

#endif
