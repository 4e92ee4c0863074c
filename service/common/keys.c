/* keys.c: Redis key names, built in one place. */
#include "keys.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int keys_item_state(char *buf, size_t len, int64_t item)
{
    return snprintf(buf, len, "{item:%" PRId64 "}:state", item);
}

int keys_item_buyers(char *buf, size_t len, int64_t item)
{
    return snprintf(buf, len, "{item:%" PRId64 "}:buyers", item);
}

int keys_item_returned(char *buf, size_t len, int64_t item)
{
    return snprintf(buf, len, "{item:%" PRId64 "}:returned", item);
}

int keys_item_given_back(char *buf, size_t len, int64_t item)
{
    return snprintf(buf, len, "{item:%" PRId64 "}:given_back", item);
}

int keys_queue(char *buf, size_t len, int64_t item)
{
    return snprintf(buf, len, "seckill:{item:%" PRId64 "}:queue", item);
}

int keys_pending(char *buf, size_t len, int64_t item)
{
    return snprintf(buf, len, "seckill:{item:%" PRId64 "}:pending", item);
}

int keys_dead(char *buf, size_t len, int64_t item)
{
    return snprintf(buf, len, "seckill:{item:%" PRId64 "}:dead", item);
}

#define PROCESSING_INFIX "}:processing:"

int keys_processing(char *buf, size_t len, int64_t item, const char *worker_id)
{
    return snprintf(buf, len, "seckill:{item:%" PRId64 PROCESSING_INFIX "%s", item, worker_id);
}

int keys_claim(char *buf, size_t len, int64_t item, const char *worker_id)
{
    return snprintf(buf, len, "seckill:{item:%" PRId64 "}:claim:%s", item, worker_id);
}

int keys_parse_processing(const char *key, int64_t *item, const char **worker_id)
{
    static const char prefix[] = "seckill:{item:";
    if (strncmp(key, prefix, sizeof(prefix) - 1) != 0)
        return -1;
    const char *digits = key + sizeof(prefix) - 1;
    char *end;
    errno = 0;
    long long n = strtoll(digits, &end, 10);
    if (end == digits || errno != 0 || strncmp(end, PROCESSING_INFIX, strlen(PROCESSING_INFIX)))
        return -1;
    const char *id = end + strlen(PROCESSING_INFIX);
    if (*id == '\0')
        return -1;
    *item = (int64_t)n;
    *worker_id = id;
    return 0;
}

int keys_worker_alive(char *buf, size_t len, const char *worker_id)
{
    return snprintf(buf, len, "seckill:worker:%s:alive", worker_id);
}
