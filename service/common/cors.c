/* cors.c: an origin is checked once, at load, for the shape a browser
 * gives it; each request then compares strings. */
#include "cors.h"

#include <stdio.h>
#include <string.h>

#include "validate.h"

static int is_host_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.';
}

/* One origin of len bytes at s: NULL when sound, else what is wrong. */
static const char *origin_problem(const char *s, size_t len)
{
    size_t scheme;
    const char *default_port;
    if (len > CORS_ORIGIN_MAX)
        return "is longer than 255 characters";
    if (len >= 7 && memcmp(s, "http://", 7) == 0)
        scheme = 7, default_port = "80";
    else if (len >= 8 && memcmp(s, "https://", 8) == 0)
        scheme = 8, default_port = "443";
    else
        return "must start with http:// or https://";
    const char *host = s + scheme, *end = s + len;
    const char *h = host;
    if (h < end && *h == '[') {
        while (h < end && *h != ']') {
            if (!(*h == '[' || *h == ':' || *h == '.' || (*h >= '0' && *h <= '9') ||
                  (*h >= 'a' && *h <= 'f')))
                return "has an IPv6 address that is not lower-case hex in brackets";
            h++;
        }
        if (h == end)
            return "has an IPv6 address without its closing bracket";
        h++;
    } else {
        while (h < end && is_host_char(*h))
            h++;
    }
    if (h < end && *h >= 'A' && *h <= 'Z')
        return "must have its host in lower case, as browsers send it";
    if (h == host)
        return "has no host";
    if (h < end && *h == ':') {
        const char *port = h + 1;
        int64_t n;
        if (validate_id(port, (size_t)(end - port), &n) < 0 || n > 65535)
            return "has a port that is not 1 to 65535";
        if ((size_t)(end - port) == strlen(default_port) &&
            memcmp(port, default_port, strlen(default_port)) == 0)
            return "names its scheme's default port, which browsers leave out";
        return NULL;
    }
    if (h < end)
        return "must be scheme://host[:port] alone: no path, query, user or trailing slash";
    return NULL;
}

int cors_check_list(const char *list, char *why, size_t whylen)
{
    const char *p = list, *s;
    size_t len;
    int n = 0;
    if (validate_list_blank(list))
        return 0;
    while (validate_list_next(&p, &s, &len)) {
        n++;
        const char *problem = n > CORS_ORIGINS_MAX ? "is one too many (16 at most)"
                              : len == 0           ? "is empty"
                                                   : origin_problem(s, len);
        if (problem) {
            snprintf(why, whylen, "origin %d ('%.*s') %s", n, (int)(len > 80 ? 80 : len), s,
                     problem);
            return -1;
        }
    }
    return 0;
}

int cors_allowed(const char *list, const char *origin)
{
    if (!list || !origin || !*origin)
        return 0;
    size_t olen = strlen(origin);
    const char *p = list, *s;
    size_t len;
    while (validate_list_next(&p, &s, &len))
        if (len == olen && memcmp(s, origin, len) == 0)
            return 1;
    return 0;
}
