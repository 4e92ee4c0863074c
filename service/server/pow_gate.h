/* pow_gate.h: proof-of-work on joining a room and on entering a draw (issue
 * 28), for an item with pow_maxnumber: the challenge route, and the one
 * check both handlers make before anything else. Each instance keeps the
 * items' terms (at most POW_GATE_FRESH_MS old, forgotten at a new round)
 * and the challenges' key, derived from the room master (pow.h). */
#ifndef SECKILL_POW_GATE_H
#define SECKILL_POW_GATE_H

#include <stdint.h>

#include "http_server.h"
#include "pool_session.h"
#include "status.h"

struct app;

typedef struct pow_gate pow_gate;

#define POW_GATE_FRESH_MS 1000

pow_gate *pow_gate_create(void);
void pow_gate_free(pow_gate *g); /* NULL: no-op */

/* A new round of item began (or all is stale: item 0): its terms are read
 * again. */
void pow_gate_forget(pow_gate *g, int64_t item);

/* GET /api/v1/items/{id}/challenge for user: deferred to the pool; 200 the
 * challenge as ALTCHA's widget takes it ({"algorithm", "challenge",
 * "maxnumber", "salt", "signature"}), 409 pow_not_required for an item
 * without pow_maxnumber, 404 for none. */
void pow_gate_challenge(struct app *a, http_exchange *ex, int64_t item, int64_t user);

/* The check of a join or an entry of item by user carrying altcha (NULL or
 * "": none), on a pool thread: SK_OK when the item asks no proof-of-work
 * (or does not exist: the handler says so), or when the solution holds and
 * had not entered before (it is marked used now, in the item's slot, until
 * its challenge expires); else SK_POW_* or SK_BACKEND_DOWN. */
sk_status pow_gate_check(struct app *a, pool_session *s, int64_t item, int64_t user,
                         const char *altcha);

/* pow_gate_check, answering ex with the refusal: 1 when it passed, 0 when
 * ex was answered. */
int pow_gate_pass(struct app *a, pool_session *s, http_exchange *ex, int64_t item, int64_t user,
                  const char *altcha);

#endif
