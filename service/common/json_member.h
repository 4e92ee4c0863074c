/* json_member.h: one member of a request body read and checked, for every
 * parser of bodies (json_io.c, room_terms.c). Pure. */
#ifndef SECKILL_JSON_MEMBER_H
#define SECKILL_JSON_MEMBER_H

#include <stdint.h>

#include <jansson.h>

/* obj's member key as an integer in [min, max] into *out. Returns 1 when
 * present and valid, 0 when absent (*out untouched), -1 when present but
 * not such an integer (a real, a string, null, out of range). */
int json_member_int(json_t *obj, const char *key, int64_t min, int64_t max, int64_t *out);

#endif
