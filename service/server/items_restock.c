/* items_restock.c: a restock of an item's running round: PostgreSQL's row
 * locked and counted, Redis given the units once (lua/restock.lua), what
 * Redis holds judged when its answer was lost, and the news announced. */
#include "items.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archive.h"
#include "keys.h"
#include "log.h"
#include "pg_value.h"
#include "redis_reply.h"
#include "reserve.h"

#define COMPONENT "items"

/* Where restock number `restocks` of a round (restocked units in all)
 * stands in Redis. */
typedef enum restock_state {
    RESTOCK_APPLIED,     /* Redis holds exactly this restock */
    RESTOCK_NOT_APPLIED, /* Redis holds the restock before it */
    RESTOCK_CONFLICT,    /* another round or other totals: reconcile's to repair */
    RESTOCK_UNKNOWN      /* Redis does not answer */
} restock_state;

/* Judges what Redis holds (its round, restocks and restocked total) against
 * this restock. */
static restock_state restock_judge(int64_t round, int64_t restocks, int64_t restocked,
                                   int64_t redis_round, int64_t redis_restocks,
                                   int64_t redis_restocked)
{
    if (redis_round != round)
        return RESTOCK_CONFLICT;
    if (redis_restocks == restocks)
        return redis_restocked == restocked ? RESTOCK_APPLIED : RESTOCK_CONFLICT;
    return redis_restocks == restocks - 1 ? RESTOCK_NOT_APPLIED : RESTOCK_CONFLICT;
}

/* Reads the item's round, restocks and restocked total from Redis. */
static restock_state restock_read_back(pool_session *s, const char *state, int64_t round,
                                       int64_t restocks, int64_t restocked)
{
    const char *argv[] = {"HMGET", state, "round", "restocks", "restocked"};
    redisReply *r = pool_session_redis(s, 5, argv);
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 3) {
        freeReplyObject(r);
        return RESTOCK_UNKNOWN;
    }
    int64_t v[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++)
        if (redis_reply_number_or(r->element[i], 0, &v[i]) < 0) {
            freeReplyObject(r);
            return RESTOCK_UNKNOWN;
        }
    freeReplyObject(r);
    return restock_judge(round, restocks, restocked, v[0], v[1], v[2]);
}

/* Applies restock number `restocks` of round (adding add units, restocked
 * in all) to Redis, and says where it stands afterwards. A call whose answer
 * was lost is judged by reading the state back: it may have run. */
static restock_state restock_in_redis(pool_session *s, int64_t item, int64_t round,
                                      int64_t restocks, int64_t add, int64_t restocked,
                                      int64_t *changes)
{
    char state[KEYS_MAX], round_s[24], restocks_s[24], add_s[24], total_s[24];
    keys_item_state(state, sizeof(state), item);
    snprintf(round_s, sizeof(round_s), "%" PRId64, round);
    snprintf(restocks_s, sizeof(restocks_s), "%" PRId64, restocks);
    snprintf(add_s, sizeof(add_s), "%" PRId64, add);
    snprintf(total_s, sizeof(total_s), "%" PRId64, restocked);
    const char *keys_args[] = {state, round_s, restocks_s, add_s, total_s};
    redisReply *r = pool_session_script(s, SCRIPT_RESTOCK, 1, 4, keys_args);
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 5 ||
        r->element[0]->type != REDIS_REPLY_STRING) {
        freeReplyObject(r);
        /* Without the count of changes the announcement says the restocks
         * alone: servers flagged sold out learn the rest within a probe. */
        *changes = restocks;
        return restock_read_back(s, state, round, restocks, restocked);
    }
    *changes = r->element[4]->integer;
    restock_state st = RESTOCK_CONFLICT;
    if (strcmp(r->element[0]->str, "added") == 0 || strcmp(r->element[0]->str, "already") == 0)
        st = restock_judge(round, restocks, restocked, round, r->element[2]->integer,
                           r->element[3]->integer);
    if (st != RESTOCK_APPLIED)
        log_msg(LOG_WARN, COMPONENT, "restock %" PRId64 " of item %" PRId64 ": redis says %s",
                restocks, item, r->element[0]->str);
    freeReplyObject(r);
    return st;
}

/* Tells every segment of a segmented item the round's units (total) before
 * a restock adds to segment 0: the reserve script's rule for anonymous
 * buyers reads them there. Written first, so that a restock that then fails
 * leaves the rule stricter, never looser. Returns 0, or -1. */
static int set_total(pool_session *s, int64_t item, int segments, int64_t total)
{
    char total_s[24];
    snprintf(total_s, sizeof(total_s), "%" PRId64, total);
    for (int j = 0; j < segments && j < KEYS_SEGMENTS_MAX; j++) {
        char state[KEYS_MAX];
        keys_item_state(state, sizeof(state), keys_segment(item, j, segments));
        const char *argv[] = {"HSET", state, "total", total_s};
        redisReply *r = pool_session_redis(s, 4, argv);
        freeReplyObject(r);
        if (!r)
            return -1;
    }
    return 0;
}

