/* unit_keys.c: the Redis key layout of keys.c: every key of an item carries
 * the item's hash tag, so all of them hash to one Redis Cluster slot. */
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "json_io.h"
#include "keys.h"
#include "redis_cluster.h"

/* The hash tag of a key as Redis Cluster computes it: the text between the
 * first '{' and the next '}', when non-empty. */
static size_t hash_tag(const char *key, const char **tag)
{
    const char *open = strchr(key, '{');
    if (!open)
        return 0;
    const char *close = strchr(open + 1, '}');
    if (!close || close == open + 1)
        return 0;
    *tag = open + 1;
    return (size_t)(close - open - 1);
}

static void expect_tag(const char *key, const char *want)
{
    const char *tag = NULL;
    size_t len = hash_tag(key, &tag);
    cr_assert_eq(len, strlen(want), "key %s: tag length %zu, expected %s", key, len, want);
    cr_assert_eq(memcmp(tag, want, len), 0, "key %s: tag is not %s", key, want);
}

Test(keys, item_state_carries_the_hash_tag)
{
    char buf[KEYS_MAX];
    int n = keys_item_state(buf, sizeof(buf), 42);
    cr_assert_str_eq(buf, "{item:42}:state");
    cr_assert_eq(n, (int)strlen(buf));
    expect_tag(buf, "item:42");
}

Test(keys, item_buyers_carries_the_hash_tag)
{
    char buf[KEYS_MAX];
    int n = keys_item_buyers(buf, sizeof(buf), 42);
    cr_assert_str_eq(buf, "{item:42}:buyers");
    cr_assert_eq(n, (int)strlen(buf));
    expect_tag(buf, "item:42");
}

Test(keys, different_items_get_different_keys)
{
    char a[KEYS_MAX], b[KEYS_MAX];
    keys_item_buyers(a, sizeof(a), 1);
    keys_item_buyers(b, sizeof(b), 12);
    cr_assert_str_neq(a, b);
    keys_item_state(a, sizeof(a), 5);
    keys_item_buyers(b, sizeof(b), 5);
    cr_assert_str_neq(a, b);
    keys_item_state(a, sizeof(a), 1);
    keys_item_state(b, sizeof(b), 10);
    cr_assert_str_neq(a, b);
}

Test(keys, the_largest_ids_fit_keys_max)
{
    char buf[KEYS_MAX];
    int n = keys_item_buyers(buf, sizeof(buf), INT64_MAX);
    cr_assert_lt(n, KEYS_MAX);
    cr_assert_str_eq(buf, "{item:9223372036854775807}:buyers");
    expect_tag(buf, "item:9223372036854775807");
    cr_assert_lt(keys_item_state(buf, sizeof(buf), INT64_MAX), KEYS_MAX);
    cr_assert_lt(keys_item_buyers(buf, sizeof(buf), INT64_MAX), KEYS_MAX);
}

Test(keys, a_short_buffer_reports_the_needed_length)
{
    char buf[8];
    int n = keys_item_state(buf, sizeof(buf), 42);
    cr_assert_eq(n, (int)strlen("{item:42}:state"));
    cr_assert_eq(strlen(buf), sizeof(buf) - 1, "truncated and terminated");
}

Test(keys, an_items_queue_pending_hash_and_dead_letters_carry_its_hash_tag)
{
    char buf[KEYS_MAX];
    cr_assert_eq(keys_queue(buf, sizeof(buf), 42), (int)strlen("seckill:{item:42}:queue"));
    cr_assert_str_eq(buf, "seckill:{item:42}:queue");
    expect_tag(buf, "item:42");
    keys_pending(buf, sizeof(buf), 42);
    cr_assert_str_eq(buf, "seckill:{item:42}:pending");
    expect_tag(buf, "item:42");
    keys_dead(buf, sizeof(buf), 42);
    cr_assert_str_eq(buf, "seckill:{item:42}:dead");
    expect_tag(buf, "item:42");
}

Test(keys, processing_list_names_the_item_and_the_worker)
{
    char buf[KEYS_MAX];
    int n = keys_processing(buf, sizeof(buf), 7, "w3");
    cr_assert_str_eq(buf, "seckill:{item:7}:processing:w3");
    cr_assert_eq(n, (int)strlen(buf));
    expect_tag(buf, "item:7");
    keys_claim(buf, sizeof(buf), 7, "w3");
    cr_assert_str_eq(buf, "seckill:{item:7}:claim:w3");
    expect_tag(buf, "item:7");
}

