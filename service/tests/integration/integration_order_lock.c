/* integration_order_lock.c: the buyer's order lock of the reserve script
 * (lua/reserve_batch.lua), against the test run's Redis: taken with the
 * order id in the same step as the reservation, a twin purchase answered
 * in_progress without a change, none with order_guard = script or for an
 * anonymous buyer, freed by lua/order_lock_release.lua only while it
 * holds its order's id, and counted (order_lock_count.h) key by key. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>

#include "harness.h"
#include "harness_suite.h"
#include "keys.h"
#include "order_lock_count.h"
#include "reserve_batch.h"
#include "scripts.h"

#define ITEM 42
#define TTL_MS 5000

static redisContext *redis;
static scripts sc;

HARNESS_SCRIPTS_SUITE(order_lock, redis, sc, .timeout = 30);

/* One call on the keys of key (item's own or a segment's) for buyers with
 * the script's modes (NULL: "0" each), one unit each, order ids
 * first_order..; the lock taken for ttl_ms (0: order_guard = script). */
static void call(int64_t item, int64_t key, int n, const int64_t *users, const char **modes,
                 int64_t first_order, int ttl_ms, reserve_answer *out)
{
    harness_reserve(redis, &sc, item, key, n, users, modes, first_order, ttl_ms, out);
}

/* The value of the buyer's lock on key, or 0 when there is none. */
static int64_t lock_of(int64_t key, int64_t user)
{
    char lock[KEYS_MAX];
    keys_order_lock(lock, sizeof(lock), key, user);
    redisReply *r = redisCommand(redis, "GET %s", lock);
    cr_assert(r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL));
    int64_t v = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
    freeReplyObject(r);
    return v;
}

static long long lock_ttl(int64_t key, int64_t user)
{
    char lock[KEYS_MAX];
    keys_order_lock(lock, sizeof(lock), key, user);
    return harness_redis_int(redis, "PTTL", lock);
}

/* Frees the buyer's lock as the worker does; returns how many were freed. */
static long long release(int64_t key, int64_t user, int64_t order_id)
{
    char lock[KEYS_MAX], id[24];
    keys_order_lock(lock, sizeof(lock), key, user);
    snprintf(id, sizeof(id), "%" PRId64, order_id);
    const char *ka[] = {lock, id};
    redisReply *r = scripts_call(redis, &sc.s[SCRIPT_ORDER_LOCK_RELEASE], 1, 1, ka);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER);
    long long n = r->integer;
    freeReplyObject(r);
    return n;
}

Test(order_lock, an_accepted_buyer_holds_the_lock_with_the_order_id_for_its_ttl)
{
    harness_item_round(redis, &sc, ITEM, 10, 1, 0, 0, 3);
    int64_t users[] = {7};
    reserve_answer a[1];
    call(ITEM, ITEM, 1, users, NULL, 500, TTL_MS, a);
    cr_assert_eq(a[0].outcome, RESERVE_QUEUED);
    cr_assert_eq(lock_of(ITEM, 7), 500, "the lock holds the order id");
    long long ttl = lock_ttl(ITEM, 7);
    cr_assert(ttl > 0 && ttl <= TTL_MS, "PX order_lock_ttl_ms: %lld", ttl);
}

