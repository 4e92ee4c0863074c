/* worker_items.c: the registry as one worker sees it, and finding the next
 * queue or processing list that holds orders. */
#include "worker_items.h"

#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "clock.h"
#include "keys.h"
#include "log.h"
#include "registry.h"
#include "sweep.h"

#define COMPONENT "worker"

void worker_items_init(worker_items *it, const char *worker_id, const char *token)
{
    memset(it, 0, sizeof(*it));
    it->worker_id = worker_id;
    it->token = token;
}

void worker_items_close(worker_items *it)
{
    free(it->ids);
    free(it->claimed);
    memset(it, 0, sizeof(*it));
}

void worker_items_forget_claims(worker_items *it)
{
    it->nclaimed = 0;
}

int worker_items_refresh(worker_items *it, redis_nodes *rn, int force)
{
    int64_t now = clock_mono_ms();
    if (!force && now < it->next_read)
        return 0;
    int64_t *ids;
    size_t n;
    if (registry_read(rn, &ids, &n) < 0)
        return -1;
    /* Keep draining the same queue: its index in the new view. */
    int64_t last = it->at < it->n ? it->ids[it->at] : 0;
    free(it->ids);
    it->ids = ids;
    it->n = n;
    it->at = 0;
    for (size_t i = 0; i < n; i++)
        if (ids[i] == last)
            it->at = i;
    it->next_read = now + WORKER_ITEMS_REFRESH_MS;
    return 0;
}

/* Where item is, or would go, in the sorted claims. */
static size_t claim_index(const worker_items *it, int64_t item)
{
    size_t lo = 0, hi = it->nclaimed;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (it->claimed[mid] < item)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int worker_items_claim(worker_items *it, redis_nodes *rn, int64_t item)
{
    size_t i = claim_index(it, item);
    if (i < it->nclaimed && it->claimed[i] == item)
        return 0;
    if (sweep_claim(rn, item, it->worker_id, it->token) < 0)
        return -1;
    int64_t *grown =
        array_grow(it->claimed, &it->claimed_cap, it->nclaimed + 1, sizeof(*grown), 16);
    if (!grown)
        return 0; /* claimed in Redis; claiming again later is harmless */
    it->claimed = grown;
    memmove(&it->claimed[i + 1], &it->claimed[i], (it->nclaimed - i) * sizeof(*it->claimed));
    it->claimed[i] = item;
    it->nclaimed++;
    return 0;
}

int worker_items_find(worker_items *it, redis_nodes *rn, int lists, size_t from, size_t *at)
{
    if (it->n == 0)
        return 0;
    /* One LLEN per item, pipelined: one round trip per node whatever the
     * count. */
    char(*keys)[KEYS_MAX] = malloc(it->n * sizeof(*keys));
    const char **argv = malloc(2 * it->n * sizeof(*argv));
    redisReply **replies = malloc(it->n * sizeof(*replies));
    int found = 0, rc = -1;
    if (!keys || !argv || !replies) {
        log_msg(LOG_ERROR, COMPONENT, "out of memory finding a queue");
        goto done;
    }
    for (size_t k = 0; k < it->n; k++) {
        int64_t item = it->ids[(from + k) % it->n];
        if (lists)
            keys_processing(keys[k], KEYS_MAX, item, it->worker_id);
        else
            keys_queue(keys[k], KEYS_MAX, item);
        argv[2 * k] = "LLEN";
        argv[2 * k + 1] = keys[k];
    }
    if (redis_nodes_pipeline(rn, it->n, 2, argv, replies) < 0)
        goto done;
    rc = 0;
    for (size_t k = 0; k < it->n; k++) {
        redisReply *r = replies[k];
        if (!r || r->type != REDIS_REPLY_INTEGER)
            rc = -1; /* an error reply (logged) or another type */
        else if (!found && r->integer > 0) {
            found = 1;
            *at = (from + k) % it->n;
        }
        freeReplyObject(r);
    }
    if (rc < 0)
        log_msg(LOG_WARN, COMPONENT, "redis LLEN: unexpected reply");
done:
    free(replies);
    free(argv);
    free(keys);
    return rc < 0 ? -1 : found;
}
