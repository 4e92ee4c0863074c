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

#define ORDER_INSERT                                                                               \
    "INSERT INTO orders (id, item_id, user_id, round, created_at, quantity, first_unit, pay_by,"   \
    "                    segment_id, home_id)"                                                     \
    " SELECT o.id, o.item_id, o.user_id, o.round, to_timestamp(o.created_ms / 1000.0),"            \
    "        o.quantity, o.first_unit,"                                                            \
    "        CASE WHEN i.payment_timeout_s > 0 THEN to_timestamp(o.created_ms / 1000.0)"           \
    "             + make_interval(secs => i.payment_timeout_s) END,"                               \
    "        nullif(o.segment_id, 0), nullif(o.home_id, 0)"                                        \
    " FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[],"           \
    "             $6::int[], $7::bigint[], $8::bigint[], $9::bigint[])"                            \
    "      AS o(id, item_id, user_id, round, created_ms, quantity, first_unit, segment_id,"        \
    "           home_id)"                                                                          \
    " JOIN items i ON i.id = o.item_id"

const char order_insert_sql[] = ORDER_INSERT " ON CONFLICT DO NOTHING";
const char order_insert_fresh_sql[] = ORDER_INSERT;

void order_insert_values(const order *o, int64_t v[ORDER_INSERT_PARAMS])
{
    const int64_t fields[ORDER_INSERT_PARAMS] = {o->id,         o->item_id,    o->user_id,
                                                 o->round,      o->created_ms, o->quantity,
                                                 o->first_unit, o->segment_id, o->home_id};
    memcpy(v, fields, sizeof(fields));
}
