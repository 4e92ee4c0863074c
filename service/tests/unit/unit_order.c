/* unit_order.c: order ids (monotonic, node bits kept, unique across threads
 * and nodes) and the queue format of order.c. */
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "keys.h"
#include "order.h"

/* A clock reading well after the epoch: 2026-11-22T06:00:00Z. */
#define NOW_MS 1795327200000LL
#define BURST 10000

#define NODE_MASK ((int64_t)ORDER_NODE_MAX)
#define SEQ_STEP ((int64_t)1 << ORDER_NODE_BITS)

static int compare_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

Test(order_id, first_id_carries_the_time_and_the_node)
{
    order_id_gen gen;
    order_id_gen_init(&gen, 5);
    int64_t id = order_id_next(&gen, NOW_MS);
    cr_assert_gt(id, 0);
    cr_assert_eq(id & NODE_MASK, 5);
    cr_assert_eq(id >> 22, NOW_MS - ORDER_EPOCH_MS, "the top bits are ms since the epoch");
}

Test(order_id, a_burst_in_one_millisecond_strictly_increases)
{
    order_id_gen gen;
    order_id_gen_init(&gen, 7);
    int64_t prev = 0;
    for (int i = 0; i < BURST; i++) {
        int64_t id = order_id_next(&gen, NOW_MS);
        cr_assert_gt(id, prev, "id %d (%" PRId64 ") not above %" PRId64, i, id, prev);
        cr_assert_eq(id & NODE_MASK, 7, "id %d lost the node bits", i);
        prev = id;
    }
    /* 10,000 ids > 4096 a millisecond: the burst borrowed from later ms. */
    cr_assert_gt(prev >> 22, NOW_MS - ORDER_EPOCH_MS);
}

Test(order_id, the_clock_catching_up_after_a_burst_never_repeats)
{
    order_id_gen gen;
    order_id_gen_init(&gen, 1);
    int64_t prev = 0;
    for (int i = 0; i < BURST; i++)
        prev = order_id_next(&gen, NOW_MS);
    /* The clock now reads the ms that the burst already borrowed. */
    for (int64_t ms = NOW_MS + 1; ms <= NOW_MS + 3; ms++) {
        int64_t id = order_id_next(&gen, ms);
        cr_assert_gt(id, prev);
        prev = id;
    }
}

Test(order_id, a_clock_going_backwards_never_repeats)
{
    order_id_gen gen;
    order_id_gen_init(&gen, 3);
    int64_t a = order_id_next(&gen, NOW_MS);
    int64_t b = order_id_next(&gen, NOW_MS - 5000);
    cr_assert_gt(b, a);
    cr_assert_eq(b & NODE_MASK, 3);
}

Test(order_id, a_new_millisecond_restarts_the_sequence)
{
    order_id_gen gen;
    order_id_gen_init(&gen, 2);
    order_id_next(&gen, NOW_MS);
    order_id_next(&gen, NOW_MS);
    int64_t id = order_id_next(&gen, NOW_MS + 1);
    cr_assert_eq(id, ((NOW_MS + 1 - ORDER_EPOCH_MS) << 22) | 2);
}

Test(order_id, node_bits_survive_every_node_number)
{
    unsigned nodes[] = {0, 1, 2, 512, ORDER_NODE_MAX};
    for (size_t n = 0; n < sizeof(nodes) / sizeof(nodes[0]); n++) {
        order_id_gen gen;
        order_id_gen_init(&gen, nodes[n]);
        for (int i = 0; i < 5000; i++) {
            int64_t id = order_id_next(&gen, NOW_MS + i / 100);
            cr_assert_eq(id & NODE_MASK, (int64_t)nodes[n], "node %u, id %d", nodes[n], i);
            cr_assert_gt(id, 0);
        }
    }
}

