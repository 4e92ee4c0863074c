/* integration_reserve_rules.c: two rules of the reserve script
 * (lua/reserve_batch.lua) against the test run's Redis: an archived item's
 * keys refuse every buyer (a segment's release still gives a hold back) and
 * keep their mark through a new round (lua/item_reset.lua); an anonymous
 * buyer is refused where the per-buyer limit is below the round's units
 * (its own fields on an item of one segment, `total` or a bound from above
 * on a segment). */
#include <inttypes.h>
#include <stdlib.h>

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>

#include "harness.h"
#include "harness_suite.h"
#include "keys.h"
#include "reserve_batch.h"
#include "scripts.h"

#define ITEM 77

static redisContext *redis;
static scripts sc;

HARNESS_SCRIPTS_SUITE(reserve_rules, redis, sc, .timeout = 30);

/* One call on key's keys (an item's own, or a segment's) for buyers users[i]
 * in modes[i], one unit each, order ids from first_order; answers in out. */
static void call(int64_t item, int64_t key, int n, const int64_t *users, const char **modes,
                 int64_t first_order, reserve_answer *out)
{
    harness_reserve(redis, &sc, item, key, n, users, modes, first_order, 0, out);
}

static void state_set(int64_t key, const char *field, const char *value)
{
    char state[KEYS_MAX];
    keys_item_state(state, sizeof(state), key);
    freeReplyObject(redisCommand(redis, "HSET %s %s %s", state, field, value));
}

static long long stock_of(int64_t key)
{
    char state[KEYS_MAX];
    keys_item_state(state, sizeof(state), key);
    redisReply *r = redisCommand(redis, "HGET %s stock", state);
    cr_assert(r && r->type == REDIS_REPLY_STRING);
    long long v = strtoll(r->str, NULL, 10);
    freeReplyObject(r);
    return v;
}

Test(reserve_rules, an_archived_item_refuses_every_buyer_and_takes_nothing)
{
    harness_item_round(redis, &sc, ITEM, 10, 1, 0, 0, 10);
    state_set(ITEM, "archived", "1");
    const int64_t users[] = {7, 0, 8};
    const char *modes[] = {"0", "1", "0"};
    reserve_answer a[3];
    call(ITEM, ITEM, 3, users, modes, 100, a);
    for (int i = 0; i < 3; i++)
        cr_expect_eq(a[i].outcome, RESERVE_ARCHIVED, "buyer %d", i);
    cr_expect_eq(stock_of(ITEM), 10);
    cr_expect_eq(harness_redis_int(redis, "LLEN", harness_queue_key(ITEM)), 0, "nothing queued");
}

Test(reserve_rules, an_archived_segment_refuses_holds_and_takes_but_gives_a_hold_back)
{
    int64_t other = keys_segment(ITEM, 1, 2);
    harness_item_round(redis, &sc, ITEM, 5, 3, 0, 0, 4);
    harness_item_round(redis, &sc, other, 5, 3, 0, 0, 4);
    state_set(ITEM, "segments", "2");
    state_set(other, "segments", "2");
    /* Buyer 9 holds two units at home, then the item is archived. */
    const int64_t nine[] = {9, 9};
    const char *hold[] = {"h", "h"};
    reserve_answer a[2];
    call(ITEM, ITEM, 2, nine, hold, 200, a);
    cr_assert_eq(a[1].outcome, RESERVE_QUEUED);
    state_set(ITEM, "archived", "1");
    state_set(other, "archived", "1");
    const char *take[] = {"t3:77:3"}, *anon[] = {"a"}, *release[] = {"r3"};
    call(ITEM, other, 1, nine, take, 300, a);
    cr_expect_eq(a[0].outcome, RESERVE_ARCHIVED, "a take");
    call(ITEM, other, 1, nine, anon, 301, a);
    cr_expect_eq(a[0].outcome, RESERVE_ARCHIVED, "an anonymous buyer");
    call(ITEM, ITEM, 1, nine, hold, 302, a);
    cr_expect_eq(a[0].outcome, RESERVE_ARCHIVED, "a hold");
    call(ITEM, ITEM, 1, nine, release, 303, a);
    cr_expect_eq(a[0].outcome, RESERVE_RELEASED, "a release still gives the hold back");
    cr_expect_eq(a[0].bought, 1);
    cr_expect_eq(stock_of(other), 5, "nothing taken from the other segment");
}

Test(reserve_rules, a_new_round_keeps_the_archive)
{
    harness_item_round(redis, &sc, ITEM, 10, 1, 0, 0, 1);
    state_set(ITEM, "archived", "1");
    /* A reset that PostgreSQL let through before the archive, landing after. */
    harness_item_round(redis, &sc, ITEM, 20, 2, 0, 0, 1);
    const int64_t users[] = {7};
    const char *modes[] = {"0"};
    reserve_answer a[1];
    call(ITEM, ITEM, 1, users, modes, 100, a);
    cr_expect_eq(a[0].outcome, RESERVE_ARCHIVED);
    cr_expect_eq(stock_of(ITEM), 20);
}

Test(reserve_rules, an_anonymous_buyer_needs_a_limit_at_least_the_rounds_units)
{
    const int64_t users[] = {0, 5};
    const char *modes[] = {"1", "0"};
    reserve_answer a[2];
    harness_item_round(redis, &sc, ITEM, 10, 1, 0, 0, 9);
    call(ITEM, ITEM, 2, users, modes, 100, a);
    cr_expect_eq(a[0].outcome, RESERVE_BUYER_REQUIRED, "a limit of 9 of 10 units");
    cr_expect_eq(a[1].outcome, RESERVE_QUEUED, "a named buyer is not refused");
    harness_item_round(redis, &sc, ITEM, 10, 2, 0, 0, 10);
    call(ITEM, ITEM, 2, users, modes, 200, a);
    cr_expect_eq(a[0].outcome, RESERVE_QUEUED, "a limit of 10 of 10 units");
    /* A restock counts: 11 units in the round now. */
    state_set(ITEM, "restocked", "1");
    call(ITEM, ITEM, 1, users, modes, 300, a);
    cr_expect_eq(a[0].outcome, RESERVE_BUYER_REQUIRED, "a limit of 10 of 11 units");
}

Test(reserve_rules, a_segment_judges_anonymous_buyers_by_the_whole_round)
{
    int64_t other = keys_segment(ITEM, 1, 2);
    const int64_t users[] = {0};
    const char *modes[] = {"a"};
    reserve_answer a[1];
    /* 5 + 5 units, a limit of 9: this segment's 5 are not the round's 10. */
    harness_item_round(redis, &sc, other, 5, 1, 0, 0, 9);
    state_set(other, "segments", "2");
    state_set(other, "total", "10");
    call(ITEM, other, 1, users, modes, 100, a);
    cr_expect_eq(a[0].outcome, RESERVE_BUYER_REQUIRED);
    state_set(other, "total", "9");
    call(ITEM, other, 1, users, modes, 200, a);
    cr_expect_eq(a[0].outcome, RESERVE_QUEUED);
    /* Without `total` (a state rebuilt without it): a bound from above,
     * (5 + 1) * 2 - 1 = 11 > 9. */
    char state[KEYS_MAX];
    keys_item_state(state, sizeof(state), other);
    freeReplyObject(redisCommand(redis, "HDEL %s total", state));
    call(ITEM, other, 1, users, modes, 300, a);
    cr_expect_eq(a[0].outcome, RESERVE_BUYER_REQUIRED);
}
