/* unit_clock.c: clock.c's reads agree with each other, its deadlines carry,
 * and its condition variables wait until a monotonic deadline. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include <criterion/criterion.h>

#include "clock.h"

Test(clock, the_wall_clock_in_seconds_and_milliseconds_is_the_same_time)
{
    int64_t ms = clock_wall_ms(), s = clock_wall_s();
    cr_assert_geq(s, ms / 1000);
    cr_assert_leq(s, ms / 1000 + 1);
    cr_assert_gt(s, 1700000000, "Unix time, not some other epoch: %lld", (long long)s);
}

Test(clock, the_monotonic_clock_never_goes_back)
{
    int64_t last = clock_mono_ms();
    for (int i = 0; i < 1000; i++) {
        int64_t now = clock_mono_ms();
        cr_assert_geq(now, last);
        last = now;
    }
}

Test(clock, a_deadline_lies_its_milliseconds_ahead_with_the_nanoseconds_carried)
{
    struct timespec before = clock_after(CLOCK_MONOTONIC, 0);
    struct timespec later = clock_after(CLOCK_MONOTONIC, 1999);
    struct timespec after = clock_after(CLOCK_MONOTONIC, 0);
    cr_assert(later.tv_nsec >= 0 && later.tv_nsec < 1000000000L, "%ld", later.tv_nsec);
    double ahead = clock_seconds_between(before, later);
    cr_assert_geq(ahead, 1.999);
    cr_assert_leq(ahead, 1.999 + clock_seconds_between(before, after) + 1e-9);
}

Test(clock, a_deadline_in_the_past_borrows_a_second_rather_than_going_negative)
{
    struct timespec now = clock_after(CLOCK_REALTIME, 0);
    struct timespec earlier = clock_after(CLOCK_REALTIME, -1500);
    struct timespec then = clock_after(CLOCK_REALTIME, 0);
    cr_assert(earlier.tv_nsec >= 0 && earlier.tv_nsec < 1000000000L, "%ld", earlier.tv_nsec);
    double back = clock_seconds_between(earlier, now);
    cr_assert_leq(back, 1.5 + 1e-9);
    cr_assert_geq(back, 1.5 - clock_seconds_between(now, then) - 1e-9);
}

Test(clock, seconds_between_counts_whole_and_partial_seconds)
{
    struct timespec a = {10, 900000000L}, b = {12, 100000000L};
    cr_assert_float_eq(clock_seconds_between(a, b), 1.2, 1e-9);
    cr_assert_float_eq(clock_seconds_between(b, a), -1.2, 1e-9);
}

/* On the wall clock's time, a monotonic deadline (seconds since boot) lies
 * decades back and the wait would end at once. */
Test(clock, a_condition_variable_waits_until_its_monotonic_deadline)
{
    pthread_cond_t cond;
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    cr_assert_eq(clock_cond_init(&cond), 0);
    int64_t start = clock_mono_ms();
    struct timespec deadline = clock_after(CLOCK_MONOTONIC, 50);
    pthread_mutex_lock(&mu);
    int rc = 0;
    while (rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&cond, &mu, &deadline);
    pthread_mutex_unlock(&mu);
    cr_assert_geq(clock_mono_ms() - start, 50);
    pthread_cond_destroy(&cond);
}
