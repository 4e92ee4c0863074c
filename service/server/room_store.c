/* room_store.c: the waiting room's half of an item's round. */
#include "room_store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "archive.h"
#include "digest.h"
#include "keys.h"
#include "log.h"
#include "redis_reply.h"
#include "text_buf.h"

void room_store_read(pg_row *f, int at, room_terms *r, char *k_hex)
{
    memset(r, 0, sizeof(*r));
    r->room = pg_row_bool(f, at);
    r->prequeue_ms = pg_row_i64(f, at + 1);
    r->admit_per_s = pg_row_real(f, at + 2);
    r->admit_burst = pg_row_i64(f, at + 3);
    r->max_active = pg_row_i64(f, at + 4);
    r->admission_ttl_s = pg_row_int(f, at + 5);
    r->draw = pg_row_bool(f, at + 7);
    r->entries_open_ms = pg_row_i64(f, at + 8);
    r->entries_close_ms = pg_row_i64(f, at + 9);
    const char *k = PQgetvalue(f->res, f->row, at + 6);
    snprintf(k_hex, ROOM_HEX_LEN + 1, "%s", (r->room || r->draw) && k ? k : "");
}

int room_store_draw(char *k_hex)
{
    unsigned char k[ROOM_SECRET_LEN];
    if (RAND_bytes(k, sizeof(k)) != 1)
        return -1;
    digest_hex(k, sizeof(k), k_hex);
    return 0;
}

int room_store_start(pool_session *s, int64_t item, int64_t round, int64_t starts_ms,
                     int64_t ends_ms, const room_terms *r, const char *k_hex, int if_missing)
{
    char room[KEYS_MAX], places[KEYS_MAX], admitted[KEYS_MAX], active[KEYS_MAX], round_s[24],
        prequeue_s[24], starts_s[24], ends_s[24], per_s[40], burst_s[24], max_s[24], ttl_s[12];
    keys_room(room, sizeof(room), item, NULL);
    keys_room(places, sizeof(places), item, "places");
    keys_room(admitted, sizeof(admitted), item, "admitted");
    keys_room(active, sizeof(active), item, "active");
    snprintf(round_s, sizeof(round_s), "%" PRId64, round);
    snprintf(prequeue_s, sizeof(prequeue_s), "%" PRId64, r->prequeue_ms);
    snprintf(starts_s, sizeof(starts_s), "%" PRId64, starts_ms);
    snprintf(ends_s, sizeof(ends_s), "%" PRId64, ends_ms);
    snprintf(per_s, sizeof(per_s), "%.17g", r->admit_per_s);
    snprintf(burst_s, sizeof(burst_s), "%" PRId64, r->admit_burst);
    snprintf(max_s, sizeof(max_s), "%" PRId64, r->max_active);
    snprintf(ttl_s, sizeof(ttl_s), "%d", r->admission_ttl_s);
    const char *keys_args[] = {
        room,   places, admitted, active, round_s, r->room ? k_hex : "",  prequeue_s, starts_s,
        ends_s, per_s,  burst_s,  max_s,  ttl_s,   if_missing ? "1" : "0"};
    redisReply *reply = pool_session_script(s, SCRIPT_ROOM_RESET, 4, 10, keys_args);
    freeReplyObject(reply);
    return reply ? 0 : -1;
}

int room_store_started(pool_session *s, int64_t item, int64_t round)
{
    char room[KEYS_MAX], places[KEYS_MAX], round_s[24];
    keys_room(room, sizeof(room), item, NULL);
    keys_room(places, sizeof(places), item, "places");
    snprintf(round_s, sizeof(round_s), "%" PRId64, round);
    const char *keys_args[] = {room, places, round_s}; /* a join of nobody */
    redisReply *r = pool_session_script(s, SCRIPT_ROOM_JOIN, 2, 1, keys_args);
    int64_t v[3]; /* now, added, started; and the replayed flags of nobody */
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 5 ||
        redis_reply_numbers(r, 1, 3, v) < 0)
        return redis_reply_unexpected(r, "room", "room_join of nobody");
    freeReplyObject(r);
    return v[2] != 0;
}

