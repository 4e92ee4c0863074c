/* items.c: an item's rounds, kept in PostgreSQL (the truth: the item, its
 * terms, its restocks, its persisted orders) and in Redis (the live stock of
 * the round): create, reset, and the view that joins both (a restock is
 * items_restock.c's). */
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
#include "draw_store.h"
#include "room_store.h"

#define COMPONENT "items"

/* Starts the round of one segment (keys.h; the item's own keys when key is
 * item) in Redis with its share of the stock, the terms and the round's
 * units over every segment (total: the script's rule for anonymous buyers). */
static int start_segment(pool_session *s, int64_t key, int segments, int64_t stock, int64_t total,
                         int64_t round, const sale_terms *t, const room_terms *room)
{
    char state[KEYS_MAX], buyers[KEYS_MAX], returned[KEYS_MAX], given_back[KEYS_MAX],
        granted[KEYS_MAX], stock_s[24], round_s[24], starts_s[24], ends_s[24], limit_s[12],
        segments_s[12], total_s[24];
    keys_item_state(state, sizeof(state), key);
    keys_item_buyers(buyers, sizeof(buyers), key);
    keys_item_returned(returned, sizeof(returned), key);
    keys_item_given_back(given_back, sizeof(given_back), key);
    keys_item_granted(granted, sizeof(granted), key); /* a draw's: cleared for the new round */
    snprintf(stock_s, sizeof(stock_s), "%" PRId64, stock);
    snprintf(round_s, sizeof(round_s), "%" PRId64, round);
    snprintf(starts_s, sizeof(starts_s), "%" PRId64, t->starts_ms);
    snprintf(ends_s, sizeof(ends_s), "%" PRId64, t->ends_ms);
    snprintf(limit_s, sizeof(limit_s), "%d", t->per_buyer_limit);
    snprintf(segments_s, sizeof(segments_s), "%d", segments);
    snprintf(total_s, sizeof(total_s), "%" PRId64, total);
    /* A round's rebuild fields (initial, restocks, restocked, returns,
     * returned) as a new round has them, then its admission. */
    const char *keys_args[] = {
        state,      buyers,     returned,
        given_back, granted,    stock_s,
        round_s,    starts_s,   ends_s,
        limit_s,    segments_s, total_s,
        stock_s,    "0",        "0",
        "0",        "0",        room->draw ? "draw" : room->room ? "room" : "race"};
    redisReply *r = pool_session_script(s, SCRIPT_ITEM_RESET, 5, 13, keys_args);
    freeReplyObject(r);
    return r ? 0 : -1;
}

/* Starts the round in Redis with its terms, the stock split evenly over the
 * item's segments, and its waiting room (K's hex: k_hex), and tells every
 * server about it. */
static int start_round_in_redis(pool_session *s, int64_t item, int segments, int64_t stock,
                                int64_t round, const sale_terms *t, const room_terms *room,
                                const char *k_hex)
{
    if (segments < 1)
        segments = 1;
    int64_t keys[KEYS_SEGMENTS_MAX];
    char ids[KEYS_SEGMENTS_MAX][24];
    const char *sadd[2 + KEYS_SEGMENTS_MAX] = {"SADD", KEYS_ITEMS};
    for (int j = 0; j < segments; j++) {
        keys[j] = keys_segment(item, j, segments);
        snprintf(ids[j], sizeof(ids[j]), "%" PRId64, keys[j]);
        sadd[2 + j] = ids[j];
    }
    /* The registry first (registry.h): the workers must find the item's
     * queues before its first order lands there. A set in its own slot, so
     * not in the script. */
    redisReply *added = pool_session_redis(s, 2 + segments, sadd);
    freeReplyObject(added);
    if (!added)
        return -1;
    for (int j = 0; j < segments; j++) {
        int64_t share = keys_segment_share(stock, j, segments);
        if (start_segment(s, keys[j], segments, share, stock, round, t, room) < 0)
            return -1;
    }
    if (room_store_start(s, item, round, t->starts_ms, t->ends_ms, room, k_hex, 0) < 0)
        return -1;
    for (int j = 0; j < segments; j++) {
        char event[80];
        snprintf(event, sizeof(event), "round %" PRId64 " %" PRId64, keys[j], round);
        pool_session_announce(s, event);
    }
    return 0;
}

/* A time parameter: Unix ms as text into buf, or NULL (SQL NULL) for 0. */
static const char *time_param(int64_t ms, char *buf, size_t len)
{
    if (ms == 0)
        return NULL;
    snprintf(buf, len, "%" PRId64, ms);
    return buf;
}

