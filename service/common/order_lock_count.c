/* order_lock_count.c: an item's order locks counted by SCAN at their node. */
#include "order_lock_count.h"

#include <string.h>

#include "backend.h"
#include "keys.h"

static int count_key(void *ctx, const char *key, size_t len)
{
    (void)key;
    (void)len;
    ++*(int64_t *)ctx;
    return 0;
}

/* The locks on key_id, at the node of its slot (the pattern's hash tag
 * names it). Returns as order_lock_count. */
static int count_at(redis_nodes *rn, int64_t key_id, int64_t *held)
{
    char pattern[KEYS_MAX];
    keys_order_locks_match(pattern, sizeof(pattern), key_id);
    redisContext *c = redis_nodes_for_key(rn, pattern);
    if (!c)
        return -1;
    char cursor[32] = "0";
    for (int page = 0; page < ORDER_LOCK_COUNT_PAGES; page++) {
        int lost = 0;
        if (backend_redis_scan_page(c, cursor, sizeof(cursor), pattern, count_key, held,
                                    "order_lock", &lost) < 0) {
            if (lost) /* the node is gone: rn drops its connection */
                redis_nodes_reply(rn, c, NULL, "SCAN");
            return -1;
        }
        if (strcmp(cursor, "0") == 0)
            return 1;
    }
    return 0;
}

int order_lock_count(redis_nodes *rn, int64_t item, int segments, int64_t *held)
{
    if (segments < 1 || segments > KEYS_SEGMENTS_MAX)
        segments = 1;
    *held = 0;
    int all = 1;
    for (int j = 0; j < segments; j++) {
        int rc = count_at(rn, keys_segment(item, j, segments), held);
        if (rc < 0)
            return -1;
        all = all && rc == 1;
    }
    return all;
}
