/* integration_scripts.c: the Lua scripts of lua/ (reserve, lock_release,
 * item_reset) and the per-buyer lock, run against the test run's Redis. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>

#include "harness.h"
#include "keys.h"
#include "order.h"
#include "scripts.h"

#define ITEM 42
#define CREATED_MS 1795327200000LL

static redisContext *redis;
static scripts sc;

/* Every test starts from an empty Redis with the scripts loaded. Only Redis:
 * these tests need no PostgreSQL, so harness_reset_backends() is not used. */
static void setup(void)
{
    redis = harness_redis_with_scripts(&sc);
}

static void teardown(void)
{
    redisFree(redis);
    redis = NULL;
}

TestSuite(scripts, .init = setup, .fini = teardown, .timeout = 30);

/* ---- helpers: each frees its reply ---- */

/* Runs cmd (printf-style, hiredis format) expecting an integer reply. */
static long long cmd_int(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(redis, fmt, ap);
    va_end(ap);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER, "%s: %s", fmt,
              r && r->type == REDIS_REPLY_ERROR ? r->str : "not an integer");
    long long n = r->integer;
    freeReplyObject(r);
    return n;
}

/* HGET key field into out ("" when absent). Returns 1 when present. */
static int hget(const char *key, const char *field, char *out, size_t len)
{
    redisReply *r = redisCommand(redis, "HGET %s %s", key, field);
    cr_assert(r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL), "HGET %s %s", key,
              field);
    int present = r->type == REDIS_REPLY_STRING;
    snprintf(out, len, "%s", present ? r->str : "");
    freeReplyObject(r);
    return present;
}

static long long hget_int(const char *key, const char *field)
{
    char v[64];
    cr_assert(hget(key, field, v, sizeof(v)), "%s has no %s", key, field);
    return strtoll(v, NULL, 10);
}

static void state_key(char *buf, int64_t item)
{
    keys_item_state(buf, KEYS_MAX, item);
}

static void buyers_key(char *buf, int64_t item)
{
    keys_item_buyers(buf, KEYS_MAX, item);
}

static void item_reset(int64_t item, long long stock, long long round)
{
    harness_item_reset(redis, &sc, item, stock, round);
}

/* SET lock token NX PX ttl_ms. Returns 1 when taken, 0 when held by another. */
static int lock_take(const char *lock, const char *token, int ttl_ms)
{
    redisReply *r = redisCommand(redis, "SET %s %s NX PX %d", lock, token, ttl_ms);
    cr_assert(r && (r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_NIL), "SET NX PX");
    int taken = r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0;
    freeReplyObject(r);
    return taken;
}

static long long lock_release(const char *lock, const char *token)
{
    return cmd_int("EVALSHA %s 1 %s %s", sc.s[SCRIPT_LOCK_RELEASE].sha, lock, token);
}

/* The buyer's lock key; with take, also takes it with token "tok-<user>". */
static void buyer_lock(char *lock, int64_t item, int64_t user, int take)
{
    keys_buyer_lock(lock, KEYS_MAX, item, user);
    if (take) {
        char token[32];
        snprintf(token, sizeof(token), "tok-%" PRId64, user);
        cr_assert(lock_take(lock, token, 5000), "lock of user %" PRId64 " already held", user);
    }
}

typedef struct outcome {
    char what[32];
    long long remaining;
    long long round; /* the item's round; 0 for an unknown item */
} outcome;

/* One reserve call; with release the script also frees the buyer's lock
 * (ARGV[7] = "1"), as the server makes it; bound (NULL: not sent, as the
 * laboratory calls it) is the most orders seckill:pending may hold. */
