/* unit_storm_watch.c: a sale's storm told from a growing counter's looks
 * (storm_watch.h): on at the rate, not at the first look nor when the
 * counter goes back, kept through a lull shorter than STORM_QUIET_MS, over
 * after a longer one, and waited out for wait_ms at most of one storm, which
 * a lull does not start again. */
#include <criterion/criterion.h>

#include "storm_watch.h"

#define RATE 1000  /* a second */
#define WAIT 10000 /* ms */
#define LOOK 200   /* ms between looks */

static storm_watch s;
static int64_t head, now;

static void fresh(void)
{
    s = (storm_watch){0};
    head = 0;
    now = 1000;
}

TestSuite(storm_watch, .init = fresh);

/* The next look, LOOK ms on, the counter grown by grew. */
static int look(int64_t grew)
{
    now += LOOK;
    head += grew;
    return storm_watch_look(&s, head, now, RATE, WAIT);
}

Test(storm_watch, the_first_look_sees_no_growth_and_the_second_does)
{
    head = 5000000;
    cr_assert_eq(look(0), 0, "a counter already high is no storm");
    cr_assert_eq(look(RATE * LOOK / 1000), 1, "the rate exactly");
    cr_assert_eq(s.since_ms, now);
}

Test(storm_watch, growth_below_the_rate_is_no_storm)
{
    look(0);
    for (int i = 0; i < 20; i++)
        cr_assert_eq(look(RATE * LOOK / 1000 - 1), 0, "look %d", i);
    cr_assert_eq(s.since_ms, 0);
}

Test(storm_watch, a_counter_gone_back_is_no_growth)
{
    head = 1000;
    look(0);
    cr_assert_eq(look(-900), 0);
    cr_assert_eq(look(0), 0);
}

Test(storm_watch, a_lull_shorter_than_the_quiet_keeps_the_storm_and_its_start)
{
    look(0);
    look(1000);
    int64_t since = s.since_ms;
    for (int64_t quiet = LOOK; quiet < STORM_QUIET_MS; quiet += LOOK)
        cr_assert_eq(look(0), 1, "%lld ms of lull", (long long)quiet);
    cr_assert_eq(look(1000), 1);
    cr_assert_eq(s.since_ms, since, "the same storm");
}

Test(storm_watch, a_quiet_of_storm_quiet_ms_ends_the_storm)
{
    look(0);
    look(1000);
    int waits = 1;
    int64_t quiet_from = now;
    while (waits)
        waits = look(0);
    cr_assert_eq(now - quiet_from, STORM_QUIET_MS,
                 "over at the look STORM_QUIET_MS after the last at the rate");
    cr_assert_eq(s.since_ms, 0);
    cr_assert_eq(look(1000), 1, "a new storm");
    cr_assert_eq(s.since_ms, now);
}

Test(storm_watch, one_storm_is_waited_out_for_wait_ms_at_most_lulls_included)
{
    look(0);
    look(1000);
    int64_t since = s.since_ms;
    for (int i = 0; now + LOOK - since < WAIT; i++)
        cr_assert_eq(look(i % 4 == 3 ? 0 : 1000), 1, "at %lld ms", (long long)(now - since));
    cr_assert_eq(look(1000), 0, "at wait_ms");
    for (int i = 0; i < 50; i++)
        cr_assert_eq(look(i % 4 == 3 ? 0 : 1000), 0, "no new wait in the same storm, look %d", i);
}

Test(storm_watch, a_wait_of_zero_never_waits)
{
    look(0);
    cr_assert_eq(storm_watch_look(&s, head + 1000000, now + LOOK, RATE, 0), 0);
    cr_assert_neq(s.since_ms, 0, "the storm is seen, and not waited out");
}

Test(storm_watch, a_huge_jump_and_a_long_gap_do_not_overflow)
{
    enum { HOUR_MS = 3600 * 1000, MOST = 100000000 };
    look(0);
    int64_t jump = INT64_MAX / 4;
    cr_assert_eq(storm_watch_look(&s, head + jump, now + HOUR_MS, MOST, WAIT), 1,
                 "2^61 in an hour is above 10^8 a second");
    cr_assert_eq(storm_watch_look(&s, head + jump + 1, now + 2 * HOUR_MS, MOST, WAIT), 0,
                 "one in an hour is not (and wait_ms is long past)");
}
