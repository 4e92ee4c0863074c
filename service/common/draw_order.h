/* draw_order.h: the draw's rules, pure (issue 28): an entrant's ticket, the
 * order of the entrants, and the serving rule. The caller brings the round's
 * secret K (the room's, room_order.h), the beacon and the entrants.
 *
 *   ticket = HMAC-SHA256(K, "seckill-draw-v1|<beacon>|<E>"), K's 32 raw
 *            bytes, the beacon as given ("" for none), E the entrant handle
 *            of room_entrant()
 *   order  = tickets as big-endian bytes, smallest first; ties (which cannot
 *            happen in practice) by E
 *   serve  = in that order, an entrant whose quantity fits the units left
 *            wins them; one whose quantity does not fit while units are left
 *            is skipped (never partly served); once none is left the rest
 *            are waitlisted. The waitlist is served later by the same rule.
 *
 * scripts/draw-verify computes the same in Python from the public audit. */
#ifndef SECKILL_DRAW_ORDER_H
#define SECKILL_DRAW_ORDER_H

#include <stddef.h>
#include <stdint.h>

/* The longest beacon, in bytes (items.draw_beacon's check). */
#define DRAW_BEACON_MAX 256

typedef enum draw_outcome {
    DRAW_NONE = 0, /* not drawn yet */
    DRAW_WON,
    DRAW_WAITLISTED,
    DRAW_SKIPPED,
    DRAW_WON_FROM_WAITLIST
} draw_outcome;

/* The outcome's name as stored and published ("won", "waitlisted",
 * "skipped", "won_from_waitlist"); NULL for DRAW_NONE or an unknown value. */
const char *draw_outcome_name(draw_outcome o);

/* The outcome named name into *o: 0, or -1 when name is none of them. */
int draw_outcome_named(const char *name, draw_outcome *o);

/* HMAC-SHA256(K, "seckill-draw-v1|<beacon>|<E>") into ticket, K being k's
 * 32 raw bytes, beacon beacon_len bytes (at most DRAW_BEACON_MAX; NULL with
 * 0 for none) and e the entrant's hex handle. Returns 0, or -1 when the
 * beacon is too long, e is not 64 characters or libcrypto failed. */
int draw_ticket(const unsigned char k[32], const char *beacon, size_t beacon_len, const char *e,
                unsigned char ticket[32]);

typedef struct draw_entrant {
    char e[65]; /* E, hex */
    unsigned char ticket[32];
    int64_t user; /* the caller's, carried along */
    int quantity;
    draw_outcome outcome;
} draw_entrant;

/* Sorts v into ticket order, ties by E. */
void draw_sort(draw_entrant *v, size_t n);

/* Sets every outcome of v (in ticket order) by the serving rule over stock
 * units: DRAW_WON, DRAW_SKIPPED or DRAW_WAITLISTED. Returns the units won. */
int64_t draw_serve(draw_entrant *v, size_t n, int64_t stock);

/* Compares two entrants in ticket order (ticket bytes, then E), as qsort's
 * comparator does: <0, 0 or >0. */
int draw_entrant_cmp(const draw_entrant *a, const draw_entrant *b);

#endif