Test(order_id, node_bits_survive_a_clock_before_the_epoch)
{
    /* A machine whose clock reads before 2026 must still stamp its node. */
    order_id_gen gen;
    order_id_gen_init(&gen, 9);
    int64_t prev = 0;
    for (int i = 0; i < 100; i++) {
        int64_t id = order_id_next(&gen, ORDER_EPOCH_MS - 1000);
        cr_assert_eq(id & NODE_MASK, 9, "id %d (%" PRId64 ") lost the node bits", i, id);
        cr_assert_gt(id, prev);
        prev = id;
    }
}

Test(order_id, two_nodes_never_collide)
{
    order_id_gen a, b;
    order_id_gen_init(&a, 1);
    order_id_gen_init(&b, 2);
    size_t n = 2 * BURST;
    int64_t *ids = malloc(n * sizeof(*ids));
    cr_assert_not_null(ids);
    /* Same clock readings on both, bursts and quiet ms mixed. */
    for (size_t i = 0; i < BURST; i++) {
        int64_t now = NOW_MS + (int64_t)(i / 3000);
        ids[2 * i] = order_id_next(&a, now);
        ids[2 * i + 1] = order_id_next(&b, now);
    }
    qsort(ids, n, sizeof(*ids), compare_i64);
    for (size_t i = 1; i < n; i++)
        cr_assert_neq(ids[i], ids[i - 1], "id %" PRId64 " made twice", ids[i]);
    free(ids);
}

#define THREADS 4
#define PER_THREAD 25000

typedef struct thread_job {
    order_id_gen *gen;
    int64_t *ids;
} thread_job;

static void *make_ids(void *arg)
{
    thread_job *job = arg;
    int64_t prev = 0;
    for (size_t i = 0; i < PER_THREAD; i++) {
        /* A slowly moving clock, so bursts and borrowing both happen. */
        int64_t id = order_id_next(job->gen, NOW_MS + (int64_t)(i / 5000));
        if (id <= prev)
            return (void *)1; /* one thread's ids must increase too */
        job->ids[i] = prev = id;
    }
    return NULL;
}

Test(order_id, ids_from_four_threads_at_once_are_unique)
{
    order_id_gen gen;
    order_id_gen_init(&gen, 11);
    int64_t *ids = malloc(THREADS * PER_THREAD * sizeof(*ids));
    cr_assert_not_null(ids);
    pthread_t threads[THREADS];
    thread_job jobs[THREADS];
    for (int t = 0; t < THREADS; t++) {
        jobs[t] = (thread_job){&gen, ids + (size_t)t * PER_THREAD};
        cr_assert_eq(pthread_create(&threads[t], NULL, make_ids, &jobs[t]), 0);
    }
    for (int t = 0; t < THREADS; t++) {
        void *rc;
        pthread_join(threads[t], &rc);
        cr_assert_null(rc, "thread %d saw its ids go down", t);
    }
    size_t n = (size_t)THREADS * PER_THREAD;
    qsort(ids, n, sizeof(*ids), compare_i64);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(ids[i] & NODE_MASK, 11);
        if (i > 0)
            cr_assert_neq(ids[i], ids[i - 1], "id %" PRId64 " made twice", ids[i]);
    }
    free(ids);
}

/* The exact text lua/reserve_batch.lua pushes for one order. */
#define LUA_PAYLOAD                                                                                \
    "{\"order_id\":\"1234567890123\",\"item_id\":42,\"user_id\":7,\"round\":3,"                    \
    "\"created_ms\":1795327200000,\"quantity\":2,\"first_unit\":3}"
/* An order queued before quantities existed. */
#define OLD_PAYLOAD                                                                                \
    "{\"order_id\":\"1234567890123\",\"item_id\":42,\"user_id\":7,\"round\":3,"                    \
    "\"created_ms\":1795327200000}"

Test(order_codec, encode_writes_the_queue_format)
{
    order o = {1234567890123LL, 42, 7, 3, 1795327200000LL, 2, 3, 0, 0};
    char buf[256];
    int n = order_encode(&o, buf, sizeof(buf));
    cr_assert_eq(n, (int)strlen(LUA_PAYLOAD));
    cr_assert_str_eq(buf, LUA_PAYLOAD);
}