/* The columns of a round's terms in a result, from column `at` on:
 * starts and ends in Unix ms (0: null), per_buyer_limit. */
#define TERMS_COLUMNS                                                                              \
    "coalesce((extract(epoch FROM starts_at) * 1000)::bigint, 0), "                                \
    "coalesce((extract(epoch FROM ends_at) * 1000)::bigint, 0), per_buyer_limit"

static void read_terms(pg_row *f, int at, sale_terms *t)
{
    t->starts_ms = pg_row_i64(f, at);
    t->ends_ms = pg_row_i64(f, at + 1);
    t->per_buyer_limit = pg_row_int(f, at + 2);
}

/* The room columns of a create or a reset as text parameters into p[0..8]
 * (admission, prequeue ms, admit_per_s, admit_burst, max_active, ttl, K's
 * hex, a draw's entries_open_at and entries_close_at ms), NULL where SQL
 * NULL; a burst not given is the stock. The round's K (a room's or a
 * draw's) is drawn here, before anyone can join or enter. Returns 0, or -1
 * when the draw failed. */
#define ROOM_PARAMS 9
typedef struct room_params {
    char prequeue[24], per_s[40], burst[24], max_active[24], ttl[12], k_hex[ROOM_HEX_LEN + 1],
        opens[24], closes[24];
} room_params;

static int room_params_of(const room_terms *r, int64_t stock, room_params *b, const char **p)
{
    memset(b, 0, sizeof(*b));
    p[0] = r->draw ? "draw" : r->room ? "room" : "race";
    for (int i = 1; i < ROOM_PARAMS; i++)
        p[i] = NULL;
    snprintf(b->ttl, sizeof(b->ttl), "%d", r->room ? r->admission_ttl_s : ROOM_TTL_DEFAULT_S);
    p[5] = b->ttl;
    if (!r->room && !r->draw)
        return 0;
    if (room_store_draw(b->k_hex) < 0)
        return -1;
    p[6] = b->k_hex;
    if (r->draw) {
        p[7] = time_param(r->entries_open_ms, b->opens, sizeof(b->opens));
        p[8] = time_param(r->entries_close_ms, b->closes, sizeof(b->closes));
        return 0;
    }
    p[1] = time_param(r->prequeue_ms, b->prequeue, sizeof(b->prequeue));
    snprintf(b->per_s, sizeof(b->per_s), "%.17g", r->admit_per_s);
    snprintf(b->burst, sizeof(b->burst), "%" PRId64, r->admit_burst >= 0 ? r->admit_burst : stock);
    p[2] = b->per_s;
    p[3] = b->burst;
    if (r->max_active > 0) {
        snprintf(b->max_active, sizeof(b->max_active), "%" PRId64, r->max_active);
        p[4] = b->max_active;
    }
    return 0;
}

/* The proof-of-work columns as text parameters p[0..1] (buffers max and
 * ttl: 24 and 12 bytes): pow_maxnumber (NULL: none) and pow_ttl_s. */
static void pow_params(const pow_terms *t, char *max, char *ttl, const char **p)
{
    snprintf(max, 24, "%" PRId64, t->maxnumber);
    snprintf(ttl, 12, "%d", t->ttl_s);
    p[0] = t->maxnumber > 0 ? max : NULL;
    p[1] = ttl;
}

/* The room's terms as stored: the burst resolved. */
static room_terms room_as_stored(const room_terms *r, int64_t stock)
{
    room_terms t = *r;
    if (t.room && t.admit_burst < 0)
        t.admit_burst = stock;
    return t;
}

/* The view of an item just created whose read failed: what we know. */
static void created_view(const item_spec *spec, int64_t id, int64_t round, const room_terms *room,
                         item_view *out)
{
    memset(out, 0, sizeof(*out));
    out->id = id;
    out->round = round;
    snprintf(out->name, sizeof(out->name), "%s", spec->name);
    out->initial_stock = out->remaining = spec->stock;
    out->starts_ms = spec->terms.starts_ms;
    out->ends_ms = spec->terms.ends_ms;
    out->per_buyer_limit = spec->terms.per_buyer_limit;
    out->payment_timeout_s = spec->payment_timeout_s;
    out->lab = spec->lab;
    out->segments = spec->segments > 1 ? spec->segments : 1;
    out->listed = !spec->unlisted;
    out->room = *room;
    out->pow = spec->pow;
}

