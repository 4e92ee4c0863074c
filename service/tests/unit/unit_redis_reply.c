/* unit_redis_reply.c: a Redis reply is read as a number only when it is one
 * (an integer, or a string that is a whole decimal integer), and a reply
 * judged unexpected is freed whatever its kind (the sanitizer build's leak
 * check sees one that is not). */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>

#include "redis_reply.h"

/* A reply as hiredis makes one (freeReplyObject frees it). */
static redisReply *made(int type, const char *str, long long integer)
{
    redisReply *r = calloc(1, sizeof(*r));
    cr_assert_not_null(r);
    r->type = type;
    r->integer = integer;
    if (str) {
        r->str = strdup(str);
        r->len = strlen(str);
    }
    return r;
}

static int number_of(int type, const char *str, long long integer, int64_t *out)
{
    redisReply *r = made(type, str, integer);
    int rc = redis_reply_number(r, out);
    freeReplyObject(r);
    return rc;
}

Test(redis_reply, integers_and_decimal_strings_are_numbers)
{
    int64_t n = 0;
    cr_assert_eq(number_of(REDIS_REPLY_INTEGER, NULL, 42, &n), 0);
    cr_expect_eq(n, 42);
    cr_assert_eq(number_of(REDIS_REPLY_INTEGER, NULL, -7, &n), 0);
    cr_expect_eq(n, -7);
    cr_assert_eq(number_of(REDIS_REPLY_STRING, "17", 0, &n), 0, "a bulk string (HGET's value)");
    cr_expect_eq(n, 17);
    cr_assert_eq(number_of(REDIS_REPLY_STRING, "-9223372036854775808", 0, &n), 0);
    cr_expect_eq(n, INT64_MIN);
    cr_assert_eq(number_of(REDIS_REPLY_STATUS, "5", 0, &n), 0, "a status");
    cr_expect_eq(n, 5);
}

Test(redis_reply, anything_else_is_not_a_number_and_leaves_out_alone)
{
    struct {
        int type;
        const char *str;
    } others[] = {
        {REDIS_REPLY_NIL, NULL},     {REDIS_REPLY_ERROR, "ERR wrong type"},
        {REDIS_REPLY_ARRAY, NULL},   {REDIS_REPLY_STRING, ""},
        {REDIS_REPLY_STRING, "4x"},  {REDIS_REPLY_STRING, " 12"},
        {REDIS_REPLY_STRING, "+12"}, {REDIS_REPLY_STRING, "99999999999999999999"}, /* past int64 */
    };
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
        int64_t n = 1234;
        cr_expect_eq(number_of(others[i].type, others[i].str, 0, &n), -1, "reply %zu", i);
        cr_expect_eq(n, 1234, "reply %zu left *out alone", i);
    }
    int64_t n = 0;
    cr_expect_eq(redis_reply_number(NULL, &n), -1, "no reply");
}

Test(redis_reply, int_takes_the_reply_and_says_whether_it_held_a_number)
{
    int64_t n = 0;
    cr_expect_eq(redis_reply_int(made(REDIS_REPLY_INTEGER, NULL, 3), "test", "LLEN", &n), 0);
    cr_expect_eq(n, 3);
    cr_expect_eq(
        redis_reply_int(made(REDIS_REPLY_ERROR, "MOVED 1 127.0.0.1:7000", 0), "test", "LLEN", &n),
        -1);
    cr_expect_eq(redis_reply_int(made(REDIS_REPLY_NIL, NULL, 0), "test", NULL, &n), -1);
    cr_expect_eq(redis_reply_int(NULL, "test", "LLEN", &n), -1);
    cr_expect_eq(n, 3, "a failure leaves *out alone");
    cr_expect_eq(redis_reply_unexpected(made(REDIS_REPLY_ARRAY, NULL, 0), "test", "SCAN"), -1);
}

