/* room.c: the waiting room's routes. A poll is answered from memory when
 * memory surely knows: the sale started (places are final), the buyer's
 * place is known, and the frontier (at most ROOM_CACHE_FRESH_MS old, or
 * being read again by another poll) has not reached it. Everything else
 * goes to the pool: one script call (a join after the start adds the poll
 * that may admit), and the room's terms, secret and master key read once
 * and kept (room_cache.h). Joins are group-committed (room_joins.h): one
 * script call settles the joins of an item that gathered while the last
 * batch was on its way. */
#include "room.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "digest.h"
#include "json_io.h"
#include "keys.h"
#include "log.h"
#include "pool_session.h"
#include "pow_gate.h"
#include "redis_reply.h"
#include "rfc3339.h"
#include "room_answer.h"
#include "room_joins.h"
#include "room_store.h"
#include "validate.h"

#include <jansson.h>

/* Places a poll may let in at once (lua/room_poll.lua's ARGV[4]). */
#define ROOM_ADMIT_PER_CALL 2000
/* The most entrants an audit page lists. */
#define ROOM_AUDIT_MAX 1000

typedef struct room_job {
    app *a;
    http_exchange *ex;
    route_id route;
    int64_t item, user;
    int64_t after, limit; /* ROUTE_QUEUE_AUDIT */
    /* A join's proof-of-work (pow_gate.h): "" for none; mark: verified,
     * asked and marked used by the join's script call (lua/room_join.lua),
     * which sets replayed when it was used already. */
    char altcha[POW_PAYLOAD_MAX + 1];
    pow_gate_mark mark;
    int replayed;
} room_job;

/* A jitter in [0, 1) from the buyer and the clock. */
static double jitter(int64_t user)
{
    uint64_t x =
        (uint64_t)user * 0x9e3779b97f4a7c15ULL ^ (uint64_t)clock_mono_ms() * 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 31;
    return (double)(x % 1000) / 1000.0;
}

static void reply_standing(http_exchange *ex, room_standing *st)
{
    http_exchange_reply_new(ex, 200, room_answer_json(st));
}

/* --- from memory --------------------------------------------------------------- */

/* Answers a poll from memory when it surely knows the buyer waits. Returns
 * 1 when answered. */
static int poll_from_memory(app *a, http_exchange *ex, int64_t item, int64_t user)
{
    room_info info;
    room_frontier f;
    room_place place;
    int64_t mono = clock_mono_ms();
    if (!room_cache_waiting(a->rooms, item, user, mono, &info, &place, &f) ||
        place.place <= f.admitted || f.sold_out)
        return 0;
    room_seen seen = {.now_ms = f.redis_ms + (mono - f.mono_ms),
                      .starts_ms = info.starts_ms,
                      .ends_ms = info.ends_ms,
                      .per_s = info.per_s,
                      .admitted = f.admitted,
                      .rank = place.place - 1};
    if (seen.now_ms < info.starts_ms || (info.ends_ms > 0 && seen.now_ms >= info.ends_ms))
        return 0;
    room_standing st = {0};
    room_answer_standing(&seen, jitter(user), &st);
    memcpy(st.entrant, place.entrant, sizeof(place.entrant));
    reply_standing(ex, &st);
    return 1;
}

/* --- on the pool ------------------------------------------------------------------ */

/* The master key and the item's room, from memory or read now. */
static sk_status room_of(app *a, pool_session *s, int64_t item, unsigned char *master,
                         room_info *info, int again)
{
    if (room_store_master_of(a->rooms, s, master) < 0)
        return SK_BACKEND_DOWN;
    if (!again && room_cache_info(a->rooms, item, info))
        return SK_OK;
    sk_status st = room_store_info(s, item, info);
    if (st == SK_OK)
        room_cache_set_info(a->rooms, info);
    return st;
}

/* A time as a JSON member's value into buf (RFC3339_MAX + 2): quoted
 * RFC 3339 text, or null for 0. */