sk_status items_create(pool_session *s, const item_spec *spec, item_view *out)
{
    char id_s[24], stock_s[24], starts_s[24], ends_s[24], limit_s[12], timeout_s[12],
        segments_s[12], state[6], pow_max[24], pow_ttl[12];
    room_params rb;
    const char *rp[ROOM_PARAMS];
    int segments = spec->segments > 1 ? spec->segments : 1;
    if (room_params_of(&spec->room, spec->stock, &rb, rp) < 0)
        return SK_INTERNAL;
    room_terms room = room_as_stored(&spec->room, spec->stock);
    snprintf(id_s, sizeof(id_s), "%" PRId64, spec->id);
    snprintf(segments_s, sizeof(segments_s), "%d", segments);
    snprintf(stock_s, sizeof(stock_s), "%" PRId64, spec->stock);
    snprintf(limit_s, sizeof(limit_s), "%d", spec->terms.per_buyer_limit);
    snprintf(timeout_s, sizeof(timeout_s), "%d", spec->payment_timeout_s);
    /* An explicit id must also move the identity past it, or a later create
     * without id would collide with it. */
    const char *p[12 + ROOM_PARAMS] = {
        spec->id > 0 ? id_s : NULL,
        spec->name,
        stock_s,
        spec->lab ? "true" : "false",
        time_param(spec->terms.starts_ms, starts_s, sizeof(starts_s)),
        time_param(spec->terms.ends_ms, ends_s, sizeof(ends_s)),
        limit_s,
        timeout_s,
        segments_s,
        spec->unlisted ? "false" : "true"};
    memcpy(&p[10], rp, sizeof(rp)); /* $11 to $19: the room's and the draw's */
    pow_params(&spec->pow, pow_max, pow_ttl, &p[10 + ROOM_PARAMS]); /* $20, $21 */
    PGresult *res = pool_session_pg(
        s,
        "WITH ins AS (INSERT INTO items (id, name, initial_stock, lab, starts_at, ends_at, "
        "                                per_buyer_limit, payment_timeout_s, segments, listed, "
        "                                admission, prequeue_opens_at, admit_per_s, admit_burst, "
        "                                max_active, admission_ttl_s, room_secret, "
        "                                entries_open_at, entries_close_at, pow_maxnumber, "
        "                                pow_ttl_s) "
        "  VALUES (coalesce($1::bigint, nextval(pg_get_serial_sequence('items', 'id'))), $2, $3, "
        "          $4, to_timestamp($5::bigint / 1000.0), to_timestamp($6::bigint / 1000.0), $7, "
        "          $8, $9, $10, $11, to_timestamp($12::bigint / 1000.0), $13, $14, $15, $16, $17, "
        "          to_timestamp($18::bigint / 1000.0), to_timestamp($19::bigint / 1000.0), $20, "
        "          $21) "
        "  RETURNING id, round) "
        "SELECT id, round, CASE WHEN $1::bigint IS NULL THEN 0 ELSE "
        "  setval(pg_get_serial_sequence('items', 'id'), "
        "         GREATEST(id, (SELECT coalesce(max(id), 1) FROM items))) END FROM ins",
        12 + ROOM_PARAMS, p, PGRES_TUPLES_OK, state);
    if (!res)
        return strcmp(state, "23505") == 0 ? SK_ITEM_EXISTS : SK_BACKEND_DOWN;
    pg_row f = pg_row_at(res, 0);
    int64_t id = pg_row_i64(&f, 0);
    int64_t round = pg_row_i64(&f, 1);
    PQclear(res);
    if (pg_row_check(&f, COMPONENT, "a created item") < 0)
        return SK_INTERNAL;
    if (start_round_in_redis(s, id, segments, spec->stock, round, &spec->terms, &room, rb.k_hex) <
        0) {
        /* Without its Redis state nobody can buy the item; take the row back
         * so that the admin's retry is a clean create. */
        PQclear(pool_session_pg_id(s, "DELETE FROM items WHERE id = $1", id, PGRES_COMMAND_OK));
        return SK_BACKEND_DOWN;
    }
    if (items_get(s, id, out) != SK_OK)
        created_view(spec, id, round, &room, out);
    return SK_CREATED;
}

/* A new round in one statement: the orders of the old one stay (they keep
 * their round), as do its draw's entries (they keep theirs); the terms the
 * body did not name stay as they were, the room's as a whole (a new K
 * whenever the round has a room or a draw); the new round is not drawn. A
 * draw's entries window is never kept: the old one would leave the new
 * round closed to entries from birth, so a draw's reset names admission
 * with a new window, or items_draw refuses it. */
