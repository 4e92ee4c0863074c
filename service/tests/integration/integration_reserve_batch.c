/* integration_reserve_batch.c: the reserve script (lua/reserve_batch.lua)
 * called as the server calls it (reserve_batch.c builds the call), against
 * the test run's Redis: the sale window by Redis's clock, limits and
 * quantities, each buyer answered as one call at a time would answer it, one
 * write per key; and the restock script (lua/restock.lua). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>

#include "harness.h"
#include "harness_suite.h"
#include "keys.h"
#include "order.h"
#include "order_return.h"
#include "redis_nodes.h"
#include "reserve_batch.h"
#include "scripts.h"

#define ITEM 42

static redisContext *redis;
static scripts sc;
static config cfg;         /* the run's, for nodes */
static redis_nodes *nodes; /* the returns' way to Redis, as the server's and the worker's */

HARNESS_NODES_SUITE(reserve_batch, harness_redis_with_scripts, harness_config, redis, sc, cfg,
                    nodes, .timeout = 30);

static void item_reset(int64_t item, long long stock, long long round)
{
    harness_item_reset(redis, &sc, item, stock, round);
}

/* Sends the batch b of n buyers and frees it; their answers in out, the
 * item's in *it (may be NULL). */
static void send_batch(reserve_batch *b, int n, reserve_answer *out, reserve_item *it)
{
    int argc = reserve_batch_argv(b, &sc.s[SCRIPT_RESERVE_BATCH], 0);
    redisReply *r = redisCommandArgv(redis, argc, b->argv, b->lens);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY, "reserve_batch: %s",
              r && r->type == REDIS_REPLY_ERROR ? r->str : "not an array");
    reserve_item ignored;
    cr_assert_eq(reserve_batch_item(r, n, it ? it : &ignored), 0, "the item's entries");
    for (int i = 0; i < n; i++)
        cr_assert_neq(reserve_batch_answer(r, n, i, &out[i]), RESERVE_BAD_REPLY,
                      "buyer %d's answer", i);
    freeReplyObject(r);
    free(b);
}

/* One call for the buyers users[0..n) (0: anonymous) of item asking
 * quantities[i] units (NULL: one each), order ids first_order,
 * first_order + 1, ...; their answers in out, the item's in *it. */
static void call_batch_q(int64_t item, const int64_t *users, const int *quantities, int n,
                         int64_t first_order, int bound, reserve_answer *out, reserve_item *it)
{
    reserve_batch *b = malloc(sizeof(*b));
    cr_assert(b);
    reserve_batch_init(b, item, bound);
    for (int i = 0; i < n; i++)
        cr_assert_eq(reserve_batch_add(b, users[i], users[i] == 0, first_order + i,
                                       quantities ? quantities[i] : 1),
                     i);
    send_batch(b, n, out, it);
}

static void call_batch(int64_t item, const int64_t *users, int n, int64_t first_order, int bound,
                       reserve_answer *out)
{
    call_batch_q(item, users, NULL, n, first_order, bound, out, NULL);
}

/* Decodes the queue entry at index (0: the newest) into *o. */
static void queued_order(long index, order *o)
{
    redisReply *r = redisCommand(redis, "LINDEX %s %ld", harness_queue_key(ITEM), index);
    cr_assert(r && r->type == REDIS_REPLY_STRING, "no queue entry %ld", index);
    cr_assert_eq(order_decode(r->str, r->len, o), 0, "%s", r->str);
    redisReply *p = redisCommand(redis, "HGET %s %" PRId64, harness_pending_key(ITEM), o->id);
    cr_assert(p && p->type == REDIS_REPLY_STRING, "order %" PRId64 " is not pending", o->id);
    cr_assert_str_eq(p->str, r->str, "the pending entry is the queued text");
    freeReplyObject(p);
    freeReplyObject(r);
}

static long long buyer_units(int64_t item, int64_t user)
{
    char buyers[KEYS_MAX];
    keys_item_buyers(buyers, sizeof(buyers), item);
    redisReply *r = redisCommand(redis, "HGET %s %" PRId64, buyers, user);
    cr_assert(r);
    long long v = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
    freeReplyObject(r);
    return v;
}

