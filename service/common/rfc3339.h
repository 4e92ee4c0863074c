/* rfc3339.h: the sale window's times as JSON carries them, RFC 3339 text
 * ("2026-11-22T20:00:00Z", "2026-11-23T04:00:00.250+08:00") to and from Unix
 * milliseconds. Pure; no time zone database, no locale. */
#ifndef SECKILL_RFC3339_H
#define SECKILL_RFC3339_H

#include <stddef.h>
#include <stdint.h>

/* Enough for "YYYY-MM-DDTHH:MM:SS.mmmZ" and its terminator. */
#define RFC3339_MAX 32

/* Parses exactly len bytes of an RFC 3339 date-time (a "T" or "t" between
 * date and time, seconds required, an optional fraction of which the first
 * three digits count, "Z" or an offset +HH:MM / -HH:MM) into Unix ms.
 * After 1970-01-01T00:00:00Z (0 means "no bound" to the callers) and
 * before the year 10000. Returns 0, or -1 when the text is not such a
 * time or names a day that does not exist (February 30, a leap second). */
int rfc3339_parse(const char *s, size_t len, int64_t *ms);

/* Writes ms (0 .. the end of 9999) as UTC text, with ".mmm" only when the
 * milliseconds are not zero. Returns the length, or -1 when out of range or
 * buf is too small. */
int rfc3339_format(int64_t ms, char *buf, size_t len);

#endif