/* Why the restock's UPDATE of item matched no row: no such item
 * (SK_NOT_FOUND), an archived one (SK_ARCHIVED), or SK_INVALID with *why. */
static sk_status restock_refused(pool_session *s, int64_t item, const char **why)
{
    PGresult *found;
    sk_status st = pool_session_pg_row(
        s, "SELECT lab, archived_at IS NOT NULL FROM items WHERE id = $1", item, &found);
    if (st != SK_OK)
        return st;
    pg_row f = pg_row_at(found, 0);
    int lab = pg_row_bool(&f, 0), archived = pg_row_bool(&f, 1);
    PQclear(found);
    if (pg_row_check(&f, COMPONENT, "an item not restocked") < 0)
        return SK_INTERNAL;
    if (archived)
        return SK_ARCHIVED;
    *why = lab ? "a laboratory item is reset, not restocked"
               : "this round has had as many restocks as it may; reset the item";
    return SK_INVALID;
}

sk_status items_restock(pool_session *s, int64_t item, int64_t add, item_view *out,
                        const char **why)
{
    char id_s[24], add_s[24], max_s[24], state[6];
    snprintf(id_s, sizeof(id_s), "%" PRId64, item);
    snprintf(add_s, sizeof(add_s), "%" PRId64, add);
    snprintf(max_s, sizeof(max_s), "%d", RESERVE_RESTOCKS_MAX);
    const char *p[] = {id_s, add_s, max_s};
    if (pool_session_pg_command(s, "BEGIN") < 0)
        return SK_BACKEND_DOWN;
    /* The row stays locked until Redis has the restock: two restocks of one
     * item take their turns, and a reset waits for this one. */
    PGresult *res =
        pool_session_pg(s,
                        "UPDATE items SET restocked = restocked + $2, restocks = restocks + 1 "
                        "WHERE id = $1 AND restocks < $3 AND NOT lab AND archived_at IS NULL "
                        "RETURNING round, restocks, restocked, initial_stock, segments",
                        3, p, PGRES_TUPLES_OK, state);
    sk_status st = SK_OK;
    if (!res) {
        st = SK_BACKEND_DOWN;
        if (strcmp(state, "23514") == 0) {
            st = SK_INVALID;
            *why = "the item would hold more than 10^12 units this round";
        }
    } else if (PQntuples(res) == 0) {
        PQclear(res);
        res = NULL;
        st = restock_refused(s, item, why);
    }
    if (st != SK_OK) {
        pool_session_pg_command(s, "ROLLBACK");
        return st;
    }
    pg_row f = pg_row_at(res, 0);
    int64_t round = pg_row_i64(&f, 0);
    int64_t restocks = pg_row_i64(&f, 1);
    int64_t restocked = pg_row_i64(&f, 2);
    int64_t total = pg_row_i64(&f, 3) + restocked;
    int segments = pg_row_int(&f, 4);
    PQclear(res);
    if (pg_row_check(&f, COMPONENT, "a restocked item") < 0) {
        pool_session_pg_command(s, "ROLLBACK");
        return SK_INTERNAL;
    }
    if (segments > 1 && set_total(s, item, segments, total) < 0) {
        pool_session_pg_command(s, "ROLLBACK");
        return SK_BACKEND_DOWN;
    }
    int64_t changes = restocks;
    restock_state in_redis = restock_in_redis(s, item, round, restocks, add, restocked, &changes);
    if (in_redis != RESTOCK_APPLIED) {
        pool_session_pg_command(s, "ROLLBACK");
        if (in_redis == RESTOCK_CONFLICT)
            *why = "Redis and PostgreSQL disagree on the item's round or restocks: nothing was "
                   "added; `seckill-admin reconcile --rebuild` sets Redis back from PostgreSQL";
        else if (in_redis == RESTOCK_UNKNOWN)
            *why = "Redis did not answer: the restock may be in Redis but not in PostgreSQL; "
                   "`seckill-admin reconcile` shows it";
        return SK_BACKEND_DOWN;
    }
    if (pool_session_pg_command(s, "COMMIT") < 0) {
        log_msg(LOG_ERROR, COMPONENT,
                "restock of item %" PRId64 " is in redis but its commit failed: "
                "`seckill-admin reconcile` shows the difference",
                item);
        *why = "the restock is in Redis but its commit failed: `seckill-admin reconcile "
               "--rebuild` sets Redis back from PostgreSQL";
        return SK_BACKEND_DOWN;
    }
    char event[96];
    snprintf(event, sizeof(event), "restock %" PRId64 " %" PRId64 " %" PRId64, item, round,
             changes);
    pool_session_announce(s, event);
    return items_get(s, item, out);
}
