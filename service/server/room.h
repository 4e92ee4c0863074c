/* room.h: the waiting room's routes (issue 27): join, the buyer's standing
 * and admission, and the published order. A poll from a buyer far behind
 * the admitted frontier is answered from the instance's memory
 * (room_cache.h); the rest on the pool, over one script call each
 * (lua/room_poll.lua), joins one call a batch (room_joins.h,
 * lua/room_join.lua). */
#ifndef SECKILL_ROOM_H
#define SECKILL_ROOM_H

#include <stdint.h>

#include "app.h"
#include "http_server.h"
#include "router.h"

/* Answers ex, a request of route ROUTE_QUEUE_JOIN, ROUTE_QUEUE_POLL (user:
 * the buyer, as identified for a purchase) or ROUTE_QUEUE_AUDIT (user 0) of
 * item: inline when memory knows, else deferred to the pool. A join of an
 * item with pow_maxnumber carries altcha, a solution (pow_gate.h; NULL:
 * none), checked before anything else. */
void room_start(app *a, http_exchange *ex, route_id route, int64_t item, int64_t user,
                const char *altcha);

/* The admission a purchase of item by user carries (token: NULL or "" for
 * none), checked in memory (room_order.h): SK_OK with *round and *expiry_ms
 * the token's, or the refusal (SK_ADMISSION_*; SK_BACKEND_DOWN while the
 * master key is not loaded yet). */
sk_status room_check_admission(app *a, int64_t item, int64_t user, const char *token,
                               int64_t *round, int64_t *expiry_ms);

/* Reads the master key that signs admission tokens into memory, on the pool
 * (app_start calls it; a purchase again while it is missing). */
void room_load_master(app *a);

/* The buyer used their admission of item: it stops being active (on the
 * pool, best effort). */
void room_admission_used(app *a, int64_t item, int64_t round, int64_t user);

#endif
