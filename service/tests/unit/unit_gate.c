/* unit_soldout.c: sold-out flags belong to a round; announcements parse. */
#include <pthread.h>
#include <string.h>

#include <criterion/criterion.h>

#include "events.h"
#include "soldout.h"

Test(soldout, an_item_is_not_sold_out_until_flagged)
{
    soldout *s = soldout_create(16);
    cr_assert_not(soldout_is_set(s, 1));
    soldout_set(s, 1, 5);
    cr_assert(soldout_is_set(s, 1));
    cr_assert_not(soldout_is_set(s, 2));
    soldout_free(s);
}

Test(soldout, a_new_round_clears_the_flag_of_the_old_one)
{
    soldout *s = soldout_create(16);
    soldout_set(s, 1, 5);
    soldout_new_round(s, 1, 6);
    cr_assert_not(soldout_is_set(s, 1));
    soldout_set(s, 1, 6);
    cr_assert(soldout_is_set(s, 1));
    soldout_free(s);
}

Test(soldout, a_late_flag_of_an_old_round_does_not_count)
{
    soldout *s = soldout_create(16);
    soldout_new_round(s, 1, 7);
    soldout_set(s, 1, 6); /* a request still in flight during the reset */
    cr_assert_not(soldout_is_set(s, 1));
    soldout_free(s);
}

Test(soldout, clear_all_forgets_every_flag)
{
    soldout *s = soldout_create(16);
    for (int64_t i = 1; i <= 10; i++)
        soldout_set(s, i, 1);
    soldout_clear_all(s);
    for (int64_t i = 1; i <= 10; i++)
        cr_expect_not(soldout_is_set(s, i));
    soldout_free(s);
}

Test(soldout, a_full_table_never_flags_an_item_it_has_no_room_for)
{
    soldout *s = soldout_create(4); /* 16 slots */
    for (int64_t i = 1; i <= 100; i++)
        soldout_set(s, i, 1);
    int flagged = 0;
    for (int64_t i = 1; i <= 100; i++)
        flagged += soldout_is_set(s, i);
    cr_assert_leq(flagged, 16);
    cr_assert_not(soldout_is_set(s, 1000));
    soldout_free(s);
}

static void *flag_many(void *arg)
{
    soldout *s = arg;
    for (int64_t i = 1; i <= 1000; i++)
        soldout_set(s, i, 1);
    return NULL;
}

Test(soldout, threads_flagging_the_same_items_claim_one_slot_each)
{
    soldout *s = soldout_create(2048);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, flag_many, s);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    for (int64_t i = 1; i <= 1000; i++)
        cr_assert(soldout_is_set(s, i), "item %lld", (long long)i);
    soldout_free(s);
}

Test(events, a_round_announcement_parses)
{
    int64_t item, round;
    const char *m = "round 42 7";
    cr_assert_eq(events_parse_round(m, strlen(m), &item, &round), 0);
    cr_assert_eq(item, 42);
    cr_assert_eq(round, 7);
    const char *bad[] = {"round",      "round 42",    "round x 7", "round 42 -7",
                         "reset 42 7", "round 42  7", "round 0 7"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_expect_eq(events_parse_round(bad[i], strlen(bad[i]), &item, &round), -1, "%s", bad[i]);
}
