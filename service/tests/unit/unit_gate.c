/* unit_gate.c: sold-out flags belong to a stock version, windows to a round; announcements parse.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "events.h"
#include "gate.h"
#include "harness.h"
#include "reserve.h"

Test(gate, an_item_is_not_sold_out_until_flagged)
{
    gate *s = gate_create(16);
    cr_assert_not(gate_is_sold_out(s, 1, 0));
    gate_set_sold_out(s, 1, 5);
    cr_assert(gate_is_sold_out(s, 1, 0));
    cr_assert_not(gate_is_sold_out(s, 2, 0));
    gate_free(s);
}

Test(gate, a_new_round_clears_the_flag_of_the_old_one)
{
    gate *s = gate_create(16);
    gate_set_sold_out(s, 1, 5);
    gate_new_version(s, 1, 6);
    cr_assert_not(gate_is_sold_out(s, 1, 0));
    gate_set_sold_out(s, 1, 6);
    cr_assert(gate_is_sold_out(s, 1, 0));
    gate_free(s);
}

Test(gate, a_late_flag_of_an_old_round_does_not_count)
{
    gate *s = gate_create(16);
    gate_new_version(s, 1, 7);
    gate_set_sold_out(s, 1, 6); /* a request still in flight during the reset */
    cr_assert_not(gate_is_sold_out(s, 1, 0));
    gate_free(s);
}

Test(gate, clear_all_forgets_every_flag)
{
    gate *s = gate_create(16);
    for (int64_t i = 1; i <= 10; i++)
        gate_set_sold_out(s, i, 1);
    gate_clear_all(s);
    for (int64_t i = 1; i <= 10; i++)
        cr_expect_not(gate_is_sold_out(s, i, 0));
    gate_free(s);
}

Test(gate, a_full_table_never_flags_an_item_it_has_no_room_for)
{
    gate *s = gate_create(4); /* 16 slots */
    for (int64_t i = 1; i <= 100; i++)
        gate_set_sold_out(s, i, 1);
    int flagged = 0;
    for (int64_t i = 1; i <= 100; i++)
        flagged += gate_is_sold_out(s, i, 0);
    cr_assert_leq(flagged, 16);
    cr_assert_not(gate_is_sold_out(s, 1000, 0));
    gate_free(s);
}

static void *flag_many(void *arg)
{
    gate *s = arg;
    for (int64_t i = 1; i <= 1000; i++)
        gate_set_sold_out(s, i, 1);
    return NULL;
}

Test(gate, threads_flagging_the_same_items_claim_one_slot_each)
{
    gate *s = gate_create(2048);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, flag_many, s);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    for (int64_t i = 1; i <= 1000; i++)
        cr_assert(gate_is_sold_out(s, i, 0), "item %lld", (long long)i);
    gate_free(s);
}

Test(gate, a_restock_version_clears_the_flag_of_the_stock_before_it)
{
    gate *s = gate_create(16);
    gate_new_version(s, 1, reserve_stock_version(6, 0));
    gate_set_sold_out(s, 1, reserve_stock_version(6, 0));
    cr_assert(gate_is_sold_out(s, 1, 0));
    gate_new_version(s, 1, reserve_stock_version(6, 1)); /* a restock */
    cr_assert_not(gate_is_sold_out(s, 1, 0));
    gate_set_sold_out(s, 1, reserve_stock_version(6, 0)); /* in flight during the restock */
    cr_assert_not(gate_is_sold_out(s, 1, 0));
    gate_set_sold_out(s, 1, reserve_stock_version(6, 1));
    cr_assert(gate_is_sold_out(s, 1, 0));
    gate_new_version(s, 1, reserve_stock_version(7, 0)); /* a new round beats every restock */
    cr_assert_not(gate_is_sold_out(s, 1, 0));
    cr_assert_gt(reserve_stock_version(7, 0), reserve_stock_version(6, RESERVE_RESTOCKS_MAX));
    cr_assert_gt(reserve_stock_version(7, 0), reserve_stock_version(6, 4000000000LL),
                 "a new round beats every change of the one before, returns included");
    cr_assert_gt(reserve_stock_version(2147483000LL, 1), reserve_stock_version(2147483000LL, 0));
    gate_free(s);
}

Test(gate, a_flag_lets_one_purchase_a_second_through_to_learn_the_version)
{
    gate *s = gate_create(16);
    gate_set_sold_out(s, 1, reserve_stock_version(6, 0));
    cr_assert(gate_is_sold_out(s, 1, 500));
    cr_assert_not(gate_is_sold_out(s, 1, 1000), "a second on: one goes to Redis");
    cr_assert(gate_is_sold_out(s, 1, 1001), "and only one");
    cr_assert(gate_is_sold_out(s, 1, 1999));
    /* Its answer says a restock happened whose announcement was lost. */
    gate_new_version(s, 1, reserve_stock_version(6, 1));
    cr_assert_not(gate_is_sold_out(s, 1, 2000));
    cr_assert_eq(gate_sold_out_count(s), 0);
    gate_free(s);
}

