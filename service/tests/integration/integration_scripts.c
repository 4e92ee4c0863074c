/* integration_scripts.c: the Lua scripts of lua/ (item_reset, lock_release)
 * and their loading, run against the test run's Redis; the reserve and
 * restock scripts have integration_reserve_batch.c. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>

#include "harness.h"
#include "harness_suite.h"
#include "keys.h"
#include "order.h"
#include "reserve_batch.h"
#include "scripts.h"

#define ITEM 42

static redisContext *redis;
static scripts sc;

/* Every test starts from an empty Redis with the scripts loaded. Only Redis:
 * these tests need no PostgreSQL, so harness_reset_backends() is not used. */
HARNESS_SCRIPTS_SUITE(scripts, redis, sc, .timeout = 30);

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

/* One purchase of a unit through the reserve script: its outcome's name
 * and the stock after it. */
typedef struct outcome {
    char what[32];
    long long remaining;
} outcome;

static outcome buy(int64_t item, int64_t user, int64_t order_id)
{
    reserve_batch *b = malloc(sizeof(*b));
    cr_assert(b);
    reserve_batch_init(b, item, 0);
    reserve_batch_add(b, user, user == 0, order_id, 1);
    int argc = reserve_batch_argv(b, &sc.s[SCRIPT_RESERVE_BATCH], 0);
    redisReply *r = redisCommandArgv(redis, argc, b->argv, b->lens);
    free(b);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY, "reserve_batch: %s",
              r && r->type == REDIS_REPLY_ERROR ? r->str : "not an array");
    outcome o = {.remaining = 0};
    redisReply *e = r->element[RESERVE_REPLY_ITEM];
    snprintf(o.what, sizeof(o.what), "%s", e->str);
    o.remaining = r->element[RESERVE_REPLY_ITEM + 1]->integer;
    freeReplyObject(r);
    return o;
}

/* Decodes the queue entry at index (0: the newest) into *o. */
static void queued_order(long index, order *o)
{
    redisReply *r = redisCommand(redis, "LINDEX %s %ld", harness_queue_key(ITEM), index);
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
    cmd_int("HSET %s stock 1 initial 9 round 1 restocks 4 stale 1", state);
    cmd_int("HSET %s 7 1 8 2", buyers);
    harness_item_round(redis, &sc, ITEM, 5, 2, 1000, 2000, 3);
    cr_assert_eq(hget_int(state, "stock"), 5);
    cr_assert_eq(hget_int(state, "initial"), 5);
    cr_assert_eq(hget_int(state, "round"), 2);
    cr_assert_eq(hget_int(state, "restocks"), 0);
    cr_assert_eq(hget_int(state, "restocked"), 0);
    cr_assert_eq(hget_int(state, "returns"), 0);
    cr_assert_eq(hget_int(state, "returned"), 0);
    cr_assert_eq(hget_int(state, "starts"), 1000);
    cr_assert_eq(hget_int(state, "ends"), 2000);
    cr_assert_eq(hget_int(state, "limit"), 3);
    cr_assert_eq(cmd_int("EXISTS %s", buyers), 0, "the buyers of the old round are gone");
    cr_assert_eq(hget_int(state, "segments"), 1);
    cr_assert_eq(hget_int(state, "total"), 5, "the round's units over every segment");
    cr_assert_eq(cmd_int("HLEN %s", state), 12, "no field of the old round left");
}

Test(scripts, item_reset_lets_a_previous_buyer_buy_again)
{
    item_reset(ITEM, 2, 1);
    cr_assert_str_eq(buy(ITEM, 7, 1001).what, "queued");
    cr_assert_str_eq(buy(ITEM, 7, 1002).what, "limit_reached");
    item_reset(ITEM, 2, 2);
    outcome o = buy(ITEM, 7, 1003);
    cr_assert_str_eq(o.what, "queued");
    cr_assert_eq(o.remaining, 1);
    order ord;
    queued_order(0, &ord);
    cr_assert_eq(ord.round, 2, "the order carries the new round");
}

/* ---- lock_release (the sweep's and the laboratory's locks) ---- */

Test(scripts, lock_is_taken_once)
{
    const char *lock = "seckill:test:lock";
    cr_assert(lock_take(lock, "first", 5000));
    cr_assert_not(lock_take(lock, "second", 5000), "a held lock cannot be taken again");
}

Test(scripts, lock_release_with_a_wrong_token_keeps_the_lock)
{
    const char *lock = "seckill:test:lock";
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
    const char *lock = "seckill:test:lock";
    cr_assert(lock_take(lock, "owner-token", 5000));
    cr_assert_eq(lock_release(lock, "owner-token"), 1);
    cr_assert_eq(cmd_int("EXISTS %s", lock), 0);
    cr_assert_eq(lock_release(lock, "owner-token"), 0, "releasing twice frees nothing");
    cr_assert(lock_take(lock, "next-owner", 5000), "a freed lock can be taken");
}

Test(scripts, lock_release_of_an_absent_lock_answers_0)
{
    const char *lock = "seckill:test:lock";
    cr_assert_eq(lock_release(lock, "any"), 0);
}

Test(scripts, lock_expiry_frees_it)
{
    const char *lock = "seckill:test:lock";
    /* Long enough to outlive the next call on a loaded machine. */
    cr_assert(lock_take(lock, "short-lived", 500));
    cr_assert_not(lock_take(lock, "waiting", 100));
    usleep(600 * 1000);
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
    cr_assert_str_eq(sc.s[SCRIPT_RESERVE_BATCH].name, "reserve_batch");
    cr_assert_str_eq(sc.s[SCRIPT_RESTOCK].name, "restock");
    cr_assert_str_eq(sc.s[SCRIPT_LOCK_RELEASE].name, "lock_release");
    cr_assert_str_eq(sc.s[SCRIPT_ITEM_RESET].name, "item_reset");
}

Test(scripts, evalsha_after_script_flush_answers_noscript_and_eval_of_the_text_works)
{
    const char *lock = "seckill:test:lock";
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
    cr_assert_str_eq(buy(ITEM, 0, 1).what, "queued");
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
