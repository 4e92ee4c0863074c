/* validate.h: strict parsing of the numbers and lists that come from outside. */
#ifndef SECKILL_VALIDATE_H
#define SECKILL_VALIDATE_H

#include <stddef.h>
#include <stdint.h>

/* Parses exactly len bytes of decimal text ("-"? digits, no spaces, no "+",
 * no leading zeros beyond "0") into *out. Returns 0, or -1 when the text is
 * not such a number or overflows int64. */
int validate_i64(const char *s, size_t len, int64_t *out);

/* As validate_i64, and the number must be an id: 1 .. INT64_MAX. */
int validate_id(const char *s, size_t len, int64_t *out);

/* The page an audit asks for: ?after= (a position, 0 or more; NULL: 0)
 * and ?limit= (1..max; NULL: max) into *after and *limit. Returns 0, or -1
 * when either is not such a number. */
int validate_page(const char *after, const char *limit, int64_t max, int64_t *after_out,
                  int64_t *limit_out);

/* Whether list holds nothing but spaces and tabs: a list of no entry. */
int validate_list_blank(const char *list);

/* The next entry of a comma-separated list from *p, trimmed of spaces and
 * tabs: its start and *len its length (0: an empty entry). *p moves past its
 * comma, to NULL after the last entry. Returns 0 once *p is NULL. */
int validate_list_next(const char **p, const char **start, size_t *len);

/* Whether the len bytes at s are all visible ASCII: no space, no control
 * character, nothing past '~' (a token's or a URL's rule). */
int validate_visible(const char *s, size_t len);

/* s[0..len) as a finite real number in decimal ("2.5", "-1", "1e-3"; no
 * spaces, no hex, no "inf" or "nan"). Returns 0 with *out, or -1. */
int validate_real(const char *s, size_t len, double *out);

#endif