static outcome reserve_bounded(int64_t item, int64_t user, const char *token, int64_t order_id,
                               int anonymous, int release, const char *bound)
{
    char state[KEYS_MAX], buyers[KEYS_MAX], lock[KEYS_MAX];
    char a_item[24], a_user[24], a_order[24], a_now[24];
    state_key(state, item);
    buyers_key(buyers, item);
    keys_buyer_lock(lock, sizeof(lock), item, user);
    snprintf(a_item, sizeof(a_item), "%" PRId64, item);
    snprintf(a_user, sizeof(a_user), "%" PRId64, user);
    snprintf(a_order, sizeof(a_order), "%" PRId64, order_id);
    snprintf(a_now, sizeof(a_now), "%lld", CREATED_MS);
    const char *argv[] = {"EVALSHA",
                          sc.s[SCRIPT_RESERVE].sha,
                          "5",
                          state,
                          buyers,
                          lock,
                          KEYS_QUEUE,
                          KEYS_PENDING,
                          a_item,
                          a_user,
                          token,
                          a_order,
                          a_now,
                          anonymous ? "1" : "0",
                          release ? "1" : "0",
                          bound};
    redisReply *r = redisCommandArgv(redis, bound ? 16 : release ? 15 : 14, argv, NULL);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 3, "reserve: %s",
              r && r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    cr_assert_eq(r->element[0]->type, REDIS_REPLY_STRING);
    cr_assert_eq(r->element[1]->type, REDIS_REPLY_INTEGER);
    cr_assert_eq(r->element[2]->type, REDIS_REPLY_INTEGER);
    outcome o;
    snprintf(o.what, sizeof(o.what), "%s", r->element[0]->str);
    o.remaining = r->element[1]->integer;
    o.round = r->element[2]->integer;
    freeReplyObject(r);
    return o;
}

static outcome reserve_call(int64_t item, int64_t user, const char *token, int64_t order_id,
                            int anonymous, int release)
{
    return reserve_bounded(item, user, token, order_id, anonymous, release, NULL);
}

/* One reserve call without the release (the laboratory's). */
static outcome reserve(int64_t item, int64_t user, const char *token, int64_t order_id,
                       int anonymous)
{
    return reserve_call(item, user, token, order_id, anonymous, 0);
}

/* The buyer's own purchase: with the lock taken under token "tok-<user>". */
static outcome buy(int64_t item, int64_t user, int64_t order_id)
{
    char token[32];
    snprintf(token, sizeof(token), "tok-%" PRId64, user);
    return reserve(item, user, token, order_id, 0);
}

static long long queue_len(void)
{
    return cmd_int("LLEN %s", KEYS_QUEUE);
}

static long long pending_len(void)
{
    return cmd_int("HLEN %s", KEYS_PENDING);
}

/* The pending entry of an order equals the queued text. */
static void expect_pending_matches_queue(long index)
{
    redisReply *q = redisCommand(redis, "LINDEX %s %ld", KEYS_QUEUE, index);
    cr_assert(q && q->type == REDIS_REPLY_STRING, "no queue entry %ld", index);
    order o;
    cr_assert_eq(order_decode(q->str, q->len, &o), 0);
    redisReply *p = redisCommand(redis, "HGET %s %" PRId64, KEYS_PENDING, o.id);
    cr_assert(p && p->type == REDIS_REPLY_STRING, "order %" PRId64 " is not pending", o.id);
    cr_assert_str_eq(p->str, q->str);
    freeReplyObject(p);
    freeReplyObject(q);
}

/* Decodes the queue entry at index (0: the newest) into *o. */
static void queued_order(long index, order *o)
{
    redisReply *r = redisCommand(redis, "LINDEX %s %ld", KEYS_QUEUE, index);
    cr_assert(r && r->type == REDIS_REPLY_STRING, "no queue entry %ld", index);
    int rc = order_decode(r->str, r->len, o);
    cr_assert_eq(rc, 0, "order_decode refused the script's payload: %s", r->str);
    freeReplyObject(r);
}

/* ---- item_reset ---- */

Test(scripts, item_reset_sets_stock_initial_and_round_and_clears_the_buyers)
{
    char state[KEYS_MAX], buyers[KEYS_MAX];
    state_key(state, ITEM);
    buyers_key(buyers, ITEM);
    cmd_int("HSET %s stock 1 initial 9 round 1", state);
    cmd_int("HSET %s 7 111 8 222", buyers);
    item_reset(ITEM, 5, 2);
    cr_assert_eq(hget_int(state, "stock"), 5);
    cr_assert_eq(hget_int(state, "initial"), 5);
    cr_assert_eq(hget_int(state, "round"), 2);
    cr_assert_eq(cmd_int("EXISTS %s", buyers), 0, "the buyers of the old round are gone");
    cr_assert_eq(cmd_int("HLEN %s", state), 3, "no other fields");
}