/* The room's flag and counts of v (an HMGET's reply r of 4 fields) into
 * v->counts; the flag set now if the start is near by this node's clock.
 * Takes r. SK_OK, SK_INTERNAL or SK_BACKEND_DOWN. */
static sk_status read_counts(pool_session *s, item_view *v, redisReply *r)
{
    int64_t started = 0;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 4 ||
        redis_reply_number_or(r->element[0], 0, &v->counts.joined) < 0 ||
        redis_reply_number_or(r->element[1], 0, &v->counts.admitted) < 0 ||
        redis_reply_number_or(r->element[2], 0, &v->counts.expired_unused) < 0 ||
        redis_reply_number_or(r->element[3], 0, &started) < 0) {
        redis_reply_unexpected(r, "room", "HMGET of a room's counts");
        return SK_INTERNAL;
    }
    freeReplyObject(r);
    /* Not set yet: nobody joined nor polled since the start as the item's
     * node sees it. Near the start by this node's clock (any node's), the
     * item's node is asked (a join of nobody), so that the reveal does not
     * wait for a buyer; it alone decides. */
    if (!started && v->now_ms >= v->starts_ms - ROOM_STORE_REVEAL_EARLY_MS)
        started = room_store_started(s, v->id, v->round);
    if (started < 0)
        return SK_BACKEND_DOWN;
    v->counts.started = started != 0;
    return SK_OK;
}

sk_status room_store_counts(pool_session *s, item_view *v)
{
    unsigned char k[ROOM_SECRET_LEN];
    if (!v->room.room)
        return SK_OK;
    if (digest_unhex(v->counts.secret, k, sizeof(k)) < 0 ||
        room_commitment(k, v->counts.commitment) < 0)
        return SK_INTERNAL;
    char room[KEYS_MAX], active[KEYS_MAX], now_s[24];
    keys_room(room, sizeof(room), v->id, NULL);
    keys_room(active, sizeof(active), v->id, "active");
    snprintf(now_s, sizeof(now_s), "(%" PRId64, v->now_ms);
    const char *hmget[] = {"HMGET", room, "joined", "admitted", "expired_unused", "started"};
    redisReply *r = pool_session_redis(s, 6, hmget);
    if (!r)
        return SK_BACKEND_DOWN;
    sk_status st = read_counts(s, v, r);
    if (st != SK_OK)
        return st;
    /* Those past their expiry not trimmed yet are not active. */
    const char *zcount[] = {"ZCOUNT", active, now_s, "+inf"};
    r = pool_session_redis(s, 4, zcount);
    if (!r)
        return SK_BACKEND_DOWN;
    if (redis_reply_number(r, &v->counts.active) < 0) {
        redis_reply_unexpected(r, "room", "ZCOUNT of a room's active");
        return SK_INTERNAL;
    }
    freeReplyObject(r);
    return SK_OK;
}

int room_store_master(pool_session *s, unsigned char *master)
{
    char drawn[ROOM_HEX_LEN + 1];
    if (room_store_draw(drawn) < 0)
        return -1;
    const char *p[] = {drawn};
    /* The first server's draw wins; every later one gets the row back. DO
     * UPDATE (of nothing) returns the row it found even when it waited for
     * another server's insert to commit, where DO NOTHING returns no row and
     * a read after it, under the statement's older snapshot, none either. */
    PGresult *res = pool_session_pg(s,
                                    "INSERT INTO room_master (one, secret) VALUES (true, $1) "
                                    "ON CONFLICT (one) DO UPDATE SET secret = room_master.secret "
                                    "RETURNING secret",
                                    1, p, PGRES_TUPLES_OK, NULL);
    int read = res && PQntuples(res) == 1 &&
               digest_unhex(PQgetvalue(res, 0, 0), master, ROOM_SECRET_LEN) == 0;
    PQclear(res);
    return read ? 0 : -1;
}

int room_store_master_of(room_cache *c, pool_session *s, unsigned char *master)
{
    if (room_cache_master(c, master))
        return 0;
    if (room_store_master(s, master) < 0)
        return -1;
    room_cache_set_master(c, master);
    return 0;
}

