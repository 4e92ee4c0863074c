/* redis_nodes.h: the blocking connections of one thread to the Redis that
 * serves each key: the one Redis of redis_host:redis_port, or, when the
 * config names redis_cluster seeds, every master of that Redis Cluster
 * (issue 14). Callers say which key a command is about; this module picks
 * the node by the key's slot (redis_cluster.h), makes connections lazily,
 * drops a broken one (remade by the next call; one its node closed while it
 * sat idle for a second or more, before a command of its own is sent on it,
 * not before a context is handed out), follows MOVED (the map is
 * refreshed before the next command) and ASK (ASKING, then the command
 * once), and reads the slot map again after a connection to a node failed.
 * On a single Redis everything goes to that one connection, as before.
 *
 * Not thread-safe: one redis_nodes per thread (the worker, a pool thread,
 * the admin tool). The HTTP loops' asynchronous purchase connections are
 * server/redis_conn.h's. */
#ifndef SECKILL_REDIS_NODES_H
#define SECKILL_REDIS_NODES_H

#include <stdarg.h>
#include <stddef.h>

#include <hiredis/hiredis.h>

#include "config.h"
#include "scripts.h"

typedef struct redis_nodes redis_nodes;

/* Connects nothing yet. component names the owner in the logs (copied).
 * cfg must outlive the result. NULL when out of memory, or (logged) when
 * cfg's redis_cluster does not parse, which config_check already refuses. */
redis_nodes *redis_nodes_create(const config *cfg, const char *component);
void redis_nodes_free(redis_nodes *rn);

/* Whether cfg names a Redis Cluster (its redis_cluster seeds). */
int redis_nodes_is_cluster(const redis_nodes *rn);

/* The connection to the node serving key (the slot map read first when
 * there is none or it is stale; the connection made when missing). NULL
 * when that node (or, for the map, every seed) does not answer: logged.
 * The context stays the module's; a caller sends on it directly (a
 * pipeline, MULTI/EXEC, BLMOVE), hands every reply it reads to
 * redis_nodes_reply, and reads them all before it sends on that node
 * through rn again. */
redisContext *redis_nodes_for_key(redis_nodes *rn, const char *key);

/* The number of masters (1 on a single Redis), reading the map when
 * needed; 0 when no node answers. The connection to master i (0 <= i <
 * count), made when missing; NULL when it does not answer (or i is past the
 * masters of a map read since). For what is done on every master: SCAN, a
 * sweep, a sum of gauges. A master keeps its index while it is one: the
 * masters are listed in the order rn first met them, so a loop whose
 * commands make the map be read again meets each of them once. */
size_t redis_nodes_count(redis_nodes *rn);
redisContext *redis_nodes_at(redis_nodes *rn, size_t i);

/* Any live connection (the first master's, else any seed's): for commands
 * that are not about a key (TIME, PING, PUBLISH, which a cluster spreads to
 * every node). NULL when none answers. */
redisContext *redis_nodes_any(redis_nodes *rn);

/* Judges reply r read on c (a context of rn's): no reply means c's node is
 * lost, so it is logged and dropped (c is freed: do not use it again; the
 * map is read again next time); a MOVED or ASK marks the map stale; any
 * error reply is logged and freed. Returns r when usable, else NULL. what
 * (may be NULL) names the command in the log. */
redisReply *redis_nodes_reply(redis_nodes *rn, redisContext *c, redisReply *r, const char *what);

/* One command about key (argv, lens NULL: strlen), on the node serving it,
 * following MOVED and ASK, and TRYAGAIN after a pause of 50 ms
 * (REDIS_CLUSTER_MAX_REDIRECTS in all at most). The reply as
 * redis_nodes_reply judges it: the caller frees it; NULL on failure. */
redisReply *redis_nodes_command(redis_nodes *rn, const char *key, int argc, const char **argv,
                                const size_t *lens);

/* As redis_nodes_command, the command in hiredis' printf format
 * (redisCommand's), about key: "GET %s", key. */
redisReply *redis_nodes_commandf(redis_nodes *rn, const char *key, const char *fmt, ...);
redisReply *redis_nodes_vcommand(redis_nodes *rn, const char *key, const char *fmt, va_list ap);

/* Script sc with nkeys keys (all in one slot: the first routes it; none:
 * the slot of "") then nargs arguments, any number of them: EVALSHA, EVAL
 * with the text after NOSCRIPT, redirects followed as by
 * redis_nodes_command. Judged as redis_nodes_reply (what: the script's
 * name). */
redisReply *redis_nodes_script(redis_nodes *rn, const script *sc, int nkeys, int nargs,
                               const char *const *keys_args);

/* n commands of argc (>= 2) arguments each, one after the other in argv
 * (command i's are argv[i * argc] on, its key argv[i * argc + 1]; each
 * NUL-terminated): grouped by node, each node's group in one write, the
 * replies read together. replies[i] gets command i's (the caller frees it),
 * NULL for an error reply (logged); a MOVED, ASK or TRYAGAIN among them is
 * followed one command at a time, once every reply is read. Returns 0, or
 * -1 when a node failed, also while following (every reply NULL). */
int redis_nodes_pipeline(redis_nodes *rn, size_t n, int argc, const char **argv,
                         redisReply **replies);

/* Called for each key a scan finds; non-zero stops the scan. */
typedef int (*redis_nodes_scan_fn)(void *ctx, const char *key, size_t len);

/* Every key matching pattern on every master, by SCAN (never KEYS; COUNT
 * 1000), one call of each per key; each may send commands through rn (the
 * masters scanned are those of the start). A key moved by a reshard while
 * the scan runs may be met twice or not at all. Returns 0; -1 when a node
 * failed (logged); or the first non-zero value each returned. */
int redis_nodes_scan(redis_nodes *rn, const char *pattern, redis_nodes_scan_fn each, void *ctx);

#endif