Test(scripts, item_reset_lets_a_previous_buyer_buy_again)
{
    char lock[KEYS_MAX];
    item_reset(ITEM, 2, 1);
    buyer_lock(lock, ITEM, 7, 1);
    cr_assert_str_eq(buy(ITEM, 7, 1001).what, "queued");
    cr_assert_str_eq(buy(ITEM, 7, 1002).what, "already_purchased");
    item_reset(ITEM, 2, 2);
    outcome o = buy(ITEM, 7, 1003);
    cr_assert_str_eq(o.what, "queued");
    cr_assert_eq(o.remaining, 1);
    order ord;
    queued_order(0, &ord);
    cr_assert_eq(ord.round, 2, "the order carries the new round");
}

/* ---- reserve ---- */

Test(scripts, reserve_with_the_lock_held_sells_and_queues_the_order)
{
    char lock[KEYS_MAX], state[KEYS_MAX], buyers[KEYS_MAX], v[64];
    state_key(state, ITEM);
    buyers_key(buyers, ITEM);
    item_reset(ITEM, 3, 4);
    buyer_lock(lock, ITEM, 7, 1);

    outcome o = buy(ITEM, 7, 987654321012345LL);
    cr_assert_str_eq(o.what, "queued");
    cr_assert_eq(o.remaining, 2);
    cr_assert_eq(o.round, 4);
    cr_assert_eq(hget_int(state, "stock"), 2);
    cr_assert_eq(hget_int(state, "initial"), 3, "initial stock is not touched");
    cr_assert(hget(buyers, "7", v, sizeof(v)), "the buyer is recorded");
    cr_assert_str_eq(v, "987654321012345", "with the order id");
    cr_assert_eq(queue_len(), 1);

    order ord;
    queued_order(0, &ord);
    cr_assert_eq(ord.id, 987654321012345LL);
    cr_assert_eq(ord.item_id, ITEM);
    cr_assert_eq(ord.user_id, 7);
    cr_assert_eq(ord.round, 4);
    cr_assert_eq(ord.created_ms, CREATED_MS);
    cr_assert_eq(pending_len(), 1, "the order waits in the pending hash for the worker");
    expect_pending_matches_queue(0);
    cr_assert_eq(cmd_int("EXISTS %s", lock), 1, "the caller releases the lock, not reserve");
}

Test(scripts, reserve_refuses_a_repeat_buyer_without_decrementing)
{
    char lock[KEYS_MAX], state[KEYS_MAX], buyers[KEYS_MAX], v[64];
    state_key(state, ITEM);
    buyers_key(buyers, ITEM);
    item_reset(ITEM, 3, 1);
    buyer_lock(lock, ITEM, 7, 1);
    cr_assert_str_eq(buy(ITEM, 7, 1001).what, "queued");

    outcome o = buy(ITEM, 7, 1002);
    cr_assert_str_eq(o.what, "already_purchased");
    cr_assert_eq(o.remaining, 2);
    cr_assert_eq(hget_int(state, "stock"), 2);
    cr_assert_eq(queue_len(), 1, "no second order queued");
    cr_assert_eq(pending_len(), 1);
    hget(buyers, "7", v, sizeof(v));
    cr_assert_str_eq(v, "1001", "the first order stays the buyer's");
}

Test(scripts, reserve_without_the_lock_answers_in_progress_and_changes_nothing)
{
    char state[KEYS_MAX], buyers[KEYS_MAX];
    state_key(state, ITEM);
    buyers_key(buyers, ITEM);
    item_reset(ITEM, 3, 1);

    outcome o = buy(ITEM, 7, 1001); /* nobody took the lock */
    cr_assert_str_eq(o.what, "in_progress");
    cr_assert_eq(o.remaining, 3);
    cr_assert_eq(hget_int(state, "stock"), 3);
    cr_assert_eq(cmd_int("EXISTS %s", buyers), 0, "no buyer recorded");
    cr_assert_eq(queue_len(), 0, "nothing queued");
    cr_assert_eq(pending_len(), 0);
}

