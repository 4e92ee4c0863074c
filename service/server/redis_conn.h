/* redis_conn.h: one asynchronous Redis connection that lives on an event
 * loop of its owner's (an HTTP loop thread's libevent base). Commands are
 * only buffered when sent; the loop writes them, and reads the replies, on
 * the same thread: the purchases of one loop turn share one write and one
 * read, and nothing crosses threads on the way. */
#ifndef SECKILL_REDIS_CONN_H
#define SECKILL_REDIS_CONN_H

#include <event2/event.h>
#include <hiredis/async.h>

#include "config.h"

typedef struct redis_conn redis_conn;

/* Starts connecting on base (and reconnects with backoff whenever the
 * connection drops). Called on the base's thread, or before that thread
 * starts. NULL when out of memory. */
redis_conn *redis_conn_create(const config *cfg, struct event_base *base);

/* Whether the connection is up now (from any thread). */
int redis_conn_connected(const redis_conn *c);

/* On the base's thread only: */

/* The connection to send commands on; NULL while it is down. */
redisAsyncContext *redis_conn_context(redis_conn *c);

/* Writes what the commands sent so far buffered, now rather than when the
 * loop next sees the socket writable: saves the loop a turn (and the write
 * event's epoll changes) when called at the end of the turn's work. */
void redis_conn_flush(redis_conn *c);

/* The loop's libevent base, for events of the user's own. */
struct event_base *redis_conn_base(redis_conn *c);

/* State a user keeps per connection (NULL until set). free_fn(local) runs
 * in redis_conn_free, after the replies owed. Set once. */
void *redis_conn_local(redis_conn *c);
void redis_conn_set_local(redis_conn *c, void *local, void (*free_fn)(void *));

/* Closes, on the base's thread while its loop is not running: waits for the
 * replies still owed (running the base, timeout_ms at most); the callbacks
 * of commands still unanswered then get a NULL reply, and the local's
 * free_fn runs. Afterwards the connection stays down; NULL is a no-op. */
void redis_conn_close(redis_conn *c, int timeout_ms);

/* Frees a closed connection (from any thread, once no other can read it).
 * NULL is a no-op. */
void redis_conn_free(redis_conn *c);

#endif
