/* room_terms.h: an item's admission terms (race or the waiting room, issue
 * 27) read from a create's or a reset's body, and the room's part of the
 * item's view written out. Pure. */
#ifndef SECKILL_ROOM_TERMS_H
#define SECKILL_ROOM_TERMS_H

#include <stdint.h>

#include <jansson.h>

#include "room_order.h"
#include "status.h"

#define ROOM_TTL_DEFAULT_S 120
#define ROOM_TTL_MAX_S 86400
/* admit_burst and max_active are at most this (a stock's bound, json_io.h). */
#define ROOM_COUNT_MAX 1000000000000LL

/* The admission terms of a round. */
typedef struct room_terms {
    int room;            /* "admission": "room" (0: "race") */
    int given;           /* the body named "admission" (a reset keeps the terms otherwise) */
    int64_t prequeue_ms; /* prequeue_opens_at, Unix ms; 0: open from the round's start */
    double admit_per_s;  /* > 0 */
    int64_t admit_burst; /* -1: the stock */
    int64_t max_active;  /* 0: no bound */
    int admission_ttl_s;
} room_terms;

/* The room's counts and secret as the item's view shows them. */
typedef struct room_counts {
    char commitment[ROOM_HEX_LEN + 1]; /* hex SHA-256(K) */
    char secret[ROOM_HEX_LEN + 1];     /* hex K: shown once started only */
    int started;                       /* the room's flag: no join counts as pre-start any more */
    int64_t joined, admitted, active, expired_unused;
} room_counts;

/* Reads "admission", "prequeue_opens_at", "admit_per_s", "admit_burst",
 * "max_active" and "admission_ttl_s" of root into *r for a sale that starts
 * at starts_ms (0: no start); starts_named: the body named starts_at (a
 * reset to a room must). SK_OK, or SK_INVALID with *why naming the field. */
sk_status room_terms_parse(json_t *root, int64_t starts_ms, int starts_named, room_terms *r,
                           const char **why);

/* Sets the admission members of an item's JSON object: "admission", and for
 * a room its terms and "room": {commitment, secret (null until c->started),
 * joined, admitted, active, expired_unused}. Returns 0, or -1 when out of
 * memory. */
int room_terms_json(json_t *item, const room_terms *r, const room_counts *c);

#endif
