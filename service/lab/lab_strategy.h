/* lab_strategy.h: what every strategy of the oversell laboratory
 * (docs/EXPERIMENTS.md) is made of: the request it takes, the function type
 * it implements, and the skeleton most of them share: check the stock, do
 * the business work, take a unit. The table of strategies is lab_table.h;
 * each family includes this header and never the table.
 *
 * Where each strategy keeps its stock and how its sales are audited:
 * - every sale answered 200 is counted by the plumbing (lab.c) in the Redis
 *   hash {item:N}:lab:sold, field <strategy> (HINCRBY after the strategy
 *   returned SK_OK), so oversold = sold - initial stock for every strategy;
 * - local_*: in-process counters of each server instance (lab_local.h),
 *   loaded from the item's initial stock ({item:N}:state "initial") on first
 *   use in a round; two instances hold two stocks, which is the point;
 * - db_*, pg_lock_table and pg_advisory: the column items.stock (version for
 *   db_optimistic), and one row per sale in lab_sales (item_id, strategy),
 *   written in the same statement or transaction as the decrement;
 * - redis_read_check_decr, redis_watch and the Redis locks: the string
 *   {item:N}:lab:stock:<strategy>, created from the initial stock on first
 *   use; locks are {item:N}:lab:lock:<strategy> (a hash {owner -> holds}
 *   for redis_lock_reentrant); redis_lock_fenced's fencing tokens are
 *   {item:N}:lab:fence:issued:<strategy> and :seen:<strategy>;
 * - segmented: the hash {item:N}:lab:seg {segment -> units}, each segment
 *   laid out on first use under its lock {item:N}:lab:lock:segmented:<i>;
 * - zookeeper_lock: the stock string as the Redis locks; its locks are
 *   znodes /seckill/lab/item-<id>/lock-<token>-<sequence> (lab_zookeeper.h);
 * - lua_reserve: the production keys ({item:N}:state), orders queued for
 *   the worker exactly as POST /api/v1/items/{id}/purchase does.
 * A new round of the item (create or reset) clears all of it (lab.c). */
#ifndef SECKILL_LAB_STRATEGY_H
#define SECKILL_LAB_STRATEGY_H

#include <stddef.h>
#include <stdint.h>

#include "lab_ctx.h"
#include "lab_status.h"

/* Bound of the business work a request may ask for (400 above it): a lab
 * thread sleeps that long at most, holding its lock. As long as the
 * crash_holding_lock scenario's holder works (a kill -9 mid-lock). */
#define LAB_DELAY_MAX_MS 10000

/* Faults a request may ask for when lab_faults is on (the crash and
 * leftover_key scenarios). */
typedef enum lab_fault {
    LAB_FAULT_NONE,
    LAB_FAULT_CRASH_AFTER_SETNX, /* SIGKILL right after SETNX won, before EXPIRE */
    LAB_FAULT_RACE_FIRST,        /* take the lock once the second racer waits (lab_race.h) */
    LAB_FAULT_RACE_SECOND        /* look, then take only after the first racer took */
} lab_fault;

typedef struct lab_request {
    const char *strategy; /* its name in the table */
    int64_t item;
    int64_t user;    /* 0: anonymous */
    int delay_ms;    /* business work inside the critical section */
    lab_fault fault; /* LAB_FAULT_NONE unless lab_faults is on and ?crash= or ?race= asks */
} lab_request;

/* Buys one unit. Returns SK_OK with *remaining (the strategy's own view of
 * the stock after the sale), SK_SOLD_OUT, SK_BUSY (lock or retries not won
 * within cfg->lab_lock_wait_ms), SK_NOT_FOUND (no such item) or
 * SK_BACKEND_DOWN. A function type: each strategy's header declares it as
 * `lab_strategy_fn lab_db_for_update;`, so that the signature stands here only. */