Test(scripts, reserve_with_another_requests_lock_answers_in_progress_and_changes_nothing)
{
    char lock[KEYS_MAX], state[KEYS_MAX], buyers[KEYS_MAX];
    state_key(state, ITEM);
    buyers_key(buyers, ITEM);
    item_reset(ITEM, 3, 1);
    keys_buyer_lock(lock, sizeof(lock), ITEM, 7);
    cr_assert(lock_take(lock, "the-other-request", 5000));

    outcome o = reserve(ITEM, 7, "our-token", 1001, 0);
    cr_assert_str_eq(o.what, "in_progress");
    cr_assert_eq(hget_int(state, "stock"), 3);
    cr_assert_eq(cmd_int("EXISTS %s", buyers), 0);
    cr_assert_eq(queue_len(), 0);
    cr_assert_eq(pending_len(), 0);
    /* The other request's lock is left as it was. */
    redisReply *r = redisCommand(redis, "GET %s", lock);
    cr_assert(r && r->type == REDIS_REPLY_STRING);
    cr_assert_str_eq(r->str, "the-other-request");
    freeReplyObject(r);
}

Test(scripts, reserve_sells_exactly_the_stock_and_never_below_zero)
{
    char lock[KEYS_MAX], state[KEYS_MAX], buyers[KEYS_MAX];
    state_key(state, ITEM);
    buyers_key(buyers, ITEM);
    item_reset(ITEM, 3, 1);
    int queued = 0, sold_out = 0;
    for (int64_t user = 1; user <= 10; user++) {
        buyer_lock(lock, ITEM, user, 1);
        outcome o = buy(ITEM, user, 5000 + user);
        if (strcmp(o.what, "queued") == 0) {
            queued++;
            cr_assert_eq(o.remaining, 3 - queued, "remaining after sale %d", queued);
        } else {
            cr_assert_str_eq(o.what, "sold_out", "user %" PRId64, user);
            cr_assert_eq(o.remaining, 0);
            cr_assert_eq(o.round, 1);
            sold_out++;
        }
        cr_assert_geq(hget_int(state, "stock"), 0, "stock went below zero");
    }
    cr_assert_eq(queued, 3);
    cr_assert_eq(sold_out, 7);
    cr_assert_eq(hget_int(state, "stock"), 0);
    cr_assert_eq(queue_len(), 3);
    cr_assert_eq(pending_len(), 3);
    cr_assert_eq(cmd_int("HLEN %s", buyers), 3, "only the buyers who got a unit are recorded");
    for (long i = 0; i < 3; i++) {
        order ord;
        queued_order(i, &ord);
        expect_pending_matches_queue(i);
        cr_assert_eq(ord.user_id, 3 - i, "LPUSH: the newest order first");
        cr_assert_eq(ord.id, 5000 + ord.user_id);
    }
}

Test(scripts, reserve_on_stock_zero_is_sold_out_even_for_a_repeat_buyer)
{
    char lock[KEYS_MAX];
    item_reset(ITEM, 1, 1);
    buyer_lock(lock, ITEM, 7, 1);
    cr_assert_str_eq(buy(ITEM, 7, 1001).what, "queued");
    cr_assert_str_eq(buy(ITEM, 7, 1002).what, "sold_out");
    cr_assert_str_eq(reserve(ITEM, 8, "no-lock", 1003, 0).what, "sold_out");
    cr_assert_eq(queue_len(), 1);
}

Test(scripts, reserve_of_an_unknown_item_answers_unknown_item_and_creates_nothing)
{
    char state[KEYS_MAX], buyers[KEYS_MAX], lock[KEYS_MAX];
    state_key(state, 999);
    buyers_key(buyers, 999);
    buyer_lock(lock, 999, 7, 1);
    outcome o = buy(999, 7, 1001);
    cr_assert_str_eq(o.what, "unknown_item");
    cr_assert_eq(o.remaining, 0);
    cr_assert_eq(o.round, 0);
    cr_assert_eq(cmd_int("EXISTS %s", state), 0);
    cr_assert_eq(cmd_int("EXISTS %s", buyers), 0);
    cr_assert_eq(queue_len(), 0);
    cr_assert_eq(pending_len(), 0);
}

