/* unit_worker_batch.c: the worker's batch sorts queue payloads into the
 * insert's columns, the pending ids and the dead letters, without a server. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "keys.h"
#include "order.h"
#include "worker_batch.h"

static void add_order(worker_batch *b, int64_t id, int64_t item, int64_t user, int64_t round,
                      int64_t created_ms)
{
    order o = {id, item, user, round, created_ms, (int)(id % 3) + 1, 1, 0, 0};
    char text[256];
    int n = order_encode(&o, text, sizeof(text));
    cr_assert_gt(n, 0);
    cr_assert_eq(worker_batch_add(b, text, (size_t)n), 0);
}

Test(worker_batch, orders_become_one_array_per_column_in_postgresqls_text_form)
{
    worker_batch b;
    cr_assert_eq(worker_batch_init(&b, 4), 0);
    worker_source src;
    worker_source_init(&src, 1, "w1");
    worker_batch_from(&b, &src);
    add_order(&b, 11, 1, 100, 7, 1700000000000);
    add_order(&b, 12, 2, 200, 8, 1600000000000);
    worker_batch_sort(&b);
    cr_expect_eq(b.norders, 2);
    cr_expect_eq(b.ndead, 0);
    cr_expect_str_eq(b.columns[0].text, "{11,12}");
    cr_expect_str_eq(b.columns[1].text, "{1,2}");
    cr_expect_str_eq(b.columns[2].text, "{100,200}");
    cr_expect_str_eq(b.columns[3].text, "{7,8}");
    cr_expect_str_eq(b.columns[4].text, "{1700000000000,1600000000000}");
    cr_expect_str_eq(b.columns[5].text, "{3,1}", "the quantities");
    cr_expect_str_eq(b.columns[6].text, "{1,1}", "the first units");
    cr_expect_eq(b.columns[0].len, strlen("{11,12}"));
    cr_expect_eq(b.oldest_ms, 1600000000000, "the oldest acceptance time is the lag's start");
    /* HDEL pending <ids>: the acknowledgement's argument vector. */
    cr_expect_str_eq(b.pending_argv[0], "HDEL");
    cr_expect_str_eq(b.pending_argv[1], "seckill:{item:1}:pending", "the source's pending hash");
    cr_expect_str_eq(b.pending_argv[2], "11");
    cr_expect_str_eq(b.pending_argv[3], "12");
    cr_expect_eq(b.pending_argvlen[3], 2);
    worker_batch_close(&b);
}

Test(worker_batch, what_is_not_an_order_goes_to_the_dead_letters_and_nowhere_else)
{
    worker_batch b;
    cr_assert_eq(worker_batch_init(&b, 8), 0);
    worker_source src;
    worker_source_init(&src, 1, "w1");
    worker_batch_from(&b, &src);
    const char *junk[] = {"not json", "{\"order_id\":\"x\"}", ""};
    add_order(&b, 21, 1, 5, 1, 1700000000000);
    for (size_t i = 0; i < 3; i++)
        cr_assert_eq(worker_batch_add(&b, junk[i], strlen(junk[i])), 0);
    /* A time PostgreSQL's timestamptz cannot hold would fail every insert
     * of the batch, for ever: a dead letter too, as is a negative one. */
    add_order(&b, 22, 1, 6, 1, WORKER_BATCH_MAX_CREATED_MS + 1);
    add_order(&b, 23, 1, 7, 1, -1);
    add_order(&b, 24, 1, 8, 1, WORKER_BATCH_MAX_CREATED_MS);
    worker_batch_sort(&b);
    cr_expect_eq(b.norders, 2);
    cr_expect_eq(b.ndead, 5);
    cr_expect_str_eq(b.columns[0].text, "{21,24}");
    cr_expect_str_eq(b.dead_argv[0], "LPUSH");
    cr_expect_str_eq(b.dead_argv[1], "seckill:{item:1}:dead");
    cr_expect_str_eq(b.dead_argv[2], "not json");
    cr_expect_eq(b.dead_argvlen[4], 0);
    worker_batch_close(&b);
}

Test(worker_batch, a_full_batch_takes_no_more_and_a_clear_makes_room_again)
{
    worker_batch b;
    cr_assert_eq(worker_batch_init(&b, 2), 0);
    add_order(&b, 1, 1, 1, 1, 1);
    add_order(&b, 2, 1, 2, 1, 1);
    cr_expect_eq(worker_batch_add(&b, "x", 1), -1, "a third payload in a batch of two");
    worker_batch_sort(&b);
    cr_expect_eq(b.norders, 2);
    worker_batch_clear(&b);
    cr_expect_eq(b.n, 0);
    cr_expect_eq(b.norders, 0);
    cr_expect_eq(b.ndead, 0);
    add_order(&b, 3, 1, 3, 1, 1);
    worker_batch_sort(&b);
    cr_expect_str_eq(b.columns[0].text, "{3}", "nothing of the cleared batch is left");
    worker_batch_close(&b);
}

