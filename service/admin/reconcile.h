/* reconcile.h: the books of every item, read from Redis and PostgreSQL, and
 * their repair. Every unit Redis counts as sold must be an order that holds
 * it (persisted or paid, in PostgreSQL), one on its way (its pending hash),
 * or one cancelled or expired whose unit this Redis has not had back yet (a
 * return owed), counted in units of the current round:
 *     initial + restocked - remaining == held + pending + owed
 * A Redis that lost writes (restarted from an older AOF or RDB) breaks this:
 * its stock is higher than the orders say, and it would sell units twice.
 * A draw's order (issue 28) counts by its mark in the granted hash: held
 * only once granted (a grant owed is counted apart, not as drift), ended
 * only when it took units (one returned before its grant took none).
 * A return owed is not drift: the worker's sweep finishes those PostgreSQL
 * still owes (returned_at null); those it noted as made to another Redis (a
 * run on a Redis Cluster, a Redis restarted from an older snapshot) only a
 * rebuild gives back. Rebuilding sets Redis back from PostgreSQL and the
 * pending orders, in pieces of bounded size (reconcile_rebuild.c). */
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
    const char *admission;      /* PostgreSQL: "race", "room" or "draw" (a rebuild keeps it) */
    int redis_known;            /* Redis has the item's state */
    int64_t redis_round;
    int64_t redis_restocked;
    int64_t remaining;      /* Redis */
    int64_t buyers;         /* Redis: buyers recorded this round */
    int64_t redis_returned; /* Redis: units given back to its stock this round */
    int64_t held;  /* PostgreSQL: units the round's orders hold (persisted or paid: the item view's
                      persisted + paid) */
    int64_t ended; /* PostgreSQL: units of the round's cancelled and expired orders */
    int64_t unnoted;     /* PostgreSQL: those of them whose return is not noted (returned_at) */
    int64_t pending;     /* Redis: units of the round accepted and not yet persisted */
    int64_t grants_owed; /* draw orders held whose units Redis has not taken yet (no mark in
                            the granted hash): the worker's draw chore takes them; not drift */
    int64_t owed;        /* ended - redis_returned: returns this Redis has not had */
    int64_t drift;       /* (initial + restocked - remaining) - (held + pending + owed) */
} reconcile_item;

typedef struct reconcile_report {
    reconcile_item *items;
    size_t nitems;
    int64_t queue;      /* orders waiting in the items' queues */
    int64_t processing; /* orders held by workers */
    int64_t pending;    /* all of the items' pending hashes */
    int64_t dead;       /* the items' dead letters */
    int64_t drifting;   /* items whose drift is not 0, or unknown to Redis */
    int64_t owing;      /* items owed returns that only a rebuild gives back */
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

/* True when the item is owed more returns than PostgreSQL still owes: units
 * that went back to another Redis, which no sweep returns to this one. */
int reconcile_item_owes(const reconcile_item *it);

/* True when --rebuild has work on the item: it drifts, or it is owed
 * returns that only a rebuild gives back. */
int reconcile_item_needs_rebuild(const reconcile_item *it);

/* Writes the report as a table (json == 0) or as one JSON object. */
void reconcile_print(const reconcile_report *r, int json, FILE *out);

/* Takes every item that is not ok (reconcile_item_ok) off sale: removes
 * its Redis state (each segment's), so that its buyers hear 404 rather than
 * buy units it could sell twice, until reconcile_rebuild puts it back. An
 * item only owed returns keeps selling. For a start that sells the sound
 * items while the others are rebuilt. Returns the number of items taken
 * off, or -1 with err set. */
int reconcile_hold(redis_nodes *rn, const reconcile_report *r, char *err, size_t errlen);

/* Sets every item that needs it (reconcile_item_needs_rebuild) back from
 * the books: round, initial, restocks, window and limit from PostgreSQL,
 * remaining = initial + restocked - held - pending, each buyer's units
 * of the persisted and pending orders and every cancelled or expired order
 * marked returned; for an item in segments, each segment's share of these
 * (keys.h). A buyer's units given back are counted up to the last unit an
 * order of theirs was numbered, so the next order never takes the number
 * of one that holds units.
 *
 * An item is rebuilt in pieces, none over every buyer: its state removed
 * first (off sale, as reconcile_hold), then its buyers and marks written
 * into staging keys a few thousand at a time, read from one snapshot of
 * PostgreSQL, then, last, one MULTI per segment renames them in and sets
 * the state: the step that puts the item back on sale, segment 0 the very
 * last. A crash between pieces leaves the item off sale (its buyers hear
 * 404) and `reconcile` says it is missing in Redis: a rebuild run again
 * starts it afresh. Progress goes to progress (NULL: none) for large items.
 *
 * Run it with the sale of the items it rebuilds paused (reconcile_hold does
 * that): a purchase landing between the read and the write is not seen,
 * and its unit could be sold again. Stop the workers too, or accept that an
 * order they persist or a return they make meanwhile leaves a unit counted
 * as sold (never sold twice) until the next rebuild. An item that fails is
 * left off sale and the next one is tried. Returns the number of items
 * rebuilt, or -1 with err set (the first failure) when any failed. */
int reconcile_rebuild(redis_nodes *rn, PGconn *pg, const reconcile_report *r, FILE *progress,
                      char *err, size_t errlen);

/* The pending orders of item it's round, read again now from every segment's
 * pending hash into out->waiting (out holds nothing else; the caller frees
 * out->waiting). 0, or -1 when Redis fails or memory runs out. */
int reconcile_read_pending(redis_nodes *rn, const reconcile_item *it, reconcile_report *out);

/* Drops from r->waiting the orders PostgreSQL holds (on pg: inside a
 * transaction, as its snapshot sees them). 0, or -1 when PostgreSQL fails. */
int reconcile_drop_persisted(PGconn *pg, reconcile_report *r);

#endif