static const char *time_value(int64_t ms, char *buf)
{
    char when[RFC3339_MAX];
    if (ms <= 0 || rfc3339_format(ms, when, sizeof(when)) < 0)
        return "null";
    snprintf(buf, RFC3339_MAX + 2, "\"%s\"", when);
    return buf;
}

/* The 409 of a join outside the queue's times, with them. */
static void reply_times(http_exchange *ex, sk_status st, const room_info *info, const char *msg)
{
    char pq[RFC3339_MAX + 2], starts[RFC3339_MAX + 2], ends[RFC3339_MAX + 2], more[200], body[640];
    snprintf(more, sizeof(more), ",\"prequeue_opens_at\":%s,\"starts_at\":%s,\"ends_at\":%s",
             time_value(info->prequeue_ms, pq), time_value(info->starts_ms, starts),
             time_value(info->ends_ms, ends));
    int n = json_io_error_body(body, sizeof(body), sk_status_code(st), msg, more);
    http_exchange_reply(ex, sk_status_http(st), body, n < 0 ? 0 : (size_t)n, NULL);
}

/* A script's reply of n entries, its outcome first and `numbers` numbers
 * after it (into nums), then a string of flags of flags_len characters
 * when n says there is one more: the outcome, or NULL (logged, and the
 * reply freed) when it is not such a reply. */
static const char *outcome_of(redisReply **r, size_t n, size_t numbers, size_t flags_len,
                              int64_t *nums, const char *what)
{
    if (*r && (*r)->type == REDIS_REPLY_ARRAY && (*r)->elements == n &&
        (*r)->element[0]->type == REDIS_REPLY_STRING &&
        redis_reply_numbers(*r, 1, numbers, nums) == 0 &&
        (n == numbers + 1 || ((*r)->element[n - 1]->type == REDIS_REPLY_STRING &&
                              (*r)->element[n - 1]->len == flags_len)))
        return (*r)->element[0]->str;
    if (*r)
        redis_reply_unexpected(*r, "room", what);
    *r = NULL;
    return NULL;
}

/* Joins the n buyers of jobs[0..n) (of one item; e[i]: job i's entrant)
 * in one script call, which also asks whether their proof-of-work's
 * solutions were used and marks them (sets jobs[i]->replayed for those
 * used already); *now_ms gets Redis's clock, *started whether they were
 * placed after the pre-start joiners (the room's started flag,
 * lua/room_join.lua), *stale is set when the room is of another round than
 * info's. SK_OK, or the refusal of them all (SK_NOT_STARTED and SK_ENDED:
 * outside the queue's times). */
