/* unit_reserve_batch.c: the batch reserve call as built and read, without
 * Redis (integration_reserve_batch runs it). */
#include <string.h>

#include <criterion/criterion.h>

#include "reserve_batch.h"

static script fake = {"reserve_batch", "return 1", 8, "0123456789abcdef0123456789abcdef01234567"};

Test(reserve_batch, a_batch_takes_at_most_reserve_batch_max_buyers)
{
    static reserve_batch b;
    reserve_batch_init(&b, 42, 0);
    for (int i = 0; i < RESERVE_BATCH_MAX; i++)
        cr_assert_eq(reserve_batch_add(&b, 1 + i, 0, 1000 + i, 5), i);
    cr_assert_eq(reserve_batch_add(&b, 999, 0, 9999, 5), -1, "full");
    cr_assert_eq(b.n, RESERVE_BATCH_MAX);
}

Test(reserve_batch, the_call_names_the_item_keys_then_each_buyers_arguments)
{
    static reserve_batch b;
    reserve_batch_init(&b, 42, 1000);
    reserve_batch_add(&b, 7, 0, 501, 3);
    reserve_batch_add(&b, 0, 1, 502, 1);
    int argc = reserve_batch_argv(&b, &fake, 0);
    const char *want[] = {"EVALSHA",
                          fake.sha,
                          "5",
                          "{item:42}:state",
                          "{item:42}:buyers",
                          "seckill:{item:42}:queue",
                          "seckill:{item:42}:pending",
                          "{item:42}:given_back",
                          "42",
                          "1000",
                          "42",
                          "0",
                          "7",
                          "501",
                          "0",
                          "3",
                          "502",
                          "502",
                          "1",
                          "1"};
    cr_assert_eq(argc, (int)(sizeof(want) / sizeof(want[0])));
    for (int i = 0; i < argc; i++) {
        cr_expect_str_eq(b.argv[i], want[i], "argument %d", i);
        cr_expect_eq(b.lens[i], strlen(want[i]), "length of argument %d", i);
    }
}

Test(reserve_batch, a_guarded_batch_passes_the_order_locks_ttl_and_an_unguarded_one_zero)
{
    static reserve_batch b;
    reserve_batch_init_segment(&b, 42, 42, 0);
    reserve_batch_add(&b, 7, 0, 501, 1);
    reserve_batch_add(&b, 8, 0, 502, 1);
    cr_assert_eq(reserve_batch_keys_args(&b), 4 + 2 * 4);
    cr_assert_eq(reserve_batch_nkeys(&b), RESERVE_BATCH_NKEYS, "no lock unless asked");
    cr_assert_str_eq(b.keys_args[RESERVE_BATCH_NKEYS + 3], "0");
    reserve_batch_guard(&b, 5000);
    cr_assert_eq(reserve_batch_keys_args(&b), 4 + 2 * 4);
    cr_assert_eq(reserve_batch_nkeys(&b), RESERVE_BATCH_NKEYS + 2, "each buyer's lock declared");
    cr_assert_str_eq(b.keys_args[RESERVE_BATCH_NKEYS], "seckill:{item:42}:lock:7");
    cr_assert_str_eq(b.keys_args[RESERVE_BATCH_NKEYS + 1], "seckill:{item:42}:lock:8");
    cr_assert_str_eq(b.keys_args[RESERVE_BATCH_NKEYS + 2 + 3], "5000");
    cr_assert_str_eq(b.keys_args[RESERVE_BATCH_NKEYS + 2 + 4], "7", "then the buyers");
    static script fake_sc = {"reserve_batch", "return 1", 8, "0"};
    int argc = reserve_batch_argv(&b, &fake_sc, 0);
    cr_assert_str_eq(b.argv[2], "7", "numkeys");
    cr_assert_eq(argc, 3 + 7 + 4 + 8);
}

Test(reserve_batch, by_text_the_call_is_eval_of_the_script_text)
{
    static reserve_batch b;
    reserve_batch_init(&b, 42, 0);
    reserve_batch_add(&b, 7, 0, 501, 1);
    reserve_batch_argv(&b, &fake, 1);
    cr_assert_str_eq(b.argv[0], "EVAL");
    cr_assert_eq(b.argv[1], fake.text);
    cr_assert_eq(b.lens[1], fake.len);
}

static redisReply *reply(int type)
{
    redisReply *r = calloc(1, sizeof(*r));
    r->type = type;
    return r;
}

/* The item's six entries, then {outcome, remaining, bought} n times, as
 * the script answers. */