Test(keys, a_processing_list_is_read_back_into_its_item_and_worker)
{
    char buf[KEYS_MAX];
    keys_processing(buf, sizeof(buf), INT64_MAX, "host-1:w");
    int64_t item = 0;
    const char *id = NULL;
    cr_assert_eq(keys_parse_processing(buf, &item, &id), 0);
    cr_assert_eq(item, INT64_MAX);
    cr_assert_str_eq(id, "host-1:w");
    cr_assert_eq(keys_parse_processing("seckill:{item:7}:processing:", &item, &id), -1,
                 "no worker id");
    cr_assert_eq(keys_parse_processing("seckill:{item:7}:claim:w", &item, &id), -1);
    cr_assert_eq(keys_parse_processing("seckill:{item:x}:processing:w", &item, &id), -1);
    cr_assert_eq(keys_parse_processing("seckill:processing:w", &item, &id), -1, "the old layout");
}

Test(keys, the_longest_keys_fit_keys_max_with_a_64_byte_worker_id)
{
    char id[65], buf[KEYS_MAX];
    memset(id, 'w', 64);
    id[64] = '\0';
    cr_assert_lt(keys_processing(buf, sizeof(buf), INT64_MIN, id), KEYS_MAX);
    cr_assert_lt(keys_claim(buf, sizeof(buf), INT64_MIN, id), KEYS_MAX);
    cr_assert_lt(keys_pending(buf, sizeof(buf), INT64_MIN), KEYS_MAX);
}

Test(keys, heartbeat_key_names_the_worker_outside_the_processing_lists)
{
    char buf[KEYS_MAX];
    int n = keys_worker_alive(buf, sizeof(buf), "w3");
    cr_assert_str_eq(buf, "seckill:worker:w3:alive");
    cr_assert_eq(n, (int)strlen(buf));
    int64_t item;
    const char *id;
    cr_assert_eq(keys_parse_processing(buf, &item, &id), -1,
                 "the sweep's SCAN must not take a heartbeat for a list");
}

Test(keys, shared_keys_are_distinct)
{
    cr_assert_str_neq(KEYS_ITEMS, KEYS_EVENTS);
    cr_assert_str_neq(KEYS_ITEMS, KEYS_NODE_SEQ);
    cr_assert_str_neq(KEYS_ITEMS, KEYS_SWEEP_LOCK);
    cr_assert_str_neq(KEYS_SWEEP_LOCK, KEYS_EXPIRY_LOCK);
}

static int segment_slot(int64_t key_id)
{
    char key[KEYS_MAX];
    keys_item_state(key, sizeof(key), key_id);
    return redis_cluster_slot(key, strlen(key));
}

Test(keys, segment_zero_is_the_item_and_one_segment_is_no_split)
{
    cr_assert_eq(keys_segment(42, 0, 4), 42);
    cr_assert_eq(keys_segment(42, 0, 1), 42);
    cr_assert_eq(keys_segment(42, 3, 1), 42);
    cr_assert_eq(keys_segment_item(42), 42);
    cr_assert_eq(keys_segment_home(7, 1), 0);
}

Test(keys, segments_take_distinct_slot_ranges_above_every_item_id)
{
    const int64_t items[] = {1, 2, 42, 1000, KEYS_SEGMENT_ITEM_LIMIT - 1};
    for (size_t n = 0; n < sizeof(items) / sizeof(items[0]); n++) {
        for (int k = 2; k <= KEYS_SEGMENTS_MAX; k *= 2) {
            int taken[KEYS_SEGMENTS_MAX] = {0};
            for (int j = 0; j < k; j++) {
                int64_t id = keys_segment(items[n], j, k);
                cr_assert_eq(keys_segment(items[n], j, k), id, "the same every time");
                cr_assert_eq(keys_segment_item(id), items[n]);
                if (j > 0)
                    cr_assert_gt(id, ITEM_ID_MAX, "a segment's id is never an item's");
                int range = segment_slot(id) * k / 16384;
                cr_assert_eq(taken[range], 0, "item %lld, %d segments: two in range %d",
                             (long long)items[n], k, range);
                taken[range] = 1;
            }
        }
    }
}