static sk_status join(room_job *const *jobs, int n, pool_session *s, const room_info *info,
                      char (*e)[ROOM_HEX_LEN + 1], int64_t *now_ms, int *started, int *stale)
{
    char room[KEYS_MAX], places[KEYS_MAX], round_s[24], score_s[ROOM_JOINS_BATCH][32],
        used[ROOM_JOINS_BATCH][KEYS_MAX], ttl_s[ROOM_JOINS_BATCH][24];
    const char *keys_args[3 + 4 * ROOM_JOINS_BATCH] = {room, places};
    int nkeys = 2;
    keys_room(room, sizeof(room), jobs[0]->item, NULL);
    keys_room(places, sizeof(places), jobs[0]->item, "places");
    for (int i = 0; i < n; i++) { /* the used-solution keys after the room's */
        int64_t ttl = 0;
        if (pow_gate_used_key(&jobs[i]->mark, used[i], sizeof(used[i]), &ttl))
            keys_args[nkeys++] = used[i];
        snprintf(ttl_s[i], sizeof(ttl_s[i]), "%" PRId64, ttl);
    }
    const char **args = keys_args + nkeys;
    snprintf(round_s, sizeof(round_s), "%" PRId64, info->round);
    args[0] = round_s;
    for (int i = 0; i < n; i++) {
        double score = room_score(info->k, e[i]);
        if (score < 0) /* libcrypto failed: never a place at the front */
            return SK_INTERNAL;
        snprintf(score_s[i], sizeof(score_s[i]), "%.0f", score);
        args[1 + 3 * i] = e[i];
        args[2 + 3 * i] = score_s[i];
        args[3 + 3 * i] = ttl_s[i];
    }
    redisReply *r = pool_session_script(s, SCRIPT_ROOM_JOIN, nkeys, 1 + 3 * n, keys_args);
    int64_t v[3]; /* now, added, started; then the replayed flags */
    const char *outcome = outcome_of(&r, 5, 3, (size_t)n, v, "room_join");
    if (!outcome)
        return SK_BACKEND_DOWN;
    for (int i = 0; i < n; i++)
        jobs[i]->replayed = r->element[4]->str[i] == '1';
    *now_ms = v[0];
    *started = v[2] != 0;
    *stale = strcmp(outcome, "stale") == 0;
    sk_status st = strcmp(outcome, "joined") == 0 || *stale ? SK_OK
                   : strcmp(outcome, "not_a_room") == 0     ? SK_NOT_A_ROOM
                   : strcmp(outcome, "ended") == 0          ? SK_ENDED
                                                            : SK_NOT_STARTED;
    freeReplyObject(r);
    return st;
}

/* Lets in the places due and reads the buyer of entrant e ("": none) into
 * *seen; the frontier goes to memory. SK_OK (with *stale set when the room
 * is of another round than info's), SK_NOT_A_ROOM, SK_NOT_IN_QUEUE or
 * SK_BACKEND_DOWN. */
static sk_status poll(app *a, pool_session *s, const room_info *info, const char *e,
                      room_seen *seen, int *stale)
{
    char room[KEYS_MAX], places[KEYS_MAX], admitted[KEYS_MAX], active[KEYS_MAX], state[KEYS_MAX],
        round_s[24], remaining_s[24], cap_s[12];
    int64_t remaining =
        info->segments > 1 ? room_store_remaining(s, info->item, info->segments) : -1;
    if (info->segments > 1 && remaining < 0)
        return SK_BACKEND_DOWN;
    keys_room(room, sizeof(room), info->item, NULL);
    keys_room(places, sizeof(places), info->item, "places");
    keys_room(admitted, sizeof(admitted), info->item, "admitted");
    keys_room(active, sizeof(active), info->item, "active");
    keys_item_state(state, sizeof(state), info->item);
    snprintf(round_s, sizeof(round_s), "%" PRId64, info->round);
    snprintf(remaining_s, sizeof(remaining_s), "%" PRId64, remaining);
    snprintf(cap_s, sizeof(cap_s), "%d", ROOM_ADMIT_PER_CALL);
    const char *keys_args[] = {room,    places, admitted,    active, state,
                               round_s, e,      remaining_s, cap_s};
    redisReply *r = pool_session_script(s, SCRIPT_ROOM_POLL, 5, 4, keys_args);
    int64_t v[8]; /* now, admitted, joined, active, rank, expiry, sold_out, prestart */
    const char *outcome = outcome_of(&r, 9, 8, 0, v, "room_poll");
    if (!outcome)
        return SK_BACKEND_DOWN;
    *stale = strcmp(outcome, "stale") == 0;
    sk_status st = strcmp(outcome, "ok") == 0 || *stale ? SK_OK : SK_NOT_A_ROOM;
    *seen = (room_seen){.now_ms = v[0],
                        .starts_ms = info->starts_ms,
                        .ends_ms = info->ends_ms,
                        .per_s = info->per_s,
                        .admitted = v[1],
                        .rank = v[4],
                        .expiry_ms = v[5],
                        .sold_out = v[6] != 0};
    room_frontier f = {info->round,    seen->admitted, v[2],
                       seen->sold_out, seen->now_ms,   clock_mono_ms()};
    freeReplyObject(r);
    if (st != SK_OK || *stale)
        return st;
    room_cache_set_frontier(a->rooms, info->item, &f);
    return e[0] && seen->rank < 0 ? SK_NOT_IN_QUEUE : SK_OK;
}

