/* cors.h: the origins whose pages may call the buyer routes from a browser
 * (the key cors_origins: "https://shop.example,https://m.shop.example").
 * An origin is written as browsers send it in the Origin header,
 * scheme://host[:port] and nothing else, so that an allowed origin is one
 * string equal to a configured one. Pure: the caller brings the strings. */
#ifndef SECKILL_CORS_H
#define SECKILL_CORS_H

#include <stddef.h>

/* Origins a list holds at most, and the longest one. */
#define CORS_ORIGINS_MAX 16
#define CORS_ORIGIN_MAX 255

/* Checks a comma-separated list of origins ("": none): each one http:// or
 * https://, a lower-case host name, an IPv4 address or a bracketed IPv6
 * one, an optional port 1..65535 that is not the scheme's default, and no
 * path, query, user or trailing slash. Returns 0, or -1 with why naming the
 * entry and what is wrong. */
int cors_check_list(const char *list, char *why, size_t whylen);

/* Whether origin (an Origin header's value; NULL: none) is one of the list
 * (spaces around commas ignored); compared exactly. Returns 1 or 0. */
int cors_allowed(const char *list, const char *origin);

#endif
