/* lab_lock.c: one spin-and-guard routine, and per lock the three things
 * that differ: the owner's value, one attempt to take it, and the unlock. */
#include "lab_lock.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "keys.h"
#include "lab_db.h"
#include "lab_keys.h"
#include "lab_race.h"
#include "lab_redis.h"
#include "pg_value.h"
#include "redis_reply.h"
#include "validate.h"

#define TOKEN_MAX 48
/* An int64 in decimal with its sign and NUL. */
#define INT64_TEXT_MAX 21

typedef struct lock_kind {
    int spin_ms; /* pause between two attempts */
    void (*token)(lab_ctx *c, char *buf, size_t len);
    /* One attempt: 1 taken, 0 held by another, -1 backend down. */
    int (*try_take)(lab_ctx *c, const lab_request *r, const char *key, const char *token);
    void (*release)(lab_ctx *c, const lab_request *r, const char *key, const char *token);
} lock_kind;

/* Runs a command whose reply only matters as "was it this status/integer". */
static int command_int(lab_ctx *c, long long *out, const char *fmt, const char *key,
                       const char *arg)
{
    redisReply *rep = lab_ctx_redis(c, key, fmt, key, arg);
    if (!rep)
        return -1;
    int64_t n;
    *out = redis_reply_number(rep, &n) == 0 ? n : 0;
    freeReplyObject(rep);
    return 0;
}

static void unique_token(lab_ctx *c, char *buf, size_t len)
{
    lab_ctx_token(c, buf, len);
}

/* --- SETNX + EXPIRE, DEL (documents 002 and 004: the wrong way) --- */

static int setnx_expire_take(lab_ctx *c, const lab_request *r, const char *key, const char *token)
{
    long long won;
    if (command_int(c, &won, "SETNX %s %s", key, token) < 0)
        return -1;
    if (!won)
        return 0;
    /* A crash here leaves the lock without expiry: the documents' deadlock.
     * The crash scenario (lab_faults) makes it happen, as a kill -9 would. */
    if (r->fault == LAB_FAULT_CRASH_AFTER_SETNX)
        raise(SIGKILL);
    char seconds[24];
    snprintf(seconds, sizeof(seconds), "%d", (c->cfg->lab_lock_ttl_ms + 999) / 1000);
    long long set;
    command_int(c, &set, "EXPIRE %s %s", key, seconds);
    return 1;
}

static void del_release(lab_ctx *c, const lab_request *r, const char *key, const char *token)
{
    (void)r;
    (void)token;
    freeReplyObject(lab_ctx_redis(c, key, "DEL %s", key));
}

static const lock_kind setnx_expire = {2, unique_token, setnx_expire_take, del_release};

/* --- document 000's expiry-timestamp lock: SETNX, GETSET --- */

/* The expiry in ms, as 000's value, then a suffix that is this client's
 * alone: 000's bare timestamps are equal for clients that start in the same
 * millisecond (the lab's threads often do, in lockstep after a common wait),
 * and an overwrite with an equal value changes nothing. The expiry is
 * still read as the number at the front. */
static void expiry_token(lab_ctx *c, char *buf, size_t len)
{
    /* lab_ctx_token's id is one int64 in decimal: sized for it, the expiry,
     * the dot and the id fit in TOKEN_MAX, as a Release build's
     * -Wformat-truncation can see. */
    char unique[INT64_TEXT_MAX];
    lab_ctx_token(c, unique, sizeof(unique));
    snprintf(buf, len, "%" PRId64 ".%s", clock_wall_ms() + c->cfg->lab_lock_ttl_ms, unique);
}

/* The value of key as a string in buf ("" when missing). -1 when down. */
static int redis_string(lab_ctx *c, char *buf, size_t len, const char *fmt, const char *key,
                        const char *arg)
{
    redisReply *rep = lab_ctx_redis(c, key, fmt, key, arg);
    if (!rep)
        return -1;
    snprintf(buf, len, "%s", rep->type == REDIS_REPLY_STRING ? rep->str : "");
    freeReplyObject(rep);
    return 0;
}