/* Starts item's room again from its items row (Redis lost it). */
static sk_status reseed(pool_session *s, int64_t item)
{
    char k_hex[ROOM_HEX_LEN + 1];
    PGresult *res;
    sk_status st = pool_session_pg_row(
        s,
        "SELECT i.round, coalesce((extract(epoch FROM i.starts_at) * 1000)::bigint, 0), "
        "  coalesce((extract(epoch FROM i.ends_at) * 1000)::bigint, 0), " ROOM_STORE_COLUMNS
        "FROM items i WHERE i.id = $1 AND i.archived_at IS NULL",
        item, &res);
    if (st == SK_NOT_FOUND)
        return archive_why_missing(s, item);
    if (st != SK_OK)
        return st;
    room_terms r;
    pg_row f = pg_row_at(res, 0);
    int64_t round = pg_row_i64(&f, 0), starts = pg_row_i64(&f, 1), ends = pg_row_i64(&f, 2);
    room_store_read(&f, 3, &r, k_hex);
    PQclear(res);
    if (pg_row_check(&f, "room", "an item's room") < 0)
        return SK_INTERNAL;
    if (!r.room)
        return SK_NOT_A_ROOM;
    log_msg(LOG_WARN, "room", "item %" PRId64 ": its room was not in Redis: started again", item);
    return room_store_start(s, item, round, starts, ends, &r, k_hex, 1) < 0 ? SK_BACKEND_DOWN
                                                                            : SK_OK;
}

/* Reads the room's hash into *out: 1, 0 when there is none, -1 when Redis failed. */
static int read_info(pool_session *s, int64_t item, room_info *out)
{
    char room[KEYS_MAX], state[KEYS_MAX];
    keys_room(room, sizeof(room), item, NULL);
    keys_item_state(state, sizeof(state), item);
    const char *hmget[] = {"HMGET", room, "round", "secret", "prequeue", "starts", "ends", "per_s"};
    redisReply *r = pool_session_redis(s, 8, hmget);
    if (!r)
        return -1;
    int found = r->type == REDIS_REPLY_ARRAY && r->elements == 6 &&
                r->element[1]->type == REDIS_REPLY_STRING &&
                digest_unhex(r->element[1]->str, out->k, sizeof(out->k)) == 0;
    if (found && (redis_reply_number(r->element[0], &out->round) < 0 ||
                  redis_reply_number_or(r->element[2], 0, &out->prequeue_ms) < 0 ||
                  redis_reply_number(r->element[3], &out->starts_ms) < 0 ||
                  redis_reply_number_or(r->element[4], 0, &out->ends_ms) < 0 ||
                  redis_reply_real(r->element[5], &out->per_s) < 0))
        return redis_reply_unexpected(r, "room", "HMGET of a room");
    if (found)
        out->item = item;
    freeReplyObject(r);
    if (!found)
        return 0;
    const char *hget[] = {"HGET", state, "segments"};
    int64_t segments;
    if (redis_reply_int(pool_session_redis(s, 3, hget), "room", "HGET of segments", &segments) < 0)
        return -1;
    out->segments = segments >= 1 && segments <= KEYS_SEGMENTS_MAX ? (int)segments : 1;
    return 1;
}

sk_status room_store_info(pool_session *s, int64_t item, room_info *out)
{
    memset(out, 0, sizeof(*out));
    int got = read_info(s, item, out);
    if (got == 0) {
        sk_status st = reseed(s, item);
        if (st != SK_OK)
            return st;
        got = read_info(s, item, out);
    }
    return got > 0 ? SK_OK : got == 0 ? SK_NOT_A_ROOM : SK_BACKEND_DOWN;
}

int64_t room_store_remaining(pool_session *s, int64_t item, int segments)
{
    char state[KEYS_SEGMENTS_MAX][KEYS_MAX];
    const char *argv[3 * KEYS_SEGMENTS_MAX];
    redisReply *replies[KEYS_SEGMENTS_MAX];
    for (int j = 0; j < segments; j++) {
        keys_item_state(state[j], KEYS_MAX, keys_segment(item, j, segments));
        argv[3 * j] = "HGET";
        argv[3 * j + 1] = state[j];
        argv[3 * j + 2] = "stock";
    }
    if (pool_session_redis_pipeline(s, (size_t)segments, 3, argv, replies) < 0)
        return -1;
    int64_t remaining = 0, stock;
    int bad = 0;
    for (int j = 0; j < segments; j++) {
        if (redis_reply_number_or(replies[j], 0, &stock) < 0)
            bad = 1; /* no stock at all is 0: a Redis that lost its data */
        else
            remaining += stock;
        freeReplyObject(replies[j]);
    }
    if (bad)
        log_msg(LOG_WARN, "room", "redis HGET of a segment's stock: unexpected reply");
    return bad ? -1 : remaining;
}

