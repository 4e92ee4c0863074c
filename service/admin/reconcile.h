/* reconcile.h: the books of every item, read from Redis and PostgreSQL, and
 * their repair. Every unit Redis counts as sold must be an order that is
 * either persisted (PostgreSQL) or on its way (its pending hash), counted
 * in units of the current round:
 *     initial + restocked - remaining == persisted + pending
 * A Redis that lost writes (restarted from an older AOF or RDB) breaks this:
 * its stock is higher than the orders say, and it would sell units twice.
 * Rebuilding sets Redis back from PostgreSQL and the pending orders. */
#ifndef SECKILL_RECONCILE_H
#define SECKILL_RECONCILE_H

#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <libpq-fe.h>

#include "order.h"
#include "redis_nodes.h"

typedef struct reconcile_item {
    int64_t id;
    int64_t round;              /* PostgreSQL's current round */
    int64_t initial;            /* PostgreSQL's initial stock of the round */
    int64_t restocked;          /* PostgreSQL: units restocks added to the round */
    int64_t restocks;           /* PostgreSQL: restocks of the round */
    int64_t starts_ms, ends_ms; /* PostgreSQL: the window, 0: no bound */
    int per_buyer_limit;        /* PostgreSQL */
    int segments;               /* PostgreSQL: its stock split over (keys.h), at least 1 */
    int redis_known;            /* Redis has the item's state */
    int64_t redis_round;
    int64_t redis_restocked;
    int64_t remaining; /* Redis */
    int64_t buyers;    /* Redis: buyers recorded this round */
    int64_t persisted; /* PostgreSQL: units of the round's orders */
    int64_t pending;   /* Redis: units of the round accepted and not yet persisted */
    int64_t drift;     /* (initial + restocked - remaining) - (persisted + pending) */
} reconcile_item;

typedef struct reconcile_report {
    reconcile_item *items;
    size_t nitems;
    int64_t queue;      /* orders waiting in the items' queues */
    int64_t processing; /* orders held by workers */
    int64_t pending;    /* all of the items' pending hashes */
    int64_t dead;       /* the items' dead letters */
    int64_t drifting;   /* items whose drift is not 0, or unknown to Redis */
    order *waiting;     /* the pending orders not yet in PostgreSQL */
    size_t nwaiting, waiting_cap;
    int waiting_failed; /* out of memory while reading them */
} reconcile_report;

/* Reads the books, each Redis key on its node (every master's processing
 * lists). Returns 0, or -1 with err set (a backend failed). The report is
 * freed with reconcile_report_free(). */
int reconcile_scan(redis_nodes *rn, PGconn *pg, reconcile_report *out, char *err, size_t errlen);

void reconcile_report_free(reconcile_report *r);

/* True when Redis agrees with the books on the item: its round, its
 * restocks and its units. */
int reconcile_item_ok(const reconcile_item *it);

/* Writes the report as a table (json == 0) or as one JSON object. */
void reconcile_print(const reconcile_report *r, int json, FILE *out);

/* Sets every drifting item's Redis state back from the books: round,
 * initial, restocks, window and limit from PostgreSQL, remaining =
 * initial + restocked - persisted - pending, and each buyer's units of the
 * persisted and pending orders; for an item in segments, each segment's
 * share of these (keys.h). A buyer's units given back are counted up to
 * the last unit an order of theirs was numbered, so the next order never
 * takes the number of one that holds units. Run it with the sale paused:
 * a purchase landing between the read and the write is not seen, and its
 * unit could be sold again. Stop the workers too: an order they persist or
 * a return they make meanwhile leaves a unit counted twice as sold (never
 * sold twice), until the next rebuild.
 * Returns the number of items rebuilt, or -1 with err set. */
int reconcile_rebuild(redis_nodes *rn, PGconn *pg, const reconcile_report *r, char *err,
                      size_t errlen);

#endif
