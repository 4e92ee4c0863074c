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
    int nkeys = 4 + b->n;
    const char **argv = b->argv;
    int argc = 0;
    by_text = by_text || !sc->sha[0]; /* never loaded: no digest to name it by */
    snprintf(b->numkeys, sizeof(b->numkeys), "%d", nkeys);
    argv[argc++] = by_text ? "EVAL" : "EVALSHA";
    argv[argc++] = by_text ? sc->text : sc->sha;
    argv[argc++] = b->numkeys;
    argv[argc++] = b->state_key;
    argv[argc++] = b->buyers_key;
    argv[argc++] = KEYS_QUEUE;
    argv[argc++] = KEYS_PENDING;
    for (int i = 0; i < b->n; i++)
        argv[argc++] = b->buyer[i].lock_key;
    argv[argc++] = b->item_s;
    argv[argc++] = b->bound_s;
    for (int i = 0; i < b->n; i++) {
        argv[argc++] = b->buyer[i].user_s;
        argv[argc++] = b->buyer[i].order_s;
        argv[argc++] = b->buyer[i].time_s;
        argv[argc++] = b->buyer[i].anonymous ? "1" : "0";
    }
    for (int i = 0; i < argc; i++)
        b->lens[i] = i == 1 && by_text ? sc->len : strlen(argv[i]);
    return argc;
}

reserve_outcome reserve_batch_parse(const redisReply *r, int n, int i, int64_t *remaining,
                                    int64_t *round)
{
    if (!r || r->type != REDIS_REPLY_ARRAY || n < 1 || i < 0 || i >= n ||
        r->elements != (size_t)n * 3)
        return RESERVE_BAD_REPLY;
    return reserve_parse_triple(r->element + 3 * i, remaining, round);
}