static int getset_take(lab_ctx *c, const lab_request *r, const char *key, const char *token)
{
    long long won;
    if (command_int(c, &won, "SETNX %s %s", key, token) < 0)
        return -1;
    if (won)
        return 1;
    char current[TOKEN_MAX], old[TOKEN_MAX];
    if (redis_string(c, current, sizeof(current), "GET %s", key, NULL) < 0)
        return -1;
    /* Expired by the clock of whoever set it: take it over, unless another
     * client's GETSET came first. Ours overwrote theirs either way. */
    /* The number at the front, before expiry_token's ".<id>". */
    int64_t expires;
    if (validate_i64(current, strcspn(current, "."), &expires) == 0 && expires < clock_wall_ms()) {
        /* Where two racers who read the same expired value meet: forced
         * with ?race= (lab_race.h), by luck under load. */
        lab_race_before_take(c, r);
        int down = redis_string(c, old, sizeof(old), "GETSET %s %s", key, token) < 0;
        lab_race_after_take(c, r);
        if (down)
            return -1;
        return old[0] && strcmp(old, current) == 0;
    }
    return 0;
}

static void getset_release(lab_ctx *c, const lab_request *r, const char *key, const char *token)
{
    (void)r;
    char current[TOKEN_MAX];
    if (redis_string(c, current, sizeof(current), "GET %s", key, NULL) == 0 &&
        strcmp(current, token) == 0)
        freeReplyObject(lab_ctx_redis(c, key, "DEL %s", key));
}

/* No pause between attempts, as 000's lock() (a bare for (;;)): its waiters
 * are nearly always between a GET and a GETSET, which is where two of them
 * GETSET the same expired value and the loser overwrites the winner's
 * value, so that the winner's unlock finds another value and leaves the key
 * (000's leftover). Under load, whether the key is still there at the end
 * of a run depends on who raced last; ?race=first and ?race=second make
 * two racers meet there every time (`make experiments SCENARIO=leftover_key`). */
static const lock_kind getset = {0, expiry_token, getset_take, getset_release};

/* --- SET NX PX, compare-and-delete --- */

static int set_nx_px_take(lab_ctx *c, const lab_request *r, const char *key, const char *token)
{
    /* One command looks and takes: forced racers (?race=) can only meet
     * before it, and the second one then finds the first's lock. */
    lab_race_before_take(c, r);
    redisReply *rep =
        lab_ctx_redis(c, key, "SET %s %s NX PX %d", key, token, c->cfg->lab_lock_ttl_ms);
    lab_race_after_take(c, r);
    if (!rep)
        return -1;
    int won = rep->type == REDIS_REPLY_STATUS;
    freeReplyObject(rep);
    return won;
}

static void compare_and_delete(lab_ctx *c, const lab_request *r, const char *key, const char *token)
{
    (void)r;
    const char *keys_args[] = {key, token};
    freeReplyObject(lab_ctx_script(c, SCRIPT_LOCK_RELEASE, 1, 1, keys_args));
}

static const lock_kind set_nx_px = {2, unique_token, set_nx_px_take, compare_and_delete};

/* --- a row of lab_locks --- */