Test(scripts, reserve_of_an_anonymous_buyer_skips_the_lock_and_the_buyer_record)
{
    char state[KEYS_MAX], buyers[KEYS_MAX];
    state_key(state, ITEM);
    buyers_key(buyers, ITEM);
    item_reset(ITEM, 2, 3);
    /* No lock taken, and the same (server-made) user id twice: both sell. */
    outcome a = reserve(ITEM, 5001, "", 2001, 1);
    outcome b = reserve(ITEM, 5001, "", 2002, 1);
    cr_assert_str_eq(a.what, "queued");
    cr_assert_eq(a.remaining, 1);
    cr_assert_str_eq(b.what, "queued");
    cr_assert_eq(b.remaining, 0);
    cr_assert_eq(cmd_int("EXISTS %s", buyers), 0, "anonymous buyers are not recorded");
    cr_assert_eq(queue_len(), 2);
    cr_assert_eq(pending_len(), 2);
    order ord;
    queued_order(0, &ord);
    cr_assert_eq(ord.id, 2002);
    cr_assert_eq(ord.user_id, 5001);
    cr_assert_eq(ord.round, 3);
    cr_assert_str_eq(reserve(ITEM, 5002, "", 2003, 1).what, "sold_out",
                     "the stock still bounds anonymous buyers");
    cr_assert_eq(hget_int(state, "stock"), 0);
}

/* ---- the lock ---- */

Test(scripts, lock_is_taken_once)
{
    char lock[KEYS_MAX];
    keys_buyer_lock(lock, sizeof(lock), ITEM, 7);
    cr_assert(lock_take(lock, "first", 5000));
    cr_assert_not(lock_take(lock, "second", 5000), "a held lock cannot be taken again");
}

Test(scripts, lock_release_with_a_wrong_token_keeps_the_lock)
{
    char lock[KEYS_MAX];
    keys_buyer_lock(lock, sizeof(lock), ITEM, 7);
    cr_assert(lock_take(lock, "owner-token", 5000));
    cr_assert_eq(lock_release(lock, "intruder-token"), 0);
    cr_assert_eq(cmd_int("EXISTS %s", lock), 1);
    redisReply *r = redisCommand(redis, "GET %s", lock);
    cr_assert(r && r->type == REDIS_REPLY_STRING);
    cr_assert_str_eq(r->str, "owner-token");
    freeReplyObject(r);
    cr_assert_gt(cmd_int("PTTL %s", lock), 0, "its expiry is untouched");
}

Test(scripts, lock_release_with_the_right_token_frees_it)
{
    char lock[KEYS_MAX];
    keys_buyer_lock(lock, sizeof(lock), ITEM, 7);
    cr_assert(lock_take(lock, "owner-token", 5000));
    cr_assert_eq(lock_release(lock, "owner-token"), 1);
    cr_assert_eq(cmd_int("EXISTS %s", lock), 0);
    cr_assert_eq(lock_release(lock, "owner-token"), 0, "releasing twice frees nothing");
    cr_assert(lock_take(lock, "next-owner", 5000), "a freed lock can be taken");
}

Test(scripts, lock_release_of_an_absent_lock_answers_0)
{
    char lock[KEYS_MAX];
    keys_buyer_lock(lock, sizeof(lock), ITEM, 7);
    cr_assert_eq(lock_release(lock, "any"), 0);
}

Test(scripts, lock_expiry_frees_it)
{
    char lock[KEYS_MAX];
    keys_buyer_lock(lock, sizeof(lock), ITEM, 7);
    cr_assert(lock_take(lock, "short-lived", 100));
    cr_assert_not(lock_take(lock, "waiting", 100));
    usleep(200 * 1000);
    cr_assert(lock_take(lock, "waiting", 5000), "the expired lock was not freed");
    /* The first holder, late, must not free the new holder's lock. */
    cr_assert_eq(lock_release(lock, "short-lived"), 0);
    cr_assert_eq(cmd_int("EXISTS %s", lock), 1);
}

/* ---- loading ---- */

