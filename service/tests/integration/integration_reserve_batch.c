/* integration_reserve_batch.c: the batch reserve script (lua/reserve_batch.lua)
 * called as the server calls it (reserve_batch.c builds the call), against
 * the test run's Redis: each buyer answered as reserve.lua would answer it,
 * one write per key, the lock's meaning kept. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>

#include "harness.h"
#include "keys.h"
#include "order.h"
#include "reserve_batch.h"
#include "scripts.h"

#define ITEM 42
#define CREATED_MS 1795327200000LL

static redisContext *redis;
static scripts sc;

static void setup(void)
{
    redis = harness_redis_with_scripts(&sc);
}

static void teardown(void)
{
    redisFree(redis);
    redis = NULL;
}

TestSuite(reserve_batch, .init = setup, .fini = teardown, .timeout = 30);

typedef struct answer {
    reserve_outcome outcome;
    int64_t remaining;
    int64_t round;
} answer;

static void item_reset(int64_t item, long long stock, long long round)
{
    harness_item_reset(redis, &sc, item, stock, round);
}

/* One call for the buyers users[0..n) (0: anonymous) of item, order ids
 * first_order, first_order + 1, ...; their answers in out. */
static void call_batch(int64_t item, const int64_t *users, int n, int64_t first_order, int bound,
                       answer *out)
{
    reserve_batch *b = malloc(sizeof(*b));
    cr_assert(b);
    reserve_batch_init(b, item, bound);
    for (int i = 0; i < n; i++)
        cr_assert_eq(reserve_batch_add(b, users[i], users[i] == 0, first_order + i, CREATED_MS), i);
    int argc = reserve_batch_argv(b, &sc.s[SCRIPT_RESERVE_BATCH], 0);
    redisReply *r = redisCommandArgv(redis, argc, b->argv, b->lens);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY, "reserve_batch: %s",
              r && r->type == REDIS_REPLY_ERROR ? r->str : "not an array");
    for (int i = 0; i < n; i++) {
        out[i].outcome = reserve_batch_parse(r, n, i, &out[i].remaining, &out[i].round);
        cr_assert_neq(out[i].outcome, RESERVE_BAD_REPLY, "buyer %d's answer", i);
    }
    freeReplyObject(r);
    free(b);
}

/* The same buyers one reserve.lua call at a time, each under its own lock
 * as the server took it before batches (SET NX, the script frees it). */
static void call_one_by_one(int64_t item, const int64_t *users, int n, int64_t first_order,
                            answer *out)
{
    for (int i = 0; i < n; i++) {
        reserve_call c;
        reserve_call_init(&c, item, users[i], users[i] == 0, first_order + i, CREATED_MS, 0, 1);
        if (users[i] != 0)
            freeReplyObject(redisCommand(redis, "SET %s %s NX PX 5000", c.lock_key, c.order_s));
        redisReply *r =
            scripts_call(redis, &sc.s[SCRIPT_RESERVE], RESERVE_NKEYS, RESERVE_NARGS, c.keys_args);
        out[i].outcome = reserve_parse(r, &out[i].remaining, &out[i].round);
        cr_assert_neq(out[i].outcome, RESERVE_BAD_REPLY, "reserve of buyer %d", i);
        freeReplyObject(r);
    }
}

static long long state_field(int64_t item, const char *field)
{
    char state[KEYS_MAX];
    keys_item_state(state, sizeof(state), item);
    redisReply *r = redisCommand(redis, "HGET %s %s", state, field);
    cr_assert(r && r->type == REDIS_REPLY_STRING, "HGET %s %s", state, field);
    long long v = strtoll(r->str, NULL, 10);
    freeReplyObject(r);
    return v;
}

/* Decodes the queue entry at index (0: the newest) into *o. */
static void queued_order(long index, order *o)
{
    redisReply *r = redisCommand(redis, "LINDEX %s %ld", KEYS_QUEUE, index);
    cr_assert(r && r->type == REDIS_REPLY_STRING, "no queue entry %ld", index);
    cr_assert_eq(order_decode(r->str, r->len, o), 0, "%s", r->str);
    redisReply *p = redisCommand(redis, "HGET %s %" PRId64, KEYS_PENDING, o->id);
    cr_assert(p && p->type == REDIS_REPLY_STRING, "order %" PRId64 " is not pending", o->id);
    cr_assert_str_eq(p->str, r->str, "the pending entry is the queued text");
    freeReplyObject(p);
    freeReplyObject(r);
}