static const char RESET_SQL[] =
    "UPDATE items AS i SET initial_stock = $2, round = round + 1, restocked = 0, "
    "  restocks = 0, "
    "  starts_at = CASE WHEN $3 THEN to_timestamp($4::bigint / 1000.0) ELSE starts_at END, "
    "  ends_at = CASE WHEN $5 THEN to_timestamp($6::bigint / 1000.0) ELSE ends_at END, "
    "  per_buyer_limit = CASE WHEN $7 THEN $8::integer ELSE per_buyer_limit END, "
    "  admission = CASE WHEN $9 THEN $10 ELSE admission END, "
    "  prequeue_opens_at = CASE WHEN $9 THEN to_timestamp($11::bigint / 1000.0) "
    "    ELSE prequeue_opens_at END, "
    "  admit_per_s = CASE WHEN $9 THEN $12::double precision ELSE admit_per_s END, "
    "  admit_burst = CASE WHEN $9 THEN $13::bigint ELSE admit_burst END, "
    "  max_active = CASE WHEN $9 THEN $14::bigint ELSE max_active END, "
    "  admission_ttl_s = CASE WHEN $9 THEN $15::integer ELSE admission_ttl_s END, "
    "  room_secret = CASE WHEN (CASE WHEN $9 THEN $10 ELSE admission END) IN ('room', 'draw') "
    "    THEN $16 END, "
    "  entries_open_at = CASE WHEN $9 THEN to_timestamp($17::bigint / 1000.0) END, "
    "  entries_close_at = CASE WHEN $9 THEN to_timestamp($18::bigint / 1000.0) END, "
    "  drawn_at = NULL, draw_beacon = NULL, draw_stock = NULL, "
    "  pow_maxnumber = CASE WHEN $19 THEN $21::integer ELSE pow_maxnumber END, "
    "  pow_ttl_s = CASE WHEN $20 THEN $22::integer ELSE pow_ttl_s END "
    "WHERE id = $1 AND archived_at IS NULL RETURNING round, " TERMS_COLUMNS
    ", segments, " ROOM_STORE_COLUMNS;

sk_status items_reset(pool_session *s, int64_t item, const item_reset *r, item_view *out,
                      const char **why)
{
    char id_s[24], stock_s[24], starts_s[24], ends_s[24], limit_s[12], given[3][6], state[6],
        pow_max[24], pow_ttl[12];
    const sale_terms *t = &r->terms;
    room_params rb;
    const char *rp[ROOM_PARAMS];
    if (room_params_of(&r->room, r->stock, &rb, rp) < 0 ||
        (!rb.k_hex[0] && room_store_draw(rb.k_hex) < 0))
        return SK_INTERNAL;
    snprintf(id_s, sizeof(id_s), "%" PRId64, item);
    snprintf(stock_s, sizeof(stock_s), "%" PRId64, r->stock);
    snprintf(limit_s, sizeof(limit_s), "%d", t->per_buyer_limit);
    snprintf(given[0], sizeof(given[0]), "%s", t->given & SALE_STARTS ? "true" : "false");
    snprintf(given[1], sizeof(given[1]), "%s", t->given & SALE_ENDS ? "true" : "false");
    snprintf(given[2], sizeof(given[2]), "%s", t->given & SALE_LIMIT ? "true" : "false");
    const char *p[13 + ROOM_PARAMS] = {id_s,
                                       stock_s,
                                       given[0],
                                       time_param(t->starts_ms, starts_s, 24),
                                       given[1],
                                       time_param(t->ends_ms, ends_s, 24),
                                       given[2],
                                       limit_s,
                                       r->room.given ? "true" : "false"};
    memcpy(&p[9], rp, sizeof(rp)); /* $10 to $18: the room's and the draw's */
    p[15] = rb.k_hex;              /* K whatever the body said */
    /* $19 to $22: proof-of-work's, each kept unless named */
    p[9 + ROOM_PARAMS] = r->pow.given_maxnumber ? "true" : "false";
    p[10 + ROOM_PARAMS] = r->pow.given_ttl ? "true" : "false";
    pow_params(&r->pow, pow_max, pow_ttl, &p[11 + ROOM_PARAMS]);
    PGresult *res = pool_session_pg(s, RESET_SQL, 13 + ROOM_PARAMS, p, PGRES_TUPLES_OK, state);
    if (!res) {
        if (strcmp(state, "23514") == 0) {
            *why = "ends_at must come after starts_at, and a room's prequeue_opens_at before it; "
                   "a draw has one segment (with the item's other terms kept), and its new "
                   "round names \"admission\": \"draw\" with a new entries_open_at and "
                   "entries_close_at";
            return SK_INVALID;
        }
        return SK_BACKEND_DOWN;
    }
    if (PQntuples(res) == 0) {
        PQclear(res);
        return archive_why_missing(s, item);
    }
    pg_row f = pg_row_at(res, 0);
    int64_t round = pg_row_i64(&f, 0);
    sale_terms now;
    room_terms room;
    char k_hex[ROOM_HEX_LEN + 1];
    read_terms(&f, 1, &now);
    int segments = pg_row_int(&f, 4);
    room_store_read(&f, 5, &room, k_hex);
    PQclear(res);
    if (pg_row_check(&f, COMPONENT, "a reset item") < 0)
        return SK_INTERNAL;
    /* PostgreSQL is the truth: if Redis fails now, a repeated reset
     * completes a newer round. */
    if (start_round_in_redis(s, item, segments, r->stock, round, &now, &room, k_hex) < 0)
        return SK_BACKEND_DOWN;
    return items_get(s, item, out);
}