Test(scripts, every_script_is_embedded_and_loaded)
{
    for (int id = 0; id < SCRIPT_COUNT; id++) {
        cr_assert_not_null(sc.s[id].name);
        cr_assert_not_null(sc.s[id].text);
        cr_assert_eq(sc.s[id].len, strlen(sc.s[id].text));
        cr_assert_gt(sc.s[id].len, 0);
        cr_assert_eq(strlen(sc.s[id].sha), 40, "%s has no digest", sc.s[id].name);
        redisReply *r = redisCommand(redis, "SCRIPT EXISTS %s", sc.s[id].sha);
        cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 1);
        cr_assert_eq(r->element[0]->integer, 1, "%s is not in Redis", sc.s[id].name);
        freeReplyObject(r);
    }
    cr_assert_str_eq(sc.s[SCRIPT_RESERVE].name, "reserve");
    cr_assert_str_eq(sc.s[SCRIPT_LOCK_RELEASE].name, "lock_release");
    cr_assert_str_eq(sc.s[SCRIPT_ITEM_RESET].name, "item_reset");
}

Test(scripts, evalsha_after_script_flush_answers_noscript_and_eval_of_the_text_works)
{
    char lock[KEYS_MAX];
    keys_buyer_lock(lock, sizeof(lock), ITEM, 7);
    cr_assert(lock_take(lock, "owner", 5000));
    redisReply *r = redisCommand(redis, "SCRIPT FLUSH");
    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);

    r = redisCommand(redis, "EVALSHA %s 1 %s %s", sc.s[SCRIPT_LOCK_RELEASE].sha, lock, "owner");
    cr_assert_not_null(r);
    cr_assert(scripts_is_noscript(r), "expected NOSCRIPT, got type %d", r->type);
    freeReplyObject(r);
    cr_assert_eq(cmd_int("EXISTS %s", lock), 1, "a NOSCRIPT call did nothing");

    r = redisCommand(redis, "EVAL %b 1 %s %s", sc.s[SCRIPT_LOCK_RELEASE].text,
                     sc.s[SCRIPT_LOCK_RELEASE].len, lock, "owner");
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1, "EVAL of the text");
    freeReplyObject(r);
    cr_assert_eq(cmd_int("EXISTS %s", lock), 0);

    /* EVAL cached the script again under the same digest. */
    cr_assert(lock_take(lock, "owner", 5000));
    cr_assert_eq(lock_release(lock, "owner"), 1);
}

Test(scripts, scripts_load_after_a_flush_restores_every_script)
{
    redisReply *r = redisCommand(redis, "SCRIPT FLUSH");
    freeReplyObject(r);
    scripts again;
    cr_assert_eq(scripts_init(&again), 0);
    cr_assert_eq(scripts_load(&again, redis), 0);
    for (int id = 0; id < SCRIPT_COUNT; id++)
        cr_assert_str_eq(again.s[id].sha, sc.s[id].sha, "the digest of a text never changes");
    item_reset(ITEM, 1, 1);
    cr_assert_str_eq(reserve(ITEM, 1, "", 1, 1).what, "queued");
}

Test(scripts, noscript_is_told_apart_from_other_replies)
{
    cr_assert_not(scripts_is_noscript(NULL));
    redisReply *r = redisCommand(redis, "EVALSHA %s 0", "0000000000000000000000000000000000000000");
    cr_assert(scripts_is_noscript(r));
    freeReplyObject(r);
    r = redisCommand(redis, "EVAL %s 0", "return redis.error_reply('ERR not a noscript')");
    cr_assert(r && r->type == REDIS_REPLY_ERROR);
    cr_assert_not(scripts_is_noscript(r));
    freeReplyObject(r);
    r = redisCommand(redis, "PING");
    cr_assert_not(scripts_is_noscript(r));
    freeReplyObject(r);
}