Test(reserve_batch, a_batch_of_new_buyers_sells_to_each_in_order_and_queues_each_order)
{
    int64_t users[] = {7, 8, 9};
    reserve_answer a[3];
    reserve_item it;
    item_reset(ITEM, 10, 4);
    int64_t before = harness_redis_now_ms(redis);
    call_batch_q(ITEM, users, NULL, 3, 5000, 0, a, &it);
    int64_t after = harness_redis_now_ms(redis);
    cr_assert_eq(it.round, 4);
    cr_assert(it.now_ms >= before && it.now_ms <= after, "the reply carries Redis's clock");
    cr_assert_eq(it.per_buyer_limit, 1);
    cr_assert_eq(it.starts_ms, 0);
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(a[i].outcome, RESERVE_QUEUED, "buyer %d", i);
        cr_expect_eq(a[i].remaining, 9 - i, "each buyer sees the stock after its own unit");
        cr_expect_eq(a[i].bought, 1);
        cr_expect_eq(buyer_units(ITEM, users[i]), 1);
    }
    cr_assert_eq(harness_item_field(redis, ITEM, "stock"), 7);
    cr_assert_eq(harness_item_field(redis, ITEM, "initial"), 10, "initial stock is not touched");
    cr_assert_eq(harness_redis_int(redis, "LLEN", harness_queue_key(ITEM)), 3);
    cr_assert_eq(harness_redis_int(redis, "HLEN", harness_pending_key(ITEM)), 3);
    /* The oldest order is the farthest from the head: the worker takes
     * them in the buyers' order. */
    for (int i = 0; i < 3; i++) {
        order o;
        queued_order(2 - i, &o);
        cr_expect_eq(o.id, 5000 + i);
        cr_expect_eq(o.user_id, users[i]);
        cr_expect_eq(o.item_id, ITEM);
        cr_expect_eq(o.round, 4);
        cr_expect_eq(o.created_ms, it.now_ms, "accepted at Redis's time");
        cr_expect_eq(o.quantity, 1);
        cr_expect_eq(o.first_unit, 1);
    }
}

Test(reserve_batch, the_last_units_go_to_the_first_buyers_and_the_rest_are_sold_out)
{
    int64_t users[] = {1, 2, 3, 4, 5};
    reserve_answer a[5];
    item_reset(ITEM, 3, 1);
    call_batch(ITEM, users, 5, 100, 0, a);
    for (int i = 0; i < 3; i++)
        cr_expect_eq(a[i].outcome, RESERVE_QUEUED, "buyer %d", i);
    cr_expect_eq(a[2].remaining, 0);
    cr_expect_eq(a[3].outcome, RESERVE_SOLD_OUT);
    cr_expect_eq(a[4].outcome, RESERVE_SOLD_OUT);
    cr_assert_eq(harness_item_field(redis, ITEM, "stock"), 0, "never below zero");
    cr_assert_eq(harness_redis_int(redis, "LLEN", harness_queue_key(ITEM)), 3);
}

Test(reserve_batch, a_buyer_reaches_the_limit_and_no_further_even_twice_in_one_batch)
{
    int64_t first[] = {7};
    int q2[] = {2};
    int64_t users[] = {7, 8, 7, 7};
    int quantities[] = {1, 3, 1, 1};
    reserve_answer a[4];
    reserve_item it;
    harness_item_round(redis, &sc, ITEM, 100, 1, 0, 0, 3);
    call_batch_q(ITEM, first, q2, 1, 100, 0, a, &it);
    cr_assert_eq(a[0].outcome, RESERVE_QUEUED);
    cr_assert_eq(a[0].bought, 2);
    call_batch_q(ITEM, users, quantities, 4, 200, 0, a, &it);
    cr_expect_eq(it.per_buyer_limit, 3);
    cr_expect_eq(a[0].outcome, RESERVE_QUEUED, "2 + 1 is the limit");
    cr_expect_eq(a[0].bought, 3);
    cr_expect_eq(a[1].outcome, RESERVE_QUEUED, "3 units at once for a new buyer");
    cr_expect_eq(a[1].bought, 3);
    cr_expect_eq(a[2].outcome, RESERVE_LIMIT_REACHED, "a twin in the same batch");
    cr_expect_eq(a[2].bought, 3, "what the buyer has");
    cr_expect_eq(a[3].outcome, RESERVE_LIMIT_REACHED);
    cr_assert_eq(harness_item_field(redis, ITEM, "stock"), 100 - 2 - 1 - 3);
    cr_assert_eq(buyer_units(ITEM, 7), 3);
    cr_assert_eq(buyer_units(ITEM, 8), 3);
    /* Buyer 7's orders hold its units 1-2 and 3: the newest is the head. */
    order o;
    queued_order(1, &o);
    cr_expect_eq(o.user_id, 7);
    cr_expect_eq(o.quantity, 1);
    cr_expect_eq(o.first_unit, 3);
    queued_order(2, &o);
    cr_expect_eq(o.quantity, 2);
    cr_expect_eq(o.first_unit, 1);
}

Test(reserve_batch, a_repeat_buyer_under_the_default_limit_is_limit_reached)
{
    int64_t users[] = {7, 7};
    reserve_answer a[2];
    item_reset(ITEM, 10, 1);
    call_batch(ITEM, users, 2, 100, 0, a);
    cr_expect_eq(a[0].outcome, RESERVE_QUEUED);
    cr_expect_eq(a[1].outcome, RESERVE_LIMIT_REACHED);
    cr_expect_eq(reserve_status(a[1].outcome), SK_LIMIT_REACHED);
    call_batch(ITEM, users, 1, 300, 0, a);
    cr_expect_eq(a[0].outcome, RESERVE_LIMIT_REACHED, "in a later batch too");
    cr_assert_eq(harness_item_field(redis, ITEM, "stock"), 9);
}

