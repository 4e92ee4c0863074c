/* order_return.c: a return's two steps after PostgreSQL's decision: the
 * units into Redis, then returned_at. */
#include "order_return.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "log.h"

size_t order_refs_read(const PGresult *res, order_ref *out, size_t cap)
{
    size_t rows = (size_t)PQntuples(res);
    size_t n = rows < cap ? rows : cap;
    for (size_t i = 0; i < n; i++) {
        int r = (int)i;
        out[i].id = strtoll(PQgetvalue(res, r, 0), NULL, 10);
        out[i].item_id = strtoll(PQgetvalue(res, r, 1), NULL, 10);
        out[i].round = strtoll(PQgetvalue(res, r, 2), NULL, 10);
        out[i].user_id = strtoll(PQgetvalue(res, r, 3), NULL, 10);
        out[i].quantity = (int)strtol(PQgetvalue(res, r, 4), NULL, 10);
    }
    return n;
}

/* One script call for the orders o[0..n) of one item. 0, or -1. */
static int return_call(redis_nodes *rn, const scripts *sc, const order_ref *o, size_t n,
                       const char *component)
{
    char keys[4][KEYS_MAX], args[ORDER_RETURN_BATCH][4][24];
    const char *ka[4 + 4 * ORDER_RETURN_BATCH];
    int64_t item = o[0].item_id;
    keys_item_state(keys[0], KEYS_MAX, item);
    keys_item_buyers(keys[1], KEYS_MAX, item);
    keys_item_returned(keys[2], KEYS_MAX, item);
    keys_item_given_back(keys[3], KEYS_MAX, item);
    for (int k = 0; k < 4; k++)
        ka[k] = keys[k];
    for (size_t i = 0; i < n; i++) {
        snprintf(args[i][0], 24, "%" PRId64, o[i].id);
        snprintf(args[i][1], 24, "%" PRId64, o[i].round);
        snprintf(args[i][2], 24, "%" PRId64, o[i].user_id);
        snprintf(args[i][3], 24, "%d", o[i].quantity);
        for (int k = 0; k < 4; k++)
            ka[4 + 4 * i + (size_t)k] = args[i][k];
    }
    /* The item's keys share its slot: the call goes to the item's node. */
    redisReply *r = redis_nodes_script(rn, &sc->s[SCRIPT_ORDER_RETURN], 4, (int)(4 * n), ka);
    /* An error reply was logged and is NULL here (redis_nodes_reply). */
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 4) {
        if (r)
            log_msg(LOG_WARN, component, "redis order_return: unexpected reply");
        freeReplyObject(r);
        return -1;
    }
    int64_t round = r->element[0]->integer, changes = r->element[1]->integer;
    int64_t units = r->element[3]->integer;
    freeReplyObject(r);
    if (units > 0)
        order_return_announce(rn, item, round, changes, component);
    return 0;
}

int order_return_announce(redis_nodes *rn, int64_t item, int64_t round, int64_t changes,
                          const char *component)
{
    char event[80];
    snprintf(event, sizeof(event), "return %" PRId64 " %" PRId64 " %" PRId64, item, round, changes);
    redisContext *c = redis_nodes_any(rn);
    redisReply *r = c ? redis_nodes_reply(
                            rn, c, redisCommand(c, "PUBLISH %s %s", KEYS_EVENTS, event), "PUBLISH")
                      : NULL;
    int ok = r && r->type == REDIS_REPLY_INTEGER;
    if (!ok)
        log_msg(LOG_WARN, component, "announcing '%s' failed: servers learn it from Redis", event);
    freeReplyObject(r);
    return ok ? 0 : -1;
}

int order_return_redis(redis_nodes *rn, const scripts *sc, const order_ref *o, size_t n,
                       unsigned char *done, const char *component)
{
    int rc = 0;
    memset(done, 0, n);
    for (size_t at = 0; at < n;) {
        size_t k = 1;
        while (at + k < n && k < ORDER_RETURN_BATCH && o[at + k].item_id == o[at].item_id)
            k++;
        if (return_call(rn, sc, o + at, k, component) == 0)
            memset(done + at, 1, k);
        else
            rc = -1;
        at += k;
    }
    for (size_t i = 0; i < n; i++)
        if (!done[i])
            rc = -1;
    return rc;
}

int order_return_mark(PGconn *pg, const order_ref *o, const unsigned char *done, size_t n,
                      const char *component)
{
    /* {id,id,...}: at most 20 digits and a comma each. */
    char *ids = malloc(n * 22 + 3);
    if (!ids)
        return -1;
    size_t len = 0;
    ids[len++] = '{';
    for (size_t i = 0; i < n; i++)
        if (done[i])
            len += (size_t)snprintf(ids + len, 23, "%s%" PRId64, len > 1 ? "," : "", o[i].id);
    ids[len++] = '}';
    ids[len] = '\0';
    if (len == 2) {
        free(ids);
        return 0;
    }
    const char *p[] = {ids};
    PGresult *res =
        PQexecParams(pg,
                     "UPDATE orders SET returned_at = now() WHERE id = ANY($1::bigint[]) "
                     "AND returned_at IS NULL",
                     1, NULL, p, NULL, NULL, 0);
    int rc = PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : -1;
    if (rc < 0)
        log_msg(LOG_WARN, component, "postgresql: marking returns: %s", PQresultErrorMessage(res));
    PQclear(res);
    free(ids);
    return rc;
}

int order_return_units(redis_nodes *rn, PGconn *pg, const scripts *sc, const order_ref *o, size_t n,
                       unsigned char *done, const char *component)
{
    int rc = order_return_redis(rn, sc, o, n, done, component);
    if (order_return_mark(pg, o, done, n, component) < 0)
        return -2;
    return rc;
}
