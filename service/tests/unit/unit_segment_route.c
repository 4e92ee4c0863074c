/* unit_segment_route.c: a purchase's way between the segments of an item
 * (segment_route.c): home first, held there and taken elsewhere, the hold
 * given back when no segment can supply, sold-out segments skipped. */
#include <string.h>

#include <criterion/criterion.h>

#include "keys.h"
#include "segment_route.h"

static const int64_t keys[4] = {100, 101, 102, 103};

/* A buyer whose home is segment `home` of 4. */
static int64_t buyer_at_home(int home)
{
    for (int64_t user = 1;; user++)
        if (keys_segment_home(user, 4) == home)
            return user;
}

static int flagged[4];

static int sold_out(void *ctx, int64_t key)
{
    (void)ctx;
    return flagged[key - 100];
}

Test(segment_route, a_buyer_served_at_home_takes_one_call)
{
    segment_route r;
    segment_step st;
    segment_route_start(&r, keys, 4, buyer_at_home(2), 0, NULL, NULL, &st);
    cr_assert(!st.answer);
    cr_assert_eq(st.segment, 2);
    cr_assert_str_eq(st.mode, "h");
    segment_route_next(&r, RESERVE_QUEUED, 10, 0, 9, &st);
    cr_assert(st.answer);
    cr_assert_eq(st.outcome, RESERVE_QUEUED);
}

Test(segment_route, a_refusal_at_home_is_the_answer)
{
    const reserve_outcome refusals[] = {RESERVE_LIMIT_REACHED, RESERVE_NOT_STARTED, RESERVE_ENDED,
                                        RESERVE_QUEUE_FULL, RESERVE_UNKNOWN_ITEM};
    for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
        segment_route r;
        segment_step st;
        segment_route_start(&r, keys, 4, buyer_at_home(0), 0, NULL, NULL, &st);
        segment_route_next(&r, refusals[i], 0, 0, 9, &st);
        cr_assert(st.answer);
        cr_assert_eq(st.outcome, refusals[i]);
    }
}

Test(segment_route, held_at_home_the_units_are_taken_from_the_next_segment_with_stock)
{
    memset(flagged, 0, sizeof(flagged));
    flagged[0] = 1; /* known sold out: skipped */
    segment_route r;
    segment_step st;
    segment_route_start(&r, keys, 4, buyer_at_home(3), 0, sold_out, NULL, &st);
    cr_assert_eq(st.segment, 3);
    segment_route_next(&r, RESERVE_HELD, 0, 5, 9, &st);
    cr_assert(!st.answer);
    cr_assert_eq(st.segment, 1, "3 is home, 0 is flagged: 1 is next");
    cr_assert_str_eq(st.mode, "t5:103:9", "the held order's first unit, home's key id, the round");
    segment_route_next(&r, RESERVE_SOLD_OUT, 0, 0, 9, &st);
    cr_assert_eq(st.segment, 2);
    cr_assert_str_eq(st.mode, "t5:103:9");
    segment_route_next(&r, RESERVE_QUEUED, 7, 0, 9, &st);
    cr_assert(st.answer);
    cr_assert_eq(st.outcome, RESERVE_QUEUED);
}

Test(segment_route, no_segment_can_supply_the_hold_is_released_then_the_buyer_hears_why)
{
    memset(flagged, 0, sizeof(flagged));
    segment_route r;
    segment_step st;
    segment_route_start(&r, keys, 4, buyer_at_home(1), 0, sold_out, NULL, &st);
    segment_route_next(&r, RESERVE_HELD, 0, 1, 9, &st);
    segment_route_next(&r, RESERVE_SOLD_OUT, 0, 0, 9, &st);
    segment_route_next(&r, RESERVE_INSUFFICIENT_STOCK, 1, 0, 9, &st);
    segment_route_next(&r, RESERVE_SOLD_OUT, 0, 0, 9, &st);
    cr_assert(!st.answer);
    cr_assert_eq(st.segment, 1, "back home");
    cr_assert_str_eq(st.mode, "r9");
    segment_route_next(&r, RESERVE_RELEASED, 0, 0, 9, &st);
    cr_assert(st.answer);
    cr_assert_eq(st.outcome, RESERVE_INSUFFICIENT_STOCK, "one segment had some, not enough");
}