Test(reserve_batch, a_batch_of_new_buyers_sells_to_each_in_order_and_queues_each_order)
{
    int64_t users[] = {7, 8, 9};
    answer a[3];
    item_reset(ITEM, 10, 4);
    call_batch(ITEM, users, 3, 5000, 0, a);
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(a[i].outcome, RESERVE_QUEUED, "buyer %d", i);
        cr_expect_eq(a[i].remaining, 9 - i, "each buyer sees the stock after its own unit");
        cr_expect_eq(a[i].round, 4);
    }
    cr_assert_eq(state_field(ITEM, "stock"), 7);
    cr_assert_eq(state_field(ITEM, "initial"), 10, "initial stock is not touched");
    cr_assert_eq(harness_redis_int(redis, "LLEN", KEYS_QUEUE), 3);
    cr_assert_eq(harness_redis_int(redis, "HLEN", KEYS_PENDING), 3);
    /* The oldest order is the farthest from the head: the worker takes
     * them in the buyers' order. */
    for (int i = 0; i < 3; i++) {
        order o;
        queued_order(2 - i, &o);
        cr_expect_eq(o.id, 5000 + i);
        cr_expect_eq(o.user_id, users[i]);
        cr_expect_eq(o.item_id, ITEM);
        cr_expect_eq(o.round, 4);
        cr_expect_eq(o.created_ms, CREATED_MS);
    }
}

Test(reserve_batch, the_last_units_go_to_the_first_buyers_and_the_rest_are_sold_out)
{
    int64_t users[] = {1, 2, 3, 4, 5};
    answer a[5];
    item_reset(ITEM, 3, 1);
    call_batch(ITEM, users, 5, 100, 0, a);
    for (int i = 0; i < 3; i++)
        cr_expect_eq(a[i].outcome, RESERVE_QUEUED, "buyer %d", i);
    cr_expect_eq(a[2].remaining, 0);
    cr_expect_eq(a[3].outcome, RESERVE_SOLD_OUT);
    cr_expect_eq(a[4].outcome, RESERVE_SOLD_OUT);
    cr_assert_eq(state_field(ITEM, "stock"), 0, "never below zero");
    cr_assert_eq(harness_redis_int(redis, "LLEN", KEYS_QUEUE), 3);
}

Test(reserve_batch, a_twin_in_the_same_batch_is_in_progress_and_an_earlier_buyer_already_purchased)
{
    int64_t first[] = {7};
    int64_t users[] = {7, 8, 8};
    answer a[3];
    item_reset(ITEM, 10, 1);
    call_batch(ITEM, first, 1, 100, 0, a);
    call_batch(ITEM, users, 3, 200, 0, a);
    cr_expect_eq(a[0].outcome, RESERVE_ALREADY_PURCHASED, "bought in an earlier batch");
    cr_expect_eq(a[1].outcome, RESERVE_QUEUED);
    cr_expect_eq(a[2].outcome, RESERVE_IN_PROGRESS, "the twin of a request under way");
    cr_assert_eq(state_field(ITEM, "stock"), 8, "one unit each for buyers 7 and 8");
    cr_assert_eq(harness_redis_int(redis, "LLEN", KEYS_QUEUE), 2);
}

Test(reserve_batch, a_buyer_whose_lock_another_request_holds_is_in_progress_and_the_lock_stays)
{
    char lock[KEYS_MAX];
    int64_t users[] = {7, 8};
    answer a[2];
    item_reset(ITEM, 10, 1);
    keys_buyer_lock(lock, sizeof(lock), ITEM, 7);
    freeReplyObject(redisCommand(redis, "SET %s other-request NX PX 5000", lock));
    call_batch(ITEM, users, 2, 100, 0, a);
    cr_expect_eq(a[0].outcome, RESERVE_IN_PROGRESS);
    cr_expect_eq(a[1].outcome, RESERVE_QUEUED, "another buyer's purchase is not failed by it");
    redisReply *r = redisCommand(redis, "GET %s", lock);
    cr_assert(r && r->type == REDIS_REPLY_STRING);
    cr_expect_str_eq(r->str, "other-request", "the other request's lock is not touched");
    freeReplyObject(r);
    char lock8[KEYS_MAX];
    keys_buyer_lock(lock8, sizeof(lock8), ITEM, 8);
    cr_expect_eq(harness_redis_int(redis, "EXISTS", lock8), 0, "the batch leaves no lock");
}

Test(reserve_batch, at_the_pending_bound_the_rest_of_the_batch_is_queue_full_and_changes_nothing)
{
    int64_t users[] = {1, 2, 3};
    answer a[3];
    item_reset(ITEM, 10, 1);
    freeReplyObject(redisCommand(redis, "HSET %s 999 waiting", KEYS_PENDING));
    call_batch(ITEM, users, 3, 100, 2, a);
    cr_expect_eq(a[0].outcome, RESERVE_QUEUED);
    cr_expect_eq(a[1].outcome, RESERVE_QUEUE_FULL);
    cr_expect_eq(a[2].outcome, RESERVE_QUEUE_FULL);
    cr_assert_eq(state_field(ITEM, "stock"), 9);
    char buyers[KEYS_MAX];
    keys_item_buyers(buyers, sizeof(buyers), ITEM);
    cr_assert_eq(harness_redis_int(redis, "HLEN", buyers), 1, "refused buyers are not recorded");
}

