/* expiry.c: one expiry pass: PostgreSQL decides (expired, once), Redis gets
 * the units back, PostgreSQL notes the return. */
#include "expiry.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "order_return.h"

#define COMPONENT "expiry"
#define TEXT_(x) #x
#define TEXT(x) TEXT_(x)

/* Unpaid orders past their deadline, oldest first; rows a payment or a
 * cancellation holds are left to them (SKIP LOCKED): whichever commits
 * first decides, and this pass sees the others next time. */
static const char expire_sql[] =
    "UPDATE orders SET status = 'expired', ended_at = now()"
    " FROM (SELECT id AS due_id FROM orders WHERE status = 'persisted' AND pay_by <= now()"
    "       ORDER BY pay_by LIMIT " TEXT(
        EXPIRY_BATCH) " FOR UPDATE SKIP LOCKED) due"
                      " WHERE id = due.due_id RETURNING " ORDER_REF_COLUMNS;

/* Returns owed: ended a while ago, never confirmed given back. */
static const char owed_sql[] =
    "SELECT " ORDER_REF_COLUMNS " FROM orders"
    " WHERE status IN ('cancelled', 'expired') AND returned_at IS NULL"
    "   AND ended_at < now() - make_interval(secs => " TEXT(
        EXPIRY_OWED_AFTER_S) ")"
                             " ORDER BY item_id LIMIT " TEXT(EXPIRY_BATCH);

static int by_item(const void *a, const void *b)
{
    const order_ref *x = a, *y = b;
    return (x->item_id > y->item_id) - (x->item_id < y->item_id);
}

/* Gives back the units of the n orders res holds and notes them returned.
 * Returns how many were confirmed, or -1 on a Redis error with nothing
 * confirmed, -2 on a PostgreSQL error. */
static int64_t give_back(redis_nodes *rn, PGconn *pg, const scripts *sc, PGresult *res,
                         int64_t *units)
{
    order_ref o[EXPIRY_BATCH];
    unsigned char done[EXPIRY_BATCH];
    int read = order_refs_read(res, o, EXPIRY_BATCH, COMPONENT);
    if (read <= 0)
        return read < 0 ? -2 : 0;
    size_t n = (size_t)read;
    qsort(o, n, sizeof(o[0]), by_item);
    int redis_rc = order_return_units(rn, pg, sc, o, n, done, COMPONENT);
    if (redis_rc == -2)
        return -2;
    int64_t confirmed = 0;
    for (size_t i = 0; i < n; i++)
        if (done[i]) {
            confirmed++;
            *units += o[i].quantity;
        }
    return confirmed == 0 && redis_rc < 0 ? -1 : confirmed;
}

/* Runs sql (expire or owed) until it yields fewer than a batch, at most
 * EXPIRY_BATCHES times. */
static int pass(redis_nodes *rn, PGconn *pg, const scripts *sc, const char *sql, int64_t *count,
                int64_t *units)
{
    for (int batches = 0; batches < EXPIRY_BATCHES; batches++) {
        PGresult *res = PQexec(pg, sql);
        if (PQresultStatus(res) != PGRES_TUPLES_OK) {
            log_msg(LOG_WARN, COMPONENT, "postgresql: %s", PQresultErrorMessage(res));
            PQclear(res);
            return -2;
        }
        int rows = PQntuples(res);
        /* Expired rows are committed now: from here their returns are owed
         * until confirmed, whatever happens to this pass. */
        int64_t got = give_back(rn, pg, sc, res, units);
        PQclear(res);
        if (got < 0)
            return (int)got;
        *count += rows;
        if (rows < EXPIRY_BATCH || got < rows)
            return got < rows ? -1 : 0;
    }
    return 0;
}

int expiry_run(redis_nodes *rn, PGconn *pg, const scripts *sc, expiry_result *out)
{
    memset(out, 0, sizeof(*out));
    int rc = pass(rn, pg, sc, expire_sql, &out->expired, &out->units);
    if (rc == -2)
        return rc;
    /* Also after a Redis error: the owed returns may be other nodes'. */
    int rc2 = pass(rn, pg, sc, owed_sql, &out->finished, &out->units);
    if (out->expired || out->finished)
        log_msg(LOG_INFO, COMPONENT,
                "%lld orders expired, %lld owed returns finished, %lld units back on sale",
                (long long)out->expired, (long long)out->finished, (long long)out->units);
    return rc < 0 ? rc : rc2;
}
