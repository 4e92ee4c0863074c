/* order_life.c: the states of an order and the moves between them. */
#include "order_life.h"

#include <string.h>

static const char *const names[ORDER_STATE_COUNT] = {
    [ORDER_QUEUED] = "queued",       [ORDER_PERSISTED] = "persisted", [ORDER_PAID] = "paid",
    [ORDER_CANCELLED] = "cancelled", [ORDER_EXPIRED] = "expired",
};

const char *order_state_name(order_state s)
{
    return (unsigned)s < ORDER_STATE_COUNT ? names[s] : "unknown";
}

int order_state_named(const char *name, order_state *s)
{
    for (int i = 0; i < ORDER_STATE_COUNT; i++)
        if (strcmp(name, names[i]) == 0) {
            *s = (order_state)i;
            return 0;
        }
    return -1;
}

/* The refusal of an order settled otherwise. */
static sk_status settled(order_state s)
{
    switch (s) {
    case ORDER_PAID:
        return SK_ORDER_PAID;
    case ORDER_CANCELLED:
        return SK_ORDER_CANCELLED;
    case ORDER_EXPIRED:
        return SK_ORDER_EXPIRED;
    default:
        return SK_INTERNAL;
    }
}

order_move order_decide(order_action action, order_state from, int payment_step, int overdue)
{
    order_state wanted = action == ORDER_PAY ? ORDER_PAID : ORDER_CANCELLED;
    if (from == ORDER_PERSISTED) {
        if (!payment_step)
            return (order_move){0, from, SK_ORDER_FINAL};
        if (action == ORDER_PAY && overdue)
            return (order_move){1, ORDER_EXPIRED, SK_ORDER_EXPIRED};
        return (order_move){1, wanted, SK_OK};
    }
    if (from == wanted)
        return (order_move){0, from, SK_OK};
    return (order_move){0, from, from == ORDER_QUEUED ? SK_INTERNAL : settled(from)};
}