Test(reserve_batch, a_quantity_above_what_remains_takes_nothing)
{
    int64_t users[] = {7, 8};
    int quantities[] = {3, 2};
    reserve_answer a[2];
    harness_item_round(redis, &sc, ITEM, 2, 1, 0, 0, 5);
    call_batch_q(ITEM, users, quantities, 2, 100, 0, a, NULL);
    cr_expect_eq(a[0].outcome, RESERVE_INSUFFICIENT_STOCK, "no partial fill");
    cr_expect_eq(a[0].remaining, 2);
    cr_expect_eq(a[0].bought, 0);
    cr_expect_eq(a[1].outcome, RESERVE_QUEUED, "the next buyer's quantity fits");
    cr_expect_eq(a[1].remaining, 0);
    cr_assert_eq(buyer_units(ITEM, 7), 0, "the refused buyer is not recorded");
    cr_assert_eq(harness_redis_int(redis, "LLEN", harness_queue_key(ITEM)), 1);
}

Test(reserve_batch, nothing_is_taken_before_the_start_or_from_the_end_by_redis_clock)
{
    int64_t users[] = {1, 2};
    reserve_answer a[2];
    reserve_item it;
    int64_t now = harness_redis_now_ms(redis);
    harness_item_round(redis, &sc, ITEM, 10, 1, now + 60000, now + 120000, 2);
    call_batch_q(ITEM, users, NULL, 2, 100, 0, a, &it);
    cr_expect_eq(a[0].outcome, RESERVE_NOT_STARTED);
    cr_expect_eq(a[1].outcome, RESERVE_NOT_STARTED);
    cr_expect_eq(it.starts_ms, now + 60000);
    cr_expect_eq(it.ends_ms, now + 120000);
    cr_expect_eq(it.per_buyer_limit, 2);
    cr_expect(it.starts_ms - it.now_ms > 59000, "the time left by Redis's clock");
    cr_assert_eq(harness_item_field(redis, ITEM, "stock"), 10);
    cr_assert_eq(harness_redis_int(redis, "LLEN", harness_queue_key(ITEM)), 0);

    harness_item_round(redis, &sc, ITEM, 10, 2, now - 120000, now - 1, 1);
    call_batch(ITEM, users, 2, 200, 0, a);
    cr_expect_eq(a[0].outcome, RESERVE_ENDED);
    cr_expect_eq(a[1].outcome, RESERVE_ENDED);
    harness_item_round(redis, &sc, ITEM, 10, 3, now - 1000, now + 60000, 1);
    call_batch(ITEM, users, 2, 300, 0, a);
    cr_expect_eq(a[0].outcome, RESERVE_QUEUED, "inside the window");
    cr_assert_eq(harness_item_field(redis, ITEM, "stock"), 8);
}

Test(reserve_batch, at_the_pending_bound_the_rest_of_the_batch_is_queue_full_and_changes_nothing)
{
    int64_t users[] = {1, 2, 3};
    reserve_answer a[3];
    item_reset(ITEM, 10, 1);
    freeReplyObject(redisCommand(redis, "HSET %s 999 waiting", harness_pending_key(ITEM)));
    call_batch(ITEM, users, 3, 100, 2, a);
    cr_expect_eq(a[0].outcome, RESERVE_QUEUED);
    cr_expect_eq(a[1].outcome, RESERVE_QUEUE_FULL);
    cr_expect_eq(a[2].outcome, RESERVE_QUEUE_FULL);
    cr_assert_eq(harness_item_field(redis, ITEM, "stock"), 9);
    char buyers[KEYS_MAX];
    keys_item_buyers(buyers, sizeof(buyers), ITEM);
    cr_assert_eq(harness_redis_int(redis, "HLEN", buyers), 1, "refused buyers are not recorded");
}

