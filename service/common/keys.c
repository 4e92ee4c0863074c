/* keys.c: Redis key names, built in one place. */
#include "keys.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_cluster.h"

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

int keys_room(char *buf, size_t len, int64_t item, const char *part)
{
    return snprintf(buf, len, "{item:%" PRId64 "}:room%s%s", item, part ? ":" : "",
                    part ? part : "");
}

int keys_staged(char *buf, size_t len, const char *key)
{
    return snprintf(buf, len, "%s:staged", key);
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

int keys_order_lock(char *buf, size_t len, int64_t key_id, int64_t user)
{
    return snprintf(buf, len, "seckill:{item:%" PRId64 "}:lock:%" PRId64, key_id, user);
}

int keys_order_locks_match(char *buf, size_t len, int64_t key_id)
{
    return snprintf(buf, len, "seckill:{item:%" PRId64 "}:lock:*", key_id);
}

int keys_worker_alive(char *buf, size_t len, const char *worker_id)
{
    return snprintf(buf, len, "seckill:worker:%s:alive", worker_id);
}

#define SEGMENT_INDEX_SHIFT 40
#define SEGMENT_SALT_SHIFT 48
#define SEGMENT_SALT_FIRST 32 /* 32 << 48 = 2^53: above every item id */
#define SEGMENT_SALT_END (1 << 15)
#define SLOTS 16384

static int tag_slot(int64_t key_id)
{
    char tag[40];
    int n = snprintf(tag, sizeof(tag), "{item:%" PRId64 "}", key_id);
    return redis_cluster_slot(tag, (size_t)n);
}

int64_t keys_segment(int64_t item, int j, int segments)
{
    if (j <= 0 || segments <= 1)
        return item;
    int first = tag_slot(item) * segments / SLOTS; /* segment 0's range */
    int range = (first + j) % segments;
    /* The middle half of the range: slots [lo, hi). */
    int lo = (4 * range + 1) * SLOTS / (4 * segments);
    int hi = (4 * range + 3) * SLOTS / (4 * segments);
    int64_t base = item | (int64_t)j << SEGMENT_INDEX_SHIFT;
    for (int64_t salt = SEGMENT_SALT_FIRST; salt < SEGMENT_SALT_END; salt++) {
        int64_t id = base | salt << SEGMENT_SALT_SHIFT;
        int slot = tag_slot(id);
        if (slot >= lo && slot < hi)
            return id;
    }
    /* Never seen (a 1 in 2K chance a salt, 32,000 salts): any slot will do. */
    return base | (int64_t)SEGMENT_SALT_FIRST << SEGMENT_SALT_SHIFT;
}

int64_t keys_segment_item(int64_t key_id)
{
    if (key_id < (int64_t)SEGMENT_SALT_FIRST << SEGMENT_SALT_SHIFT)
        return key_id;
    return key_id & (KEYS_SEGMENT_ITEM_LIMIT - 1);
}

int keys_segment_home(int64_t buyer, int segments)
{
    if (segments <= 1)
        return 0;
    uint64_t x = (uint64_t)buyer * 0x9E3779B97F4A7C15ull; /* ids in a row spread */
    return (int)((x >> 32) % (uint64_t)segments);
}

int64_t keys_segment_share(int64_t stock, int j, int segments)
{
    if (segments <= 1)
        return stock;
    return stock / segments + (j < stock % segments);
}

int64_t keys_of_order(int64_t item, int64_t key_id)
{
    return key_id ? key_id : item;
}
