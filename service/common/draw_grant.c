/* draw_grant.c: a draw order's two steps after PostgreSQL's decision: its
 * units taken in Redis, then granted_at. */
#include "draw_grant.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "log.h"
#include "pg_session.h"

/* One script call for the orders o[0..n) (n <= DRAW_GRANT_BATCH) of one
 * item, on its keys. 0 when Redis confirmed them, else -1. */
static int grant_call(redis_nodes *rn, const scripts *sc, const order_ref *o, size_t n,
                      const char *component)
{
    char keys[3][KEYS_MAX], args[DRAW_GRANT_BATCH][4][24];
    const char *ka[3 + 4 * DRAW_GRANT_BATCH];
    keys_item_state(keys[0], KEYS_MAX, o->item_id);
    keys_item_buyers(keys[1], KEYS_MAX, o->item_id);
    keys_item_granted(keys[2], KEYS_MAX, o->item_id);
    for (int k = 0; k < 3; k++)
        ka[k] = keys[k];
    for (size_t i = 0; i < n; i++)
        order_ref_args(&o[i], args[i], &ka[3 + 4 * i]);
    redisReply *r = order_refs_script(rn, sc, SCRIPT_DRAW_GRANT, 3, (int)(4 * n), ka, 3, o->item_id,
                                      "grants", component);
    int confirmed = r != NULL;
    freeReplyObject(r);
    return confirmed ? 0 : -1;
}

/* One call may grant a and b: one item (a draw item has one segment). */
static int same_item(const order_ref *a, const order_ref *b)
{
    return a->item_id == b->item_id;
}

int draw_grant_redis(redis_nodes *rn, const scripts *sc, const order_ref *o, size_t n,
                     unsigned char *done, const char *component)
{
    return order_refs_runs(rn, sc, o, n, DRAW_GRANT_BATCH, same_item, grant_call, done, component);
}

/* Sets granted_at of the orders with done[i] set. Returns 0 or -1 (logged). */
static int grant_mark(PGconn *pg, const order_ref *o, const unsigned char *done, size_t n,
                      const char *component)
{
    return order_refs_mark(pg, o, done, n,
                           "UPDATE orders SET granted_at = now() "
                           "WHERE id = ANY($1::bigint[]) AND granted_at IS NULL",
                           "grants", component);
}

int draw_grant_units(redis_nodes *rn, PGconn *pg, const scripts *sc, const order_ref *o, size_t n,
                     unsigned char *done, const char *component)
{
    static const order_refs_step step = {draw_grant_redis, grant_mark};
    return order_refs_steps(&step, rn, pg, sc, o, n, done, component);
}

/* Owed grants read at a time. */
#define OWED_BATCH 1024

int64_t draw_grant_owed(redis_nodes *rn, PGconn *pg, const scripts *sc, int64_t item,
                        const char *component)
{
    order_ref *o = malloc(OWED_BATCH * sizeof(*o));
    unsigned char *done = malloc(OWED_BATCH);
    int64_t granted = 0;
    int rc = o && done ? 0 : -1;
    /* Each pass grants what it read, or stops: a pass that confirms
     * nothing would read the same rows again. */
    while (rc == 0) {
        PGresult *res = pg_exec_id(pg,
                                   "SELECT " ORDER_REF_COLUMNS " FROM orders "
                                   "WHERE draw_position IS NOT NULL AND granted_at IS NULL "
                                   "AND ($1::bigint <= 0 OR item_id = $1) "
                                   "ORDER BY item_id, id LIMIT 1024",
                                   item);
        int n = PQresultStatus(res) == PGRES_TUPLES_OK
                    ? order_refs_read(res, o, OWED_BATCH, component)
                    : -1;
        if (n < 0)
            log_msg(LOG_WARN, component, "postgresql: reading owed grants: %s",
                    PQresultErrorMessage(res));
        PQclear(res);
        if (n <= 0) {
            rc = n;
            break;
        }
        rc = draw_grant_units(rn, pg, sc, o, (size_t)n, done, component) == 0 ? 0 : -1;
        if (rc == 0)
            granted += n;
        if (n < OWED_BATCH)
            break;
    }
    free(o);
    free(done);
    return rc < 0 ? -1 : granted;
}