Test(reserve_batch, an_unknown_item_answers_unknown_item_to_every_buyer_and_creates_nothing)
{
    int64_t users[] = {1, 2};
    reserve_answer a[2];
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
    reserve_answer a[3];
    harness_item_round(redis, &sc, ITEM, 10, 1, 0, 0, 10); /* the limit at the stock */
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

Test(reserve_batch, a_buyer_of_a_round_started_before_quantities_has_one_unit)
{
    int64_t users[] = {7};
    reserve_answer a[1];
    harness_item_round(redis, &sc, ITEM, 10, 1, 0, 0, 2);
    char buyers[KEYS_MAX];
    keys_item_buyers(buyers, sizeof(buyers), ITEM);
    freeReplyObject(redisCommand(redis, "HSET %s 7 117867792258039809", buyers));
    call_batch(ITEM, users, 1, 100, 0, a);
    cr_expect_eq(a[0].outcome, RESERVE_QUEUED, "its order id counts as one unit of two");
    cr_expect_eq(a[0].bought, 2);
    call_batch(ITEM, users, 1, 200, 0, a);
    cr_expect_eq(a[0].outcome, RESERVE_LIMIT_REACHED);
}

Test(reserve_batch, every_buyer_gets_the_answer_it_gets_one_call_at_a_time)
{
    /* Repeat buyers (twins in one batch included), anonymous ones,
     * quantities 1-3 under a limit of 4 and more units asked than exist, in
     * batches of every size up to the most: item 1 by batches, item 2 one
     * buyer a call. */
    enum { N = 400 };
    int64_t users[N];
    int quantities[N];
    reserve_answer batched[N], single[N];
    srand(11);
    for (int i = 0; i < N; i++) {
        users[i] = rand() % 5 == 0 ? 0 : 1 + rand() % 120;
        quantities[i] = 1 + rand() % 3;
    }
    harness_item_round(redis, &sc, 1, 300, 3, 0, 0, 4);
    harness_item_round(redis, &sc, 2, 300, 3, 0, 0, 4);
    for (int i = 0, size = 1; i < N; i += size, size = size % RESERVE_BATCH_MAX + 1) {
        int n = i + size <= N ? size : N - i;
        call_batch_q(1, users + i, quantities + i, n, 10000 + i, 0, batched + i, NULL);
        for (int k = 0; k < n; k++)
            call_batch_q(2, users + i + k, quantities + i + k, 1, 20000 + i + k, 0, single + i + k,
                         NULL);
    }
    int refusals = 0;
    for (int i = 0; i < N; i++) {
        cr_expect_eq(batched[i].outcome, single[i].outcome, "buyer %d (user %" PRId64 ")", i,
                     users[i]);
        cr_expect_eq(batched[i].remaining, single[i].remaining, "buyer %d", i);
        cr_expect_eq(batched[i].bought, single[i].bought, "buyer %d", i);
        refusals += batched[i].outcome == RESERVE_LIMIT_REACHED ||
                    batched[i].outcome == RESERVE_INSUFFICIENT_STOCK;
    }
    cr_assert_gt(refusals, 0, "the mix exercises the refusals");
    cr_assert_eq(harness_item_field(redis, 1, "stock"), harness_item_field(redis, 2, "stock"));
    cr_assert_eq(harness_item_field(redis, 1, "stock"), 0, "more units asked than exist: sold out");
}

Test(reserve_batch, after_a_script_flush_the_call_by_text_works)
{
    item_reset(ITEM, 10, 1);
    freeReplyObject(redisCommand(redis, "SCRIPT FLUSH"));
    reserve_batch *b = malloc(sizeof(*b));
    cr_assert(b);
    reserve_batch_init(b, ITEM, 0);
    reserve_batch_add(b, 7, 0, 100, 1);
    int argc = reserve_batch_argv(b, &sc.s[SCRIPT_RESERVE_BATCH], 0);
    redisReply *r = redisCommandArgv(redis, argc, b->argv, b->lens);
    cr_assert(scripts_is_noscript(r), "EVALSHA after a flush");
    freeReplyObject(r);
    argc = reserve_batch_argv(b, &sc.s[SCRIPT_RESERVE_BATCH], 1);
    r = redisCommandArgv(redis, argc, b->argv, b->lens);
    reserve_answer a;
    cr_assert_eq(reserve_batch_answer(r, 1, 0, &a), RESERVE_QUEUED);
    cr_expect_eq(a.remaining, 9);
    freeReplyObject(r);
    free(b);
}

/* One call of lua/restock.lua; its outcome's text into out. */
static long long restock(int64_t item, long long round, long long restocks, long long add,
                         long long total, char *out, size_t len)
{
    char state[KEYS_MAX];
    keys_item_state(state, sizeof(state), item);
    redisReply *r = redisCommand(redis, "EVALSHA %s 1 %s %lld %lld %lld %lld",
                                 sc.s[SCRIPT_RESTOCK].sha, state, round, restocks, add, total);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 5, "restock: %s",
              r && r->type == REDIS_REPLY_ERROR ? r->str : "not an answer");
    snprintf(out, len, "%s", r->element[0]->str);
    long long remaining = r->element[1]->integer;
    if (strcmp(out, "added") == 0 || strcmp(out, "already") == 0) {
        cr_assert_eq(r->element[2]->integer, restocks, "what Redis holds after the call");
        cr_assert_eq(r->element[4]->integer, restocks, "no returns: the changes are the restocks");
    }
    freeReplyObject(r);
    return remaining;
}

