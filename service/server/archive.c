/* archive.c: the archive of an item. PostgreSQL says an item is archived
 * (the lists and the API read it there); Redis must say it too, because the
 * purchase path reads only Redis: the `archived` field of each segment's
 * state makes the reserve script refuse every buyer, whichever server sends
 * them, and reconcile leaves archived items alone so a rebuild never puts
 * one back on sale. */
#include "archive.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "keys.h"
#include "log.h"
#include "pg_value.h"

/* Marks every segment's state archived. Returns 0, or -1 when Redis failed. */
static int archive_in_redis(pool_session *s, int64_t item, int segments)
{
    if (segments < 1 || segments > KEYS_SEGMENTS_MAX)
        segments = 1;
    for (int j = 0; j < segments; j++) {
        char state[KEYS_MAX];
        keys_item_state(state, sizeof(state), keys_segment(item, j, segments));
        const char *argv[] = {"HSET", state, "archived", "1"};
        redisReply *r = pool_session_redis(s, 4, argv);
        freeReplyObject(r);
        if (!r)
            return -1;
    }
    return 0;
}

sk_status archive_item(pool_session *s, int64_t item, const char **why)
{
    char id_s[24];
    snprintf(id_s, sizeof(id_s), "%" PRId64, item);
    const char *p[] = {id_s};
    PGresult *res = pool_session_pg(s,
                                    "UPDATE items SET archived_at = coalesce(archived_at, now()) "
                                    "WHERE id = $1 RETURNING segments",
                                    1, p, PGRES_TUPLES_OK, NULL);
    if (!res)
        return SK_BACKEND_DOWN;
    if (PQntuples(res) == 0) {
        PQclear(res);
        return SK_NOT_FOUND;
    }
    int segments = 0;
    int bad = pg_value_int(res, 0, 0, &segments);
    PQclear(res);
    if (bad) {
        log_msg(LOG_ERROR, "archive", "postgresql: item %" PRId64 ": segments is not a number",
                item);
        return SK_INTERNAL;
    }
    if (archive_in_redis(s, item, segments) < 0) {
        *why = "the item is archived in PostgreSQL but Redis did not take it (it may still "
               "sell): call DELETE again";
        return SK_BACKEND_DOWN;
    }
    char event[48];
    snprintf(event, sizeof(event), "archive %" PRId64, item);
    pool_session_announce(s, event);
    return SK_OK;
}

sk_status archive_why_missing(pool_session *s, int64_t item)
{
    char id_s[24];
    snprintf(id_s, sizeof(id_s), "%" PRId64, item);
    const char *p[] = {id_s};
    PGresult *res =
        pool_session_pg(s, "SELECT 1 FROM items WHERE id = $1 AND archived_at IS NOT NULL", 1, p,
                        PGRES_TUPLES_OK, NULL);
    if (!res)
        return SK_BACKEND_DOWN;
    sk_status st = PQntuples(res) > 0 ? SK_ARCHIVED : SK_NOT_FOUND;
    PQclear(res);
    return st;
}
