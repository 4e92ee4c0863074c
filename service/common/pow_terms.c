/* pow_terms.c: the proof-of-work terms of an item's body, and their JSON. */
#include "pow_terms.h"

#include <string.h>

sk_status pow_terms_parse(json_t *root, pow_terms *t, const char **why)
{
    json_t *max = json_object_get(root, "pow_maxnumber");
    json_t *ttl = json_object_get(root, "pow_ttl_s");
    memset(t, 0, sizeof(*t));
    t->ttl_s = POW_TTL_DEFAULT_S;
    t->given_maxnumber = max != NULL;
    t->given_ttl = ttl != NULL;
    if (max && !json_is_null(max) &&
        (!json_is_integer(max) || json_integer_value(max) < POW_MAXNUMBER_MIN ||
         json_integer_value(max) > POW_MAXNUMBER_MAX)) {
        *why = "pow_maxnumber must be an integer from 1000 to 10000000 (the proof-of-work's "
               "difficulty), or null for none";
        return SK_INVALID;
    }
    if (ttl && (!json_is_integer(ttl) || json_integer_value(ttl) < 1 ||
                json_integer_value(ttl) > POW_TTL_MAX_S)) {
        *why = "pow_ttl_s must be an integer from 1 to 86400 (seconds a challenge lives)";
        return SK_INVALID;
    }
    if (json_is_integer(max))
        t->maxnumber = json_integer_value(max);
    if (ttl)
        t->ttl_s = (int)json_integer_value(ttl);
    return SK_OK;
}

int pow_terms_json(json_t *item, const pow_terms *t)
{
    return json_object_set_new(item, "pow_maxnumber",
                               t->maxnumber > 0 ? json_integer(t->maxnumber) : json_null()) < 0 ||
                   json_object_set_new(item, "pow_ttl_s", json_integer(t->ttl_s)) < 0
               ? -1
               : 0;
}