Test(keys, three_segments_land_on_three_masters_of_an_even_split)
{
    /* redis-cli --cluster create splits 16384 slots into thirds. */
    for (int64_t item = 1; item <= 200; item++) {
        int on[3] = {0};
        for (int j = 0; j < 3; j++)
            on[segment_slot(keys_segment(item, j, 3)) * 3 / 16384]++;
        cr_assert(on[0] == 1 && on[1] == 1 && on[2] == 1, "item %lld: 3 segments, masters %d/%d/%d",
                  (long long)item, on[0], on[1], on[2]);
    }
}

Test(keys, buyers_in_a_row_spread_over_the_home_segments)
{
    int homes[4] = {0};
    for (int64_t user = 1; user <= 4000; user++) {
        int h = keys_segment_home(user, 4);
        cr_assert(h >= 0 && h < 4);
        homes[h]++;
    }
    for (int h = 0; h < 4; h++)
        cr_assert(homes[h] > 800 && homes[h] < 1200, "home %d has %d of 4000 buyers", h, homes[h]);
}

Test(keys, a_segments_share_splits_the_stock_evenly_and_loses_no_unit)
{
    cr_assert_eq(keys_segment_share(10, 0, 1), 10);
    const int64_t stocks[] = {0, 1, 3, 4, 10, 1001, 1000000000000LL};
    for (size_t n = 0; n < sizeof(stocks) / sizeof(stocks[0]); n++) {
        for (int k = 1; k <= KEYS_SEGMENTS_MAX; k++) {
            int64_t sum = 0, least = stocks[n], most = 0;
            for (int j = 0; j < k; j++) {
                int64_t share = keys_segment_share(stocks[n], j, k);
                sum += share;
                least = share < least ? share : least;
                most = share > most ? share : most;
            }
            cr_assert_eq(sum, stocks[n], "stock %lld over %d", (long long)stocks[n], k);
            cr_assert_leq(most - least, 1, "stock %lld over %d", (long long)stocks[n], k);
        }
    }
    cr_assert_eq(keys_segment_share(10, 0, 4), 3);
    cr_assert_eq(keys_segment_share(10, 1, 4), 3);
    cr_assert_eq(keys_segment_share(10, 2, 4), 2);
}

Test(keys, an_order_of_one_segment_names_its_items_own_keys)
{
    cr_assert_eq(keys_of_order(42, 0), 42);
    int64_t segment = keys_segment(42, 2, 4);
    cr_assert_eq(keys_of_order(42, segment), segment);
}

/* Every key of an item comes from the one builder: its names, to the letter,
 * as the Lua scripts and the tools read them, and snprintf's length. */
Test(keys, every_key_of_an_item_is_named_as_the_scripts_read_it)
{
    char b[13][KEYS_MAX];
    const struct {
        int n;
        const char *got, *want;
    } names[] = {
        {keys_item_state(b[0], KEYS_MAX, 9), b[0], "{item:9}:state"},
        {keys_item_buyers(b[1], KEYS_MAX, 9), b[1], "{item:9}:buyers"},
        {keys_item_returned(b[2], KEYS_MAX, 9), b[2], "{item:9}:returned"},
        {keys_item_given_back(b[3], KEYS_MAX, 9), b[3], "{item:9}:given_back"},
        {keys_queue(b[4], KEYS_MAX, 9), b[4], "seckill:{item:9}:queue"},
        {keys_pending(b[5], KEYS_MAX, 9), b[5], "seckill:{item:9}:pending"},
        {keys_dead(b[6], KEYS_MAX, 9), b[6], "seckill:{item:9}:dead"},
        {keys_processing(b[7], KEYS_MAX, 9, "w1"), b[7], "seckill:{item:9}:processing:w1"},
        {keys_claim(b[8], KEYS_MAX, 9, "w1"), b[8], "seckill:{item:9}:claim:w1"},
        {keys_order_lock(b[9], KEYS_MAX, 9, -77), b[9], "seckill:{item:9}:lock:-77"},
        {keys_order_locks_match(b[10], KEYS_MAX, 9), b[10], "seckill:{item:9}:lock:*"},
        {keys_worker_alive(b[11], KEYS_MAX, "w1"), b[11], "seckill:worker:w1:alive"},
        {keys_item_granted(b[12], KEYS_MAX, 9), b[12], "{item:9}:granted"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        cr_expect_str_eq(names[i].got, names[i].want);
        cr_expect_eq(names[i].n, (int)strlen(names[i].want), "%s", names[i].want);
    }
}
