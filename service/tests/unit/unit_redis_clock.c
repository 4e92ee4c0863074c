/* unit_redis_clock.c: the bounds on Redis's clock hold its true time, tighten
 * with better calls, and are forgotten when no call came for a while. */
#include <criterion/criterion.h>

#include "redis_clock.h"

static redis_clock c;

static void setup(void)
{
    redis_clock_init(&c);
}

static void teardown(void)
{
    redis_clock_close(&c);
}

TestSuite(redis_clock, .init = setup, .fini = teardown);

/* Redis's clock runs this far ahead of our monotonic one in these tests. */
#define OFFSET 1795377600000LL

Test(redis_clock, nothing_is_known_before_a_call)
{
    int64_t lo, hi;
    cr_assert_eq(redis_clock_bounds(&c, 5000, &lo, &hi), 0);
}

Test(redis_clock, one_call_brackets_the_true_time_by_its_round_trip)
{
    int64_t lo, hi;
    /* Sent at 1000, answered at 1010; Redis read its clock at 1004. */
    redis_clock_sample(&c, 1000, 1010, 1004 + OFFSET);
    cr_assert_eq(redis_clock_bounds(&c, 1500, &lo, &hi), 1);
    cr_assert_leq(lo, 1500 + OFFSET);
    cr_assert_geq(hi, 1500 + OFFSET);
    cr_assert_eq(hi - lo, 10, "no wider than the round trip");
}

Test(redis_clock, a_faster_call_tightens_the_bounds_and_a_slow_one_does_not_loosen_them)
{
    int64_t lo, hi;
    redis_clock_sample(&c, 1000, 1040, 1030 + OFFSET);
    redis_clock_sample(&c, 1100, 1102, 1101 + OFFSET);
    redis_clock_sample(&c, 1200, 1300, 1210 + OFFSET);
    cr_assert_eq(redis_clock_bounds(&c, 1400, &lo, &hi), 1);
    cr_assert_leq(lo, 1400 + OFFSET);
    cr_assert_geq(hi, 1400 + OFFSET);
    cr_assert_leq(hi - lo, 2);
}

Test(redis_clock, bounds_are_forgotten_two_seconds_after_the_last_call)
{
    int64_t lo, hi;
    redis_clock_sample(&c, 1000, 1002, 1001 + OFFSET);
    cr_assert_eq(redis_clock_bounds(&c, 2900, &lo, &hi), 1);
    cr_assert_eq(redis_clock_bounds(&c, 3100, &lo, &hi), 0, "stale");
}

Test(redis_clock, a_clock_that_steps_is_followed_at_once)
{
    int64_t lo, hi;
    redis_clock_sample(&c, 1000, 1002, 1001 + OFFSET);
    /* Redis's clock jumped 10 s ahead: the old bounds cannot hold both. */
    redis_clock_sample(&c, 1100, 1102, 1101 + OFFSET + 10000);
    cr_assert_eq(redis_clock_bounds(&c, 1200, &lo, &hi), 1);
    cr_assert_leq(lo, 1200 + OFFSET + 10000);
    cr_assert_geq(hi, 1200 + OFFSET + 10000);
}

Test(redis_clock, an_answer_before_its_call_is_ignored)
{
    int64_t lo, hi;
    redis_clock_sample(&c, 1000, 990, 1001 + OFFSET);
    redis_clock_sample(&c, 1000, 1001, 0);
    cr_assert_eq(redis_clock_bounds(&c, 1000, &lo, &hi), 0);
}
