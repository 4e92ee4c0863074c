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

Test(reserve_batch, the_call_names_the_item_keys_then_each_buyers_lock_then_their_arguments)
{
    static reserve_batch b;
    reserve_batch_init(&b, 42, 1000);
    reserve_batch_add(&b, 7, 0, 501, 1700000000000LL);
    reserve_batch_add(&b, 0, 1, 502, 1700000000001LL);
    int argc = reserve_batch_argv(&b, &fake, 0);
    const char *want[] = {"EVALSHA",
                          fake.sha,
                          "6",
                          "{item:42}:state",
                          "{item:42}:buyers",
                          "seckill:queue",
                          "seckill:pending",
                          "{item:42}:lock:7",
                          "{item:42}:lock:502",
                          "42",
                          "1000",
                          "7",
                          "501",
                          "1700000000000",
                          "0",
                          "502",
                          "502",
                          "1700000000001",
                          "1"};
    cr_assert_eq(argc, (int)(sizeof(want) / sizeof(want[0])));
    for (int i = 0; i < argc; i++) {
        cr_expect_str_eq(b.argv[i], want[i], "argument %d", i);
        cr_expect_eq(b.lens[i], strlen(want[i]), "length of argument %d", i);
    }
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

/* {outcome, remaining, round} n times, as the script answers. */
static redisReply *answers(const char *outcome, int n)
{
    redisReply *r = reply(REDIS_REPLY_ARRAY);
    r->elements = (size_t)n * 3;
    r->element = calloc(r->elements, sizeof(*r->element));
    for (int i = 0; i < n; i++) {
        r->element[3 * i] = reply(REDIS_REPLY_STRING);
        r->element[3 * i]->str = (char *)outcome;
        r->element[3 * i + 1] = reply(REDIS_REPLY_INTEGER);
        r->element[3 * i + 1]->integer = 10 - i;
        r->element[3 * i + 2] = reply(REDIS_REPLY_INTEGER);
        r->element[3 * i + 2]->integer = 3;
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

Test(reserve_batch, each_buyers_answer_is_read_from_its_place)
{
    redisReply *r = answers("queued", 3);
    int64_t remaining, round;
    cr_assert_eq(reserve_batch_parse(r, 3, 2, &remaining, &round), RESERVE_QUEUED);
    cr_assert_eq(remaining, 8);
    cr_assert_eq(round, 3);
    answers_free(r);
}

Test(reserve_batch, an_answer_of_another_shape_is_a_bad_reply)
{
    int64_t remaining, round;
    redisReply *r = answers("queued", 2);
    cr_expect_eq(reserve_batch_parse(r, 3, 0, &remaining, &round), RESERVE_BAD_REPLY,
                 "fewer answers than buyers");
    cr_expect_eq(reserve_batch_parse(r, 2, 2, &remaining, &round), RESERVE_BAD_REPLY,
                 "past the last buyer");
    cr_expect_eq(reserve_batch_parse(NULL, 2, 0, &remaining, &round), RESERVE_BAD_REPLY);
    answers_free(r);
    r = answers("sold", 1);
    cr_expect_eq(reserve_batch_parse(r, 1, 0, &remaining, &round), RESERVE_BAD_REPLY,
                 "an unknown outcome");
    answers_free(r);
    r = reply(REDIS_REPLY_ERROR);
    cr_expect_eq(reserve_batch_parse(r, 1, 0, &remaining, &round), RESERVE_BAD_REPLY);
    free(r);
}
