/* keys.h: the Redis key layout. Every key of one item carries the item's
 * hash tag ({item:42}) so all of them live in one Redis Cluster slot and the
 * item's Lua scripts stay legal when the data set is sharded. */
#ifndef SECKILL_KEYS_H
#define SECKILL_KEYS_H

#include <stddef.h>
#include <stdint.h>

/* Large enough for any key below. */
#define KEYS_MAX 96

/* The order queue that servers push to and workers move from. */
#define KEYS_QUEUE "seckill:queue"
/* Hash {order_id -> order} of orders accepted and not yet persisted: the
 * reserve script adds, the worker removes after its commit. */
#define KEYS_PENDING "seckill:pending"
/* Orders a worker could not decode: kept for a human, never dropped. */
#define KEYS_DEAD_LETTER "seckill:dead"
/* Pub/sub channel of cross-instance events ("reset <item>"). */
#define KEYS_EVENTS "seckill:events"
/* Counter that hands every server instance its order-id node number. */
#define KEYS_NODE_SEQ "seckill:node_seq"
/* Every worker's processing list starts with this (the sweep SCANs for it). */
#define KEYS_PROCESSING_PREFIX "seckill:processing:"
/* The lock (SET NX PX <period>) that elects one worker per period to run
 * the recovery sweep; its value says who holds it. */
#define KEYS_SWEEP_LOCK "seckill:sweep"
/* The lock that elects one worker per period to expire unpaid orders and
 * finish the returns a crash interrupted. */
#define KEYS_EXPIRY_LOCK "seckill:expiry"

/* Hash of an item's round {stock, initial, round, restocks, restocked,
 * returns, returned, starts, ends, limit} (lua/item_reset.lua). Each returns snprintf's length. */
int keys_item_state(char *buf, size_t len, int64_t item);
/* Hash {user_id -> units bought} of the item's buyers this round. */
int keys_item_buyers(char *buf, size_t len, int64_t item);
/* Hash {order_id -> units} of the round's cancelled and expired orders
 * whose units went back on sale (lua/order_return.lua): the return of an
 * order happens once whoever retries it. */
int keys_item_returned(char *buf, size_t len, int64_t item);
/* Hash {user_id -> units} the buyer gave back this round: the buyer's next
 * order numbers its units after every unit the buyer ever held. */
int keys_item_given_back(char *buf, size_t len, int64_t item);
/* A worker's processing list. */
int keys_processing(char *buf, size_t len, const char *worker_id);
/* A worker's heartbeat: exists (with a TTL, holding the run's token) while
 * the worker with that id lives. */
int keys_worker_alive(char *buf, size_t len, const char *worker_id);

#endif
