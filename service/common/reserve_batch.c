/* reserve_batch.c: the reserve script's arguments and answers. */
#include "reserve_batch.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void reserve_batch_init_segment(reserve_batch *b, int64_t item, int64_t key_id, int max_pending)
{
    b->item = item;
    b->key_id = key_id;
    b->n = 0;
    keys_item_state(b->state_key, sizeof(b->state_key), key_id);
    keys_item_buyers(b->buyers_key, sizeof(b->buyers_key), key_id);
    keys_queue(b->queue_key, sizeof(b->queue_key), key_id);
    keys_pending(b->pending_key, sizeof(b->pending_key), key_id);
    keys_item_given_back(b->given_back_key, sizeof(b->given_back_key), key_id);
    snprintf(b->item_s, sizeof(b->item_s), "%" PRId64, item);
    snprintf(b->bound_s, sizeof(b->bound_s), "%d", max_pending);
    snprintf(b->key_id_s, sizeof(b->key_id_s), "%" PRId64, key_id);
    reserve_batch_guard(b, 0);
}

void reserve_batch_guard(reserve_batch *b, int ttl_ms)
{
    b->guarded = ttl_ms > 0;
    snprintf(b->lock_ttl_s, sizeof(b->lock_ttl_s), "%d", ttl_ms > 0 ? ttl_ms : 0);
}

int reserve_batch_nkeys(const reserve_batch *b)
{
    return RESERVE_BATCH_NKEYS + (b->guarded ? b->n : 0);
}

void reserve_batch_init(reserve_batch *b, int64_t item, int max_pending)
{
    reserve_batch_init_segment(b, item, item, max_pending);
}

int64_t reserve_buyer(int64_t user, int anonymous, int64_t order_id)
{
    return anonymous ? order_id : user;
}

int reserve_batch_add_mode(reserve_batch *b, int64_t buyer, int64_t order_id, int quantity,
                           const char *mode)
{
    if (b->n >= RESERVE_BATCH_MAX)
        return -1;
    reserve_batch_buyer *u = &b->buyer[b->n];
    snprintf(u->user_s, sizeof(u->user_s), "%" PRId64, buyer);
    snprintf(u->order_s, sizeof(u->order_s), "%" PRId64, order_id);
    snprintf(u->quantity_s, sizeof(u->quantity_s), "%d", quantity);
    snprintf(u->mode, sizeof(u->mode), "%s", mode);
    keys_order_lock(u->lock, sizeof(u->lock), b->key_id, buyer);
    return b->n++;
}

int reserve_batch_add(reserve_batch *b, int64_t user, int anonymous, int64_t order_id, int quantity)
{
    return reserve_batch_add_mode(b, reserve_buyer(user, anonymous, order_id), order_id, quantity,
                                  anonymous ? "1" : "0");
}

int reserve_batch_keys_args(reserve_batch *b)
{
    const char **ka = b->keys_args;
    int n = 0;
    ka[n++] = b->state_key;
    ka[n++] = b->buyers_key;
    ka[n++] = b->queue_key;
    ka[n++] = b->pending_key;
    ka[n++] = b->given_back_key;
    for (int i = 0; b->guarded && i < b->n; i++)
        ka[n++] = b->buyer[i].lock;
    int nkeys = n;
    ka[n++] = b->item_s;
    ka[n++] = b->bound_s;
    ka[n++] = b->key_id_s;
    ka[n++] = b->lock_ttl_s;
    for (int i = 0; i < b->n; i++) {
        ka[n++] = b->buyer[i].user_s;
        ka[n++] = b->buyer[i].order_s;
        ka[n++] = b->buyer[i].mode;
        ka[n++] = b->buyer[i].quantity_s;
    }
    return n - nkeys;
}

int reserve_batch_argv(reserve_batch *b, const script *sc, int by_text)
{
    int nargs = reserve_batch_keys_args(b);
    return scripts_argv(sc, by_text, reserve_batch_nkeys(b), nargs, b->keys_args, b->argv, b->lens,
                        RESERVE_BATCH_ARGV, b->numkeys);
}

static int reply_shape(const redisReply *r, int n)
{
    return r && r->type == REDIS_REPLY_ARRAY && n >= 1 &&
           r->elements == (size_t)(RESERVE_REPLY_ITEM + RESERVE_REPLY_BUYER * n);
}

int reserve_batch_item(const redisReply *r, int n, reserve_item *item)
{
    if (!reply_shape(r, n))
        return -1;
    int64_t v[RESERVE_REPLY_ITEM];
    for (int i = 0; i < RESERVE_REPLY_ITEM; i++) {
        if (r->element[i]->type != REDIS_REPLY_INTEGER)
            return -1;
        v[i] = r->element[i]->integer;
    }
    *item = (reserve_item){v[0], v[1], v[2], v[3], v[4], v[5], v[6]};
    return 0;
}

reserve_outcome reserve_batch_answer(const redisReply *r, int n, int i, reserve_answer *a)
{
    if (!reply_shape(r, n) || i < 0 || i >= n)
        return RESERVE_BAD_REPLY;
    redisReply *const *e = r->element + RESERVE_REPLY_ITEM + RESERVE_REPLY_BUYER * i;
    if (e[0]->type != REDIS_REPLY_STRING || e[1]->type != REDIS_REPLY_INTEGER ||
        e[2]->type != REDIS_REPLY_INTEGER)
        return RESERVE_BAD_REPLY;
    a->outcome = reserve_outcome_named(e[0]->str);
    a->remaining = e[1]->integer;
    a->bought = e[2]->integer;
    a->first_unit = 0;
    if (a->outcome == RESERVE_HELD) {
        a->first_unit = a->bought;
        a->bought = 0;
    }
    return a->outcome;
}