Test(order_codec, encode_decode_round_trip)
{
    order cases[] = {
        {1, 1, 1, 0, 0, 1, 1, 0, 0},
        {1234567890123LL, 42, 7, 3, 1795327200000LL, 2, 3, 0, 0},
        {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX, ORDER_QUANTITY_MAX, INT64_MAX, 0,
         0},
        {987654321, 5, 1000000, 1, ORDER_EPOCH_MS, 7, 994, 0, 0},
        /* A segmented item's: key ids above 2^53 read exactly. */
        {555, 42, 7, 3, ORDER_EPOCH_MS, 1, 2, keys_segment(42, 3, 4), 42},
        {556, KEYS_SEGMENT_ITEM_LIMIT - 1, 7, 3, ORDER_EPOCH_MS, 1, 2,
         keys_segment(KEYS_SEGMENT_ITEM_LIMIT - 1, 63, 64),
         keys_segment(KEYS_SEGMENT_ITEM_LIMIT - 1, 62, 64)},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[256];
        order back;
        memset(&back, 0, sizeof(back));
        int n = order_encode(&cases[i], buf, sizeof(buf));
        cr_assert_gt(n, 0);
        cr_assert_eq(order_decode(buf, (size_t)n, &back), 0, "case %zu: %s", i, buf);
        cr_assert_eq(back.id, cases[i].id);
        cr_assert_eq(back.item_id, cases[i].item_id);
        cr_assert_eq(back.user_id, cases[i].user_id);
        cr_assert_eq(back.round, cases[i].round);
        cr_assert_eq(back.created_ms, cases[i].created_ms);
        cr_assert_eq(back.quantity, cases[i].quantity);
        cr_assert_eq(back.first_unit, cases[i].first_unit);
        cr_assert_eq(back.segment_id, cases[i].segment_id);
        cr_assert_eq(back.home_id, cases[i].home_id);
    }
}

Test(order_codec, encode_into_a_short_buffer_fails)
{
    order o = {1234567890123LL, 42, 7, 3, 1795327200000LL, 2, 3, 0, 0};
    char buf[256];
    size_t need = strlen(LUA_PAYLOAD);
    cr_assert_eq(order_encode(&o, buf, need), -1, "no room for the NUL");
    cr_assert_eq(order_encode(&o, buf, 10), -1);
    cr_assert_eq(order_encode(&o, buf, need + 1), (int)need);
}

Test(order_codec, decode_reads_the_lua_payload)
{
    order o;
    cr_assert_eq(order_decode(LUA_PAYLOAD, strlen(LUA_PAYLOAD), &o), 0);
    cr_assert_eq(o.id, 1234567890123LL);
    cr_assert_eq(o.item_id, 42);
    cr_assert_eq(o.user_id, 7);
    cr_assert_eq(o.round, 3);
    cr_assert_eq(o.created_ms, 1795327200000LL);
    cr_assert_eq(o.quantity, 2);
    cr_assert_eq(o.first_unit, 3);
}

Test(order_codec, decode_reads_only_len_bytes)
{
    char text[512];
    snprintf(text, sizeof(text), "%sGARBAGE", LUA_PAYLOAD);
    order o;
    cr_assert_eq(order_decode(text, strlen(LUA_PAYLOAD), &o), 0);
    cr_assert_eq(order_decode(text, strlen(text), &o), -1);
}

static void expect_refused(const char *text)
{
    order o;
    cr_assert_eq(order_decode(text, strlen(text), &o), -1, "accepted: %s", text);
}

Test(order_codec, decode_refuses_malformed_json)
{
    expect_refused("");
    expect_refused("{");
    expect_refused("not json");
    expect_refused("{\"order_id\":\"1\",\"item_id\":1,\"user_id\":1,\"round\":1,\"created_ms\":1");
    expect_refused("[\"1\",1,1,1,1]");
    expect_refused("null");
    expect_refused("\"1\"");
    /* The same field twice is ambiguous: refused. */
    expect_refused("{\"order_id\":\"1\",\"item_id\":1,\"item_id\":2,\"user_id\":1,\"round\":1,"
                   "\"created_ms\":1}");
}

