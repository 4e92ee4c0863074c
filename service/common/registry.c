/* registry.c: reading and writing the set of items whose queues may hold
 * orders. */
#include "registry.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend.h"
#include "keys.h"
#include "redis_reply.h"

#define COMPONENT "registry"

static int compare_ids(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

size_t registry_sort_unique(int64_t *ids, size_t n)
{
    qsort(ids, n, sizeof(*ids), compare_ids);
    size_t out = 0;
    for (size_t i = 0; i < n; i++)
        if (out == 0 || ids[out - 1] != ids[i])
            ids[out++] = ids[i];
    return out;
}

int registry_from_reply(const redisReply *r, int64_t **items, size_t *n)
{
    *items = NULL;
    *n = 0;
    if (!r || r->type != REDIS_REPLY_ARRAY)
        return -1;
    if (r->elements == 0)
        return 0;
    int64_t *ids = malloc(r->elements * sizeof(*ids));
    if (!ids)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < r->elements; i++) {
        int64_t id;
        if (redis_reply_number(r->element[i], &id) == 0)
            ids[k++] = id;
    }
    qsort(ids, k, sizeof(*ids), compare_ids);
    if (k == 0) {
        free(ids);
        ids = NULL;
    }
    *items = ids;
    *n = k;
    return 0;
}

int registry_read(redis_nodes *rn, int64_t **items, size_t *n)
{
    const char *argv[] = {"SMEMBERS", KEYS_ITEMS};
    redisReply *r = redis_nodes_command(rn, KEYS_ITEMS, 2, argv, NULL);
    if (!r)
        return -1;
    int rc = registry_from_reply(r, items, n);
    if (rc < 0)
        redis_reply_unexpected(r, COMPONENT, "SMEMBERS " KEYS_ITEMS);
    else
        freeReplyObject(r);
    return rc;
}

int registry_add(redis_nodes *rn, int64_t item)
{
    char id[24];
    snprintf(id, sizeof(id), "%" PRId64, item);
    const char *argv[] = {"SADD", KEYS_ITEMS, id};
    redisReply *r = redis_nodes_command(rn, KEYS_ITEMS, 3, argv, NULL);
    if (!r)
        return -1;
    return redis_reply_expect(r, REDIS_REPLY_INTEGER, COMPONENT, "SADD " KEYS_ITEMS);
}