static int pg_row_take(lab_ctx *c, const lab_request *r, const char *key, const char *token)
{
    (void)key;
    char item_s[24];
    snprintf(item_s, sizeof(item_s), "%" PRId64, r->item);
    const char *params[] = {item_s, r->strategy, token};
    PGresult *res = lab_ctx_sql(c,
                                "INSERT INTO lab_locks (item_id, strategy, owner) "
                                "VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                                3, params, PGRES_COMMAND_OK);
    if (!res)
        return -1;
    int64_t rows;
    int won = pg_value_affected(res, &rows) == 0 && rows == 1;
    PQclear(res);
    return won;
}

static void pg_row_release(lab_ctx *c, const lab_request *r, const char *key, const char *token)
{
    (void)key;
    char item_s[24];
    snprintf(item_s, sizeof(item_s), "%" PRId64, r->item);
    const char *params[] = {item_s, r->strategy, token};
    PQclear(lab_ctx_sql(c,
                        "DELETE FROM lab_locks WHERE item_id = $1 AND strategy = $2 "
                        "AND owner = $3",
                        3, params, PGRES_COMMAND_OK));
}

static const lock_kind table_row = {5, unique_token, pg_row_take, pg_row_release};

/* --- the shared routine --- */

/* Takes the lock, spinning until the wait runs out. */
static sk_status acquire(lab_ctx *c, const lab_request *r, const lock_kind *kind, const char *key,
                         const char *token)
{
    int64_t deadline = lab_deadline(c);
    for (;;) {
        int won = kind->try_take(c, r, key, token);
        if (won > 0)
            return SK_OK;
        if (won < 0)
            return SK_BACKEND_DOWN;
        if (clock_mono_ms() >= deadline)
            return SK_BUSY;
        if (kind->spin_ms > 0)
            lab_pause_ms(kind->spin_ms);
    }
}

/* Runs body under the lock of r's strategy. */
static sk_status guarded_run(lab_ctx *c, const lab_request *r, const lock_kind *kind,
                             lab_lock_body body, void *arg, int64_t *remaining)
{
    char key[KEYS_MAX], token[TOKEN_MAX];
    lab_keys_lock(key, sizeof(key), r->item, r->strategy);
    kind->token(c, token, sizeof(token));
    sk_status st = acquire(c, r, kind, key, token);
    if (st != SK_OK)
        return st;
    st = body(c, r, arg, remaining);
    kind->release(c, r, key, token);
    return st;
}

/* The body of the plain lock strategies: arg is the counter. */
static sk_status check_work_take(lab_ctx *c, const lab_request *r, void *arg, int64_t *remaining)
{
    return lab_check_work_take(c, r, arg, NULL, remaining);
}

static sk_status guarded(lab_ctx *c, const lab_request *r, const lock_kind *kind,
                         const lab_counter *stock, int64_t *remaining)
{
    return guarded_run(c, r, kind, check_work_take, (void *)stock, remaining);
}

sk_status lab_lock_redis_run(lab_ctx *c, const lab_request *r, lab_lock_body body, void *arg,
                             int64_t *remaining)
{
    return guarded_run(c, r, &set_nx_px, body, arg, remaining);
}

sk_status lab_lock_setnx_expire(lab_ctx *c, const lab_request *r, int64_t *remaining)
{
    return guarded(c, r, &setnx_expire, &lab_redis_key_stock, remaining);
}

sk_status lab_lock_getset(lab_ctx *c, const lab_request *r, int64_t *remaining)
{
    return guarded(c, r, &getset, &lab_redis_key_stock, remaining);
}

sk_status lab_lock_redis(lab_ctx *c, const lab_request *r, int64_t *remaining)
{
    return guarded(c, r, &set_nx_px, &lab_redis_key_stock, remaining);
}

sk_status lab_lock_pg_table(lab_ctx *c, const lab_request *r, int64_t *remaining)
{
    return guarded(c, r, &table_row, &lab_db_stock, remaining);
}

/* --- segments --- */

/* Units of segment `index` when the round began: the initial stock split
 * as evenly as it goes, the first ones taking the remainder. */
static int64_t share(int64_t initial, int nsegments, int index)
{
    return initial / nsegments + (index < initial % nsegments ? 1 : 0);
}

/* Units left in every segment, laid out from the initial stock where a
 * segment was not used yet. */
static sk_status segments_total(lab_ctx *c, const lab_request *r, int64_t *total)
{
    int n = c->cfg->lab_segments;
    char key[KEYS_MAX];
    lab_keys_segments(key, sizeof(key), r->item);
    int64_t initial;
    sk_status st = lab_initial_stock(c, r->item, &initial, NULL);
    if (st != SK_OK)
        return st;
    redisReply *rep = lab_ctx_redis(c, key, "HGETALL %s", key);
    if (!rep)
        return SK_BACKEND_DOWN;
    unsigned char used[256] = {0};
    *total = 0;
    for (size_t i = 0; rep->type == REDIS_REPLY_ARRAY && i + 1 < rep->elements; i += 2) {
        int64_t index, units;
        if (redis_reply_number(rep->element[i], &index) < 0 ||
            redis_reply_number(rep->element[i + 1], &units) < 0) {
            freeReplyObject(rep);
            return SK_INTERNAL;
        }
        if (index >= 0 && index < n && index < 256) {
            used[index] = 1;
            *total += units;
        }
    }
    freeReplyObject(rep);
    for (int i = 0; i < n && i < 256; i++)
        if (!used[i])
            *total += share(initial, n, i);
    return SK_OK;
}

/* arg: the segment's index. Read, make and take run under the segment's
 * lock. SK_NOT_FOUND: the segment is not laid out yet. */
static sk_status segment_read(lab_ctx *c, const lab_request *r, void *arg, int64_t *value)
{
    int index = *(const int *)arg;
    char key[KEYS_MAX], field[16];
    lab_keys_segments(key, sizeof(key), r->item);
    snprintf(field, sizeof(field), "%d", index);
    char text[TOKEN_MAX];
    if (redis_string(c, text, sizeof(text), "HGET %s %s", key, field) < 0)
        return SK_BACKEND_DOWN;
    if (!text[0])
        return SK_NOT_FOUND;
    return validate_i64(text, strlen(text), value) == 0 ? SK_OK : SK_INTERNAL;
}

/* Lays the segment out: its share of the initial stock. */
static sk_status segment_make(lab_ctx *c, const lab_request *r, void *arg)
{
    int index = *(const int *)arg;
    int64_t initial;
    sk_status st = lab_initial_stock(c, r->item, &initial, NULL);
    if (st != SK_OK)
        return st;
    char key[KEYS_MAX], field[16];
    lab_keys_segments(key, sizeof(key), r->item);
    snprintf(field, sizeof(field), "%d", index);
    redisReply *rep = lab_ctx_redis(c, key, "HSETNX %s %s %" PRId64, key, field,
                                    share(initial, c->cfg->lab_segments, index));
    freeReplyObject(rep);
    return rep ? SK_OK : SK_BACKEND_DOWN;
}

static sk_status segment_take(lab_ctx *c, const lab_request *r, void *arg, int64_t seen,
                              int64_t *remaining)
{
    int index = *(const int *)arg;
    char key[KEYS_MAX];
    lab_keys_segments(key, sizeof(key), r->item);
    redisReply *rep = lab_ctx_redis(c, key, "HSET %s %d %" PRId64, key, index, seen - 1);
    freeReplyObject(rep);
    *remaining = seen - 1;
    return rep ? SK_OK : SK_BACKEND_DOWN;
}

static const lab_counter segment = {segment_read, segment_take, segment_make};

/* One attempt at segment `index`: SK_OK (sold), SK_SOLD_OUT (empty),
 * SK_BUSY (its lock is held), or SK_BACKEND_DOWN. */
static sk_status try_segment(lab_ctx *c, const lab_request *r, int index, int64_t *remaining)
{
    char key[KEYS_MAX], token[TOKEN_MAX], field[16], text[TOKEN_MAX];
    /* A segment only shrinks within a round, so one seen empty without its
     * lock is empty: sold-out buyers pass by without locking. */
    lab_keys_segments(key, sizeof(key), r->item);
    snprintf(field, sizeof(field), "%d", index);
    if (redis_string(c, text, sizeof(text), "HGET %s %s", key, field) < 0)
        return SK_BACKEND_DOWN;
    int64_t left;
    if (validate_i64(text, strlen(text), &left) == 0 && left <= 0)
        return SK_SOLD_OUT;
    lab_keys_segment_lock(key, sizeof(key), r->item, index);
    set_nx_px.token(c, token, sizeof(token));
    int won = set_nx_px.try_take(c, r, key, token);
    if (won <= 0)
        return won < 0 ? SK_BACKEND_DOWN : SK_BUSY;
    sk_status st = lab_check_work_take(c, r, &segment, &index, remaining);
    set_nx_px.release(c, r, key, token);
    return st;
}

sk_status lab_lock_segmented(lab_ctx *c, const lab_request *r, int64_t *remaining)
{
    int n = c->cfg->lab_segments;
    unsigned char empty[256] = {0};
    int nempty = 0;
    char token[TOKEN_MAX];
    lab_ctx_token(c, token, sizeof(token));
    /* The id's sequence bits spread the buyers over the segments. */
    int start = (int)((strtoull(token, NULL, 10) >> ORDER_NODE_BITS) % (unsigned)n);
    int64_t deadline = lab_deadline(c);
    for (;;) {
        for (int j = 0; j < n; j++) {
            int index = (start + j) % n;
            if (empty[index])
                continue;
            sk_status st = try_segment(c, r, index, remaining);
            if (st == SK_OK) {
                /* Sold: answer with the units left in all segments. */
                int64_t total;
                if (segments_total(c, r, &total) == SK_OK)
                    *remaining = total;
                return SK_OK;
            }
            if (st == SK_SOLD_OUT) {
                empty[index] = 1;
                nempty++;
            } else if (st != SK_BUSY) {
                return st;
            }
        }
        if (nempty == n)
            return SK_SOLD_OUT;
        if (clock_mono_ms() >= deadline)
            return SK_BUSY;
        lab_pause_ms(set_nx_px.spin_ms);
    }
}

sk_status lab_lock_segments_remaining(lab_ctx *c, const lab_request *r, int64_t *remaining)
{
    return segments_total(c, r, remaining);
}
