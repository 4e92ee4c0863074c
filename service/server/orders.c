/* orders.c: orders read from Redis's pending hash and PostgreSQL, and their
 * payment and cancellation decided in PostgreSQL. */
#include "orders.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "log.h"
#include "order_lock.h"
#include "order_row.h"
#include "pg_value.h"

/* The order in its item's pending hash: accepted, not yet persisted. The
 * order id does not tell the item, so every registered item's hash is asked:
 * one HGET each, all in one round trip. SK_OK, SK_NOT_FOUND or
 * SK_BACKEND_DOWN. */
static sk_status read_pending(pool_session *s, int64_t order_id, order *o)
{
    int64_t *items = NULL;
    size_t n = 0;
    if (pool_session_items(s, &items, &n) < 0)
        return SK_BACKEND_DOWN;
    char id_s[24];
    snprintf(id_s, sizeof(id_s), "%" PRId64, order_id);
    char(*keys)[KEYS_MAX] = malloc((n + 1) * sizeof(*keys));
    const char **argv = malloc((3 * n + 1) * sizeof(*argv));
    redisReply **replies = calloc(n + 1, sizeof(*replies));
    sk_status st = SK_NOT_FOUND;
    if (!keys || !argv || !replies) {
        st = SK_INTERNAL;
        n = 0;
    }
    for (size_t i = 0; i < n; i++) {
        keys_pending(keys[i], KEYS_MAX, items[i]);
        argv[3 * i] = "HGET";
        argv[3 * i + 1] = keys[i];
        argv[3 * i + 2] = id_s;
    }
    if (pool_session_redis_pipeline(s, n, 3, argv, replies) < 0)
        st = SK_BACKEND_DOWN;
    for (size_t i = 0; i < n; i++) {
        redisReply *r = replies[i];
        if (!r && st == SK_NOT_FOUND)
            st = SK_BACKEND_DOWN; /* an error reply: the hash could not be read */
        else if (r && st == SK_NOT_FOUND && r->type == REDIS_REPLY_STRING &&
                 order_decode(r->str, r->len, o) == 0)
            st = SK_OK;
        freeReplyObject(r);
    }
    free(replies);
    free(argv);
    free(keys);
    free(items);
    return st;
}

/* The order's row (FOR UPDATE when lock: inside the caller's transaction);
 * with ref, also what a return of it needs (its draw position included),
 * from the same read. */
static sk_status read_row(pool_session *s, int64_t order_id, int lock, order_record *out,
                          int *overdue, order_ref *ref)
{
    PGresult *res;
    sk_status st = pool_session_pg_row(
        s,
        lock ? "SELECT " ORDER_ROW_COLUMNS ", coalesce(draw_position, 0) FROM orders"
               " WHERE id = $1 FOR UPDATE"
             : "SELECT " ORDER_ROW_COLUMNS ", coalesce(draw_position, 0) FROM orders"
               " WHERE id = $1",
        order_id, &res);
    int64_t position = 0;
    if (st == SK_OK && (order_row_read(res, 0, out, overdue, "orders") < 0 ||
                        pg_value_i64(res, 0, ORDER_ROW_NCOLUMNS, &position) < 0))
        st = SK_INTERNAL;
    if (st == SK_OK && ref)
        *ref = order_ref_of(&out->o, position);
    PQclear(res);
    return st;
}

sk_status orders_get(pool_session *s, int64_t order_id, order_record *out)
{
    /* Pending first: the worker removes it only after its commit, so an
     * order missing here is already in PostgreSQL if it exists at all. */
    memset(out, 0, sizeof(*out));
    sk_status st = read_pending(s, order_id, &out->o);
    if (st == SK_OK) {
        out->state = ORDER_QUEUED;
        /* A server that settled it persisted it first: the row says more. */
        order_record row;
        if (read_row(s, order_id, 0, &row, NULL, NULL) == SK_OK)
            *out = row;
        return SK_OK;
    }
    if (st != SK_NOT_FOUND)
        return st;
    return read_row(s, order_id, 0, out, NULL, NULL);
}

sk_status orders_list(pool_session *s, int64_t user, int64_t before, int limit, order_record *out,
                      size_t *n)
{
    char user_s[24], before_s[24], limit_s[12];
    snprintf(user_s, sizeof(user_s), "%" PRId64, user);
    snprintf(before_s, sizeof(before_s), "%" PRId64, before > 0 ? before : INT64_MAX);
    snprintf(limit_s, sizeof(limit_s), "%d", limit);
    const char *p[] = {user_s, before_s, limit_s};
    *n = 0;
    PGresult *res =
        pool_session_pg(s,
                        "SELECT " ORDER_ROW_COLUMNS " FROM orders WHERE user_id = $1 AND id < $2 "
                        "ORDER BY id DESC LIMIT $3",
                        3, p, PGRES_TUPLES_OK, NULL);
    if (!res)
        return SK_BACKEND_DOWN;
    int rows = PQntuples(res);
    sk_status st = SK_OK;
    for (int i = 0; i < rows && i < limit && st == SK_OK; i++)
        if (order_row_read(res, i, &out[i], NULL, "orders") < 0)
            st = SK_INTERNAL;
    *n = st == SK_OK ? (size_t)(rows < limit ? rows : limit) : 0;
    PQclear(res);
    return st;
}

