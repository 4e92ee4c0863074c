/* validate.c: number parsing without strtol's leniency (spaces, "+", hex),
 * and the comma-separated lists of the config. */
#include "validate.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int validate_i64(const char *s, size_t len, int64_t *out)
{
    if (!s || len == 0)
        return -1;
    size_t i = 0;
    int negative = s[0] == '-';
    if (negative && ++i == len)
        return -1;
    if (s[i] == '0' && len - i > 1)
        return -1;
    uint64_t limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t n = 0;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        unsigned digit = (unsigned)(s[i] - '0');
        if (n > (limit - digit) / 10)
            return -1;
        n = n * 10 + digit;
    }
    *out = negative ? (int64_t)(0 - n) : (int64_t)n;
    return 0;
}

int validate_id(const char *s, size_t len, int64_t *out)
{
    int64_t n;
    if (validate_i64(s, len, &n) < 0 || n <= 0)
        return -1;
    *out = n;
    return 0;
}

static int is_blank(char ch)
{
    return ch == ' ' || ch == '\t';
}

int validate_real(const char *s, size_t len, double *out)
{
    char buf[64];
    if (!s || len == 0 || len >= sizeof(buf))
        return -1;
    for (size_t i = 0; i < len; i++)
        if (!strchr("0123456789.eE+-", s[i]))
            return -1; /* strtod would take spaces, hex, "inf" and "nan" */
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (end != buf + len || errno != 0 || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

int validate_list_blank(const char *list)
{
    while (is_blank(*list))
        list++;
    return *list == '\0';
}

int validate_list_next(const char **p, const char **start, size_t *len)
{
    if (!*p)
        return 0;
    const char *end = *p + strcspn(*p, ",");
    const char *b = *p, *e = end;
    while (b < e && is_blank(*b))
        b++;
    while (e > b && is_blank(e[-1]))
        e--;
    *start = b;
    *len = (size_t)(e - b);
    *p = *end ? end + 1 : NULL;
    return 1;
}

int validate_visible(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] <= ' ' || s[i] > '~')
            return 0;
    return 1;
}

int validate_page(const char *after, const char *limit, int64_t max, int64_t *after_out,
                  int64_t *limit_out)
{
    *after_out = 0;
    *limit_out = max;
    if (after && (validate_i64(after, strlen(after), after_out) < 0 || *after_out < 0))
        return -1;
    return limit && (validate_id(limit, strlen(limit), limit_out) < 0 || *limit_out > max) ? -1 : 0;
}
