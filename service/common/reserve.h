/* reserve.h: what the reserve script (lua/reserve_batch.lua) decides, read in
 * one place for every caller: the product's purchase path and the
 * laboratory's lua_reserve strategy. Pure. */
#ifndef SECKILL_RESERVE_H
#define SECKILL_RESERVE_H

#include <stdint.h>

#include <hiredis/hiredis.h>

#include "status.h"

/* What the script decided for one buyer. */
typedef enum reserve_outcome {
    RESERVE_QUEUED,             /* the units taken, the order queued */
    RESERVE_NOT_STARTED,        /* before the sale window's start, by Redis's clock */
    RESERVE_ENDED,              /* at or after the window's end */
    RESERVE_SOLD_OUT,           /* no stock left */
    RESERVE_LIMIT_REACHED,      /* the buyer's units would pass per_buyer_limit */
    RESERVE_INSUFFICIENT_STOCK, /* fewer units left than the quantity */
    RESERVE_QUEUE_FULL,         /* max_pending_orders orders wait for PostgreSQL */
    RESERVE_ARCHIVED,           /* the item is archived: off sale for good */
    RESERVE_BUYER_REQUIRED,     /* anonymous, where the limit is below the round's units */
    RESERVE_IN_PROGRESS,        /* the buyer's order lock stands: an order is being created */
    RESERVE_UNKNOWN_ITEM,       /* no round of this item in Redis */
    /* A room item's buyer (lua/reserve_batch.lua's admission marker). */
    RESERVE_ADMISSION_MISSING, /* no admission checked by the server */
    RESERVE_ADMISSION_ROUND,   /* an admission of another round */
    RESERVE_ADMISSION_EXPIRED, /* an admission whose window is over, by Redis's clock */
    RESERVE_DRAW_ITEM,         /* an item sold by a draw: no purchase takes its units */
    /* Segmented items only (keys.h): the path between segments. */
    RESERVE_HELD,      /* home could not supply: the units held against the limit */
    RESERVE_RELEASED,  /* a hold given back */
    RESERVE_SEGMENTED, /* asked as one segment's: the server must learn the segments */
    RESERVE_BAD_REPLY  /* not an answer of the script */
} reserve_outcome;

/* What a reply says of the item, once a call. */
typedef struct reserve_item {
    int64_t now_ms;    /* Redis's clock when the script ran (Unix ms) */
    int64_t round;     /* the sale round */
    int64_t changes;   /* restocks and returns of the round so far */
    int64_t starts_ms; /* the sale window, Unix ms; 0: no bound */
    int64_t ends_ms;
    int64_t per_buyer_limit;
    int64_t segments; /* the item's segments (1: not split) */
} reserve_item;

/* One buyer's answer. */
typedef struct reserve_answer {
    reserve_outcome outcome;
    int64_t remaining;  /* the item's stock after this buyer */
    int64_t bought;     /* the buyer's units of the round after this buyer */
    int64_t first_unit; /* RESERVE_HELD: the first unit of the held order */
} reserve_answer;

/* Entries of a reply before the buyers' answers, and a buyer's entries. */
#define RESERVE_REPLY_ITEM 7
#define RESERVE_REPLY_BUYER 3

/* The domain outcome of a reserve outcome (RESERVE_QUEUED: SK_QUEUED). */
sk_status reserve_status(reserve_outcome o);

/* The outcome the script calls name; RESERVE_BAD_REPLY for none. */
reserve_outcome reserve_outcome_named(const char *name);

/* Restocks one round takes at most (items.c refuses more). */
#define RESERVE_RESTOCKS_MAX ((1 << 20) - 1)

/* The low bits of a stock version: the round's changes (restocks and
 * return calls, each of which gave back at least one unit). Rounds come
 * from one sequence and stay below 2^31; a round would need 2^32 changes
 * for its version to wrap, after which a server's sold-out flag of the item
 * could outlive a change until the next round (one purchase a second still
 * reaches Redis: never an oversell). */
#define RESERVE_CHANGES_BITS 32

/* The version of an item's stock that sold-out flags belong to: it grows
 * with every round and every change (a restock, a return of units) within a
 * round. */
int64_t reserve_stock_version(int64_t round, int64_t changes);

#endif