Test(redis_reply, expect_takes_the_reply_and_says_whether_it_was_of_the_type)
{
    /* Each reply is freed whatever the verdict (the sanitizer build's leak
     * check sees one that is not). */
    cr_expect_eq(
        redis_reply_expect(made(REDIS_REPLY_STATUS, "OK", 0), REDIS_REPLY_STATUS, "test", "SET"),
        0);
    cr_expect_eq(
        redis_reply_expect(made(REDIS_REPLY_INTEGER, NULL, 0), REDIS_REPLY_INTEGER, "test", "SADD"),
        0);
    cr_expect_eq(
        redis_reply_expect(made(REDIS_REPLY_INTEGER, NULL, 1), REDIS_REPLY_STATUS, "test", "SET"),
        -1);
    cr_expect_eq(redis_reply_expect(made(REDIS_REPLY_ERROR, "ERR wrong", 0), REDIS_REPLY_STATUS,
                                    "test", "SET"),
                 -1);
    cr_expect_eq(
        redis_reply_expect(made(REDIS_REPLY_NIL, NULL, 0), REDIS_REPLY_STATUS, "test", NULL), -1);
    cr_expect_eq(redis_reply_expect(NULL, REDIS_REPLY_STATUS, "test", "SET"), -1);
}

Test(redis_reply, number_or_reads_nil_as_the_absent_value_and_nothing_else)
{
    int64_t n = 0;
    redisReply *nil = made(REDIS_REPLY_NIL, NULL, 0);
    cr_assert_eq(redis_reply_number_or(nil, 5, &n), 0);
    cr_expect_eq(n, 5);
    freeReplyObject(nil);
    redisReply *text = made(REDIS_REPLY_STRING, "12", 0);
    cr_assert_eq(redis_reply_number_or(text, 5, &n), 0);
    cr_expect_eq(n, 12);
    freeReplyObject(text);
    redisReply *bad = made(REDIS_REPLY_STRING, "12x", 0);
    n = 3;
    cr_expect_eq(redis_reply_number_or(bad, 5, &n), -1);
    cr_expect_eq(n, 3);
    freeReplyObject(bad);
    cr_expect_eq(redis_reply_number_or(NULL, 5, &n), -1, "no reply is not an absent value");
}

Test(redis_reply, a_real_is_an_integer_or_a_decimal_text)
{
    double v = 0;
    redisReply *text = made(REDIS_REPLY_STRING, "0.10000000000000001", 0);
    cr_assert_eq(redis_reply_real(text, &v), 0);
    cr_expect_float_eq(v, 0.1, 1e-15);
    freeReplyObject(text);
    redisReply *n = made(REDIS_REPLY_INTEGER, NULL, 40);
    cr_assert_eq(redis_reply_real(n, &v), 0);
    cr_expect_float_eq(v, 40.0, 1e-12);
    freeReplyObject(n);
    redisReply *nil = made(REDIS_REPLY_NIL, NULL, 0);
    cr_expect_eq(redis_reply_real(nil, &v), -1);
    freeReplyObject(nil);
    cr_expect_eq(redis_reply_real(NULL, &v), -1);
}

/* An array reply of a script: {"ok", 5, "12", nil or 3}. */
static redisReply *script_reply(int last_nil)
{
    redisReply *r = made(REDIS_REPLY_ARRAY, NULL, 0);
    r->elements = 4;
    r->element = calloc(4, sizeof(*r->element));
    cr_assert_not_null(r->element);
    r->element[0] = made(REDIS_REPLY_STRING, "ok", 0);
    r->element[1] = made(REDIS_REPLY_INTEGER, NULL, 5);
    r->element[2] = made(REDIS_REPLY_STRING, "12", 0);
    r->element[3] = last_nil ? made(REDIS_REPLY_NIL, NULL, 0) : made(REDIS_REPLY_INTEGER, NULL, 3);
    return r;
}

Test(redis_reply, numbers_reads_a_run_of_an_array_or_fails_on_any_non_number)
{
    int64_t v[3] = {0};
    redisReply *r = script_reply(0);
    cr_assert_eq(redis_reply_numbers(r, 1, 3, v), 0);
    cr_expect(v[0] == 5 && v[1] == 12 && v[2] == 3);
    cr_expect_eq(redis_reply_numbers(r, 0, 3, v), -1, "\"ok\" is no number");
    cr_expect_eq(redis_reply_numbers(r, 2, 3, v), -1, "past the end");
    cr_expect_eq(redis_reply_numbers(r, 4, 0, v), 0, "nothing to read");
    freeReplyObject(r);
    r = script_reply(1);
    cr_expect_eq(redis_reply_numbers(r, 1, 3, v), -1, "nil is no number");
    freeReplyObject(r);
    r = made(REDIS_REPLY_INTEGER, NULL, 1);
    cr_expect_eq(redis_reply_numbers(r, 0, 1, v), -1, "not an array");
    freeReplyObject(r);
    cr_expect_eq(redis_reply_numbers(NULL, 0, 1, v), -1, "no reply");
}
