/* webhook_endpoints.c: the config's list of webhook endpoints, parsed. */
#include "webhook_endpoints.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "validate.h"

/* The next word of [*s, end) after spaces: its start, *len its length;
 * *s moves past it. */
static const char *word(const char **s, const char *end, size_t *len)
{
    while (*s < end && (**s == ' ' || **s == '\t'))
        (*s)++;
    const char *w = *s;
    while (*s < end && **s != ' ' && **s != '\t')
        (*s)++;
    *len = (size_t)(*s - w);
    return w;
}

/* One entry [s, end), the pos-th (from 1), into *e. 0 or -1 with why. */
static int parse_entry(const char *s, const char *end, size_t pos, webhook_endpoint *e, char *why,
                       size_t whylen)
{
    size_t ulen, slen, rest;
    const char *url = word(&s, end, &ulen);
    const char *secret = word(&s, end, &slen);
    word(&s, end, &rest);
    if (ulen == 0 || slen == 0 || rest != 0) {
        snprintf(why, whylen, "entry %zu: expected \"<url> <secret>\"", pos);
        return -1;
    }
    int scheme = (ulen > 7 && strncasecmp(url, "http://", 7) == 0) ||
                 (ulen > 8 && strncasecmp(url, "https://", 8) == 0);
    if (!scheme || ulen >= WEBHOOK_URL_MAX || !validate_visible(url, ulen)) {
        snprintf(why, whylen, "entry %zu: the URL must be http:// or https://, at most %d bytes",
                 pos, WEBHOOK_URL_MAX - 1);
        return -1;
    }
    if (slen < WEBHOOK_SECRET_MIN || slen > WEBHOOK_SECRET_MAX || !validate_visible(secret, slen)) {
        snprintf(why, whylen, "entry %zu: the secret must be %d to %d visible characters", pos,
                 WEBHOOK_SECRET_MIN, WEBHOOK_SECRET_MAX);
        return -1;
    }
    memcpy(e->url, url, ulen);
    e->url[ulen] = '\0';
    memcpy(e->secret, secret, slen);
    e->secret[slen] = '\0';
    return 0;
}

int webhook_endpoints_parse(const char *list, webhook_endpoint *out, size_t cap, char *why,
                            size_t whylen)
{
    size_t n = 0, len;
    const char *p = list ? list : "", *s;
    if (validate_list_blank(p))
        return 0;
    while (validate_list_next(&p, &s, &len)) {
        /* A comma that ends the list ends it ("a b,"); an empty last entry
         * after it ("a b,  ") is an entry that is wrong. s[-1]: a last entry
         * follows a comma (a list of one blank entry was refused above). */
        if (len == 0 && !p && s[-1] == ',')
            break;
        if (n == cap || n == WEBHOOK_ENDPOINTS_MAX) {
            snprintf(why, whylen, "at most %d endpoints", WEBHOOK_ENDPOINTS_MAX);
            return -1;
        }
        if (parse_entry(s, s + len, n + 1, &out[n], why, whylen) < 0)
            return -1;
        for (size_t i = 0; i < n; i++)
            if (strcmp(out[i].url, out[n].url) == 0) {
                snprintf(why, whylen, "entry %zu: the same URL as entry %zu", n + 1, i + 1);
                return -1;
            }
        n++;
    }
    return (int)n;
}

int webhook_endpoints_check(const char *list, char *why, size_t whylen)
{
    webhook_endpoint *e = malloc(WEBHOOK_ENDPOINTS_MAX * sizeof(*e));
    if (!e) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    int n = webhook_endpoints_parse(list, e, WEBHOOK_ENDPOINTS_MAX, why, whylen);
    /* The secrets leave no copy behind. */
    memset(e, 0, WEBHOOK_ENDPOINTS_MAX * sizeof(*e));
    free(e);
    return n < 0 ? -1 : 0;
}