Test(order_lock, a_twin_purchase_while_the_lock_stands_is_in_progress_and_changes_nothing)
{
    harness_item_round(redis, &sc, ITEM, 10, 1, 0, 0, 3);
    int64_t users[] = {7, 7, 8};
    reserve_answer a[3];
    /* The twin in the same batch, and again in a later call. */
    call(ITEM, ITEM, 3, users, NULL, 500, TTL_MS, a);
    cr_assert_eq(a[0].outcome, RESERVE_QUEUED);
    cr_assert_eq(a[1].outcome, RESERVE_IN_PROGRESS);
    cr_assert_eq(a[2].outcome, RESERVE_QUEUED, "another buyer is not held up");
    cr_assert_eq(reserve_status(RESERVE_IN_PROGRESS), SK_IN_PROGRESS);
    cr_assert_eq(sk_status_http(SK_IN_PROGRESS), 429);
    call(ITEM, ITEM, 1, users, NULL, 600, TTL_MS, a);
    cr_assert_eq(a[0].outcome, RESERVE_IN_PROGRESS);
    cr_assert_eq(harness_item_field(redis, ITEM, "stock"), 8, "two units, not three");
    cr_assert_eq(harness_redis_int(redis, "LLEN", harness_queue_key(ITEM)), 2);
    cr_assert_eq(harness_redis_int(redis, "HLEN", harness_pending_key(ITEM)), 2);
    char buyers[KEYS_MAX];
    keys_item_buyers(buyers, sizeof(buyers), ITEM);
    redisReply *r = redisCommand(redis, "HGET %s 7", buyers);
    cr_assert(r && r->type == REDIS_REPLY_STRING);
    cr_assert_str_eq(r->str, "1", "the twin counted nothing");
    freeReplyObject(r);
    cr_assert_eq(lock_of(ITEM, 7), 500, "the lock still holds the first order's id");
}

Test(order_lock, once_freed_with_its_order_id_the_buyer_may_buy_again_within_the_limit)
{
    harness_item_round(redis, &sc, ITEM, 10, 1, 0, 0, 2);
    int64_t users[] = {7};
    reserve_answer a[1];
    call(ITEM, ITEM, 1, users, NULL, 500, TTL_MS, a);
    cr_assert_eq(release(ITEM, 7, 499), 0, "another order's id frees nothing");
    cr_assert_eq(lock_of(ITEM, 7), 500);
    cr_assert_eq(release(ITEM, 7, 500), 1);
    cr_assert_eq(lock_of(ITEM, 7), 0);
    call(ITEM, ITEM, 1, users, NULL, 501, TTL_MS, a);
    cr_assert_eq(a[0].outcome, RESERVE_QUEUED);
    cr_assert_eq(lock_of(ITEM, 7), 501, "the newer order's lock");
    cr_assert_eq(release(ITEM, 7, 500), 0, "a late release of the older order frees nothing");
    cr_assert_eq(lock_of(ITEM, 7), 501);
    cr_assert_eq(release(ITEM, 7, 501), 1);
    call(ITEM, ITEM, 1, users, NULL, 502, TTL_MS, a);
    cr_assert_eq(a[0].outcome, RESERVE_LIMIT_REACHED, "the limit still guards the count");
    cr_assert_eq(lock_of(ITEM, 7), 0, "a refusal takes no lock");
}

Test(order_lock, an_expired_lock_lets_the_buyer_buy_again_within_the_limit)
{
    harness_item_round(redis, &sc, ITEM, 10, 1, 0, 0, 2);
    int64_t users[] = {7};
    reserve_answer a[1];
    call(ITEM, ITEM, 1, users, NULL, 500, 100, a);
    cr_assert_eq(a[0].outcome, RESERVE_QUEUED);
    usleep(200 * 1000);
    call(ITEM, ITEM, 1, users, NULL, 501, 100, a);
    cr_assert_eq(a[0].outcome, RESERVE_QUEUED, "no worker came: the lock expired");
    cr_assert_eq(lock_of(ITEM, 7), 501);
}

Test(order_lock, order_guard_script_and_anonymous_buyers_take_no_lock)
{
    harness_item_round(redis, &sc, ITEM, 10, 1, 0, 0, 10);
    int64_t users[] = {7, 7};
    reserve_answer a[2];
    call(ITEM, ITEM, 2, users, NULL, 500, 0, a);
    cr_assert_eq(a[0].outcome, RESERVE_QUEUED);
    cr_assert_eq(a[1].outcome, RESERVE_QUEUED, "today's path: the limit alone");
    cr_assert_eq(lock_of(ITEM, 7), 0);
    int64_t anonymous[] = {0};
    call(ITEM, ITEM, 1, anonymous, NULL, 600, TTL_MS, a);
    cr_assert_eq(a[0].outcome, RESERVE_QUEUED);
    redisReply *r = redisCommand(redis, "KEYS *:lock:*");
    cr_assert(r && r->type == REDIS_REPLY_ARRAY);
    cr_assert_eq(r->elements, 0, "no lock key at all");
    freeReplyObject(r);
}