Test(reserve_batch, a_restock_is_applied_once_and_only_to_its_round)
{
    char what[32];
    item_reset(ITEM, 10, 5);
    cr_assert_eq(restock(ITEM, 5, 1, 7, 7, what, sizeof(what)), 17);
    cr_assert_str_eq(what, "added");
    cr_assert_eq(restock(ITEM, 5, 1, 7, 7, what, sizeof(what)), 17, "a repeat adds nothing");
    cr_assert_str_eq(what, "already");
    char state[KEYS_MAX];
    keys_item_state(state, sizeof(state), ITEM);
    redisReply *r = redisCommand(redis, "EVALSHA %s 1 %s 5 1 7 7", sc.s[SCRIPT_RESTOCK].sha, state);
    cr_assert(r && r->elements == 5);
    cr_assert_eq(r->element[3]->integer, 7, "the total Redis holds, for the caller to compare");
    freeReplyObject(r);
    cr_assert_eq(restock(ITEM, 5, 2, 3, 10, what, sizeof(what)), 20);
    cr_assert_str_eq(what, "added");
    cr_assert_eq(harness_item_field(redis, ITEM, "restocked"), 10);
    cr_assert_eq(harness_item_field(redis, ITEM, "restocks"), 2);
    restock(ITEM, 4, 3, 3, 13, what, sizeof(what));
    cr_assert_str_eq(what, "other_round", "a restock of an older round changes nothing");
    cr_assert_eq(harness_item_field(redis, ITEM, "stock"), 20);
    restock(99, 1, 1, 3, 3, what, sizeof(what));
    cr_assert_str_eq(what, "unknown_item");
    int64_t users[] = {7};
    reserve_answer a[1];
    reserve_item it;
    call_batch_q(ITEM, users, NULL, 1, 100, 0, a, &it);
    cr_assert_eq(it.changes, 2, "the reserve reply carries the stock version");
}

/* ---- lua/order_return.lua, through order_return_redis ---- */

/* Gives back the orders o[0..n) as the server and the worker do; asserts
 * Redis confirmed each. */
static void give_back(const order_ref *o, size_t n)
{
    unsigned char done[ORDER_RETURN_BATCH];
    cr_assert_eq(order_return_redis(nodes, &sc, o, n, done, "test"), 0, "every return confirmed");
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(done[i], 1, "order %zu confirmed", i);
}

/* The item's per-buyer limit, set in Redis. */
static void set_limit(int64_t item, int limit)
{
    char state[KEYS_MAX];
    keys_item_state(state, sizeof(state), item);
    freeReplyObject(redisCommand(redis, "HSET %s limit %d", state, limit));
}

Test(reserve_batch, a_return_to_an_item_without_state_stays_owed)
{
    /* An item held off sale by a rebuild (its state removed) takes nothing
     * back: the return is not confirmed, so it stays owed for the sweep. */
    item_reset(ITEM, 5, 3);
    char state[KEYS_MAX];
    keys_item_state(state, sizeof(state), ITEM);
    freeReplyObject(redisCommand(redis, "DEL %s", state));
    order_ref o = {.id = 4242, .item_id = ITEM, .round = 3, .user_id = 7, .quantity = 1};
    unsigned char done[1] = {1};
    cr_assert_eq(order_return_redis(nodes, &sc, &o, 1, done, "test"), -1);
    cr_assert_eq(done[0], 0, "owed, not confirmed");
    cr_assert_eq(harness_redis_int(redis, "EXISTS", state), 0, "no state made up");
}

Test(reserve_batch, a_return_gives_the_units_back_once_however_often_it_runs)
{
    item_reset(ITEM, 5, 3);
    set_limit(ITEM, 3);
    int64_t users[] = {7, 8};
    int quantities[] = {2, 3};
    reserve_answer a[2];
    call_batch_q(ITEM, users, quantities, 2, 100, 0, a, NULL);
    cr_assert_eq(a[1].outcome, RESERVE_QUEUED);
    cr_assert_eq(harness_item_field(redis, ITEM, "stock"), 0);

    order_ref o = {100, ITEM, 3, 7, 2, ITEM, ITEM, 0};
    give_back(&o, 1);
    cr_assert_eq(harness_item_field(redis, ITEM, "stock"), 2,
                 "the order's units are on sale again");
    cr_assert_eq(buyer_units(ITEM, 7), 0, "and no longer the buyer's");
    cr_assert_eq(harness_item_field(redis, ITEM, "returned"), 2);
    for (int again = 0; again < 3; again++)
        give_back(&o, 1); /* a retried job, a second node, the sweep after a crash */
    cr_assert_eq(harness_item_field(redis, ITEM, "stock"), 2,
                 "given back once, whoever repeats it");
    cr_assert_eq(harness_item_field(redis, ITEM, "returned"), 2);
    cr_assert_eq(harness_item_field(redis, ITEM, "returns"), 1);
    cr_assert_eq(buyer_units(ITEM, 8), 3, "another buyer's units untouched");

    /* The reserve reply carries the new stock version: a flagged server
     * learns the stock came back. */
    int64_t late[] = {9};
    reserve_item it;
    call_batch_q(ITEM, late, NULL, 1, 200, 0, a, &it);
    cr_assert_eq(a[0].outcome, RESERVE_QUEUED, "a returned unit sells again");
    cr_assert_eq(it.changes, 1, "one return, no restock");
}

