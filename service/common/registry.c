/* registry.c: reading and writing the set of items whose queues may hold
 * orders. */
#include "registry.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "backend.h"
#include "keys.h"

static int compare_ids(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
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
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_STRING || e->len == 0)
            continue;
        char *end;
        errno = 0;
        long long id = strtoll(e->str, &end, 10);
        if (errno == 0 && end == e->str + e->len)
            ids[k++] = (int64_t)id;
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

int registry_read(redisContext *c, int64_t **items, size_t *n, const char *component)
{
    redisReply *r = redisCommand(c, "SMEMBERS %s", KEYS_ITEMS);
    if (!r || r->type == REDIS_REPLY_ERROR || registry_from_reply(r, items, n) < 0)
        return backend_redis_failed(c, r, component, "SMEMBERS " KEYS_ITEMS);
    freeReplyObject(r);
    return 0;
}

int registry_add(redisContext *c, int64_t item, const char *component)
{
    redisReply *r = redisCommand(c, "SADD %s %" PRId64, KEYS_ITEMS, item);
    if (!r || r->type != REDIS_REPLY_INTEGER)
        return backend_redis_failed(c, r, component, "SADD " KEYS_ITEMS);
    freeReplyObject(r);
    return 0;
}
