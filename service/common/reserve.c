/* reserve.c: the reserve script's arguments and answers. */
#include "reserve.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    sk_status status;
} outcomes[] = {
    [RESERVE_QUEUED] = {"queued", SK_QUEUED},
    [RESERVE_SOLD_OUT] = {"sold_out", SK_SOLD_OUT},
    [RESERVE_ALREADY_PURCHASED] = {"already_purchased", SK_ALREADY_PURCHASED},
    [RESERVE_IN_PROGRESS] = {"in_progress", SK_IN_PROGRESS},
    [RESERVE_QUEUE_FULL] = {"queue_full", SK_QUEUE_FULL},
    [RESERVE_UNKNOWN_ITEM] = {"unknown_item", SK_NOT_FOUND},
    [RESERVE_BAD_REPLY] = {NULL, SK_INTERNAL},
};

int64_t reserve_buyer(int64_t user, int anonymous, int64_t order_id)
{
    return anonymous ? order_id : user;
}

void reserve_call_init(reserve_call *c, int64_t item, int64_t user, int anonymous, int64_t order_id,
                       int64_t now_ms, int max_pending, int release_lock)
{
    int64_t buyer = reserve_buyer(user, anonymous, order_id);
    keys_item_state(c->state_key, sizeof(c->state_key), item);
    keys_item_buyers(c->buyers_key, sizeof(c->buyers_key), item);
    keys_buyer_lock(c->lock_key, sizeof(c->lock_key), item, buyer);
    snprintf(c->item_s, sizeof(c->item_s), "%" PRId64, item);
    snprintf(c->user_s, sizeof(c->user_s), "%" PRId64, buyer);
    snprintf(c->order_s, sizeof(c->order_s), "%" PRId64, order_id);
    snprintf(c->time_s, sizeof(c->time_s), "%" PRId64, now_ms);
    snprintf(c->bound_s, sizeof(c->bound_s), "%d", max_pending);
    /* KEYS: state, buyers, lock, queue, pending. ARGV: item, user, lock
     * token, order id (the token is the order id: unique per request),
     * time, anonymous flag, free the lock before returning, the bound of the
     * pending orders. */
    const char *ka[RESERVE_NKEYS + RESERVE_NARGS] = {c->state_key,
                                                     c->buyers_key,
                                                     c->lock_key,
                                                     KEYS_QUEUE,
                                                     KEYS_PENDING,
                                                     c->item_s,
                                                     c->user_s,
                                                     c->order_s,
                                                     c->order_s,
                                                     c->time_s,
                                                     anonymous ? "1" : "0",
                                                     release_lock ? "1" : "0",
                                                     c->bound_s};
    memcpy(c->keys_args, ka, sizeof(ka));
}

reserve_outcome reserve_parse(const redisReply *r, int64_t *remaining, int64_t *round)
{
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 3)
        return RESERVE_BAD_REPLY;
    return reserve_parse_triple(r->element, remaining, round);
}

reserve_outcome reserve_parse_triple(redisReply *const *e, int64_t *remaining, int64_t *round)
{
    if (e[0]->type != REDIS_REPLY_STRING || e[1]->type != REDIS_REPLY_INTEGER ||
        e[2]->type != REDIS_REPLY_INTEGER)
        return RESERVE_BAD_REPLY;
    for (int o = 0; o < RESERVE_BAD_REPLY; o++) {
        if (strcmp(e[0]->str, outcomes[o].name) == 0) {
            *remaining = e[1]->integer;
            *round = e[2]->integer;
            return (reserve_outcome)o;
        }
    }
    return RESERVE_BAD_REPLY;
}

sk_status reserve_status(reserve_outcome o)
{
    return (unsigned)o <= RESERVE_BAD_REPLY ? outcomes[o].status : SK_INTERNAL;
}
