/* order_return.h: the units of cancelled and expired orders back on sale,
 * exactly once.
 *
 * PostgreSQL decides first: an order moves from persisted to cancelled or
 * expired once (order_life.h). Then its units go back to Redis by
 * lua/order_return.lua, which remembers the order id and adds nothing for
 * it again, and then the row's returned_at is set. A crash between the
 * steps leaves a return owed (cancelled or expired, returned_at null) that
 * the worker's expiry sweep finishes by running the same two steps: a
 * return run twice, or by two nodes, gives the units back once. */
#ifndef SECKILL_ORDER_RETURN_H
#define SECKILL_ORDER_RETURN_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>
#include <libpq-fe.h>

#include "order_row.h"
#include "redis_nodes.h"
#include "scripts.h"

/* What a return needs of an order. */
typedef struct order_ref {
    int64_t id;
    int64_t item_id;
    int64_t round;
    int64_t user_id;
    int quantity;
    /* The key ids (keys.h) of the segment its units came from and of its
     * buyer's home; 0 for the item's own keys, which is what they are
     * unless the item is segmented (order_row.h). */
    int64_t stock_key;
    int64_t home_key;
    /* A draw's order (issue 28): the entrant's position, 0 for a purchase.
     * Its units left Redis by its grant (draw_grant.h), not at acceptance:
     * one returned before its grant gives nothing back. */
    int64_t draw_position;
} order_ref;

/* The columns order_refs_read reads, in its order, for a SELECT or a
 * RETURNING. */
#define ORDER_REF_COLUMNS                                                                          \
    "id, item_id, round, user_id, quantity, " ORDER_ROW_KEY_COLUMNS ", coalesce(draw_position, 0)"

/* Orders one script call gives back at most. */
#define ORDER_RETURN_BATCH 16

/* Reads up to cap rows of ORDER_REF_COLUMNS from res into out. Returns the
 * count, or -1 (logged for component) when a row is not such an order. */
int order_refs_read(const PGresult *res, order_ref *out, size_t cap, const char *component);

/* An order's four script arguments (id, round, user id, quantity) as text
 * into text, pointed to by args[0..4). */
void order_ref_args(const order_ref *o, char text[4][24], const char **args);

/* The two steps after PostgreSQL's decision, a return's or a draw order's
 * grant (draw_grant.h): Redis, which sets done[i] for each order it
 * confirmed (0, or -1 when some are left), then PostgreSQL's mark of those
 * (0 or -1). */
typedef struct order_refs_step {
    int (*redis)(redis_nodes *rn, const scripts *sc, const order_ref *o, size_t n,
                 unsigned char *done, const char *component);
    int (*mark)(PGconn *pg, const order_ref *o, const unsigned char *done, size_t n,
                const char *component);
} order_refs_step;

/* Runs both steps for n orders. Returns 0 when every order is confirmed and
 * marked, -1 when Redis left some owed, -2 when PostgreSQL did not mark them
 * (owed too: run again, nothing happens twice). */
int order_refs_steps(const order_refs_step *step, redis_nodes *rn, PGconn *pg, const scripts *sc,
                     const order_ref *o, size_t n, unsigned char *done, const char *component);

/* One script call for a run of orders o[0..n) (order_refs_runs): 0 when
 * Redis confirmed them, else -1. */
typedef int (*order_refs_call)(redis_nodes *rn, const scripts *sc, const order_ref *o, size_t n,
                               const char *component);

/* Whether one call may serve orders a and b (their keys are one). */
typedef int (*order_refs_same)(const order_ref *a, const order_ref *b);

/* Cuts o[0..n) into runs of consecutive orders that one call may serve
 * (same), batch at most each, and calls call on each run; done[i] is set to
 * 1 for the orders of each run it confirmed, 0 for the rest. Returns 0
 * when every run was confirmed, else -1. */
int order_refs_runs(redis_nodes *rn, const scripts *sc, const order_ref *o, size_t n, size_t batch,
                    order_refs_same same, order_refs_call call, unsigned char *done,
                    const char *component);

/* Calls script id (nkeys keys, then nargs arguments, in keys_args) for
 * orders whose keys are those of key (an item's, or a segment's). Returns
 * the reply when it is an array of `elements` whose first is the item's
 * round; else NULL, logged for component: an unexpected reply, or round 0,
 * an item without state in Redis, whose `what` ("returns") stay owed. The
 * caller frees it. */
redisReply *order_refs_script(redis_nodes *rn, const scripts *sc, script_id id, int nkeys,
                              int nargs, const char **keys_args, size_t elements, int64_t key,
                              const char *what, const char *component);

/* Runs sql, an UPDATE of orders whose one parameter $1 is the bigint[] of
 * the ids of the orders o[i] with done[i] set (nothing when none is);
 * logged as "marking <what>" for component on failure. Returns 0 or -1. */
int order_refs_mark(PGconn *pg, const order_ref *o, const unsigned char *done, size_t n,
                    const char *sql, const char *what, const char *component);

/* The ref of order o, read with its row (order_row.h), whose draw_position
 * column is draw_position (0: a purchase's). */
struct order;
order_ref order_ref_of(const struct order *o, int64_t draw_position);

/* Gives the units of n orders back in Redis through rn, the orders of one
 * item in one call on the item's node (consecutive orders of an item share
 * calls: sort them by item for fewer calls), and announces each item whose
 * stock grew on KEYS_EVENTS ("return <item> <round> <changes>") so that
 * every server clears its sold-out flag. done[i] is set to 1 for each order
 * Redis confirmed (given back now or before, or of a round that is over;
 * a draw order returned before its grant gives nothing and is confirmed,
 * and its grant, should it run later, takes nothing);
 * a failed call leaves its orders owed and the next item is tried. Returns
 * 0 when Redis confirmed all, -1 otherwise (logged). */
int order_return_redis(redis_nodes *rn, const scripts *sc, const order_ref *o, size_t n,
                       unsigned char *done, const char *component);

/* A return's two steps for n orders: order_return_redis, then returned_at
 * set of those Redis confirmed (done[i] set), and round_over of those whose
 * item is in a later round by then (their units went with their round:
 * lua/order_return.lua gave nothing back). Returns 0 when every order is
 * given back and noted, -1 when Redis left some owed (for the expiry
 * sweep), -2 when PostgreSQL did not note them (owed too; the units given
 * back are not given again). */
int order_return_units(redis_nodes *rn, PGconn *pg, const scripts *sc, const order_ref *o, size_t n,
                       unsigned char *done, const char *component);

/* Publishes that item's round has had `changes` stock changes (events.h's
 * "return <item> <round> <changes>"), so that every server's sold-out flag
 * of an older stock version stops counting: on any node (a Redis Cluster
 * passes a PUBLISH on to every node). A lost one costs a flagged server at
 * most a probe's second: every reserve answer carries the version. Returns
 * 0, or -1 (logged). */
int order_return_announce(redis_nodes *rn, int64_t item, int64_t round, int64_t changes,
                          const char *component);

#endif
