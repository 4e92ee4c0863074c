/* pow_gate.h: proof-of-work on joining a room and on entering a draw (issue
 * 28), for an item with pow_maxnumber: the challenge route, and the one
 * check both handlers make before anything else. The items' terms and the
 * challenges' key (derived from the room master, pow.h) are kept in the
 * app's pow_cache.h. */
#ifndef SECKILL_POW_GATE_H
#define SECKILL_POW_GATE_H

#include <stddef.h>
#include <stdint.h>

#include "app.h"
#include "http_server.h"
#include "pool_session.h"
#include "pow.h"
#include "status.h"

/* GET /api/v1/items/{id}/challenge for user: deferred to the pool; 200 the
 * challenge as ALTCHA's widget takes it ({"algorithm", "challenge",
 * "maxnumber", "salt", "signature"}), 409 pow_not_required for an item
 * without pow_maxnumber, 404 for none. */
void pow_gate_challenge(app *a, http_exchange *ex, int64_t item, int64_t user);

/* A verified solution not yet marked used (pow_gate_verify, pow_gate_check). */
typedef struct pow_gate_mark {
    int64_t item, now_s;
    int needed; /* 0: the item asks no proof-of-work */
    pow_solution got;
} pow_gate_mark;

/* The check of a join or an entry of item by user carrying altcha (NULL or
 * "": none), on a pool thread: SK_OK when the item asks no proof-of-work
 * (or does not exist: the handler says so), or when the solution holds and
 * was not used yet (one EXISTS); else SK_POW_* (SK_POW_REPLAYED for a
 * solution used already) or SK_BACKEND_DOWN. It does not mark the
 * solution: the caller checks what else may refuse the request, then marks
 * it with pow_gate_use (once the entry may be made), so that a refusal
 * does not cost the buyer their work. */
sk_status pow_gate_verify(app *a, pool_session *s, int64_t item, int64_t user, const char *altcha,
                          pow_gate_mark *m);

/* The same without the EXISTS, for a caller whose own Redis call asks
 * whether the solution was used and marks it (a room's join: one script
 * call a batch, lua/room_join.lua, with pow_gate_used_key's key). */
sk_status pow_gate_check(app *a, pool_session *s, int64_t item, int64_t user, const char *altcha,
                         pow_gate_mark *m);

/* The key that marks m's solution used into key (KEYS_MAX), and the
 * seconds it is kept (a second past the challenge's expiry: a solution is
 * refused as expired by then) into *ttl_s. 1, or 0 when m needs no
 * proof-of-work (nothing to mark). */
int pow_gate_used_key(const pow_gate_mark *m, char *key, size_t cap, int64_t *ttl_s);

/* Marks m's solution used: SK_OK the first time (or when none is needed),
 * SK_POW_REPLAYED after, SK_BACKEND_DOWN. */
sk_status pow_gate_use(pool_session *s, const pow_gate_mark *m);

#endif