typedef sk_status lab_strategy_fn(lab_ctx *c, const lab_request *r, int64_t *remaining);

/* The strategy's stock as it stands (for the audit): SK_OK with *remaining,
 * SK_NOT_FOUND, SK_BACKEND_DOWN. */
typedef sk_status lab_remaining_fn(lab_ctx *c, const lab_request *r, int64_t *remaining);

/* Parses the query arguments of a lab purchase (NULL when absent): item
 * (required id), user_id (optional id, 0 when absent), delay_ms (optional,
 * 0 .. LAB_DELAY_MAX_MS, default_delay_ms when absent). Returns SK_OK with
 * *out filled (strategy left NULL), or SK_INVALID with *why a static
 * sentence. Pure. */
sk_status lab_request_parse(const char *item, const char *user, const char *delay,
                            int default_delay_ms, lab_request *out, const char **why);

/* The ?crash= and ?race= parameters (NULL when absent) into out->fault:
 * crash "after_setnx", race "first" or "second", when faults_enabled
 * (cfg->lab_faults). SK_OK, or SK_INVALID with *why (an unknown fault, both
 * at once, or any fault while they are off: a server that is not a test bed
 * cannot be crashed or steered by a query). */
sk_status lab_request_fault(const char *crash, const char *race, int faults_enabled,
                            lab_request *out, const char **why);

/* A stock the skeleton can check and take from. */
typedef struct lab_counter {
    /* Units left: SK_OK; SK_NOT_FOUND when there is no stock (not made yet,
     * or no such item); SK_BACKEND_DOWN. */
    sk_status (*read)(lab_ctx *c, const lab_request *r, void *arg, int64_t *value);
    /* Takes one unit, `seen` being what read returned: SK_OK with
     * *remaining, SK_BUSY on a conflict (the caller may retry), or
     * SK_BACKEND_DOWN. */
    sk_status (*take)(lab_ctx *c, const lab_request *r, void *arg, int64_t seen,
                      int64_t *remaining);
    /* Makes the stock on its first use from the item's initial stock,
     * leaving one that is there as it is: SK_OK, SK_NOT_FOUND (no such
     * item), SK_BACKEND_DOWN. NULL: the stock is never made here. */
    sk_status (*make)(lab_ctx *c, const lab_request *r, void *arg);
} lab_counter;

/* The one read of a stock made on first use: k->read, and when it finds
 * none (SK_NOT_FOUND) and k->make is set, make then read once more. Returns
 * what the last read (or a failed make) said. */
sk_status lab_counter_read(lab_ctx *c, const lab_request *r, const lab_counter *k, void *arg,
                           int64_t *value);

/* The documents' purchase: read the stock (lab_counter_read), SK_SOLD_OUT
 * when it is gone, the business work (r->delay_ms), then take a unit.
 * Whether it is safe depends on what guards it and on the counter. */
sk_status lab_check_work_take(lab_ctx *c, const lab_request *r, const lab_counter *k, void *arg,
                              int64_t *remaining);

/* lab_check_work_take again while it answers SK_BUSY (an optimistic
 * conflict), until cfg->lab_lock_wait_ms has passed: then SK_BUSY. */
sk_status lab_retry_until_won(lab_ctx *c, const lab_request *r, const lab_counter *k, void *arg,
                              int64_t *remaining);

/* The business work: sleeps r->delay_ms. */
void lab_work(const lab_request *r);

/* Sleeps ms milliseconds (a spin's pause). */
void lab_pause_ms(int ms);

/* Monotonic time (ms) at which a wait that starts now gives up. */
int64_t lab_deadline(const lab_ctx *c);

/* The item's initial stock of this round from Redis ({item:N}:state), and
 * its round when round is not NULL: SK_OK, SK_NOT_FOUND, SK_BACKEND_DOWN. */
sk_status lab_initial_stock(lab_ctx *c, int64_t item, int64_t *initial, int64_t *round);

#endif
