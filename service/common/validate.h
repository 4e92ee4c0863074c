/* validate.h: strict parsing of the numbers that come from outside. */
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

#endif
