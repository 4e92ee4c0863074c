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
    PGresult *res;
    sk_status st =
        pool_session_pg_row(s,
                            "UPDATE items SET archived_at = coalesce(archived_at, now()) "
                            "WHERE id = $1 RETURNING segments",
                            item, &res);
    if (st != SK_OK)
        return st;
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
    PGresult *res;
    sk_status st = pool_session_pg_row(
        s, "SELECT 1 FROM items WHERE id = $1 AND archived_at IS NOT NULL", item, &res);
    PQclear(res);
    return st == SK_OK ? SK_ARCHIVED : st;
}
