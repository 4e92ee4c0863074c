/* segment_route.h: the way of one purchase of a segmented item (keys.h)
 * between its segments. The buyer's units are counted on the buyer's home
 * segment, so a purchase goes home first (mode "h"): there it is either
 * settled, or, when home cannot supply the quantity, the units are held
 * against the limit and the purchase moves on to the other segments, one at
 * a time (mode "t": take the units for a buyer held at home), skipping those
 * known sold out. When none can supply them the hold is given back (mode
 * "r") and the buyer hears why. A take and a release name the hold's round:
 * a reset that reached a segment meanwhile makes them change nothing. An
 * anonymous buyer is counted nowhere: the purchase just tries the segments
 * in turn (mode "a").
 *
 * A hold is never left behind by a refusal. A crash or a failed Redis call
 * between the hold and its release leaves the buyer's count too high (the
 * buyer may be refused too soon), never an oversell: the stock is only ever
 * taken by one script call that takes it all.
 *
 * Pure: it decides, purchase.c sends. */
#ifndef SECKILL_SEGMENT_ROUTE_H
#define SECKILL_SEGMENT_ROUTE_H

#include <stdint.h>

#include "reserve.h"
#include "reserve_batch.h"

typedef enum segment_stage {
    SEGMENT_HOME,    /* at home, counted there ("h") */
    SEGMENT_TAKE,    /* held at home, taking elsewhere ("t") */
    SEGMENT_RELEASE, /* giving the hold back ("r<round>") */
    SEGMENT_ANON     /* an anonymous buyer, segment after segment ("a") */
} segment_stage;

/* Says whether the segment of key id key is known sold out (skipped). */
typedef int (*segment_sold_out_fn)(void *ctx, int64_t key);

typedef struct segment_route {
    const int64_t *keys; /* the key ids of the item's segments (keys_segment) */
    int segments;
    int home;  /* the index where the purchase started */
    int tried; /* segments after home tried so far */
    segment_stage stage;
    int64_t first_unit;      /* the held order's, from home */
    int64_t round;           /* the round of the hold, from home */
    reserve_outcome refusal; /* the answer should no segment supply */
    segment_sold_out_fn sold_out;
    void *ctx;
} segment_route;

/* The next thing to do: send the buyer to a segment, or answer. */
typedef struct segment_step {
    int answer;              /* 1: answer with outcome; 0: send */
    reserve_outcome outcome; /* answer */
    int segment;             /* send: the index of the segment */
    char mode[RESERVE_MODE_MAX];
} segment_step;

/* The first step of a purchase by buyer (user id, or the order id of an
 * anonymous buyer) of an item of `segments` (> 1) segments whose key ids
 * are keys (kept by r). sold_out may be NULL (nothing skipped). */
void segment_route_start(segment_route *r, const int64_t *keys, int segments, int64_t buyer,
                         int anonymous, segment_sold_out_fn sold_out, void *ctx,
                         segment_step *step);

/* The step after the segment r sent the buyer to answered `got` (with the
 * segment's stock after it, `remaining`, and for RESERVE_HELD the held
 * order's first unit and the segment's round: a take and a release name
 * the round of their hold, so that a reset between changes nothing). */
void segment_route_next(segment_route *r, reserve_outcome got, int64_t remaining,
                        int64_t first_unit, int64_t round, segment_step *step);

/* Instead of the step segment_route_next would take after a hold (of
 * round): the hold given back at home and the buyer answered
 * RESERVE_BAD_REPLY (503), for a hold no replica confirmed
 * (reserve_wait_replicas): a take on another master must not outlive a hold
 * its own master may lose. */
void segment_route_abandon(segment_route *r, int64_t round, segment_step *step);

#endif