static redisReply *answers(const char *outcome, int n)
{
    redisReply *r = reply(REDIS_REPLY_ARRAY);
    r->elements = RESERVE_REPLY_ITEM + (size_t)n * RESERVE_REPLY_BUYER;
    r->element = calloc(r->elements, sizeof(*r->element));
    const long long item[RESERVE_REPLY_ITEM] = {1795377600123LL, 3, 2, 1795377600000LL, 0, 5, 1};
    for (int i = 0; i < RESERVE_REPLY_ITEM; i++) {
        r->element[i] = reply(REDIS_REPLY_INTEGER);
        r->element[i]->integer = item[i];
    }
    for (int i = 0; i < n; i++) {
        redisReply **e = r->element + RESERVE_REPLY_ITEM + RESERVE_REPLY_BUYER * i;
        e[0] = reply(REDIS_REPLY_STRING);
        e[0]->str = (char *)outcome;
        e[1] = reply(REDIS_REPLY_INTEGER);
        e[1]->integer = 10 - i;
        e[2] = reply(REDIS_REPLY_INTEGER);
        e[2]->integer = i;
    }
    return r;
}

static void answers_free(redisReply *r)
{
    for (size_t i = 0; i < r->elements; i++)
        free(r->element[i]);
    free(r->element);
    free(r);
}

Test(reserve_batch, the_item_and_each_buyers_answer_are_read_from_their_places)
{
    redisReply *r = answers("queued", 3);
    reserve_item it;
    cr_assert_eq(reserve_batch_item(r, 3, &it), 0);
    cr_assert_eq(it.now_ms, 1795377600123LL);
    cr_assert_eq(it.round, 3);
    cr_assert_eq(it.changes, 2);
    cr_assert_eq(it.starts_ms, 1795377600000LL);
    cr_assert_eq(it.ends_ms, 0);
    cr_assert_eq(it.per_buyer_limit, 5);
    reserve_answer a;
    cr_assert_eq(reserve_batch_answer(r, 3, 2, &a), RESERVE_QUEUED);
    cr_assert_eq(a.outcome, RESERVE_QUEUED);
    cr_assert_eq(a.remaining, 8);
    cr_assert_eq(a.bought, 2);
    answers_free(r);
    const char *names[] = {"not_started",        "ended",      "sold_out",    "limit_reached",
                           "insufficient_stock", "queue_full", "unknown_item"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        r = answers(names[i], 1);
        cr_expect_neq(reserve_batch_answer(r, 1, 0, &a), RESERVE_BAD_REPLY, "%s", names[i]);
        cr_expect_neq(reserve_status(a.outcome), SK_INTERNAL, "%s", names[i]);
        answers_free(r);
    }
}

Test(reserve_batch, an_answer_of_another_shape_is_a_bad_reply)
{
    reserve_answer a;
    reserve_item it;
    redisReply *r = answers("queued", 2);
    cr_expect_eq(reserve_batch_answer(r, 3, 0, &a), RESERVE_BAD_REPLY, "fewer answers than buyers");
    cr_expect_eq(reserve_batch_item(r, 3, &it), -1);
    cr_expect_eq(reserve_batch_answer(r, 2, 2, &a), RESERVE_BAD_REPLY, "past the last buyer");
    cr_expect_eq(reserve_batch_answer(NULL, 2, 0, &a), RESERVE_BAD_REPLY);
    r->element[1]->type = REDIS_REPLY_STRING;
    r->element[1]->str = (char *)"3";
    cr_expect_eq(reserve_batch_item(r, 2, &it), -1, "the round as text");
    r->element[1]->type = REDIS_REPLY_INTEGER;
    answers_free(r);
    r = answers("sold", 1);
    cr_expect_eq(reserve_batch_answer(r, 1, 0, &a), RESERVE_BAD_REPLY, "an unknown outcome");
    answers_free(r);
    r = reply(REDIS_REPLY_ERROR);
    cr_expect_eq(reserve_batch_answer(r, 1, 0, &a), RESERVE_BAD_REPLY);
    cr_expect_eq(reserve_batch_item(r, 1, &it), -1);
    free(r);
}

Test(reserve_batch, stock_versions_grow_with_rounds_and_restocks)
{
    cr_assert_lt(reserve_stock_version(5, 0), reserve_stock_version(5, 1));
    cr_assert_lt(reserve_stock_version(5, RESERVE_RESTOCKS_MAX), reserve_stock_version(6, 0));
}
