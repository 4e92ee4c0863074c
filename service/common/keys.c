/* keys.c: Redis key names, built in one place. */
#include "keys.h"

#include <inttypes.h>
#include <stdio.h>

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

int keys_processing(char *buf, size_t len, const char *worker_id)
{
    return snprintf(buf, len, KEYS_PROCESSING_PREFIX "%s", worker_id);
}

int keys_worker_alive(char *buf, size_t len, const char *worker_id)
{
    return snprintf(buf, len, "seckill:worker:%s:alive", worker_id);
}
