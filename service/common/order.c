/* order.c: order ids and the queue format of an order. */
#include "order.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "validate.h"

void order_id_gen_init(order_id_gen *gen, unsigned node)
{
    gen->node = node & ORDER_NODE_MAX;
    /* last always carries the node bits, so last + one step does too. */
    atomic_init(&gen->last, gen->node);
}

int64_t order_id_next(order_id_gen *gen, int64_t now_ms)
{
    uint64_t ms = now_ms > ORDER_EPOCH_MS ? (uint64_t)(now_ms - ORDER_EPOCH_MS) : 0;
    uint64_t floor = (ms << 22) | gen->node;
    uint64_t last = atomic_load_explicit(&gen->last, memory_order_relaxed);
    uint64_t next;
    do {
        /* One step of the sequence is 1 << NODE_BITS: the node bits stay. */
        next = last + (1u << ORDER_NODE_BITS);
        if (next < floor)
            next = floor;
    } while (!atomic_compare_exchange_weak_explicit(&gen->last, &last, next, memory_order_relaxed,
                                                    memory_order_relaxed));
    return (int64_t)next;
}

int order_encode(const order *o, char *buf, size_t len)
{
    int n = snprintf(buf, len,
                     "{\"order_id\":\"%" PRId64 "\",\"item_id\":%" PRId64 ",\"user_id\":%" PRId64
                     ",\"round\":%" PRId64 ",\"created_ms\":%" PRId64
                     ",\"quantity\":%d,\"first_unit\":%" PRId64 "}",
                     o->id, o->item_id, o->user_id, o->round, o->created_ms, o->quantity,
                     o->first_unit);
    return n < 0 || (size_t)n >= len ? -1 : n;
}

int order_decode(const char *text, size_t len, order *o)
{
    json_error_t error;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &error);
    if (!root)
        return -1;
    const char *id;
    json_int_t item, user, round, created, quantity = 1, first_unit = 1;
    int rc = json_unpack(root, "{s:s, s:I, s:I, s:I, s:I, s?I, s?I}", "order_id", &id, "item_id",
                         &item, "user_id", &user, "round", &round, "created_ms", &created,
                         "quantity", &quantity, "first_unit", &first_unit);
    if (rc == 0 && validate_i64(id, strlen(id), &o->id) == 0 && o->id > 0 && item > 0 && user > 0 &&
        quantity >= 1 && quantity <= ORDER_QUANTITY_MAX && first_unit >= 1) {
        o->quantity = (int)quantity;
        o->first_unit = first_unit;
        o->item_id = item;
        o->user_id = user;
        o->round = round;
        o->created_ms = created;
    } else {
        rc = -1;
    }
    json_decref(root);
    return rc;
}
