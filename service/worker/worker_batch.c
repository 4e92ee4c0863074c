/* worker_batch.c: sorting a batch of queue payloads into the insert's
 * columns, the pending ids and the dead letters. */
#include "worker_batch.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "order.h"
#include "order_lock.h"

void worker_source_init(worker_source *src, int64_t item, const char *worker_id)
{
    src->item = item;
    keys_queue(src->queue, sizeof(src->queue), item);
    keys_processing(src->processing, sizeof(src->processing), item, worker_id);
    keys_pending(src->pending, sizeof(src->pending), item);
    keys_dead(src->dead, sizeof(src->dead), item);
}

void worker_batch_from(worker_batch *b, const worker_source *src)
{
    if (&b->src != src)
        b->src = *src;
    b->dead_argv[1] = b->src.dead;
    b->dead_argvlen[1] = strlen(b->src.dead);
    b->pending_argv[1] = b->src.pending;
    b->pending_argvlen[1] = strlen(b->src.pending);
}

void worker_batch_clear(worker_batch *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->payload[i]);
    b->n = b->norders = b->ndead = b->nlocks = b->nfar = 0;
}

void worker_batch_close(worker_batch *b)
{
    worker_batch_clear(b);
    free(b->payload);
    free(b->payload_len);
    free(b->dead_argv);
    free(b->dead_argvlen);
    free(b->pending_argv);
    free(b->pending_argvlen);
    free(b->ids);
    free(b->locks);
    free(b->lock_ids);
    free(b->lock_keys_args);
    free(b->lock_argv);
    free(b->lock_argvlen);
    for (int c = 0; c < WORKER_BATCH_COLUMNS; c++)
        pg_array_free(&b->columns[c]);
}

int worker_batch_init(worker_batch *b, size_t cap)
{
    memset(b, 0, sizeof(*b));
    b->cap = cap;
    b->payload = calloc(cap, sizeof(*b->payload));
    b->payload_len = calloc(cap, sizeof(*b->payload_len));
    b->dead_argv = calloc(cap + 2, sizeof(*b->dead_argv));
    b->dead_argvlen = calloc(cap + 2, sizeof(*b->dead_argvlen));
    b->pending_argv = calloc(cap + 2, sizeof(*b->pending_argv));
    b->pending_argvlen = calloc(cap + 2, sizeof(*b->pending_argvlen));
    b->ids = calloc(cap, sizeof(*b->ids));
    b->locks = calloc(cap, sizeof(*b->locks));
    b->lock_ids = calloc(cap, sizeof(*b->lock_ids));
    b->lock_keys_args = calloc(2 * cap, sizeof(*b->lock_keys_args));
    b->lock_argv = calloc(2 * cap + 3, sizeof(*b->lock_argv));
    b->lock_argvlen = calloc(2 * cap + 3, sizeof(*b->lock_argvlen));
    if (!b->payload || !b->payload_len || !b->dead_argv || !b->dead_argvlen || !b->pending_argv ||
        !b->pending_argvlen || !b->ids || !b->locks || !b->lock_ids || !b->lock_keys_args ||
        !b->lock_argv || !b->lock_argvlen)
        goto fail;
    /* Room for a full batch of the longest numbers, so that the adds of
     * worker_batch_sort never run out of it. */
    for (int c = 0; c < WORKER_BATCH_COLUMNS; c++)
        if (pg_array_reserve_i64(&b->columns[c], cap) < 0)
            goto fail;
    b->dead_argv[0] = "LPUSH";
    b->dead_argvlen[0] = strlen("LPUSH");
    b->pending_argv[0] = "HDEL";
    b->pending_argvlen[0] = strlen("HDEL");
    worker_batch_from(b, &b->src); /* no source yet: empty keys */
    return 0;
fail:
    worker_batch_close(b);
    return -1;
}

int worker_batch_add(worker_batch *b, const char *payload, size_t len)
{
    if (b->n >= b->cap)
        return -1;
    char *copy = malloc(len + 1);
    if (!copy)
        return -1;
    memcpy(copy, payload, len);
    copy[len] = '\0';
    b->payload[b->n] = copy;
    b->payload_len[b->n] = len;
    b->n++;
    return 0;
}

/* Notes the order lock of o's buyer, whose order id text is id: in the
 * source's slot, or another (a segmented item's buyer's home). An anonymous
 * order (its id stands for its buyer) has none. */
static void add_lock(worker_batch *b, const order *o, const char *id)
{
    char lock[KEYS_MAX];
    if (order_lock_key(lock, sizeof(lock), o) < 0)
        return;
    size_t at =
        keys_of_order(o->item_id, o->home_id) == b->src.item ? b->nlocks++ : b->cap - 1 - b->nfar++;
    memcpy(b->locks[at], lock, sizeof(lock));
    b->lock_ids[at] = id;
}

/* Decodes every payload: plausible orders go to the insert's columns, the
 * rest to the dead-letter list. */
void worker_batch_sort(worker_batch *b)
{
    for (int c = 0; c < WORKER_BATCH_COLUMNS; c++)
        pg_array_reset(&b->columns[c]);
    for (size_t i = 0; i < b->n; i++) {
        order o;
        if (order_decode(b->payload[i], b->payload_len[i], &o) == 0 && o.created_ms >= 0 &&
            o.created_ms <= WORKER_BATCH_MAX_CREATED_MS) {
            if (b->norders == 0 || o.created_ms < b->oldest_ms)
                b->oldest_ms = o.created_ms;
            int len = snprintf(b->ids[b->norders], sizeof(b->ids[0]), "%" PRId64, o.id);
            b->pending_argv[2 + b->norders] = b->ids[b->norders];
            b->pending_argvlen[2 + b->norders] = (size_t)len;
            add_lock(b, &o, b->ids[b->norders]);
            b->norders++;
            int64_t v[WORKER_BATCH_COLUMNS];
            order_insert_values(&o, v);
            for (int c = 0; c < WORKER_BATCH_COLUMNS; c++)
                pg_array_add_i64(&b->columns[c], v[c]);
            continue;
        }
        b->dead_argv[2 + b->ndead] = b->payload[i];
        b->dead_argvlen[2 + b->ndead] = b->payload_len[i];
        b->ndead++;
    }
    for (size_t i = 0; i < b->nlocks; i++) {
        b->lock_keys_args[i] = b->locks[i];
        b->lock_keys_args[b->nlocks + i] = b->lock_ids[i];
    }
}
