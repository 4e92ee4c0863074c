/* unit_backoff.c: the retry loops' back-off doubles from 50 ms up to its
 * ceiling and starts over after a success. */
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