/* Completes a view read from PostgreSQL with the remaining stock in Redis
 * and what follows from it. */
static sk_status item_stock(pool_session *s, item_view *out)
{
    /* The stock of every segment, summed (one HGET each, in one round trip
     * a node). */
    int segments = out->segments > 1 && out->segments <= KEYS_SEGMENTS_MAX ? out->segments : 1;
    char state[KEYS_SEGMENTS_MAX][KEYS_MAX];
    const char *argv[3 * KEYS_SEGMENTS_MAX];
    redisReply *replies[KEYS_SEGMENTS_MAX];
    for (int j = 0; j < segments; j++) {
        keys_item_state(state[j], KEYS_MAX, keys_segment(out->id, j, segments));
        argv[3 * j] = "HGET";
        argv[3 * j + 1] = state[j];
        argv[3 * j + 2] = "stock";
    }
    if (pool_session_redis_pipeline(s, (size_t)segments, 3, argv, replies) < 0)
        return SK_BACKEND_DOWN;
    /* No Redis state (a Redis that lost its data): nothing can be sold. */
    out->remaining = 0;
    sk_status st = SK_OK;
    for (int j = 0; j < segments; j++) {
        int64_t stock;
        if (!replies[j])
            st = SK_BACKEND_DOWN;
        else if (redis_reply_number_or(replies[j], 0, &stock) < 0)
            st = SK_INTERNAL;
        else
            out->remaining += stock;
        freeReplyObject(replies[j]);
    }
    if (st != SK_OK)
        return st;
    /* Sold: the units out of stock now. In PostgreSQL they are the orders
     * that hold units and the cancelled and expired ones not yet given back;
     * the rest are queued. */
    out->sold = out->initial_stock + out->restocked - out->remaining;
    int64_t held = out->persisted + out->paid + out->cancelled + out->expired - out->returned;
    out->queued = out->sold > held ? out->sold - held : 0;
    return out->room.draw ? draw_store_counts(s, out) : room_store_counts(s, out);
}

/* The view's columns, read from an items row i and its orders of the round. */
#define UNITS_IN(states) "coalesce(sum(quantity) FILTER (WHERE status IN (" states ")), 0)"
#define VIEW_SELECT                                                                                \
    "SELECT i.id, i.name, i.round, i.initial_stock, i.restocked, i.lab, "                          \
    "  coalesce(u.persisted, 0), coalesce(u.orders, 0), "                                          \
    "  coalesce((extract(epoch FROM i.starts_at) * 1000)::bigint, 0), "                            \
    "  coalesce((extract(epoch FROM i.ends_at) * 1000)::bigint, 0), i.per_buyer_limit, "           \
    "  coalesce(u.paid, 0), coalesce(u.cancelled, 0), coalesce(u.expired, 0), "                    \
    "  coalesce(u.returned, 0), i.payment_timeout_s, i.segments, i.listed, "                       \
    "  coalesce((extract(epoch FROM i.archived_at) * 1000)::bigint, 0), " ROOM_STORE_COLUMNS       \
    ", coalesce(i.pow_maxnumber, 0), i.pow_ttl_s "                                                 \
    "FROM items i LEFT JOIN LATERAL (SELECT " UNITS_IN(                                            \
        "'persisted'") " AS persisted, "                                                           \
                       "  " UNITS_IN("'paid'") " AS paid, " UNITS_IN(                              \
                           "'cancelled'") " AS cancelled, "                                        \
                                          "  " UNITS_IN(                                           \
                                              "'expired'") " AS expired, "                         \
                                                           "  coalesce(sum(quantity) FILTER "      \
                                                           "(WHERE returned_at IS NOT NULL), 0) "  \
                                                           "AS returned, "                         \
                                                           "  count(*) AS orders FROM orders o "   \
                                                           "WHERE o.item_id = i.id AND o.round = " \
                                                           "i.round) u ON true "

