/* drawn.h: a drawn item made directly in PostgreSQL, for the tests of the
 * waitlist (issue 28): entrants at positions 1..n, outcomes by the draw's
 * serving rule (draw_order.h), and the winners' orders committed as the draw
 * commits them (draw_position set, granted_at null: their grants owed, as
 * after a draw that crashed before its grants). Redis is the test's: the
 * item's state with its stock, whose units the grants then take. */
#ifndef SECKILL_DRAWN_H
#define SECKILL_DRAWN_H

#include <stdint.h>

#include <libpq-fe.h>

/* Entrant at position p is buyer DRAWN_USER + p. */
#define DRAWN_USER 1000000

/* Turns item, a row of items of one segment in its current round (with its
 * per_buyer_limit and payment_timeout_s), into a draw item drawn now: n
 * entrants whose quantities are q[0..n) (NULL: 1 each), served over `units`
 * units; each winner's order (drawn_order_id) persisted, pay_by
 * payment_timeout_s from now. Returns the winners; aborts the test on a
 * failure. */
int drawn_item_make(PGconn *pg, int64_t item, int n, const int *q, int64_t units);

/* The order id drawn_item_make gives the winner at position p of item. */
int64_t drawn_order_id(int64_t item, int p);

/* The position's outcome now ("won", "waitlisted", ...) and its order id
 * (0: none) into *order (may be NULL). Aborts the test on a failure. */
const char *drawn_outcome(PGconn *pg, int64_t item, int p, int64_t *order);

#endif