Test(order_lock, a_segmented_buyer_is_locked_at_home_until_a_hold_is_released)
{
    /* Home (key id ITEM) has no stock: the buyer is held there, the lock
     * taken at home; the release of the hold frees it. */
    int64_t home = ITEM;
    harness_item_round(redis, &sc, home, 0, 1, 0, 0, 2);
    char state[KEYS_MAX];
    keys_item_state(state, sizeof(state), home);
    freeReplyObject(redisCommand(redis, "HSET %s segments 2", state));
    int64_t users[] = {7};
    const char *hold[] = {"h"};
    reserve_answer a[1];
    call(ITEM, home, 1, users, hold, 500, TTL_MS, a);
    cr_assert_eq(a[0].outcome, RESERVE_HELD);
    cr_assert_eq(lock_of(home, 7), 500, "the lock is at the buyer's home");
    call(ITEM, home, 1, users, hold, 501, TTL_MS, a);
    cr_assert_eq(a[0].outcome, RESERVE_IN_PROGRESS, "a twin while the hold stands");
    const char *release_hold[] = {"r1"};
    call(ITEM, home, 1, users, release_hold, 500, TTL_MS, a);
    cr_assert_eq(a[0].outcome, RESERVE_RELEASED);
    cr_assert_eq(lock_of(home, 7), 0, "the hold's release frees its lock");
}

static void set_key(const char *key)
{
    redisReply *r = redisCommand(redis, "SET %s 1", key);
    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
}

/* order_lock_count's figure for item (segments), asserted complete. */
static int64_t counted(int64_t item, int segments)
{
    config cfg;
    harness_config(&cfg);
    redis_nodes *rn = redis_nodes_create(&cfg, "test");
    cr_assert_not_null(rn);
    int64_t held = -1;
    cr_assert_eq(order_lock_count(rn, item, segments, &held), 1, "counted to the end");
    redis_nodes_free(rn);
    return held;
}

Test(order_lock, the_count_of_an_items_locks_is_its_lock_keys_on_every_segment_and_no_other)
{
    harness_item_round(redis, &sc, ITEM, 10, 1, 0, 0, 3);
    int64_t users[] = {501, 502, 503};
    reserve_answer a[3];
    call(ITEM, ITEM, 3, users, NULL, 9000, TTL_MS, a);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(a[i].outcome, RESERVE_QUEUED);
    /* A split item's buyers are locked at their homes: two segments here. */
    enum { SPLIT = 77, SEGMENTS = 4 };
    char lock[KEYS_MAX];
    for (int j = 1; j <= 2; j++) {
        keys_order_lock(lock, sizeof(lock), keys_segment(SPLIT, j, SEGMENTS), 600 + j);
        set_key(lock);
    }
    /* Another item's lock, and keys of the item that are no lock. */
    keys_order_lock(lock, sizeof(lock), ITEM + 1, 501);
    set_key(lock);
    cr_assert_eq(counted(ITEM, 1), 3, "the item's three buyers; its queue and pending are no lock");
    cr_assert_eq(counted(SPLIT, SEGMENTS), 2, "summed over the segments");
    cr_assert_eq(counted(ITEM + 2, 1), 0);

    /* Expired locks are gone from the count as from Redis. */
    keys_order_lock(lock, sizeof(lock), ITEM, 501);
    redisReply *r = redisCommand(redis, "PEXPIRE %s 1", lock);
    freeReplyObject(r);
    usleep(20 * 1000);
    cr_assert_eq(counted(ITEM, 1), 2);
}
