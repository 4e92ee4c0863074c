/* integration_lab_scripts.c: the lab's lock scripts of issue 5 (reentrant
 * lock, unlock and renewal; the fenced read and write) against the test
 * run's Redis, driven key by key. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>

#include "harness.h"
#include "harness_suite.h"
#include "scripts.h"

#define LOCK "{item:42}:lab:lock:redis_lock_reentrant"
#define CHANNEL "{item:42}:lab:released:redis_lock_reentrant"
#define STOCK "{item:42}:lab:stock:redis_lock_fenced"
#define SEEN "{item:42}:lab:fence:seen:redis_lock_fenced"

static redisContext *redis;
static scripts sc;

HARNESS_SCRIPTS_SUITE(lab_scripts, redis, sc, .timeout = 30);

/* EVALSHA of script id with one key and up to three arguments (NULL ends
 * them); the integer reply. */
static long long eval_int(script_id id, const char *key, const char *a1, const char *a2,
                          const char *a3)
{
    const char *argv[] = {"EVALSHA", sc.s[id].sha, "1", key, a1, a2, a3};
    int argc = 4 + (a1 != NULL) + (a2 != NULL) + (a3 != NULL);
    redisReply *r = redisCommandArgv(redis, argc, argv, NULL);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER, "%s: %s", sc.s[id].name,
              r && r->type == REDIS_REPLY_ERROR ? r->str : "not an integer");
    long long n = r->integer;
    freeReplyObject(r);
    return n;
}

static long long lock(const char *owner)
{
    return eval_int(SCRIPT_LAB_REENTRANT_LOCK, LOCK, owner, "10000", NULL);
}

static long long unlock(const char *owner)
{
    return eval_int(SCRIPT_LAB_REENTRANT_UNLOCK, LOCK, owner, "10000", CHANNEL);
}

static long long command_int(const char *fmt, const char *key)
{
    redisReply *r = redisCommand(redis, fmt, key);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER, "%s", fmt);
    long long n = r->integer;
    freeReplyObject(r);
    return n;
}

Test(lab_scripts, the_reentrant_lock_counts_its_owners_holds_and_refuses_others)
{
    cr_expect_eq(lock("a"), 0, "a takes it");
    cr_expect_eq(lock("a"), 0, "a re-enters it");
    long long left = lock("b");
    cr_expect(left > 0 && left <= 10000, "b is refused with the lease left: %lld", left);
    cr_expect_eq(unlock("b"), -1, "b cannot leave what it does not hold");
    cr_expect_eq(unlock("a"), 1, "one hold left");
    cr_expect_eq(command_int("EXISTS %s", LOCK), 1);
    cr_expect_eq(unlock("a"), 0, "the last exit frees it");
    cr_expect_eq(command_int("EXISTS %s", LOCK), 0);
    cr_expect_eq(unlock("a"), -1, "a second last exit finds nothing");
    cr_expect_eq(lock("b"), 0, "b takes it once free");
}

Test(lab_scripts, the_last_unlock_announces_the_release_on_the_locks_channel)
{
    redisContext *sub = harness_redis();
    redisReply *r = redisCommand(sub, "SUBSCRIBE %s", CHANNEL);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY);
    freeReplyObject(r);
    cr_expect_eq(lock("a"), 0);
    cr_expect_eq(lock("a"), 0);
    cr_expect_eq(unlock("a"), 1);
    cr_expect_eq(unlock("a"), 0);
    cr_assert_eq(redisGetReply(sub, (void **)&r), REDIS_OK);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 3);
    cr_expect_str_eq(r->element[0]->str, "message");
    cr_expect_str_eq(r->element[1]->str, CHANNEL);
    cr_expect_str_eq(r->element[2]->str, "a", "one message, at the last exit only");
    freeReplyObject(r);
    redisFree(sub);
}

Test(lab_scripts, the_renewal_restarts_the_lease_only_for_the_holder)
{
    cr_expect_eq(eval_int(SCRIPT_LAB_REENTRANT_RENEW, LOCK, "a", "60000", NULL), 0,
                 "nothing to renew");
    cr_expect_eq(lock("a"), 0);
    cr_expect_eq(eval_int(SCRIPT_LAB_REENTRANT_RENEW, LOCK, "b", "60000", NULL), 0,
                 "b does not hold it");
    cr_expect_leq(command_int("PTTL %s", LOCK), 10000);
    cr_expect_eq(eval_int(SCRIPT_LAB_REENTRANT_RENEW, LOCK, "a", "60000", NULL), 1);
    cr_expect_gt(command_int("PTTL %s", LOCK), 10000, "the lease was not restarted");
}

/* The fenced read (take = 0) or write (take = 1) with token and value:
 * 1 with *value, or 0 with *value the newest token seen. */
static int fenced(int take, const char *token, const char *value, long long *out)
{
    script_id id = take ? SCRIPT_LAB_FENCE_TAKE : SCRIPT_LAB_FENCE_READ;
    const char *argv[] = {"EVALSHA", sc.s[id].sha, "2", STOCK, SEEN, token, value};
    redisReply *r = redisCommandArgv(redis, 7, argv, NULL);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2, "%s", sc.s[id].name);
    int ok = (int)r->element[0]->integer;
    *out = r->element[1]->integer;
    freeReplyObject(r);
    return ok;
}

Test(lab_scripts, a_token_older_than_one_the_stock_has_seen_can_neither_read_nor_write)
{
    long long v;
    cr_expect_eq(fenced(0, "1", "5", &v), 1, "holder 1 reads");
    cr_expect_eq(v, 5, "created from the initial stock");
    cr_expect_eq(fenced(0, "2", "5", &v), 1, "holder 2 (1's lock expired) reads");
    cr_expect_eq(v, 5);
    cr_expect_eq(fenced(1, "1", "4", &v), 0, "the stale holder's write is refused");
    cr_expect_eq(v, 2, "the newest token seen");
    cr_expect_eq(fenced(0, "1", "5", &v), 0, "and so is its read");
    cr_expect_eq(fenced(1, "2", "4", &v), 1, "holder 2 sells");
    cr_expect_eq(v, 4);
    cr_expect_eq(fenced(0, "3", "5", &v), 1);
    cr_expect_eq(v, 4, "the next holder reads what 2 wrote");
}
