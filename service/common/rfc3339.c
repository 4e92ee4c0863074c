/* rfc3339.c: civil dates to days and back by Howard Hinnant's algorithms
 * (days_from_civil, civil_from_days), exact over the proleptic Gregorian
 * calendar and free of timegm()'s dependence on the process's time zone. */
#include "rfc3339.h"

#include <stdio.h>

#define MS_PER_DAY 86400000LL
/* 9999-12-31T23:59:59.999Z + 1 ms */
#define RFC3339_END_MS 253402300800000LL

static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static int days_in_month(int64_t y, int m)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : days[m - 1];
}

/* n decimal digits at s[*at] into *out; advances *at. */
static int digits(const char *s, size_t len, size_t *at, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++, (*at)++) {
        if (*at >= len || s[*at] < '0' || s[*at] > '9')
            return -1;
        v = v * 10 + (s[*at] - '0');
    }
    *out = v;
    return 0;
}

static int expect(const char *s, size_t len, size_t *at, char c)
{
    if (*at >= len || s[*at] != c)
        return -1;
    (*at)++;
    return 0;
}

int rfc3339_parse(const char *s, size_t len, int64_t *ms)
{
    size_t at = 0;
    int y, mo, d, h, mi, sec, frac = 0;
    if (digits(s, len, &at, 4, &y) < 0 || expect(s, len, &at, '-') < 0 ||
        digits(s, len, &at, 2, &mo) < 0 || expect(s, len, &at, '-') < 0 ||
        digits(s, len, &at, 2, &d) < 0)
        return -1;
    if (at >= len || (s[at] != 'T' && s[at] != 't'))
        return -1;
    at++;
    if (digits(s, len, &at, 2, &h) < 0 || expect(s, len, &at, ':') < 0 ||
        digits(s, len, &at, 2, &mi) < 0 || expect(s, len, &at, ':') < 0 ||
        digits(s, len, &at, 2, &sec) < 0)
        return -1;
    if (at < len && s[at] == '.') {
        at++;
        size_t first = at;
        for (int scale = 100; at < len && s[at] >= '0' && s[at] <= '9'; at++, scale /= 10)
            frac += (s[at] - '0') * scale;
        if (at == first)
            return -1;
    }
    int offset_min = 0;
    if (at < len && (s[at] == 'Z' || s[at] == 'z')) {
        at++;
    } else if (at < len && (s[at] == '+' || s[at] == '-')) {
        int sign = s[at++] == '-' ? -1 : 1, oh, om;
        if (digits(s, len, &at, 2, &oh) < 0 || expect(s, len, &at, ':') < 0 ||
            digits(s, len, &at, 2, &om) < 0 || oh > 23 || om > 59)
            return -1;
        offset_min = sign * (oh * 60 + om);
    } else {
        return -1;
    }
    if (at != len || y < 1970 || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 ||
        mi > 59 || sec > 59)
        return -1;
    int64_t t = days_from_civil(y, mo, d) * MS_PER_DAY +
                ((int64_t)h * 3600 + mi * 60 + sec - (int64_t)offset_min * 60) * 1000 + frac;
    /* 0 stands for "no bound" wherever a time is kept: the epoch itself is
     * not a time one can give. */
    if (t <= 0 || t >= RFC3339_END_MS)
        return -1;
    *ms = t;
    return 0;
}

int rfc3339_format(int64_t ms, char *buf, size_t len)
{
    if (ms < 0 || ms >= RFC3339_END_MS)
        return -1;
    int64_t days = ms / MS_PER_DAY, in_day = ms % MS_PER_DAY, y;
    int m, d;
    civil_from_days(days, &y, &m, &d);
    int s = (int)(in_day / 1000), milli = (int)(in_day % 1000);
    int n = milli ? snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", (int)y, m, d,
                             s / 3600, s / 60 % 60, s % 60, milli)
                  : snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02dZ", (int)y, m, d, s / 3600,
                             s / 60 % 60, s % 60);
    return n < 0 || (size_t)n >= len ? -1 : n;
}