/* Reads row into *v. Returns 0, or -1 (logged) when it is not an item's. */
static int read_view(PGresult *res, int row, item_view *v)
{
    memset(v, 0, sizeof(*v));
    pg_row f = pg_row_at(res, row);
    v->id = pg_row_i64(&f, 0);
    snprintf(v->name, sizeof(v->name), "%s", PQgetvalue(res, row, 1));
    v->round = pg_row_i64(&f, 2);
    v->initial_stock = pg_row_i64(&f, 3);
    v->restocked = pg_row_i64(&f, 4);
    v->lab = pg_row_bool(&f, 5);
    v->persisted = pg_row_i64(&f, 6);
    v->orders = pg_row_i64(&f, 7);
    v->starts_ms = pg_row_i64(&f, 8);
    v->ends_ms = pg_row_i64(&f, 9);
    v->per_buyer_limit = pg_row_int(&f, 10);
    v->paid = pg_row_i64(&f, 11);
    v->cancelled = pg_row_i64(&f, 12);
    v->expired = pg_row_i64(&f, 13);
    v->returned = pg_row_i64(&f, 14);
    v->payment_timeout_s = pg_row_int(&f, 15);
    v->segments = pg_row_int(&f, 16);
    v->listed = pg_row_bool(&f, 17);
    v->archived_ms = pg_row_i64(&f, 18);
    room_store_read(&f, 19, &v->room, v->counts.secret);
    v->pow.maxnumber = pg_row_i64(&f, 19 + ROOM_STORE_NCOLUMNS);
    v->pow.ttl_s = pg_row_int(&f, 20 + ROOM_STORE_NCOLUMNS);
    return pg_row_check(&f, COMPONENT, "an item");
}

sk_status items_get(pool_session *s, int64_t item, item_view *out)
{
    PGresult *res;
    sk_status st = pool_session_pg_row(s, VIEW_SELECT "WHERE i.id = $1", item, &res);
    if (st != SK_OK)
        return st;
    int bad = read_view(res, 0, out);
    PQclear(res);
    if (bad)
        return SK_INTERNAL;
    out->now_ms = pool_session_redis_now_ms(s);
    if (out->now_ms < 0)
        return SK_BACKEND_DOWN;
    return item_stock(s, out);
}

sk_status items_list(pool_session *s, int with_lab, int with_unlisted, int with_archived,
                     item_view *out, size_t cap, size_t *n)
{
    char limit[24];
    snprintf(limit, sizeof(limit), "%zu", cap);
    const char *p[] = {limit, with_lab ? "true" : "false", with_unlisted ? "true" : "false",
                       with_archived ? "true" : "false"};
    *n = 0;
    PGresult *res =
        pool_session_pg(s,
                        VIEW_SELECT "WHERE ($2 OR NOT i.lab) AND ($3 OR i.listed) "
                                    "AND ($4 OR i.archived_at IS NULL) ORDER BY i.id DESC LIMIT $1",
                        4, p, PGRES_TUPLES_OK, NULL);
    if (!res)
        return SK_BACKEND_DOWN;
    size_t rows = (size_t)PQntuples(res);
    int bad = 0;
    for (size_t i = 0; i < rows && i < cap && !bad; i++)
        bad = read_view(res, (int)i, &out[i]);
    PQclear(res);
    if (bad)
        return SK_INTERNAL;
    int64_t now = pool_session_redis_now_ms(s);
    if (now < 0)
        return SK_BACKEND_DOWN;
    for (size_t i = 0; i < rows && i < cap; i++) {
        out[i].now_ms = now;
        if (item_stock(s, &out[i]) != SK_OK)
            return SK_BACKEND_DOWN;
    }
    *n = rows < cap ? rows : cap;
    return SK_OK;
}
