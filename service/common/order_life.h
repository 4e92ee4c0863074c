/* order_life.h: what happens to an order after it is accepted:
 *
 *   queued (in Redis) -> persisted (in PostgreSQL) -> paid | cancelled | expired
 *
 * A persisted order of an item with a payment window (payment_timeout_s > 0)
 * awaits payment until its pay_by; one of an item without (0) is final. The
 * units of a cancelled or expired order go back on sale once
 * (order_return.h). PostgreSQL decides every move (an UPDATE of the row it
 * holds locked), so of a payment and a cancellation racing for one order,
 * exactly one wins. This module is the pure part: the states, their names,
 * and which move an action makes from which state (the row in PostgreSQL
 * and its insert are order_row.h's). */
#ifndef SECKILL_ORDER_LIFE_H
#define SECKILL_ORDER_LIFE_H

#include <stdint.h>

#include "order.h"
#include "status.h"

typedef enum order_state {
    ORDER_QUEUED,    /* accepted; in Redis, not yet in PostgreSQL */
    ORDER_PERSISTED, /* in PostgreSQL: awaiting payment, or final without a payment step */
    ORDER_PAID,
    ORDER_CANCELLED, /* by its buyer or an admin; units given back */
    ORDER_EXPIRED,   /* not paid by pay_by; units given back */
    ORDER_STATE_COUNT
} order_state;

/* "queued", "persisted", "paid", "cancelled", "expired". */
const char *order_state_name(order_state s);

/* The state a name (as PostgreSQL's orders.status holds it) stands for.
 * Returns 0, or -1 for no state. */
int order_state_named(const char *name, order_state *s);

/* An order and where it stands. Times are Unix ms, 0 when they do not apply. */
typedef struct order_record {
    order o;
    order_state state;
    int64_t pay_by_ms; /* the payment deadline; 0: no payment step (or still queued) */
    int64_t paid_ms;
    int64_t ended_ms; /* when it was cancelled or expired */
    /* A cancelled or expired order's return is settled: its units are back
     * on sale, or round_over: its round had ended (a reset set the stock
     * anew), so nothing came back. */
    int returned;
    int round_over;
} order_record;

typedef enum order_action { ORDER_PAY, ORDER_CANCEL } order_action;

/* What an action does to a persisted (or settled) order. */
typedef struct order_move {
    int change;       /* 1: the row moves to `to`; 0: it stays as it is */
    order_state to;   /* the state the order is in afterwards */
    sk_status status; /* SK_OK (the action's answer, a repeat included) or its refusal */
} order_move;

/* The move of action on an order in state `from` (persisted or later),
 * whose item has a payment step or not, overdue when its pay_by has passed.
 *   pay:    persisted -> paid; paid again: the same answer; a payment past
 *           pay_by expires the order instead (409 expired: the deadline
 *           decides, not the sweep's timing); cancelled or expired: 409.
 *   cancel: persisted -> cancelled; cancelled again: the same answer; paid
 *           or expired: 409.
 * Without a payment step a persisted order is final: 409 final to both. */
order_move order_decide(order_action action, order_state from, int payment_step, int overdue);

#endif
