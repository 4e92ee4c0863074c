/* reserve_batch.c: the batch reserve script's arguments and answers. */
#include "reserve_batch.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void reserve_batch_init(reserve_batch *b, int64_t item, int max_pending)
{
    b->item = item;
    b->n = 0;
    keys_item_state(b->state_key, sizeof(b->state_key), item);
    keys_item_buyers(b->buyers_key, sizeof(b->buyers_key), item);
    snprintf(b->item_s, sizeof(b->item_s), "%" PRId64, item);
    snprintf(b->bound_s, sizeof(b->bound_s), "%d", max_pending);
}

int reserve_batch_add(reserve_batch *b, int64_t user, int anonymous, int64_t order_id,
                      int64_t now_ms)
{
    if (b->n >= RESERVE_BATCH_MAX)
        return -1;
    reserve_batch_buyer *u = &b->buyer[b->n];
    int64_t buyer = reserve_buyer(user, anonymous, order_id);
    keys_buyer_lock(u->lock_key, sizeof(u->lock_key), b->item, buyer);
    snprintf(u->user_s, sizeof(u->user_s), "%" PRId64, buyer);
    snprintf(u->order_s, sizeof(u->order_s), "%" PRId64, order_id);
    snprintf(u->time_s, sizeof(u->time_s), "%" PRId64, now_ms);
    u->anonymous = anonymous;
    return b->n++;
}

int reserve_batch_argv(reserve_batch *b, const script *sc, int by_text)
{
    const char **ka = b->keys_args;
    int n = 0;
    ka[n++] = b->state_key;
    ka[n++] = b->buyers_key;
    ka[n++] = KEYS_QUEUE;
    ka[n++] = KEYS_PENDING;
    for (int i = 0; i < b->n; i++)
        ka[n++] = b->buyer[i].lock_key;
    int nkeys = n;
    ka[n++] = b->item_s;
    ka[n++] = b->bound_s;
    for (int i = 0; i < b->n; i++) {
        ka[n++] = b->buyer[i].user_s;
        ka[n++] = b->buyer[i].order_s;
        ka[n++] = b->buyer[i].time_s;
        ka[n++] = b->buyer[i].anonymous ? "1" : "0";
    }
    return scripts_argv(sc, by_text, nkeys, n - nkeys, ka, b->argv, b->lens, RESERVE_BATCH_ARGV,
                        b->numkeys);
}

reserve_outcome reserve_batch_parse(const redisReply *r, int n, int i, int64_t *remaining,
                                    int64_t *round)
{
    if (!r || r->type != REDIS_REPLY_ARRAY || n < 1 || i < 0 || i >= n ||
        r->elements != (size_t)n * 3)
        return RESERVE_BAD_REPLY;
    return reserve_parse_triple(r->element + 3 * i, remaining, round);
}
