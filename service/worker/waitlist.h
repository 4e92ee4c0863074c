/* waitlist.h: the worker's draw chore (issue 28): the units that come back
 * to a drawn item (cancelled and expired orders, restocks) go to its
 * waitlist, each unit once.
 *
 * Every WAITLIST_PERIOD_MS each worker visits the drawn items of their
 * current round that have a waitlist, and the items with grants owed. Per
 * item, one PostgreSQL transaction that starts by locking the item's row
 * (SELECT ... FOR UPDATE, the draw's serializer; SKIP LOCKED: an item the
 * draw, a restock or another worker holds waits for the next period):
 *   (a) the grants owed are finished (draw_grant_owed): every draw order
 *       committed so far has its units taken in Redis, so that
 *   (b) the item's stock in Redis is its free units: nothing else takes
 *       units of a draw item (purchases are refused), and what only adds
 *       units (a return) may land at any time without harm;
 *   (c) the waitlist is served in position order by the draw's rule
 *       (draw_serve: the first whose quantity fits the free units, and on):
 *       an order each (draw_position the entrant's, a fresh pay_by,
 *       granted_at null, order.won announced), the entry won_from_waitlist;
 *       the transaction commits;
 *   (d) those orders are granted (draw_grant_units).
 * A crash or a failure after the commit leaves grants owed, which (a) of the
 * next visit finishes, whoever makes it: a second worker that locks the item
 * in between grants them before it reads the stock, so the two never serve
 * a unit twice. A restock changes Redis while it holds the same row lock
 * (items_restock.c), so a visit reads the stock before it or after it,
 * never in its middle. */
#ifndef SECKILL_WAITLIST_H
#define SECKILL_WAITLIST_H

#include <stdint.h>

#include <libpq-fe.h>

#include "order.h"
#include "redis_nodes.h"
#include "scripts.h"

/* How often a worker visits the drawn items. */
#define WAITLIST_PERIOD_MS 500

/* Items one pass visits at most, and waitlisted entrants one visit reads
 * at most (a longer waitlist is served on by the next visit). */
#define WAITLIST_ITEMS 256
#define WAITLIST_ENTRANTS 1000

/* The chore's state: its order ids, whose node number it takes from Redis
 * (order_node.h) before it first serves anyone. */
typedef struct waitlist {
    order_id_gen ids;
    int have_node;
} waitlist;

typedef struct waitlist_result {
    int64_t items;   /* items visited (their row locked) */
    int64_t granted; /* owed grants finished */
    int64_t served;  /* entrants served from a waitlist */
    int64_t units;   /* their units */
} waitlist_result;

/* Nothing taken yet. */
void waitlist_init(waitlist *wl);

/* One pass over the drawn items, through rn and pg (no transaction open).
 * Returns 0, -1 when Redis failed for an item (its work stays for the next
 * pass), -2 on a PostgreSQL error (close the connection). */
int waitlist_run(waitlist *wl, redis_nodes *rn, PGconn *pg, const scripts *sc,
                 waitlist_result *out);

#endif