/* The standing of a buyer after a poll (or a join before the start), with
 * the admission token once admitted; answered. */
static void answer(room_job *j, const room_info *info, const unsigned char *master,
                   const room_seen *seen, const char *e)
{
    room_standing st = {0};
    room_answer_standing(seen, jitter(j->user), &st);
    snprintf(st.entrant, sizeof(st.entrant), "%s", e);
    if (seen->now_ms >= info->starts_ms && seen->rank >= 0)
        room_cache_set_place(j->a->rooms, j->item, info->round, j->user, seen->rank + 1, e);
    if (strcmp(st.state, "admitted") == 0) {
        room_token t = {j->item, info->round, j->user, seen->expiry_ms};
        if (room_token_mint(master, &t, st.admission, sizeof(st.admission)) < 0) {
            http_exchange_reply_error(j->ex, SK_INTERNAL, "the admission could not be signed");
            return;
        }
    }
    reply_standing(j->ex, &st);
}

/* Answers j after its join (or, for a poll, at once) of outcome st at
 * Redis's now (started: the join was placed after the pre-start joiners):
 * the times of a refusal, a pre-start joiner's standing, or the standing a
 * poll reads. Returns 0 when the room turned out to be of another round
 * than info's (not answered), else 1. */
static int settle(room_job *j, pool_session *s, const room_info *info, const unsigned char *master,
                  const char *e, sk_status st, int64_t now, int started, int stale)
{
    room_seen seen;
    /* A solution used already is refused whatever else the join heard; one
     * used now (the join placed) is marked by the same script call, and a
     * refusal (not started, ended, not a room) leaves it to the buyer. */
    if (j->replayed) {
        http_exchange_reply_error(j->ex, SK_POW_REPLAYED, NULL);
        return 1;
    }
    if (st == SK_ENDED || st == SK_NOT_STARTED) {
        reply_times(j->ex, st, info,
                    st == SK_ENDED ? "the sale has ended: the queue is closed"
                                   : "the queue opens at prequeue_opens_at");
        return 1;
    }
    if (st == SK_OK && !stale && j->route == ROUTE_QUEUE_JOIN && !started) {
        seen = (room_seen){.now_ms = now,
                           .starts_ms = info->starts_ms,
                           .ends_ms = info->ends_ms,
                           .per_s = info->per_s,
                           .rank = -1};
        answer(j, info, master, &seen, e);
        return 1;
    }
    if (st == SK_OK && !stale)
        st = poll(j->a, s, info, e, &seen, &stale);
    if (st != SK_OK)
        http_exchange_reply_error(j->ex, st, NULL);
    else if (!stale)
        answer(j, info, master, &seen, e);
    return st != SK_OK || !stale;
}

/* A join or a poll; a room that turned out to be of a newer round is read
 * again once. */
static void run_queue(room_job *j, pool_session *s)
{
    unsigned char master[ROOM_SECRET_LEN];
    room_info info;
    char e[1][ROOM_HEX_LEN + 1];
    for (int again = 0; again < 2; again++) {
        int stale = 0, started = 1;
        int64_t now = 0;
        sk_status st = room_of(j->a, s, j->item, master, &info, again);
        if (st == SK_OK && room_entrant(j->item, info.round, j->user, e[0]) < 0)
            st = SK_INTERNAL;
        if (st == SK_OK && j->route == ROUTE_QUEUE_JOIN)
            st = join(&j, 1, s, &info, e, &now, &started, &stale);
        if (settle(j, s, &info, master, e[0], st, now, started, stale))
            return;
    }
    http_exchange_reply_error(j->ex, SK_BACKEND_DOWN, "the room began a new round; ask again");
}

