/* unit_rfc3339.c: the sale window's time text, at its edges. */
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "rfc3339.h"

static int parse(const char *s, int64_t *ms)
{
    return rfc3339_parse(s, strlen(s), ms);
}

Test(rfc3339, utc_times_parse_to_unix_ms)
{
    int64_t ms = -1;
    cr_assert_eq(parse("1970-01-01T00:00:00.001Z", &ms), 0);
    cr_assert_eq(ms, 1);
    cr_assert_eq(parse("2026-11-22T20:00:00Z", &ms), 0);
    cr_assert_eq(ms, 1795377600000LL);
    cr_assert_eq(parse("2000-02-29T12:34:56.789Z", &ms), 0);
    cr_assert_eq(ms, 951827696789LL);
    cr_assert_eq(parse("2026-11-22t20:00:00z", &ms), 0, "lower-case T and Z are RFC 3339 too");
}

Test(rfc3339, offsets_and_fractions_count)
{
    int64_t utc, east, west, frac;
    cr_assert_eq(parse("2026-11-22T20:00:00Z", &utc), 0);
    cr_assert_eq(parse("2026-11-23T04:00:00+08:00", &east), 0);
    cr_assert_eq(parse("2026-11-22T15:30:00-04:30", &west), 0);
    cr_assert_eq(east, utc);
    cr_assert_eq(west, utc);
    cr_assert_eq(parse("2026-11-22T20:00:00.25Z", &frac), 0);
    cr_assert_eq(frac, utc + 250);
    cr_assert_eq(parse("2026-11-22T20:00:00.123999Z", &frac), 0, "digits past ms are cut");
    cr_assert_eq(frac, utc + 123);
}

Test(rfc3339, what_is_not_a_time_is_refused)
{
    const char *bad[] = {"",
                         "2026-11-22",
                         "2026-11-22 20:00:00Z",
                         "2026-11-22T20:00Z",
                         "2026-11-22T20:00:00",
                         "2026-11-22T20:00:00.Z",
                         "2026-13-01T00:00:00Z",
                         "2026-02-29T00:00:00Z",
                         "1900-02-29T00:00:00Z",
                         "2026-11-31T00:00:00Z",
                         "2026-11-22T24:00:00Z",
                         "2026-11-22T23:59:60Z",
                         "2026-11-22T20:00:00+8:00",
                         "2026-11-22T20:00:00+24:00",
                         "2026-11-22T20:00:00Zjunk",
                         "1969-12-31T23:59:59Z",
                         "+2026-11-22T20:00:00Z",
                         "１９７０-01-01T00:00:00Z"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t ms = 7;
        cr_expect_eq(parse(bad[i], &ms), -1, "%s was taken", bad[i]);
        cr_expect_eq(ms, 7, "%s wrote the result", bad[i]);
    }
    int64_t ms;
    cr_assert_eq(rfc3339_parse("2026-11-22T20:00:00Z\0", 21, &ms), -1, "a NUL byte is not a time");
    cr_assert_eq(parse("1970-01-01T00:00:00+00:01", &ms), -1, "before the epoch");
    cr_assert_eq(parse("1970-01-01T00:00:00Z", &ms), -1, "the epoch is 0: no bound");
}

Test(rfc3339, format_is_utc_and_round_trips)
{
    char buf[RFC3339_MAX];
    cr_assert_eq(rfc3339_format(1795377600000LL, buf, sizeof(buf)), 20);
    cr_assert_str_eq(buf, "2026-11-22T20:00:00Z");
    cr_assert_gt(rfc3339_format(951827696789LL, buf, sizeof(buf)), 0);
    cr_assert_str_eq(buf, "2000-02-29T12:34:56.789Z");
    cr_assert_eq(rfc3339_format(-1, buf, sizeof(buf)), -1);
    cr_assert_eq(rfc3339_format(1795377600000LL, buf, 20), -1, "no room for the terminator");
    /* Every day of four centuries, at an odd time of day, both ways. */
    for (int64_t day = 0; day < 146097; day += 1) { /* the first at 12:34:56.789 */
        int64_t ms = day * 86400000LL + 45296789, back = -1;
        int n = rfc3339_format(ms, buf, sizeof(buf));
        cr_assert_gt(n, 0);
        cr_assert_eq(parse(buf, &back), 0, "%s", buf);
        cr_assert_eq(back, ms, "%s", buf);
    }
    int64_t last;
    cr_assert_eq(parse("9999-12-31T23:59:59.999Z", &last), 0);
    cr_assert_gt(rfc3339_format(last, buf, sizeof(buf)), 0);
    cr_assert_str_eq(buf, "9999-12-31T23:59:59.999Z");
    cr_assert_eq(rfc3339_format(last + 1, buf, sizeof(buf)), -1);
}
