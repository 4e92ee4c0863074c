/* unit_ratelimit.c: a buyer gets its burst, then its rate; buyers do not
 * share buckets. */
#include <criterion/criterion.h>

#include "ratelimit.h"

Test(ratelimit, a_buyer_gets_its_burst_then_waits_for_the_rate)
{
    ratelimit *r = ratelimit_create(2, 3, 16); /* 2 a second, bursts of 3 */
    for (int i = 0; i < 3; i++)
        cr_assert_eq(ratelimit_take(r, 7, 1000), 0, "take %d of the burst", i);
    int64_t wait = ratelimit_take(r, 7, 1000);
    cr_assert(wait > 0 && wait <= 501, "wait %lld ms for the next token", (long long)wait);
    cr_assert_gt(ratelimit_take(r, 7, 1400), 0, "not yet after 400 ms");
    cr_assert_eq(ratelimit_take(r, 7, 1501), 0, "one token after 500 ms");
    cr_assert_gt(ratelimit_take(r, 7, 1501), 0);
    ratelimit_free(r);
}

Test(ratelimit, a_bucket_never_holds_more_than_the_burst)
{
    ratelimit *r = ratelimit_create(100, 2, 16);
    cr_assert_eq(ratelimit_take(r, 1, 0), 0);
    /* An hour of quiet gives back the burst, not 360,000 tokens. */
    cr_assert_eq(ratelimit_take(r, 1, 3600000), 0);
    cr_assert_eq(ratelimit_take(r, 1, 3600000), 0);
    cr_assert_gt(ratelimit_take(r, 1, 3600000), 0);
    ratelimit_free(r);
}

Test(ratelimit, one_flooding_buyer_does_not_throttle_others)
{
    ratelimit *r = ratelimit_create(1, 2, 1024);
    for (int i = 0; i < 100; i++)
        ratelimit_take(r, 42, 5000);
    cr_assert_gt(ratelimit_take(r, 42, 5000), 0);
    for (int64_t buyer = 1; buyer <= 2000; buyer++)
        if (buyer != 42)
            cr_assert_eq(ratelimit_take(r, buyer, 5000), 0, "buyer %lld was throttled",
                         (long long)buyer);
    ratelimit_free(r);
}

Test(ratelimit, past_its_capacity_it_forgets_the_fullest_bucket_first)
{
    ratelimit *r = ratelimit_create(1, 1, 4); /* 64 sets of 4: 256 buyers at once */
    cr_assert_eq(ratelimit_take(r, 9, 0), 0);
    cr_assert_gt(ratelimit_take(r, 9, 0), 0);
    /* Thousands of other buyers later, 9 may have been forgotten: then it
     * gets a fresh bucket (lenient), never a stranger's empty one. */
    for (int64_t buyer = 100; buyer < 5000; buyer++)
        cr_assert_eq(ratelimit_take(r, buyer, 10), 0, "buyer %lld", (long long)buyer);
    ratelimit_free(r);
}
