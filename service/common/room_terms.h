/* room_terms.h: an item's admission terms (race, the waiting room of issue
 * 27, or the draw of issue 28) read from a create's or a reset's body, and
 * the room's or the draw's part of the item's view written out. Pure. */
#ifndef SECKILL_ROOM_TERMS_H
#define SECKILL_ROOM_TERMS_H

#include <stdint.h>

#include <jansson.h>

#include "draw_order.h"
#include "room_order.h"
#include "status.h"

#define ROOM_TTL_DEFAULT_S 120
#define ROOM_TTL_MAX_S 86400
/* admit_burst and max_active are at most this (a stock's bound, json_io.h). */
#define ROOM_COUNT_MAX 1000000000000LL

/* The admission terms of a round. */
typedef struct room_terms {
    int room;            /* "admission": "room" (0: "race", or "draw" when draw) */
    int draw;            /* "admission": "draw" */
    int given;           /* the body named "admission" (a reset keeps the terms otherwise) */
    int64_t prequeue_ms; /* prequeue_opens_at, Unix ms; 0: open from the round's start */
    double admit_per_s;  /* > 0 */
    int64_t admit_burst; /* -1: the stock */
    int64_t max_active;  /* 0: no bound */
    int admission_ttl_s;
    int64_t entries_open_ms; /* a draw's entries window, Unix ms: [open, close) */
    int64_t entries_close_ms;
} room_terms;

/* A draw's counts (issue 28) as the item's view shows them. drawn_ms 0:
 * not drawn yet (secret, beacon and stock are then not shown). */
typedef struct draw_counts {
    int64_t entries, won, waitlisted, skipped, won_from_waitlist, units_won;
    int64_t drawn_ms;
    int64_t stock; /* the units on offer at the draw */
    char beacon[DRAW_BEACON_MAX + 1];
} draw_counts;

/* The room's counts and secret as the item's view shows them. */
typedef struct room_counts {
    char commitment[ROOM_HEX_LEN + 1]; /* hex SHA-256(K) */
    char secret[ROOM_HEX_LEN + 1];     /* hex K: shown from starts_at only */
    int64_t joined, admitted, active, expired_unused;
    draw_counts draw; /* a draw item's (commitment and secret above are its K's) */
} room_counts;

/* Reads "admission", "prequeue_opens_at", "admit_per_s", "admit_burst",
 * "max_active" and "admission_ttl_s" of root into *r for a sale that starts
 * at starts_ms (0: no start); starts_named: the body named starts_at (a
 * reset to a room must). A draw's: "entries_open_at" and "entries_close_at"
 * (both, open before close), and no "segments" above 1. SK_OK, or
 * SK_INVALID with *why naming the field. */
sk_status room_terms_parse(json_t *root, int64_t starts_ms, int starts_named, room_terms *r,
                           const char **why);

/* Sets the admission members of an item's JSON object: "admission", and for
 * a room its terms and "room": {commitment, secret (null before starts_at:
 * now_ms < starts_ms), joined, admitted, active, expired_unused}; for a
 * draw entries_open_at, entries_close_at and "draw" (room_terms_draw_json).
 * Returns 0, or -1 when out of memory. */
int room_terms_json(json_t *item, const room_terms *r, const room_counts *c, int64_t starts_ms,
                    int64_t now_ms);

/* A time as JSON: its RFC 3339 text, or null for 0 (NULL when out of
 * memory). */
json_t *room_terms_time(int64_t ms);

/* A draw's object: {commitment, entries_open_at, entries_close_at, entries,
 * drawn_at, secret, beacon, stock (these four null before the draw), won,
 * waitlisted, skipped, won_from_waitlist, units_won}. NULL when out of
 * memory. */
json_t *room_terms_draw_json(const room_terms *r, const room_counts *c);

#endif