void room_store_used(pool_session *s, int64_t item, const char *e)
{
    char active[KEYS_MAX];
    keys_room(active, sizeof(active), item, "active");
    const char *zrem[] = {"ZREM", active, e};
    freeReplyObject(pool_session_redis(s, 3, zrem));
}

static const char *const gauge_names[] = {"joined", "admitted", "expired_unused", "active"};
static const char *const gauge_help[] = {
    "Buyers who joined the item's waiting room this round.",
    "Places of the waiting room admitted so far (the frontier).",
    "Admissions that expired without a purchase.",
    "Admissions not yet used nor expired (up to their trim)."};

/* Appends the gauges of the n rooms of values[i][4] (-1: not a room) to t. */
static void render(text_buf *t, const int64_t *items, int64_t (*values)[4], size_t n)
{
    for (int g = 0; g < 4; g++) {
        text_buf_printf(t, "# HELP seckill_room_%s %s\n# TYPE seckill_room_%s gauge\n",
                        gauge_names[g], gauge_help[g], gauge_names[g]);
        for (size_t i = 0; i < n; i++)
            if (values[i][0] >= 0)
                text_buf_printf(t, "seckill_room_%s{item=\"%" PRId64 "\"} %" PRId64 "\n",
                                gauge_names[g], items[i], values[i][g]);
    }
}

/* Reads the rooms' counts of items[0..n) into values (-1 first: not a
 * room): one pipeline of HMGET, one of ZCARD. Returns 0 or -1. */
static int read_gauges(pool_session *s, const int64_t *items, size_t n, int64_t (*values)[4],
                       char (*keys)[KEYS_MAX], const char **argv, redisReply **replies)
{
    for (size_t i = 0; i < n; i++) {
        keys_room(keys[i], KEYS_MAX, items[i], NULL);
        const char *hmget[] = {"HMGET", keys[i], "joined", "admitted", "expired_unused"};
        memcpy(&argv[5 * i], hmget, sizeof(hmget));
    }
    if (pool_session_redis_pipeline(s, n, 5, argv, replies) < 0)
        return -1;
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        redisReply *r = replies[i];
        int room = r && r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
                   r->element[0]->type == REDIS_REPLY_STRING;
        values[i][0] = -1;
        if (room && redis_reply_numbers(r, 0, 3, values[i]) < 0)
            bad = 1;
        freeReplyObject(r);
        replies[i] = NULL;
        keys_room(keys[i], KEYS_MAX, items[i], "active");
        argv[2 * i] = "ZCARD";
        argv[2 * i + 1] = keys[i];
    }
    if (!bad && pool_session_redis_pipeline(s, n, 2, argv, replies) < 0)
        return -1;
    for (size_t i = 0; !bad && i < n; i++)
        bad = redis_reply_number(replies[i], &values[i][3]) < 0;
    for (size_t i = 0; i < n; i++)
        freeReplyObject(replies[i]);
    if (bad)
        log_msg(LOG_WARN, "room", "redis gauges of the rooms: unexpected reply");
    return bad ? -1 : 0;
}

void room_store_metrics(pool_session *s, text_buf *t)
{
    int64_t *items = NULL;
    size_t n = 0;
    if (pool_session_items(s, &items, &n) < 0 || n == 0) {
        free(items);
        return;
    }
    char(*keys)[KEYS_MAX] = malloc(n * sizeof(*keys));
    const char **argv = malloc(5 * n * sizeof(*argv));
    redisReply **replies = calloc(n, sizeof(*replies));
    int64_t(*values)[4] = malloc(n * sizeof(*values));
    if (keys && argv && replies && values &&
        read_gauges(s, items, n, values, keys, argv, replies) == 0)
        render(t, items, values, n);
    free(keys);
    free(argv);
    free(replies);
    free(values);
    free(items);
}
