/* pow_terms.h: an item's proof-of-work terms (issue 28: pow_maxnumber, the
 * difficulty of ALTCHA's challenges, and pow_ttl_s, how long one lives)
 * read from a create's or a reset's body, and written into the item's view.
 * Pure. */
#ifndef SECKILL_POW_TERMS_H
#define SECKILL_POW_TERMS_H

#include <stdint.h>

#include <jansson.h>

#include "status.h"

#define POW_MAXNUMBER_MIN 1000
#define POW_MAXNUMBER_MAX 10000000
#define POW_TTL_DEFAULT_S 300
#define POW_TTL_MAX_S 86400

typedef struct pow_terms {
    int64_t maxnumber; /* 0: no proof-of-work asked */
    int ttl_s;
    int given_maxnumber, given_ttl; /* the body named them (a reset keeps the others) */
} pow_terms;

/* Reads "pow_maxnumber" (an integer from 1,000 to 10^7, or null: none) and
 * "pow_ttl_s" (1..86400, default 300) of root into *t. SK_OK, or
 * SK_INVALID with *why naming the field. */
sk_status pow_terms_parse(json_t *root, pow_terms *t, const char **why);

/* Sets "pow_maxnumber" (null when none) and "pow_ttl_s" of an item's JSON
 * object. Returns 0, or -1 when out of memory. */
int pow_terms_json(json_t *item, const pow_terms *t);

#endif