Test(gate, a_window_counts_for_its_round_only)
{
    gate *s = gate_create(16);
    int64_t starts = -1, ends = -1;
    cr_assert_not(gate_window(s, 1, &starts, &ends), "nothing known yet");
    gate_set_window(s, 1, 6, 1000, 2000);
    cr_assert(gate_window(s, 1, &starts, &ends));
    cr_assert_eq(starts, 1000);
    cr_assert_eq(ends, 2000);
    gate_new_version(s, 1, reserve_stock_version(6, 3)); /* a restock keeps the window */
    cr_assert(gate_window(s, 1, &starts, &ends));
    gate_new_version(s, 1, reserve_stock_version(7, 0)); /* a reset may change it */
    cr_assert_not(gate_window(s, 1, &starts, &ends));
    gate_set_window(s, 1, 6, 1000, 2000); /* a late answer of the old round */
    cr_assert_not(gate_window(s, 1, &starts, &ends));
    gate_set_window(s, 1, 7, 5000, 0);
    cr_assert(gate_window(s, 1, &starts, &ends));
    cr_assert_eq(starts, 5000);
    cr_assert_eq(ends, 0);
    gate_clear_all(s);
    cr_assert_not(gate_window(s, 1, &starts, &ends));
    gate_free(s);
}

static atomic_int writers_done;

static void *write_windows(void *arg)
{
    gate *s = arg;
    for (int64_t r = 1; r <= 200000; r++)
        gate_set_window(s, 1, 1 + r % 7, r * 10, r * 10 + 1);
    atomic_fetch_add(&writers_done, 1);
    return NULL;
}

Test(gate, a_reader_never_sees_two_writers_windows_mixed)
{
    gate *s = gate_create(16);
    pthread_t t[2];
    atomic_store(&writers_done, 0);
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, write_windows, s);
    int64_t starts, ends;
    while (atomic_load(&writers_done) < 2) {
        if (gate_window(s, 1, &starts, &ends))
            cr_assert_eq(ends, starts + 1, "bounds of two writes: %lld, %lld", (long long)starts,
                         (long long)ends);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    cr_assert(gate_window(s, 1, &starts, &ends), "a window once the writers are done");
    cr_assert_eq(ends, starts + 1);
    gate_free(s);
}

Test(events, announcements_parse)
{
    events_message m;
    const char *round = "round 42 7";
    cr_assert_eq(events_parse(round, strlen(round), &m), 0);
    cr_assert_eq(m.kind, EVENTS_ROUND);
    cr_assert_eq(m.item, 42);
    cr_assert_eq(m.round, 7);
    cr_assert_eq(m.changes, 0);
    const char *restock = "restock 42 7 3";
    cr_assert_eq(events_parse(restock, strlen(restock), &m), 0);
    cr_assert_eq(m.kind, EVENTS_STOCK);
    cr_assert_eq(m.item, 42);
    cr_assert_eq(m.round, 7);
    cr_assert_eq(m.changes, 3);
    const char *given_back = "return 42 7 4";
    cr_assert_eq(events_parse(given_back, strlen(given_back), &m), 0);
    cr_assert_eq(m.kind, EVENTS_STOCK);
    cr_assert_eq(m.changes, 4);
    const char *bad[] = {"round",        "round 42",      "round x 7",      "round 42 -7",
                         "reset 42 7",   "round 42  7",   "round 0 7",      "round 42 7 1",
                         "restock 42 7", "restock 42 7 ", "restock 42 7 x", "return 42 7"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_expect_eq(events_parse(bad[i], strlen(bad[i]), &m), -1, "%s", bad[i]);
}

Test(gate, an_archived_item_stays_archived_through_new_versions_and_a_clear)
{
    gate *g = gate_create(64);
    cr_assert_not_null(g);
    cr_assert_eq(gate_is_archived(g, 5), 0, "never told");
    gate_set_sold_out(g, 5, reserve_stock_version(1, 0));
    gate_set_archived(g, 5);
    cr_assert(gate_is_archived(g, 5));
    cr_assert_eq(gate_is_archived(g, 6), 0, "another item is not");
    gate_new_version(g, 5, reserve_stock_version(2, 0));
    gate_clear_all(g);
    cr_assert(gate_is_archived(g, 5), "nothing un-archives an item");
    gate_free(g);
}

/* The server's table (gate_create(65536): 131,072 slots, 8 MiB of records)
 * cleared at its first subscription, with a few items known: the records of
 * the slots never claimed stay untouched, so not resident. */
Test(gate, clearing_all_leaves_the_unclaimed_slots_untouched)
{
    gate *g = gate_create(65536);
    for (int64_t i = 1; i <= 100; i++)
        gate_set_sold_out(g, i, 1);
    long before = harness_rss_kib(getpid());
    gate_clear_all(g);
    long after = harness_rss_kib(getpid());
    cr_assert(before > 0 && after > 0, "VmRSS of /proc/self/status");
    cr_assert_lt(after - before, 1024, "clearing made %ld KiB resident", after - before);
    for (int64_t i = 1; i <= 100; i++)
        cr_assert_not(gate_is_sold_out(g, i, 0), "item %lld cleared", (long long)i);
    gate_free(g);
}

Test(events, an_archive_announcement_names_the_item_alone)
{
    events_message m;
    const char *archive = "archive 42";
    cr_assert_eq(events_parse(archive, strlen(archive), &m), 0);
    cr_assert_eq(m.kind, EVENTS_ARCHIVE);
    cr_assert_eq(m.item, 42);
    const char *bad[] = {"archive", "archive ", "archive 0", "archive 42 7", "archive x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_expect_eq(events_parse(bad[i], strlen(bad[i]), &m), -1, "%s", bad[i]);
}
