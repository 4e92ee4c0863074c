/* lab_ctx.h: what a strategy of the oversell laboratory runs with: one
 * thread's own Redis and PostgreSQL connections (made lazily, remade after
 * an error; on a Redis Cluster one to each master, a command sent to the
 * master of its key's slot), the settings, the Lua scripts, the process's local counters,
 * its ZooKeeper session and the id generator for lock tokens and orders.
 * One per lab pool thread. */
#ifndef SECKILL_LAB_CTX_H
#define SECKILL_LAB_CTX_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>
#include <libpq-fe.h>

#include "config.h"
#include "order.h"
#include "pg_session.h"
#include "redis_nodes.h"
#include "scripts.h"

typedef struct lab_local lab_local;
typedef struct lab_watchdog lab_watchdog;
typedef struct lab_redlock lab_redlock;
typedef struct lab_zookeeper lab_zookeeper;

typedef struct lab_ctx {
    const config *cfg;
    const scripts *sc;
    lab_local *local; /* shared by the threads of the process */
    order_id_gen *ids;
    redis_nodes *redis;       /* this thread's connections, by key */
    pg_session *pg;           /* this thread's PostgreSQL session */
    lab_watchdog *watchdog;   /* made by the first reentrant lock of the thread */
    redisContext *subscriber; /* the reentrant lock's waits, made by the first */
    lab_redlock *redlock;     /* the thread's connections to the redlock servers */
    lab_zookeeper *zk;        /* the process's ZooKeeper session, shared by the threads */
    int lock_timed_out;       /* a statement waited lab_lock_wait_ms for a lock */
} lab_ctx;

/* PostgreSQL's lock_not_available: lock_timeout ran out. */
#define LAB_SQLSTATE_LOCK_NOT_AVAILABLE "55P03"

/* Connects nothing yet. Every pointer must outlive the context. NULL on OOM. */
lab_ctx *lab_ctx_create(const config *cfg, const scripts *sc, lab_local *local, order_id_gen *ids,
                        lab_zookeeper *zk);
/* Closes its Redis and PostgreSQL connections (lab_table_close_ctx() the
 * families' ones first). NULL is a no-op. */
void lab_ctx_free(lab_ctx *c);

/* A Redis command in hiredis' printf format, about key (which routes it
 * on a cluster: a command without a key, MULTI or EXEC, names the key of
 * its transaction). Returns the reply, which the caller frees, or NULL on a
 * broken connection (dropped, remade next time) or an error reply (logged). */
redisReply *lab_ctx_redis(lab_ctx *c, const char *key, const char *fmt, ...);

/* As lab_ctx_redis with an argument vector, about argv[1]. */
redisReply *lab_ctx_redis_argv(lab_ctx *c, int argc, const char **argv);

/* Calls each for every key matching pattern (SCAN, on every master).
 * Returns 0, or -1 when Redis failed (logged). */
int lab_ctx_scan(lab_ctx *c, const char *pattern, redis_nodes_scan_fn each, void *ctx);

/* EVALSHA of a script (EVAL with its text after NOSCRIPT) with nkeys keys
 * followed by nargs arguments. Reply and NULL as lab_ctx_redis. */
redisReply *lab_ctx_script(lab_ctx *c, script_id id, int nkeys, int nargs, const char **keys_args);

/* A parameterized statement (text parameters). Returns the result, which
 * the caller PQclear()s, when its status is `want`; else NULL (logged; a
 * broken connection is dropped). The connection's lock_timeout is
 * cfg->lab_lock_wait_ms: a statement that waited that long for a lock
 * fails and sets c->lock_timed_out instead of logging. */
PGresult *lab_ctx_sql(lab_ctx *c, const char *sql, int nparams, const char *const *params,
                      ExecStatusType want);

/* The same with one parameter, $1, the integer id (an item's). */
PGresult *lab_ctx_sql_id(lab_ctx *c, const char *sql, int64_t id, ExecStatusType want);

/* A statement without result rows ("BEGIN", "COMMIT"). Returns 0 or -1. */
int lab_ctx_sql_command(lab_ctx *c, const char *sql);

/* A token unique among all lab requests of all instances (lock owner). */
void lab_ctx_token(lab_ctx *c, char *buf, size_t len);

#endif