Test(reserve_batch, an_unknown_item_answers_unknown_item_to_every_buyer_and_creates_nothing)
{
    int64_t users[] = {1, 2};
    answer a[2];
    call_batch(ITEM, users, 2, 100, 0, a);
    cr_expect_eq(a[0].outcome, RESERVE_UNKNOWN_ITEM);
    cr_expect_eq(a[1].outcome, RESERVE_UNKNOWN_ITEM);
    redisReply *r = redisCommand(redis, "DBSIZE");
    cr_assert(r && r->type == REDIS_REPLY_INTEGER);
    cr_assert_eq(r->integer, 0, "no key created");
    freeReplyObject(r);
}

Test(reserve_batch, anonymous_buyers_each_buy_without_a_buyer_record)
{
    int64_t users[] = {0, 0, 0};
    answer a[3];
    item_reset(ITEM, 10, 1);
    call_batch(ITEM, users, 3, 100, 0, a);
    for (int i = 0; i < 3; i++)
        cr_expect_eq(a[i].outcome, RESERVE_QUEUED);
    char buyers[KEYS_MAX];
    keys_item_buyers(buyers, sizeof(buyers), ITEM);
    cr_assert_eq(harness_redis_int(redis, "EXISTS", buyers), 0);
    order o;
    queued_order(0, &o);
    cr_expect_eq(o.user_id, o.id, "the order id stands for an anonymous buyer");
}

Test(reserve_batch, every_buyer_gets_the_answer_reserve_gives_one_call_at_a_time)
{
    /* Repeat buyers, anonymous ones and more buyers than stock, in batches
     * of every size up to the most: item 1 by batches, item 2 one by one. */
    enum { N = 400 };
    int64_t users[N];
    answer batched[N], single[N];
    srand(11);
    for (int i = 0; i < N; i++)
        users[i] = rand() % 5 == 0 ? 0 : 1 + rand() % 150;
    item_reset(1, 150, 3);
    item_reset(2, 150, 3);
    for (int i = 0, size = 1; i < N; i += size, size = size % RESERVE_BATCH_MAX + 1) {
        int n = i + size <= N ? size : N - i;
        /* No twins inside one call: those are in_progress in a batch, which
         * one call at a time cannot be. */
        int64_t part[RESERVE_BATCH_MAX];
        int m = 0;
        for (int k = 0; k < n; k++) {
            int twin = 0;
            for (int j = 0; j < m; j++)
                twin |= users[i + k] != 0 && part[j] == users[i + k];
            if (twin)
                break;
            part[m++] = users[i + k];
        }
        call_batch(1, part, m, 10000 + i, 0, batched + i);
        call_one_by_one(2, part, m, 20000 + i, single + i);
        size = m;
    }
    for (int i = 0; i < N; i++) {
        cr_expect_eq(batched[i].outcome, single[i].outcome, "buyer %d (user %" PRId64 ")", i,
                     users[i]);
        cr_expect_eq(batched[i].remaining, single[i].remaining, "buyer %d", i);
        cr_expect_eq(batched[i].round, single[i].round, "buyer %d", i);
    }
    cr_assert_eq(state_field(1, "stock"), state_field(2, "stock"));
    cr_assert_eq(state_field(1, "stock"), 0, "more buyers than units: sold out");
}

Test(reserve_batch, after_a_script_flush_the_call_by_text_works)
{
    int64_t users[] = {7};
    item_reset(ITEM, 10, 1);
    freeReplyObject(redisCommand(redis, "SCRIPT FLUSH"));
    reserve_batch *b = malloc(sizeof(*b));
    cr_assert(b);
    reserve_batch_init(b, ITEM, 0);
    reserve_batch_add(b, users[0], 0, 100, CREATED_MS);
    int argc = reserve_batch_argv(b, &sc.s[SCRIPT_RESERVE_BATCH], 0);
    redisReply *r = redisCommandArgv(redis, argc, b->argv, b->lens);
    cr_assert(scripts_is_noscript(r), "EVALSHA after a flush");
    freeReplyObject(r);
    argc = reserve_batch_argv(b, &sc.s[SCRIPT_RESERVE_BATCH], 1);
    r = redisCommandArgv(redis, argc, b->argv, b->lens);
    int64_t remaining, round;
    cr_assert_eq(reserve_batch_parse(r, 1, 0, &remaining, &round), RESERVE_QUEUED);
    cr_expect_eq(remaining, 9);
    freeReplyObject(r);
    free(b);
}
