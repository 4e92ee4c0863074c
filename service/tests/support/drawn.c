/* drawn.c: a drawn item made directly in PostgreSQL (drawn.h). */
#include "drawn.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "draw_order.h"
#include "harness.h"
#include "keys.h"
#include "pg_array.h"

int64_t drawn_order_id(int64_t item, int p)
{
    return item * 1000000 + p;
}

static void exec_ok(PGconn *pg, const char *sql, int n, const char *const *params)
{
    PGresult *res = PQexecParams(pg, sql, n, NULL, params, NULL, NULL, 0);
    ExecStatusType st = PQresultStatus(res);
    cr_assert(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK, "%s: %s", sql,
              PQresultErrorMessage(res));
    PQclear(res);
}

int drawn_item_make(PGconn *pg, int64_t item, int n, const int *q, int64_t units)
{
    draw_entrant *v = calloc((size_t)n, sizeof(*v));
    cr_assert(v);
    for (int i = 0; i < n; i++)
        v[i].quantity = q ? q[i] : 1;
    draw_serve(v, (size_t)n, units);
    pg_array qa = {0}, oa = {0};
    int winners = 0;
    for (int i = 0; i < n; i++) {
        pg_array_add_i64(&qa, v[i].quantity);
        pg_array_add_text(&oa, draw_outcome_name(v[i].outcome));
        winners += v[i].outcome == DRAW_WON;
    }
    const char *qs = pg_array_text(&qa), *os = pg_array_text(&oa);
    cr_assert(qs && os);
    char item_s[24], user_s[24];
    snprintf(item_s, sizeof(item_s), "%" PRId64, item);
    snprintf(user_s, sizeof(user_s), "%d", DRAWN_USER);
    const char *p[] = {item_s};
    exec_ok(pg,
            "UPDATE items SET admission = 'draw', entries_open_at = now() - interval '2 min',"
            " entries_close_at = now() - interval '1 min', room_secret = repeat('ab', 32),"
            " drawn_at = now(), draw_beacon = '' WHERE id = $1",
            1, p);
    const char *e[] = {item_s, user_s, qs, os};
    exec_ok(
        pg,
        "INSERT INTO draw_entries (item_id, round, user_id, entrant, quantity, position,"
        " ticket, outcome, order_id)"
        " SELECT i.id, i.round, $2::bigint + x.p, lpad(to_hex(x.p), 64, '0'), x.q, x.p,"
        "   lpad(to_hex(x.p), 64, '0'), x.o, CASE WHEN x.o = 'won' THEN i.id * 1000000 + x.p END"
        " FROM items i, unnest($3::int[], $4::text[]) WITH ORDINALITY AS x (q, o, p)"
        " WHERE i.id = $1::bigint",
        4, e);
    exec_ok(pg,
            "INSERT INTO orders (id, item_id, user_id, round, created_at, quantity, first_unit,"
            " pay_by, draw_position)"
            " SELECT e.order_id, e.item_id, e.user_id, e.round, now(), e.quantity, 1,"
            "   CASE WHEN i.payment_timeout_s > 0"
            "     THEN now() + make_interval(secs => i.payment_timeout_s) END, e.position"
            " FROM draw_entries e JOIN items i ON i.id = e.item_id AND i.round = e.round"
            " WHERE e.item_id = $1 AND e.outcome = 'won'",
            1, p);
    free(v);
    pg_array_free(&qa);
    pg_array_free(&oa);
    return winners;
}

const char *drawn_outcome(PGconn *pg, int64_t item, int p, int64_t *order)
{
    static char outcome[32];
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT outcome, coalesce(order_id, 0) FROM draw_entries e JOIN items i"
             " ON i.id = e.item_id AND i.round = e.round WHERE e.item_id = %" PRId64
             " AND e.position = %d",
             item, p);
    PGresult *res = PQexec(pg, sql);
    cr_assert(PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1, "%s: %s", sql,
              PQresultErrorMessage(res));
    snprintf(outcome, sizeof(outcome), "%s", PQgetvalue(res, 0, 0));
    if (order)
        *order = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
    PQclear(res);
    return outcome;
}

void drawn_env_open(drawn_env *env)
{
    harness_reset_tables();
    env->redis = harness_redis_with_scripts(&env->sc);
    env->pg = harness_pg();
    harness_config(&env->cfg);
    env->nodes = redis_nodes_create(&env->cfg, "test");
    cr_assert_not_null(env->nodes);
}

void drawn_env_close(drawn_env *env)
{
    redis_nodes_free(env->nodes);
    config_free(&env->cfg);
    PQfinish(env->pg);
    if (env->redis)
        redisFree(env->redis);
    memset(env, 0, sizeof(*env));
}

/* The statement fmt and ap format, run on pg: its result (the caller
 * PQclear()s it); aborts the test on a failure. */
static PGresult *vquery(PGconn *pg, const char *fmt, va_list ap)
{
    char text[2048];
    vsnprintf(text, sizeof(text), fmt, ap);
    PGresult *res = PQexec(pg, text);
    ExecStatusType st = PQresultStatus(res);
    cr_assert(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK, "%s: %s", text,
              PQresultErrorMessage(res));
    return res;
}

void drawn_sql(PGconn *pg, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    PQclear(vquery(pg, fmt, ap));
    va_end(ap);
}

int64_t drawn_sql_int(PGconn *pg, const char *fmt, ...)
{
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    return harness_pg_int(pg, text);
}

long long drawn_hash_field(redisContext *c, int (*keyfn)(char *, size_t, int64_t), int64_t item,
                           int64_t field, long long absent)
{
    char key[KEYS_MAX];
    keyfn(key, sizeof(key), item);
    redisReply *r = redisCommand(c, "HGET %s %lld", key, (long long)field);
    cr_assert(r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL));
    long long v = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : absent;
    freeReplyObject(r);
    return v;
}