Test(reserve_batch, a_return_of_an_older_round_gives_nothing_back)
{
    item_reset(ITEM, 1, 3);
    int64_t users[] = {7};
    reserve_answer a[1];
    call_batch(ITEM, users, 1, 100, 0, a);
    item_reset(ITEM, 4, 4); /* a reset: the round's stock is set anew */
    order_ref o = {100, ITEM, 3, 7, 1, ITEM, ITEM, 0};
    give_back(&o, 1);
    cr_assert_eq(harness_item_field(redis, ITEM, "stock"), 4,
                 "the old round's unit went with its round");
    cr_assert_eq(harness_item_field(redis, ITEM, "returned"), 0);
}

Test(reserve_batch, a_buyer_who_gave_units_back_buys_again_numbering_after_every_unit_held)
{
    item_reset(ITEM, 10, 3);
    set_limit(ITEM, 3);
    int64_t user[] = {7};
    reserve_answer a[1];
    order o1, o2, o3;
    for (int64_t id = 100; id < 103; id++)
        call_batch(ITEM, user, 1, id, 0, a);
    queued_order(2, &o1);
    queued_order(1, &o2);
    queued_order(0, &o3);
    cr_assert_eq(o3.first_unit, 3);
    call_batch(ITEM, user, 1, 103, 0, a);
    cr_assert_eq(a[0].outcome, RESERVE_LIMIT_REACHED);

    order_ref back = {o1.id, ITEM, 3, 7, 1, ITEM, ITEM, 0};
    give_back(&back, 1);
    cr_assert_eq(buyer_units(ITEM, 7), 2);
    call_batch(ITEM, user, 1, 104, 0, a);
    cr_assert_eq(a[0].outcome, RESERVE_QUEUED, "the buyer may buy again within the limit");
    order o4;
    queued_order(0, &o4);
    cr_assert_eq(
        o4.first_unit, 4,
        "numbered after units 1..3, so no live order of the buyer starts at the same unit");
    call_batch(ITEM, user, 1, 105, 0, a);
    cr_assert_eq(a[0].outcome, RESERVE_LIMIT_REACHED, "three units held again");
}

Test(reserve_batch, returns_of_several_items_are_sent_item_by_item)
{
    item_reset(ITEM, 2, 3);
    item_reset(ITEM + 1, 2, 3);
    int64_t users[] = {7, 8};
    reserve_answer a[2];
    call_batch(ITEM, users, 2, 100, 0, a);
    call_batch(ITEM + 1, users, 2, 200, 0, a);
    order_ref o[] = {{100, ITEM, 3, 7, 1, ITEM, ITEM, 0},
                     {101, ITEM, 3, 8, 1, ITEM, ITEM, 0},
                     {200, ITEM + 1, 3, 7, 1, ITEM + 1, ITEM + 1, 0}};
    give_back(o, 3);
    cr_assert_eq(harness_item_field(redis, ITEM, "stock"), 2);
    cr_assert_eq(harness_item_field(redis, ITEM + 1, "stock"), 1);
    cr_assert_eq(harness_item_field(redis, ITEM, "returns"), 1,
                 "one call for the item's two orders");
}

/* One call on the keys of key (a segment of item) for buyers with the
 * script's modes; one unit each unless quantities. */
static void call_modes(int64_t item, int64_t key, int n, const int64_t *users, const char **modes,
                       const int *quantities, int64_t first_order, reserve_answer *out,
                       reserve_item *it)
{
    reserve_batch *b = malloc(sizeof(*b));
    cr_assert(b);
    reserve_batch_init_segment(b, item, key, 0);
    for (int i = 0; i < n; i++)
        cr_assert_eq(reserve_batch_add_mode(b, users[i], first_order + i,
                                            quantities ? quantities[i] : 1, modes[i]),
                     i);
    send_batch(b, n, out, it);
}

/* Starts a round of one segment of an item of two segments. */
static void segment_round(int64_t key, long long stock, long long round, int limit)
{
    harness_item_round(redis, &sc, key, stock, round, 0, 0, limit);
    char state[KEYS_MAX];
    keys_item_state(state, sizeof(state), key);
    freeReplyObject(redisCommand(redis, "HSET %s segments 2", state));
}

