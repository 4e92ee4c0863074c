/* keys.c: Redis key names, built in one place. */
#include "keys.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_cluster.h"
#include "validate.h"

/* The prefix of the keys of the product's queues and locks (the item-state
 * keys predate it and keep their names). */
#define PREFIX "seckill:"

/* One of item's keys: prefix, the hash tag {item:N} that places every key
 * of the item (or segment) in one slot, then ":", name and tail. The one
 * builder of every key below. */
static int item_key(char *buf, size_t len, const char *prefix, int64_t item, const char *name,
                    const char *tail)
{
    return snprintf(buf, len, "%s{item:%" PRId64 "}:%s%s", prefix, item, name, tail);
}

int keys_item_state(char *buf, size_t len, int64_t item)
{
    return item_key(buf, len, "", item, "state", "");
}

int keys_item_buyers(char *buf, size_t len, int64_t item)
{
    return item_key(buf, len, "", item, "buyers", "");
}

int keys_item_returned(char *buf, size_t len, int64_t item)
{
    return item_key(buf, len, "", item, "returned", "");
}

int keys_item_granted(char *buf, size_t len, int64_t item)
{
    return item_key(buf, len, "", item, "granted", "");
}

int keys_item_given_back(char *buf, size_t len, int64_t item)
{
    return item_key(buf, len, "", item, "given_back", "");
}

int keys_room(char *buf, size_t len, int64_t item, const char *part)
{
    return snprintf(buf, len, "{item:%" PRId64 "}:room%s%s", item, part ? ":" : "",
                    part ? part : "");
}

int keys_pow_used(char *buf, size_t len, int64_t item, const char *challenge)
{
    return snprintf(buf, len, "{item:%" PRId64 "}:pow:%s", item, challenge);
}

int keys_staged(char *buf, size_t len, const char *key)
{
    return snprintf(buf, len, "%s:staged", key);
}

int keys_queue(char *buf, size_t len, int64_t item)
{
    return item_key(buf, len, PREFIX, item, "queue", "");
}

int keys_pending(char *buf, size_t len, int64_t item)
{
    return item_key(buf, len, PREFIX, item, "pending", "");
}

int keys_dead(char *buf, size_t len, int64_t item)
{
    return item_key(buf, len, PREFIX, item, "dead", "");
}

/* Between a processing list's item id and its worker id (keys_parse_processing). */
#define PROCESSING_INFIX "}:processing:"

int keys_processing(char *buf, size_t len, int64_t item, const char *worker_id)
{
    return item_key(buf, len, PREFIX, item, "processing:", worker_id);
}

int keys_claim(char *buf, size_t len, int64_t item, const char *worker_id)
{
    return item_key(buf, len, PREFIX, item, "claim:", worker_id);
}

int keys_parse_processing(const char *key, int64_t *item, const char **worker_id)
{
    static const char prefix[] = PREFIX "{item:";
    if (strncmp(key, prefix, sizeof(prefix) - 1) != 0)
        return -1;
    const char *digits = key + sizeof(prefix) - 1;
    const char *end = strstr(digits, PROCESSING_INFIX);
    int64_t n;
    if (!end || validate_i64(digits, (size_t)(end - digits), &n) < 0)
        return -1;
    const char *id = end + strlen(PROCESSING_INFIX);
    if (*id == '\0')
        return -1;
    *item = n;
    *worker_id = id;
    return 0;
}

int keys_order_lock(char *buf, size_t len, int64_t key_id, int64_t user)
{
    char user_s[24];
    snprintf(user_s, sizeof(user_s), "%" PRId64, user);
    return item_key(buf, len, PREFIX, key_id, "lock:", user_s);
}

int keys_order_locks_match(char *buf, size_t len, int64_t key_id)
{
    return item_key(buf, len, PREFIX, key_id, "lock:", "*");
}

int keys_worker_alive(char *buf, size_t len, const char *worker_id)
{
    return snprintf(buf, len, PREFIX "worker:%s:alive", worker_id);
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
