/* redis_loop.h: an event-loop thread that owns one asynchronous Redis
 * connection. Other threads hand it jobs; every job's commands are written
 * together with those of all jobs that arrived in the same turn of the loop,
 * so many concurrent requests share one write and one read (pipelining). */
#ifndef SECKILL_REDIS_LOOP_H
#define SECKILL_REDIS_LOOP_H

#include <stddef.h>

#include <event2/event.h>
#include <hiredis/async.h>

#include "config.h"

typedef struct redis_loop redis_loop;

/* Runs on the loop thread. ac is the connection to send commands on, or NULL
 * when Redis is unreachable or the loop is stopping: the job must then answer
 * its request itself. */
typedef void (*redis_job_fn)(redisAsyncContext *ac, void *arg);

/* Starts the thread and connects (reconnecting with backoff whenever the
 * connection drops). Returns NULL with err set on failure. */
redis_loop *redis_loop_create(const config *cfg, char *err, size_t errlen);

/* Queues fn(ac, arg) to run on the loop thread. Returns 0, or -1 when the
 * loop is stopping (the caller then answers on its own). */
int redis_loop_submit(redis_loop *l, redis_job_fn fn, void *arg);

/* Whether the connection is up now (from any thread). */
int redis_loop_connected(const redis_loop *l);

/* On the loop thread only (in a job or an event of the loop): */

/* The connection to send commands on; NULL while it is down. */
redisAsyncContext *redis_loop_context(redis_loop *l);

/* The loop's libevent base, for events of the loop's own. */
struct event_base *redis_loop_base(redis_loop *l);

/* State a user of the loop keeps per loop (NULL until set). free_fn(local)
 * runs in redis_loop_free, after the thread ended and before the base is
 * freed. Set once. */
void *redis_loop_local(redis_loop *l);
void redis_loop_set_local(redis_loop *l, void *local, void (*free_fn)(void *));

/* Stops: jobs still queued run with ac == NULL, replies still owed arrive
 * first (or, if Redis is gone, their callbacks get a NULL reply), then the
 * thread ends. NULL is a no-op. */
void redis_loop_free(redis_loop *l);

#endif
