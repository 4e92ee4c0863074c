/* json_member.c: one member of a request body read and checked. */
#include "json_member.h"

int json_member_int(json_t *obj, const char *key, int64_t min, int64_t max, int64_t *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
        return -1;
    *out = json_integer_value(v);
    return 1;
}
