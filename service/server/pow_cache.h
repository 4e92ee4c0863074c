/* pow_cache.h: what one server instance keeps for proof-of-work (issue 28,
 * pow_gate.h): each item's terms as last read (fresh for
 * POW_CACHE_FRESH_MS, forgotten at a new round), in a direct-mapped table
 * (an item pushed out is read again: speed, never correctness), and the
 * challenges' key once derived. Thread-safe (one mutex). */
#ifndef SECKILL_POW_CACHE_H
#define SECKILL_POW_CACHE_H

#include <stdint.h>

#include "pow.h"

#define POW_CACHE_FRESH_MS 1000

typedef struct pow_cache pow_cache;

/* An item's proof-of-work terms as read from its row. */
typedef struct pow_item_terms {
    int64_t item;
    int found;         /* the item exists, unarchived */
    int64_t maxnumber; /* 0: no proof-of-work asked */
    int ttl_s;
    int64_t read_mono_ms; /* our monotonic clock when read */
} pow_item_terms;

pow_cache *pow_cache_create(void);
void pow_cache_free(pow_cache *c); /* NULL: no-op */

/* item's terms into *out: 1 when known and fresh at mono_ms, else 0. */
int pow_cache_terms(pow_cache *c, int64_t item, int64_t mono_ms, pow_item_terms *out);
void pow_cache_set_terms(pow_cache *c, const pow_item_terms *t);

/* A new round of item began (or all is stale: item 0): its terms are read
 * again. */
void pow_cache_forget(pow_cache *c, int64_t item);

/* The challenges' key (POW_KEY_LEN bytes) into key: 1, or 0 when not
 * derived yet. */
int pow_cache_key(pow_cache *c, unsigned char *key);
void pow_cache_set_key(pow_cache *c, const unsigned char *key);

#endif