/* The joins of one item of a batch, jobs[0..n), in one script call; when
 * the room turned out to be of another round, they go one by one
 * (run_queue: the room read again), as a join alone would. */
static void join_item(pool_session *s, room_job **jobs, int n)
{
    unsigned char master[ROOM_SECRET_LEN];
    room_info info;
    char e[ROOM_JOINS_BATCH][ROOM_HEX_LEN + 1];
    int stale = 0, started = 1;
    int64_t now = 0;
    sk_status st = room_of(jobs[0]->a, s, jobs[0]->item, master, &info, 0);
    for (int i = 0; st == SK_OK && i < n; i++)
        if (room_entrant(jobs[i]->item, info.round, jobs[i]->user, e[i]) < 0)
            st = SK_INTERNAL;
    if (st == SK_OK)
        st = join(jobs, n, s, &info, e, &now, &started, &stale);
    for (int i = 0; i < n; i++) {
        if (!settle(jobs[i], s, &info, master, e[i], st, now, started, stale))
            run_queue(jobs[i], s);
        free(jobs[i]);
    }
}

/* Settles a batch of joins (room_joins_run) on a pool thread. */
static void join_batch(void *thread_ctx, void **jobs, int n)
{
    room_job *same[ROOM_JOINS_BATCH];
    int left = n;
    while (left > 0) { /* the first item left, then the others in turn */
        int64_t item = ((room_job *)jobs[0])->item;
        int k = 0, kept = 0;
        for (int i = 0; i < left; i++) {
            room_job *j = jobs[i]; /* proof-of-work checked first, asked and marked in join */
            sk_status st = SK_OK;
            if (j->item != item)
                jobs[kept++] = j;
            else if (!thread_ctx || (st = pow_gate_check(j->a, thread_ctx, item, j->user, j->altcha,
                                                         &j->mark)) == SK_OK)
                same[k++] = j;
            else {
                http_exchange_reply_error(j->ex, st, NULL);
                free(j);
            }
        }
        left = kept;
        if (thread_ctx && k > 0) {
            join_item(thread_ctx, same, k);
            continue;
        }
        for (int i = 0; i < k; i++) {
            http_exchange_reply_error(same[i]->ex, SK_BACKEND_DOWN, NULL);
            free(same[i]);
        }
    }
}