Test(worker_batch, an_empty_batch_sorts_into_empty_arrays)
{
    worker_batch b;
    cr_assert_eq(worker_batch_init(&b, 3), 0);
    worker_batch_sort(&b);
    cr_expect_eq(b.norders, 0);
    for (int c = 0; c < WORKER_BATCH_COLUMNS; c++)
        cr_expect_str_eq(b.columns[c].text, "{}");
    worker_batch_close(&b);
}

Test(worker_batch, the_longest_numbers_fit_a_full_batch)
{
    worker_batch b;
    cr_assert_eq(worker_batch_init(&b, 3), 0);
    for (int i = 0; i < 3; i++)
        add_order(&b, INT64_MAX - i, INT64_MAX, INT64_MAX, INT64_MAX, WORKER_BATCH_MAX_CREATED_MS);
    worker_batch_sort(&b);
    cr_expect_eq(b.norders, 3);
    char want[128];
    snprintf(want, sizeof(want), "{%" PRId64 ",%" PRId64 ",%" PRId64 "}", INT64_MAX, INT64_MAX,
             INT64_MAX);
    cr_expect_str_eq(b.columns[2].text, want);
    worker_batch_close(&b);
}

Test(worker_batch, a_batch_acknowledges_into_the_keys_of_the_queue_it_came_from)
{
    worker_batch b;
    cr_assert_eq(worker_batch_init(&b, 2), 0);
    worker_source src;
    worker_source_init(&src, 42, "w9");
    cr_expect_str_eq(src.queue, "seckill:{item:42}:queue");
    cr_expect_str_eq(src.processing, "seckill:{item:42}:processing:w9");
    worker_batch_from(&b, &src);
    cr_assert_eq(worker_batch_add(&b, "junk", 4), 0);
    worker_batch_sort(&b);
    cr_expect_str_eq(b.dead_argv[1], "seckill:{item:42}:dead");
    cr_expect_eq(b.dead_argvlen[1], strlen("seckill:{item:42}:dead"));
    cr_expect_str_eq(b.pending_argv[1], "seckill:{item:42}:pending");
    worker_batch_clear(&b);
    cr_expect_str_eq(b.src.processing, "seckill:{item:42}:processing:w9", "a clear keeps it");
    worker_batch_close(&b);
}

Test(worker_batch, each_buyers_order_lock_is_noted_with_its_order_id_in_its_homes_slot)
{
    worker_batch b;
    cr_assert_eq(worker_batch_init(&b, 4), 0);
    worker_source src;
    worker_source_init(&src, 5, "w1");
    worker_batch_from(&b, &src);
    add_order(&b, 11, 5, 100, 1, 1700000000000);
    add_order(&b, 12, 5, 12, 1, 1700000000000); /* anonymous: its id stands for its buyer */
    /* A segmented item's order whose units came from this segment (item 5's
     * own keys) and whose buyer's home is the item's segment 1: its lock is
     * in the home's slot. */
    int64_t home = keys_segment(5, 1, 2);
    order far = {13, 5, 300, 1, 1700000000000, 1, 1, 5, home};
    char text[256];
    int n = order_encode(&far, text, sizeof(text));
    cr_assert_eq(worker_batch_add(&b, text, (size_t)n), 0);
    worker_batch_sort(&b);
    cr_assert_eq(b.norders, 3);
    cr_assert_eq(b.nlocks, 1, "one lock in the source's slot");
    cr_expect_str_eq(b.lock_keys_args[0], "seckill:{item:5}:lock:100");
    cr_expect_str_eq(b.lock_keys_args[1], "11", "freed only while it holds the order id");
    cr_assert_eq(b.nfar, 1, "one at its buyer's home");
    char want[KEYS_MAX];
    keys_order_lock(want, sizeof(want), home, 300);
    cr_expect_str_eq(b.locks[b.cap - 1], want);
    cr_expect_str_eq(b.lock_ids[b.cap - 1], "13");
    worker_batch_clear(&b);
    cr_expect_eq(b.nlocks + b.nfar, 0);
    worker_batch_close(&b);
}
