/* unit_lab_items.c: the laboratory's table of which items are its own
 * (lab_items.c): what PostgreSQL said is kept, a new round forgets it, and
 * an answer read before a new round is not kept after it. */
#include <stdint.h>

#include <criterion/criterion.h>

#include "lab_items.h"

Test(lab_items, an_item_never_asked_is_unknown)
{
    lab_items *t = lab_items_create(64);
    cr_assert_not_null(t);
    uint64_t epoch;
    cr_assert_eq(lab_items_lookup(t, 7, &epoch), LAB_ITEMS_UNKNOWN);
    lab_items_free(t);
    lab_items_free(NULL);
}

Test(lab_items, what_postgresql_said_is_kept_for_lab_and_product_items)
{
    lab_items *t = lab_items_create(64);
    uint64_t epoch;
    lab_items_lookup(t, 1, &epoch);
    lab_items_learn(t, 1, 1, epoch);
    lab_items_lookup(t, 2, &epoch);
    lab_items_learn(t, 2, 0, epoch);
    cr_assert_eq(lab_items_lookup(t, 1, &epoch), LAB_ITEMS_LAB);
    cr_assert_eq(lab_items_lookup(t, 2, &epoch), LAB_ITEMS_PRODUCT);
    cr_assert_eq(lab_items_lookup(t, 3, &epoch), LAB_ITEMS_UNKNOWN);
    lab_items_free(t);
}

Test(lab_items, a_new_round_forgets_its_item_and_only_it)
{
    lab_items *t = lab_items_create(64);
    uint64_t epoch;
    lab_items_lookup(t, 1, &epoch);
    lab_items_learn(t, 1, 1, epoch);
    lab_items_learn(t, 2, 1, epoch);
    lab_items_forget(t, 1);
    cr_assert_eq(lab_items_lookup(t, 1, &epoch), LAB_ITEMS_UNKNOWN, "asked again");
    cr_assert_eq(lab_items_lookup(t, 2, &epoch), LAB_ITEMS_LAB);
    lab_items_forget_all(t);
    cr_assert_eq(lab_items_lookup(t, 2, &epoch), LAB_ITEMS_UNKNOWN);
    lab_items_free(t);
}

Test(lab_items, an_answer_read_before_a_new_round_is_not_kept)
{
    lab_items *t = lab_items_create(64);
    uint64_t before;
    cr_assert_eq(lab_items_lookup(t, 1, &before), LAB_ITEMS_UNKNOWN);
    /* The query said "lab"; meanwhile the tables were emptied and item 1
     * created again as a product item, whose round was announced. */
    lab_items_forget(t, 1);
    lab_items_learn(t, 1, 1, before);
    uint64_t now;
    cr_assert_eq(lab_items_lookup(t, 1, &now), LAB_ITEMS_UNKNOWN, "the stale answer was dropped");
    lab_items_learn(t, 1, 0, now);
    cr_assert_eq(lab_items_lookup(t, 1, &now), LAB_ITEMS_PRODUCT);
    lab_items_free(t);
}

Test(lab_items, items_that_share_a_place_are_asked_again_never_confused)
{
    lab_items *t = lab_items_create(16);
    uint64_t epoch;
    lab_items_lookup(t, 1, &epoch);
    /* Far more items than places: each keeps its own answer or none. */
    for (int64_t i = 1; i <= 1000; i++)
        lab_items_learn(t, i, (int)(i % 2), epoch);
    int known = 0;
    for (int64_t i = 1; i <= 1000; i++) {
        lab_items_kind k = lab_items_lookup(t, i, &epoch);
        if (k == LAB_ITEMS_UNKNOWN)
            continue;
        known++;
        cr_assert_eq(k, i % 2 ? LAB_ITEMS_LAB : LAB_ITEMS_PRODUCT, "item %lld", (long long)i);
    }
    cr_assert_gt(known, 0);
    cr_assert_leq(known, 16);
    lab_items_free(t);
}
