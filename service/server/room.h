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

#endif