/* The newest order on the queue of key. */
static void newest_order(int64_t key, order *o)
{
    char queue[KEYS_MAX];
    keys_queue(queue, sizeof(queue), key);
    redisReply *r = redisCommand(redis, "LINDEX %s 0", queue);
    cr_assert(r && r->type == REDIS_REPLY_STRING, "nothing queued on %s", queue);
    cr_assert_eq(order_decode(r->str, r->len, o), 0, "%s", r->str);
    freeReplyObject(r);
}

Test(reserve_batch, a_segmented_item_holds_at_home_takes_elsewhere_and_releases_what_it_cannot_fill)
{
    /* Two segments: home (the item's own keys) with 1 unit, the other with
     * 2; a limit of 2 a buyer. */
    int64_t home = ITEM, other = keys_segment(ITEM, 1, 2);
    segment_round(home, 1, 9, 2);
    segment_round(other, 2, 9, 2);
    reserve_answer a[2];
    reserve_item it;
    const int64_t u7[] = {7}, u8[] = {8};

    const char *plain[] = {"0"};
    call_modes(ITEM, home, 1, u7, plain, NULL, 500, a, &it);
    cr_assert_eq(a[0].outcome, RESERVE_SEGMENTED, "a server that did not know is told");
    cr_assert_eq(it.segments, 2);
    cr_assert_eq(buyer_units(home, 7), 0, "and nothing happened");

    const char *h[] = {"h"};
    call_modes(ITEM, home, 1, u7, h, NULL, 501, a, NULL);
    cr_assert_eq(a[0].outcome, RESERVE_QUEUED, "home had a unit");
    order o;
    newest_order(home, &o);
    cr_assert_eq(o.first_unit, 1);

    call_modes(ITEM, home, 1, u7, h, NULL, 502, a, NULL);
    cr_assert_eq(a[0].outcome, RESERVE_HELD, "home is empty: held against the limit");
    cr_assert_eq(a[0].first_unit, 2);
    cr_assert_eq(buyer_units(home, 7), 2, "the hold counts");

    char take[RESERVE_MODE_MAX];
    snprintf(take, sizeof(take), "t%lld:%lld:9", (long long)a[0].first_unit, (long long)home);
    const char *t[] = {take};
    call_modes(ITEM, other, 1, u7, t, NULL, 502, a, NULL);
    cr_assert_eq(a[0].outcome, RESERVE_QUEUED, "taken from the other segment");
    cr_assert_eq(a[0].remaining, 1);
    newest_order(other, &o);
    cr_assert_eq(o.id, 502);
    cr_assert_eq(o.item_id, ITEM, "the order is the item's");
    cr_assert_eq(o.first_unit, 2, "numbered by home");
    cr_assert_eq(buyer_units(other, 7), 0, "the buyer is counted at home only");

    call_modes(ITEM, home, 1, u7, h, NULL, 503, a, NULL);
    cr_assert_eq(a[0].outcome, RESERVE_LIMIT_REACHED, "the limit holds across segments");

    const int two[] = {2};
    call_modes(ITEM, home, 1, u8, h, two, 504, a, NULL);
    cr_assert_eq(a[0].outcome, RESERVE_HELD);
    cr_assert_eq(buyer_units(home, 8), 2);
    snprintf(take, sizeof(take), "t%lld:%lld:9", (long long)a[0].first_unit, (long long)home);
    call_modes(ITEM, other, 1, u8, t, two, 504, a, NULL);
    cr_assert_eq(a[0].outcome, RESERVE_INSUFFICIENT_STOCK, "one unit left there");
    const char *r[] = {"r9"};
    call_modes(ITEM, home, 1, u8, r, two, 504, a, NULL);
    cr_assert_eq(a[0].outcome, RESERVE_RELEASED);
    cr_assert_eq(buyer_units(home, 8), 0, "the hold is given back");
}

