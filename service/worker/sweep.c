/* sweep.c: the recovery sweep: heartbeats, the election of one sweeper per
 * period, and the move of a dead worker's processing list onto the queue.
 *
 * A worker that dies for good leaves its processing list behind, and no
 * other worker reads another's list. So every worker refreshes a heartbeat
 * key with a TTL, and once per period the worker that wins the sweep lock
 * (document 002's scheduled job on many nodes: SET NX PX, never released,
 * so at most one sweep per period) moves each list whose worker has no
 * heartbeat back onto the queue.
 *
 * Why no order is lost or doubled:
 *   - One script per list checks the heartbeat and moves the whole list:
 *     Redis runs it whole, so an order is always in exactly one of the two
 *     lists, and a worker that takes its id back in between keeps its list.
 *   - Orders the dead worker had already committed come back too; the
 *     insert is idempotent (ON CONFLICT DO NOTHING), so whoever takes them
 *     next inserts nothing and acknowledges them.
 *   - A worker wrongly taken for dead (paused past its TTL) still holds its
 *     batch in memory: it commits it and trims its list, which then holds
 *     only orders it moved after the sweep, all of them in that batch. The
 *     swept copies are inserted again as no-ops. A repeat, never a loss.
 *   - Two sweeps at once (a sweep outlasting its lock) find each list once:
 *     the second finds it empty. */
#include "sweep.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "backend.h"
#include "keys.h"
#include "log.h"

#define COMPONENT "sweep"

/* KEYS[1] the heartbeat; ARGV[1] the token, ARGV[2] the TTL in ms. */
static const char heartbeat_script[] =
    "local v = redis.call('GET', KEYS[1]) "
    "if v and v ~= ARGV[1] then return {0, v, redis.call('PTTL', KEYS[1])} end "
    "redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) "
    "return {1}";

/* KEYS[1] the heartbeat; ARGV[1] the token: compare and delete. */
static const char release_script[] =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end "
    "return 0";

/* KEYS[1] the processing list, KEYS[2] the queue, KEYS[3] the heartbeat.
 * The newest entry (head) goes first to the queue's tail, where workers
 * take from, so the list's oldest ends up at the tail: taken first, in the
 * order they were accepted. */
static const char recover_script[] =
    "if redis.call('EXISTS', KEYS[3]) == 1 then return -2 end "
    "local n = 0 "
    "while redis.call('LMOVE', KEYS[1], KEYS[2], 'LEFT', 'RIGHT') do n = n + 1 end "
    "return n";

/* Logs a reply that is not the one expected, frees it. Returns -1. */
static int failed(redisContext *c, redisReply *r, const char *what)
{
    if (!r)
        log_msg(LOG_WARN, COMPONENT, "redis %s: %s", what,
                c->errstr[0] ? c->errstr : "connection lost");
    else
        log_msg(LOG_WARN, COMPONENT, "redis %s: unexpected reply%s%s", what,
                r->type == REDIS_REPLY_ERROR ? ": " : "",
                r->type == REDIS_REPLY_ERROR ? r->str : "");
    freeReplyObject(r);
    return -1;
}

void sweep_token(char *buf, size_t len, const char *worker_id)
{
    uint64_t rnd = 0;
    if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        rnd = (uint64_t)backend_now_ms() ^ ((uint64_t)backend_mono_ms() << 20);
    snprintf(buf, len, "%s:%ld:%016" PRIx64, worker_id, (long)getpid(), rnd);
}

int sweep_heartbeat(redisContext *c, const char *worker_id, const char *token, int64_t ttl_ms,
                    char *holder, size_t holder_len, int64_t *pttl_ms)
{
    char key[KEYS_MAX], ttl[24];
    keys_worker_alive(key, sizeof(key), worker_id);
    snprintf(ttl, sizeof(ttl), "%" PRId64, ttl_ms);
    redisReply *r = redisCommand(c, "EVAL %s 1 %s %s %s", heartbeat_script, key, token, ttl);
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
        r->element[0]->type != REDIS_REPLY_INTEGER)
        return failed(c, r, "heartbeat");
    int rc = r->element[0]->integer == 1;
    if (!rc) {
        if (r->elements != 3 || r->element[1]->type != REDIS_REPLY_STRING ||
            r->element[2]->type != REDIS_REPLY_INTEGER)
            return failed(c, r, "heartbeat");
        snprintf(holder, holder_len, "%s", r->element[1]->str);
        *pttl_ms = r->element[2]->integer;
    }
    freeReplyObject(r);
    return rc;
}

int sweep_heartbeat_release(redisContext *c, const char *worker_id, const char *token)
{
    char key[KEYS_MAX];
    keys_worker_alive(key, sizeof(key), worker_id);
    redisReply *r = redisCommand(c, "EVAL %s 1 %s %s", release_script, key, token);
    if (!r || r->type != REDIS_REPLY_INTEGER)
        return failed(c, r, "heartbeat release");
    freeReplyObject(r);
    return 0;
}

int sweep_elect(redisContext *c, const char *token, int64_t period_ms)
{
    char ms[24];
    snprintf(ms, sizeof(ms), "%" PRId64, period_ms);
    redisReply *r = redisCommand(c, "SET %s %s NX PX %s", KEYS_SWEEP_LOCK, token, ms);
    if (r && r->type == REDIS_REPLY_NIL) {
        freeReplyObject(r);
        return 0;
    }
    if (!r || r->type != REDIS_REPLY_STATUS)
        return failed(c, r, "sweep lock");
    freeReplyObject(r);
    return 1;
}

long long sweep_recover(redisContext *c, const char *worker_id)
{
    char list[KEYS_MAX], alive[KEYS_MAX];
    keys_processing(list, sizeof(list), worker_id);
    keys_worker_alive(alive, sizeof(alive), worker_id);
    redisReply *r = redisCommand(c, "EVAL %s 3 %s %s %s", recover_script, list, KEYS_QUEUE, alive);
    if (!r || r->type != REDIS_REPLY_INTEGER)
        return failed(c, r, "sweep move");
    long long n = r->integer;
    freeReplyObject(r);
    return n;
}

int sweep_run(redisContext *c, const char *self_id, sweep_result *out)
{
    const size_t prefix = strlen(KEYS_PROCESSING_PREFIX);
    char cursor[32] = "0";
    memset(out, 0, sizeof(*out));
    do {
        redisReply *r =
            redisCommand(c, "SCAN %s MATCH %s* COUNT 1000", cursor, KEYS_PROCESSING_PREFIX);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
            r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_ARRAY)
            return failed(c, r, "SCAN");
        snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
        redisReply *keys = r->element[1];
        for (size_t i = 0; i < keys->elements; i++) {
            redisReply *k = keys->element[i];
            if (k->type != REDIS_REPLY_STRING || k->len <= prefix)
                continue;
            const char *id = k->str + prefix;
            if (strcmp(id, self_id) == 0)
                continue;
            long long moved = sweep_recover(c, id);
            if (moved == -1) {
                freeReplyObject(r);
                return -1;
            }
            if (moved <= 0)
                continue; /* alive, or its list emptied meanwhile */
            log_msg(LOG_WARN, COMPONENT,
                    "worker %s has no heartbeat: %lld orders of %s back onto %s", id, moved, k->str,
                    KEYS_QUEUE);
            out->lists++;
            out->orders += moved;
        }
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
    return 0;
}