Test(segment_route, a_window_closed_elsewhere_releases_the_hold_and_says_so)
{
    memset(flagged, 0, sizeof(flagged));
    segment_route r;
    segment_step st;
    segment_route_start(&r, keys, 4, buyer_at_home(0), 0, sold_out, NULL, &st);
    segment_route_next(&r, RESERVE_HELD, 0, 1, 9, &st);
    segment_route_next(&r, RESERVE_ENDED, 0, 0, 9, &st);
    cr_assert_str_eq(st.mode, "r9");
    segment_route_next(&r, RESERVE_RELEASED, 0, 0, 9, &st);
    cr_assert_eq(st.outcome, RESERVE_ENDED);
}

Test(segment_route, every_other_segment_flagged_releases_at_once)
{
    memset(flagged, 1, sizeof(flagged));
    segment_route r;
    segment_step st;
    segment_route_start(&r, keys, 4, buyer_at_home(2), 0, sold_out, NULL, &st);
    cr_assert_str_eq(st.mode, "h", "home counts the buyer even when flagged");
    segment_route_next(&r, RESERVE_HELD, 0, 1, 9, &st);
    cr_assert_str_eq(st.mode, "r9");
    cr_assert_eq(st.segment, 2);
    segment_route_next(&r, RESERVE_RELEASED, 0, 0, 9, &st);
    cr_assert_eq(st.outcome, RESERVE_SOLD_OUT);
}

Test(segment_route, an_anonymous_buyer_tries_the_segments_in_turn_and_holds_nothing)
{
    memset(flagged, 0, sizeof(flagged));
    segment_route r;
    segment_step st;
    int64_t order = buyer_at_home(1);
    segment_route_start(&r, keys, 4, order, 1, sold_out, NULL, &st);
    cr_assert_eq(st.segment, 1);
    cr_assert_str_eq(st.mode, "a");
    for (int j = 2; j < 5; j++) {
        segment_route_next(&r, RESERVE_SOLD_OUT, 0, 0, 9, &st);
        cr_assert(!st.answer);
        cr_assert_eq(st.segment, j % 4);
        cr_assert_str_eq(st.mode, "a");
    }
    segment_route_next(&r, RESERVE_SOLD_OUT, 0, 0, 9, &st);
    cr_assert(st.answer, "no release: nothing was held");
    cr_assert_eq(st.outcome, RESERVE_SOLD_OUT);
    memset(flagged, 1, sizeof(flagged));
    segment_route_start(&r, keys, 4, order, 1, sold_out, NULL, &st);
    cr_assert(st.answer, "every segment flagged: answered at once");
    cr_assert_eq(st.outcome, RESERVE_SOLD_OUT);
}

Test(segment_route, a_hold_no_replica_confirmed_is_given_back_and_the_buyer_hears_503)
{
    memset(flagged, 0, sizeof(flagged));
    segment_route r;
    segment_step st;
    segment_route_start(&r, keys, 4, buyer_at_home(1), 0, sold_out, NULL, &st);
    cr_assert_str_eq(st.mode, "h");
    /* Held at home, but the WAIT after it saw no replica. */
    segment_route_abandon(&r, 9, &st);
    cr_assert(!st.answer, "the hold goes back first");
    cr_assert_eq(st.segment, 1);
    cr_assert_str_eq(st.mode, "r9");
    segment_route_next(&r, RESERVE_RELEASED, 0, 0, 9, &st);
    cr_assert(st.answer);
    cr_assert_eq(st.outcome, RESERVE_BAD_REPLY, "503: nothing sold, try again");
}