Test(order_codec, decode_refuses_missing_fields)
{
    expect_refused("{}");
    expect_refused("{\"item_id\":1,\"user_id\":1,\"round\":1,\"created_ms\":1}");
    expect_refused("{\"order_id\":\"1\",\"user_id\":1,\"round\":1,\"created_ms\":1}");
    expect_refused("{\"order_id\":\"1\",\"item_id\":1,\"round\":1,\"created_ms\":1}");
    expect_refused("{\"order_id\":\"1\",\"item_id\":1,\"user_id\":1,\"created_ms\":1}");
    expect_refused("{\"order_id\":\"1\",\"item_id\":1,\"user_id\":1,\"round\":1}");
}

Test(order_codec, decode_refuses_wrong_types)
{
    /* order_id is a string on the wire (a JSON number loses bits past 2^53). */
    expect_refused("{\"order_id\":1,\"item_id\":1,\"user_id\":1,\"round\":1,\"created_ms\":1}");
    expect_refused("{\"order_id\":\"1\",\"item_id\":\"1\",\"user_id\":1,\"round\":1,"
                   "\"created_ms\":1}");
    expect_refused("{\"order_id\":\"1\",\"item_id\":1,\"user_id\":1.5,\"round\":1,"
                   "\"created_ms\":1}");
    expect_refused("{\"order_id\":\"1\",\"item_id\":1,\"user_id\":1,\"round\":null,"
                   "\"created_ms\":1}");
    expect_refused("{\"order_id\":\"1\",\"item_id\":1,\"user_id\":1,\"round\":1,"
                   "\"created_ms\":true}");
    expect_refused("{\"order_id\":null,\"item_id\":1,\"user_id\":1,\"round\":1,"
                   "\"created_ms\":1}");
}

Test(order_codec, decode_refuses_an_order_id_that_is_not_a_positive_number)
{
    const char *ids[] = {"",   "abc", "12x", " 12", "+12", "012", "0", "-5", "9223372036854775808",
                         "1.5"};
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        char text[256];
        snprintf(text, sizeof(text),
                 "{\"order_id\":\"%s\",\"item_id\":1,\"user_id\":1,\"round\":1,"
                 "\"created_ms\":1}",
                 ids[i]);
        expect_refused(text);
    }
}

Test(order_codec, decode_refuses_item_or_user_that_is_not_positive)
{
    expect_refused("{\"order_id\":\"1\",\"item_id\":0,\"user_id\":1,\"round\":1,\"created_ms\":1}");
    expect_refused("{\"order_id\":\"1\",\"item_id\":1,\"user_id\":-3,\"round\":1,"
                   "\"created_ms\":1}");
}

Test(order_codec, an_order_queued_before_quantities_is_one_unit)
{
    order o;
    cr_assert_eq(order_decode(OLD_PAYLOAD, strlen(OLD_PAYLOAD), &o), 0);
    cr_assert_eq(o.quantity, 1);
    cr_assert_eq(o.first_unit, 1);
    expect_refused("{\"order_id\":\"1\",\"item_id\":4,\"user_id\":7,\"round\":3,"
                   "\"created_ms\":1,\"quantity\":0}");
    expect_refused("{\"order_id\":\"1\",\"item_id\":4,\"user_id\":7,\"round\":3,"
                   "\"created_ms\":1,\"quantity\":1001}");
    expect_refused("{\"order_id\":\"1\",\"item_id\":4,\"user_id\":7,\"round\":3,"
                   "\"created_ms\":1,\"first_unit\":0}");
}

/* Both answers, and the order when both decode, are the same. */
static void expect_same_as_jansson(const char *text, size_t len)
{
    order fast, slow;
    memset(&fast, 0, sizeof(fast));
    memset(&slow, 0, sizeof(slow));
    int rc = order_decode(text, len, &fast);
    cr_assert_eq(rc, order_decode_json(text, len, &slow), "%.*s", (int)len, text);
    if (rc == 0)
        cr_assert_eq(memcmp(&fast, &slow, sizeof(fast)), 0, "%.*s", (int)len, text);
}