Test(reserve_batch, a_released_hold_keeps_its_unit_numbers_so_no_two_orders_share_one)
{
    /* Two segments of a unit each, a limit of 3. Buyer 9 asks for 2 and
     * for 1 in one batch at home: the 2 are held (units 1-2), the 1 is
     * sold there (unit 3). The 2 cannot be taken elsewhere and the hold is
     * released; the buyer's next order must not be numbered 2 or 3 again,
     * or one of two live orders starting at unit 3 would be dropped by
     * PostgreSQL's orders_units_once. */
    int64_t home = keys_segment(ITEM, keys_segment_home(9, 2), 2);
    int64_t other = keys_segment(ITEM, 1 - keys_segment_home(9, 2), 2);
    segment_round(home, 1, 9, 3);
    segment_round(other, 1, 9, 3);
    reserve_answer a[2];
    const int64_t u9[] = {9, 9};
    const char *hh[] = {"h", "h"};
    const int two_one[] = {2, 1}, two[] = {2}, one[] = {1};
    call_modes(ITEM, home, 2, u9, hh, two_one, 600, a, NULL);
    cr_assert_eq(a[0].outcome, RESERVE_HELD);
    cr_assert_eq(a[0].first_unit, 1);
    cr_assert_eq(a[1].outcome, RESERVE_QUEUED);
    order o;
    newest_order(home, &o);
    cr_assert_eq(o.first_unit, 3);

    char take[RESERVE_MODE_MAX];
    snprintf(take, sizeof(take), "t1:%lld:9", (long long)home);
    const char *t[] = {take}, *r[] = {"r9"}, *h[] = {"h"};
    call_modes(ITEM, other, 1, u9, t, two, 600, a, NULL);
    cr_assert_eq(a[0].outcome, RESERVE_INSUFFICIENT_STOCK);
    call_modes(ITEM, home, 1, u9, r, two, 600, a, NULL);
    cr_assert_eq(a[0].outcome, RESERVE_RELEASED);
    cr_assert_eq(buyer_units(home, 9), 1, "the unit sold at home still counts");

    call_modes(ITEM, home, 1, u9, h, one, 601, a, NULL);
    cr_assert_eq(a[0].outcome, RESERVE_HELD, "home is empty");
    cr_assert_eq(a[0].first_unit, 4, "numbered after every unit handed out, held ones too");
    snprintf(take, sizeof(take), "t%lld:%lld:9", (long long)a[0].first_unit, (long long)home);
    call_modes(ITEM, other, 1, u9, t, one, 601, a, NULL);
    cr_assert_eq(a[0].outcome, RESERVE_QUEUED);
    newest_order(other, &o);
    cr_assert_eq(o.first_unit, 4);
    call_modes(ITEM, home, 1, u9, h, one, 602, a, NULL);
    cr_assert_eq(a[0].outcome, RESERVE_HELD, "the limit leaves room for a third unit");
    cr_assert_eq(a[0].first_unit, 5);
}

Test(reserve_batch, an_anonymous_buyer_sent_as_one_to_a_split_item_is_told_it_is_split)
{
    /* A server that does not know the item is split yet sends an anonymous
     * buyer to segment 0 as "1": told segmented, nothing taken, rather than
     * sold out by a segment 0 that has nothing left while the other has. */
    int64_t other = keys_segment(ITEM, 1, 2);
    segment_round(ITEM, 0, 9, 3); /* a limit that lets anonymous buyers in: 3 >= (1 + 1) * 2 - 1 */
    segment_round(other, 1, 9, 3);
    reserve_answer a[1];
    reserve_item it;
    const int64_t anon[] = {700};
    const char *one[] = {"1"}, *routed[] = {"a"};
    call_modes(ITEM, ITEM, 1, anon, one, NULL, 700, a, &it);
    cr_assert_eq(a[0].outcome, RESERVE_SEGMENTED);
    cr_assert_eq(it.segments, 2);
    call_modes(ITEM, other, 1, anon, routed, NULL, 700, a, NULL);
    cr_assert_eq(a[0].outcome, RESERVE_QUEUED, "routed by a server that knows: sold there");
    cr_assert_eq(a[0].remaining, 0);
    cr_assert_eq(buyer_units(other, 700), 0, "an anonymous buyer is counted nowhere");
}

Test(reserve_batch, a_hold_of_an_earlier_round_is_neither_taken_nor_released_in_the_next)
{
    /* A reset starts the next round segment after segment: a hold made at
     * home in round 9 must not buy a unit of round 10 elsewhere, and its
     * release must not lower the buyer's count of round 10. */
    int64_t home = ITEM, other = keys_segment(ITEM, 1, 2);
    segment_round(home, 0, 9, 2);
    segment_round(other, 1, 9, 2);
    reserve_answer a[1];
    reserve_item it;
    const int64_t u5[] = {5};
    char take[RESERVE_MODE_MAX];
    snprintf(take, sizeof(take), "t1:%lld:9", (long long)home);
    const char *h[] = {"h"}, *t[] = {take}, *r[] = {"r9"};
    call_modes(ITEM, home, 1, u5, h, NULL, 800, a, &it);
    cr_assert_eq(a[0].outcome, RESERVE_HELD);
    cr_assert_eq(it.round, 9);

    segment_round(other, 1, 10, 2); /* the reset reaches it first */
    call_modes(ITEM, other, 1, u5, t, NULL, 800, a, NULL);
    cr_assert_eq(a[0].outcome, RESERVE_SOLD_OUT, "round 9's hold buys nothing of round 10");
    cr_assert_eq(a[0].remaining, 1);

    segment_round(home, 1, 10, 2);
    call_modes(ITEM, home, 1, u5, h, NULL, 801, a, NULL);
    cr_assert_eq(a[0].outcome, RESERVE_QUEUED, "round 10 at home");
    call_modes(ITEM, home, 1, u5, r, NULL, 800, a, NULL);
    cr_assert_eq(a[0].outcome, RESERVE_RELEASED);
    cr_assert_eq(buyer_units(home, 5), 1, "round 10's unit still counts");
}
