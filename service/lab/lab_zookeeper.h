/* lab_zookeeper.h: the strategy `zookeeper_lock` (document 003: Curator's
 * InterProcessMutex). A lock is an ephemeral sequential znode
 * /seckill/lab/item-<id>/lock-<token>-<sequence>: the lowest sequence holds
 * the lock, every other waiter watches only the node just before its own
 * (one wake-up per release, no herd), and there is no TTL: the node lives
 * as long as the session of the process that made it, so the lock of a
 * holder that crashed goes when ZooKeeper expires its session
 * (cfg->zookeeper_session_ms). Check, work and take of the stock string
 * {item:N}:lab:stock:zookeeper_lock run under it, as under the Redis locks.
 *
 * One ZooKeeper session per server process (cfg->zookeeper_servers),
 * shared by the lab's threads: made on first use, made again once expired. */
#ifndef SECKILL_LAB_ZOOKEEPER_H
#define SECKILL_LAB_ZOOKEEPER_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "lab_strategy.h"

typedef struct lab_zookeeper lab_zookeeper;

/* The process's ZooKeeper client; connects nothing yet. NULL on OOM. The
 * config must outlive it. lab_zookeeper_free() closes the session, after
 * every thread that used it stopped; NULL is a no-op. */
lab_zookeeper *lab_zookeeper_create(const config *cfg);
void lab_zookeeper_free(lab_zookeeper *z);

/* The strategy: SK_OK, SK_SOLD_OUT, SK_BUSY (not our turn within
 * cfg->lab_lock_wait_ms: our node is deleted again), SK_NOT_FOUND,
 * SK_BACKEND_DOWN (ZooKeeper or Redis unreachable) or SK_NOT_CONFIGURED
 * (cfg->zookeeper_servers is empty). */
lab_strategy_fn lab_zookeeper_lock;

/* The lock znodes of r->item that exist now (the audit's lock_keys): SK_OK
 * with *count (0 when ZooKeeper is not configured), or SK_BACKEND_DOWN. */
lab_remaining_fn lab_zookeeper_locks;

/* A new sale round of item: deletes its lock znodes, held or not, as a
 * reset deletes the Redis locks. Returns 0 (also when not configured or z
 * is NULL) or -1 (logged). */
int lab_zookeeper_clear(lab_zookeeper *z, int64_t item);

/* The sequence number ZooKeeper appended to a sequential node's name
 * ("lock-7-0000000042" -> 42), or -1 when the name does not end in one.
 * Pure. */
long long lab_zookeeper_sequence(const char *name);

/* The folder of item's lock nodes ("/seckill/lab/item-<id>"). Returns
 * snprintf's length. Pure. */
int lab_zookeeper_item_path(char *buf, size_t len, int64_t item);

#endif