/* Persists a queued order now, as the worker would (order_row.h: its
 * later insert of the same order does nothing). Inside the caller's
 * transaction. SK_OK (inserted, or the worker was first), SK_NOT_FOUND (no
 * such order, another buyer's, or refused by PostgreSQL: an item gone, units
 * already held), SK_BACKEND_DOWN. The order read from Redis in *o. */
static sk_status persist_queued(pool_session *s, int64_t order_id, int64_t buyer, order *queued)
{
    order o;
    sk_status st = read_pending(s, order_id, &o);
    if (st != SK_OK)
        return st;
    *queued = o;
    if (buyer != 0 && o.user_id != buyer)
        return SK_NOT_FOUND;
    char a[ORDER_INSERT_PARAMS][24];
    const char *p[ORDER_INSERT_PARAMS];
    order_insert_one(&o, a, p);
    char state[6];
    PGresult *res =
        pool_session_pg(s, order_insert_sql, ORDER_INSERT_PARAMS, p, PGRES_COMMAND_OK, state);
    PQclear(res);
    if (res)
        return SK_OK;
    if (strncmp(state, "23", 2) == 0) {
        log_msg(LOG_WARN, "orders", "queued order %" PRId64 " refused by postgresql (%s)", order_id,
                state);
        return SK_NOT_FOUND;
    }
    return SK_BACKEND_DOWN;
}

/* The order, persisted here from the queue, is in PostgreSQL: its buyer's
 * order lock goes, if it still holds its id (the worker, which meets the
 * order later, would free it too; a lock that stays expires). */
static void release_lock(pool_session *s, const order *o)
{
    char lock[KEYS_MAX], id[24];
    if (order_lock_key(lock, sizeof(lock), o) < 0)
        return;
    snprintf(id, sizeof(id), "%" PRId64, o->id);
    const char *ka[] = {lock, id};
    freeReplyObject(pool_session_script(s, SCRIPT_ORDER_LOCK_RELEASE, 1, 1, ka));
}

/* Moves the locked row to state to; fills the times it set. 0 or -1. */
static int move_row(pool_session *s, order_record *r, order_state to)
{
    char id_s[24];
    snprintf(id_s, sizeof(id_s), "%" PRId64, r->o.id);
    const char *p[] = {id_s, order_state_name(to)};
    PGresult *res = pool_session_pg(
        s,
        "UPDATE orders SET status = $2, "
        "  paid_at = CASE WHEN $2 = 'paid' THEN now() END, "
        "  ended_at = CASE WHEN $2 IN ('cancelled', 'expired') THEN now() END "
        "WHERE id = $1 RETURNING coalesce((extract(epoch FROM paid_at) * 1000)::bigint, 0), "
        "  coalesce((extract(epoch FROM ended_at) * 1000)::bigint, 0)",
        2, p, PGRES_TUPLES_OK, NULL);
    if (!res)
        return -1;
    int ok = PQntuples(res) == 1;
    if (ok) {
        pg_row f = pg_row_at(res, 0);
        r->paid_ms = pg_row_i64(&f, 0);
        r->ended_ms = pg_row_i64(&f, 1);
        r->state = to;
        ok = pg_row_check(&f, "orders", "a settled order") == 0;
    }
    PQclear(res);
    return ok ? 0 : -1;
}

sk_status orders_settle(pool_session *s, int64_t order_id, order_action action, int64_t buyer,
                        order_record *out)
{
    if (pool_session_pg_command(s, "BEGIN") < 0)
        return SK_BACKEND_DOWN;
    int overdue = 0;
    order queued = {0};
    order_ref ref;
    sk_status st = read_row(s, order_id, 1, out, &overdue, &ref);
    if (st == SK_NOT_FOUND) {
        st = persist_queued(s, order_id, buyer, &queued);
        /* Not pending any more: the worker may have committed it between
         * the two reads. */
        if (st == SK_OK || st == SK_NOT_FOUND)
            st = read_row(s, order_id, 1, out, &overdue, &ref);
    }
    if (st == SK_OK && buyer != 0 && out->o.user_id != buyer)
        st = SK_NOT_FOUND;
    order_move m = {0, ORDER_PERSISTED, SK_OK};
    if (st == SK_OK) {
        m = order_decide(action, out->state, out->pay_by_ms != 0, overdue);
        if (m.change && move_row(s, out, m.to) < 0)
            st = SK_BACKEND_DOWN;
    }
    if (st != SK_OK) {
        pool_session_pg_command(s, "ROLLBACK");
        return st;
    }
    if (pool_session_pg_command(s, "COMMIT") < 0)
        return SK_BACKEND_DOWN;
    if (queued.id == order_id)
        release_lock(s, &queued);
    /* Units owed back: given now, or again for a repeat whose first return
     * Redis never confirmed (the return happens once all the same). */
    if ((m.to == ORDER_CANCELLED || m.to == ORDER_EXPIRED) && !out->returned) {
        order_record now;
        if (pool_session_return_order(s, &ref) == 0)
            /* The mark says whether the round was over (no unit back). */
            *out = read_row(s, order_id, 0, &now, NULL, NULL) == SK_OK ? now : *out;
        else
            log_msg(LOG_WARN, "orders",
                    "order %" PRId64 " is %s; its units are owed back: the worker's expiry sweep "
                    "gives them back",
                    order_id, order_state_name(m.to));
    }
    return m.status;
}