Test(scripts, reserve_with_release_frees_our_lock_on_every_answer_and_never_anothers)
{
    char lock[KEYS_MAX];
    item_reset(ITEM, 1, 1);
    keys_buyer_lock(lock, sizeof(lock), ITEM, 7);

    cr_assert(lock_take(lock, "ours-1", 5000));
    cr_assert_str_eq(reserve_call(ITEM, 7, "ours-1", 1001, 0, 1).what, "queued");
    cr_assert_eq(cmd_int("EXISTS %s", lock), 0, "freed after queued");

    cr_assert(lock_take(lock, "ours-2", 5000));
    cr_assert_str_eq(reserve_call(ITEM, 7, "ours-2", 1002, 0, 1).what, "sold_out");
    cr_assert_eq(cmd_int("EXISTS %s", lock), 0, "freed after sold_out");

    item_reset(ITEM, 2, 2);
    cr_assert(lock_take(lock, "ours-3", 5000));
    cr_assert_str_eq(reserve_call(ITEM, 7, "ours-3", 1003, 0, 1).what, "queued");
    cr_assert(lock_take(lock, "ours-4", 5000));
    cr_assert_str_eq(reserve_call(ITEM, 7, "ours-4", 1004, 0, 1).what, "already_purchased");
    cr_assert_eq(cmd_int("EXISTS %s", lock), 0, "freed after already_purchased");

    cr_assert(lock_take(lock, "the-other-request", 5000));
    cr_assert_str_eq(reserve_call(ITEM, 7, "ours-5", 1005, 0, 1).what, "in_progress");
    cr_assert_eq(cmd_int("EXISTS %s", lock), 1, "another request's lock stays");

    char unknown_lock[KEYS_MAX];
    keys_buyer_lock(unknown_lock, sizeof(unknown_lock), 999, 7);
    cr_assert(lock_take(unknown_lock, "ours-6", 5000));
    cr_assert_str_eq(reserve_call(999, 7, "ours-6", 1006, 0, 1).what, "unknown_item");
    cr_assert_eq(cmd_int("EXISTS %s", unknown_lock), 0, "freed after unknown_item");
}

Test(scripts, reserve_at_the_pending_bound_answers_queue_full_and_changes_nothing)
{
    char lock[KEYS_MAX], state[KEYS_MAX], buyers[KEYS_MAX];
    state_key(state, ITEM);
    buyers_key(buyers, ITEM);
    item_reset(ITEM, 5, 1);
    for (int64_t u = 1; u <= 2; u++) {
        buyer_lock(lock, ITEM, u, 0);
        cr_assert(lock_take(lock, "t", 5000));
        cr_assert_str_eq(reserve_bounded(ITEM, u, "t", 1000 + u, 0, 1, "2").what, "queued");
    }

    buyer_lock(lock, ITEM, 3, 0);
    cr_assert(lock_take(lock, "t3", 5000));
    outcome o = reserve_bounded(ITEM, 3, "t3", 1003, 0, 1, "2");
    cr_assert_str_eq(o.what, "queue_full");
    cr_assert_eq(o.remaining, 3);
    cr_assert_eq(hget_int(state, "stock"), 3, "no decrement");
    char v[64];
    cr_assert_not(hget(buyers, "3", v, sizeof(v)), "the buyer is not recorded");
    cr_assert_eq(queue_len(), 2, "nothing queued");
    cr_assert_eq(pending_len(), 2);
    cr_assert_eq(cmd_int("EXISTS %s", lock), 0, "our lock is freed as on every answer");
    cr_assert_str_eq(reserve_bounded(ITEM, 9001, "", 1004, 1, 1, "2").what, "queue_full",
                     "an anonymous buyer is bounded too");

    /* The worker persisted one order: room for one more. */
    cmd_int("HDEL %s 1001", KEYS_PENDING);
    cr_assert(lock_take(lock, "t3b", 5000));
    cr_assert_str_eq(reserve_bounded(ITEM, 3, "t3b", 1005, 0, 1, "2").what, "queued");
}

Test(scripts, reserve_with_a_bound_of_zero_or_none_does_not_bound_the_queue)
{
    item_reset(ITEM, 10, 1);
    cr_assert_str_eq(reserve_bounded(ITEM, 1, "", 1001, 1, 1, "0").what, "queued");
    cr_assert_str_eq(reserve_bounded(ITEM, 2, "", 1002, 1, 1, "0").what, "queued");
    cr_assert_str_eq(reserve_bounded(ITEM, 3, "", 1003, 1, 1, NULL).what, "queued");
    cr_assert_str_eq(reserve_bounded(ITEM, 4, "", 1004, 1, 0, NULL).what, "queued");
    cr_assert_eq(pending_len(), 4);
}