/* The page of pre-start entrants after place j->after, as JSON. */
static char *audit_page(room_job *j, pool_session *s, const room_info *info)
{
    char places[KEYS_MAX], after_s[24], limit_s[24], late_s[32], commitment[ROOM_HEX_LEN + 1],
        secret[ROOM_HEX_LEN + 1];
    keys_room(places, sizeof(places), j->item, "places");
    snprintf(after_s, sizeof(after_s), "%" PRId64, j->after);
    snprintf(limit_s, sizeof(limit_s), "%" PRId64, j->limit);
    snprintf(late_s, sizeof(late_s), "(%.0f", ROOM_LATE_SCORE); /* pre-start joiners only */
    const char *argv[] = {"ZRANGEBYSCORE", places, "-inf", late_s, "LIMIT", after_s, limit_s};
    redisReply *r = pool_session_redis(s, 7, argv);
    if (!r)
        return NULL;
    room_commitment(info->k, commitment);
    digest_hex(info->k, ROOM_SECRET_LEN, secret);
    json_t *list = json_array();
    size_t n = r->type == REDIS_REPLY_ARRAY ? r->elements : 0;
    for (size_t i = 0; list && i < n; i++)
        json_array_append_new(list, json_pack("{s:s, s:I}", "entrant", r->element[i]->str, "place",
                                              (json_int_t)(j->after + (int64_t)i + 1)));
    freeReplyObject(r);
    json_t *o =
        list ? json_pack("{s:s, s:s, s:o, s:o}", "commitment", commitment, "secret", secret,
                         "entrants", list, "next_after",
                         (int64_t)n == j->limit ? json_integer(j->after + (int64_t)n) : json_null())
             : NULL;
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

/* The published order, from the start on. */
static void run_audit(room_job *j, pool_session *s)
{
    unsigned char master[ROOM_SECRET_LEN];
    room_info info;
    /* Read again, not from memory: after a reset made through another
     * instance, memory's round (and its starts_at) may be the last one's. */
    sk_status st = room_of(j->a, s, j->item, master, &info, 1);
    /* Started as the item's node sees it: the room's flag, set now if due
     * (room_store_started), never by another node's clock. */
    int started = st == SK_OK ? room_store_started(s, j->item, info.round) : 0;
    if (started < 0)
        st = SK_BACKEND_DOWN;
    if (st != SK_OK) {
        http_exchange_reply_error(j->ex, st, NULL);
    } else if (!started) {
        reply_times(j->ex, SK_NOT_STARTED, &info,
                    "the order is published at starts_at, with the secret that made it");
    } else {
        char *text = audit_page(j, s, &info);
        if (text)
            http_exchange_reply_new(j->ex, 200, text);
        else
            http_exchange_reply_error(j->ex, SK_BACKEND_DOWN, NULL);
    }
}

static void run_room(void *thread_ctx, void *arg)
{
    room_job *j = arg;
    pool_session *s = thread_ctx;
    if (!s)
        http_exchange_reply_error(j->ex, SK_BACKEND_DOWN, NULL);
    else if (j->route == ROUTE_QUEUE_AUDIT)
        run_audit(j, s);
    else
        run_queue(j, s);
    free(j);
}

/* ?after= and ?limit= (1..ROOM_AUDIT_MAX) of an audit page into j. */
static int audit_query(http_exchange *ex, room_job *j)
{
    return validate_page(http_exchange_query(ex, "after"), http_exchange_query(ex, "limit"),
                         ROOM_AUDIT_MAX, &j->after, &j->limit);
}

/* The app's queue of joins, made by the first join. NULL when out of
 * memory. */
static room_joins *joins_of(app *a)
{
    room_joins *q = atomic_load(&a->joins);
    if (q)
        return q;
    room_joins *made = room_joins_create(a->pool, join_batch);
    if (made && !atomic_compare_exchange_strong(&a->joins, &q, made)) {
        room_joins_free(made); /* another loop's first join made it */
        return q;
    }
    return made;
}

void room_start(app *a, http_exchange *ex, route_id route, int64_t item, int64_t user,
                const char *altcha)
{
    if (route == ROUTE_QUEUE_POLL) {
        int answered = poll_from_memory(a, ex, item, user);
        room_cache_count_poll(a->rooms, answered);
        if (answered)
            return;
    }
    room_job *j = calloc(1, sizeof(*j));
    if (!j) {
        http_exchange_reply_error(ex, SK_INTERNAL, "out of memory");
        return;
    }
    *j = (room_job){a, ex, route, item, user, 0, 0, {0}, {0}, 0};
    snprintf(j->altcha, sizeof(j->altcha), "%s", altcha ? altcha : "");
    if (route == ROUTE_QUEUE_AUDIT && audit_query(ex, j) < 0) {
        free(j);
        http_exchange_reply_error(ex, SK_INVALID,
                                  "after must be a place (0 or more), limit from 1 to 1000");
        return;
    }
    http_exchange_defer(ex);
    room_joins *q = route == ROUTE_QUEUE_JOIN ? joins_of(a) : NULL;
    if (route == ROUTE_QUEUE_JOIN ? !q || room_joins_add(q, j) < 0
                                  : pool_submit(a->pool, run_room, j) < 0) {
        free(j);
        http_exchange_reply_error(ex, SK_BACKEND_DOWN, "the server is stopping");
    }
}
