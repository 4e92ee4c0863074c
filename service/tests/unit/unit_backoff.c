/* unit_backoff.c: the retry loops' back-off doubles from 50 ms up to its
 * ceiling and starts over after a success. */
#include <stdatomic.h>
#include <time.h>

#include <criterion/criterion.h>

#include "backoff.h"

Test(backoff, doubles_from_the_first_delay_up_to_the_ceiling)
{
    int64_t want[] = {50, 100, 200, 400, 800, 1000, 1000};
    int64_t d = 0;
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        d = backoff_next(d, 1000);
        cr_expect_eq(d, want[i], "step %zu: %lld", i, (long long)d);
    }
    cr_expect_eq(backoff_next(0, 1000), BACKOFF_MIN_MS, "after a success it starts over");
    cr_expect_eq(backoff_next(0, 10), 10, "a ceiling below the first delay wins");
}

Test(backoff, counted_failures_double_from_their_own_first_delay)
{
    /* The purchase path's redirects: 10 ms, doubling to 160 ms. */
    int64_t want[] = {10, 10, 20, 40, 80, 160, 160, 160};
    for (int n = 0; n < (int)(sizeof(want) / sizeof(want[0])); n++)
        cr_expect_eq(backoff_after(n, 10, 160), want[n], "failure %d: %lld", n,
                     (long long)backoff_after(n, 10, 160));
    int64_t d = 0;
    for (int n = 1; n <= 8; n++) {
        d = backoff_next(d, 800);
        cr_expect_eq(backoff_after(n, BACKOFF_MIN_MS, 800), d, "the same rule as backoff_next");
    }
    cr_expect_eq(backoff_after(1, 500, 100), 100, "a ceiling below the first delay wins");
}

static int64_t slept_ms(int64_t ms, const atomic_int *stop)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    backoff_sleep_ms(ms, stop);
    clock_gettime(CLOCK_MONOTONIC, &b);
    return (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
}

Test(backoff, a_sleep_lasts_its_time_and_a_stop_cuts_it_short)
{
    atomic_int stop;
    atomic_init(&stop, 0);
    cr_expect_geq(slept_ms(120, NULL), 120, "without a stop flag it sleeps its whole time");
    cr_expect_geq(slept_ms(120, &stop), 120, "a flag never raised does not cut it short");
    atomic_store(&stop, 1);
    /* A raised flag returns before the first nap: far below the 10 s asked. */
    cr_expect_lt(slept_ms(10000, &stop), 5000, "a stop request ends the sleep");
}