Test(order_codec, the_canonical_reader_and_jansson_agree_on_every_near_miss)
{
    /* Every truncation, and every byte replaced by or preceded by a byte
     * that could fool a reader of the fixed shape. */
    const char *bases[] = {LUA_PAYLOAD, OLD_PAYLOAD,
                           "{\"order_id\":\"9223372036854775807\",\"item_id\":1,\"user_id\":1,"
                           "\"round\":-9223372036854775808,\"created_ms\":-0,\"quantity\":1000,"
                           "\"first_unit\":1}"};
    const char swaps[] = " 0-19.eE\"},:+x";
    for (size_t b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
        size_t len = strlen(bases[b]);
        char text[512];
        for (size_t cut = 0; cut <= len; cut++)
            expect_same_as_jansson(bases[b], cut);
        for (size_t i = 0; i < len; i++)
            for (size_t s = 0; s < sizeof(swaps) - 1; s++) {
                memcpy(text, bases[b], len);
                text[i] = swaps[s];
                expect_same_as_jansson(text, len);
                memcpy(text, bases[b], i);
                text[i] = swaps[s];
                memcpy(text + i + 1, bases[b] + i, len - i);
                expect_same_as_jansson(text, len + 1);
            }
    }
}

Test(order_codec, a_segment_without_a_home_or_a_home_without_a_segment_is_refused)
{
    order o;
    const char *bad[] = {
        "{\"order_id\":\"5\",\"item_id\":1,\"user_id\":2,\"round\":1,\"created_ms\":1,"
        "\"quantity\":1,\"first_unit\":1,\"segment\":9}",
        "{\"order_id\":\"5\",\"item_id\":1,\"user_id\":2,\"round\":1,\"created_ms\":1,"
        "\"quantity\":1,\"first_unit\":1,\"home\":9}",
        "{\"order_id\":\"5\",\"item_id\":1,\"user_id\":2,\"round\":1,\"created_ms\":1,"
        "\"quantity\":1,\"first_unit\":1,\"segment\":-9,\"home\":9}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_eq(order_decode(bad[i], strlen(bad[i]), &o), -1, "%s", bad[i]);
}

Test(order_codec, a_segment_or_home_of_another_item_is_refused)
{
    /* Item 1's order placed in item 2's keys: its return would give the
     * units to item 2. Both decoders refuse it; the worker sends it to the
     * dead letters. */
    order o;
    char text[256];
    int64_t mine = keys_segment(1, 1, 4), other = keys_segment(2, 1, 4);
    const int64_t pairs[][2] = {{other, 1}, {mine, other}, {mine, 2}, {other, 2}};
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        snprintf(text, sizeof(text),
                 "{\"order_id\":\"5\",\"item_id\":1,\"user_id\":2,\"round\":1,"
                 "\"created_ms\":1,\"quantity\":1,\"first_unit\":1,\"segment\":%" PRId64
                 ",\"home\":%" PRId64 "}",
                 pairs[i][0], pairs[i][1]);
        cr_assert_eq(order_decode(text, strlen(text), &o), -1, "%s", text);
        /* Spaced out: jansson's path decides. */
        char *colon = strstr(text, "\"segment\":");
        memmove(colon + 1, colon, strlen(colon) + 1);
        *colon = ' ';
        cr_assert_eq(order_decode(text, strlen(text), &o), -1, "%s", text);
    }
    snprintf(text, sizeof(text),
             "{\"order_id\":\"5\",\"item_id\":1,\"user_id\":2,\"round\":1,"
             "\"created_ms\":1,\"quantity\":1,\"first_unit\":1,\"segment\":%" PRId64 ",\"home\":1}",
             mine);
    cr_assert_eq(order_decode(text, strlen(text), &o), 0, "its own keys: %s", text);
    cr_assert_eq(o.segment_id, mine);
}
