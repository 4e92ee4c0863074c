/* registry.c: reading and writing the set of items whose queues may hold
 * orders. */
#include "registry.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "keys.h"
#include "log.h"

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
    int rc = r && r->type != REDIS_REPLY_ERROR ? registry_from_reply(r, items, n) : -1;
    if (rc < 0)
        log_msg(LOG_WARN, component, "redis SMEMBERS %s: %s", KEYS_ITEMS,
                !r                             ? c->errstr
                : r->type == REDIS_REPLY_ERROR ? r->str
                                               : "unexpected reply or out of memory");
    freeReplyObject(r);
    return rc;
}

int registry_add(redisContext *c, int64_t item, const char *component)
{
    redisReply *r = redisCommand(c, "SADD %s %" PRId64, KEYS_ITEMS, item);
    int rc = r && r->type == REDIS_REPLY_INTEGER ? 0 : -1;
    if (rc < 0)
        log_msg(LOG_WARN, component, "redis SADD %s: %s", KEYS_ITEMS,
                !r                             ? c->errstr
                : r->type == REDIS_REPLY_ERROR ? r->str
                                               : "unexpected reply");
    freeReplyObject(r);
    return rc;
}
