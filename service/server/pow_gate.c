/* pow_gate.c: a solution costs the server one HMAC and one SHA-256
 * (pow.h), then its used-solution key in the item's slot (an EXISTS and a
 * SET NX for a draw's entry; inside the join's own script call for a
 * room's), so that it enters once however many instances it is sent to. The item's terms come from
 * memory (pow_cache.h) or from its items row; the key from the room master, which every instance
 * reads from PostgreSQL already (room_cache.h), derived under a label of its own. */
#include "pow_gate.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "keys.h"
#include "pg_value.h"
#include "pow.h"
#include "redis_reply.h"
#include "room_store.h"

/* item's terms into *t: from memory, or read from its row. SK_OK (t->found
 * 0 for no such item) or SK_BACKEND_DOWN. */
static sk_status terms_of(app *a, pool_session *s, int64_t item, pow_item_terms *t)
{
    int64_t mono = clock_mono_ms();
    if (pow_cache_terms(a->pow, item, mono, t))
        return SK_OK;
    PGresult *res = pool_session_pg_id(s,
                                       "SELECT coalesce(pow_maxnumber, 0), pow_ttl_s FROM items "
                                       "WHERE id = $1 AND archived_at IS NULL",
                                       item, PGRES_TUPLES_OK);
    if (!res)
        return SK_BACKEND_DOWN;
    *t = (pow_item_terms){.item = item, .found = PQntuples(res) == 1, .read_mono_ms = mono};
    pg_row f = pg_row_at(res, 0);
    if (t->found) {
        t->maxnumber = pg_row_i64(&f, 0);
        t->ttl_s = pg_row_int(&f, 1);
    }
    PQclear(res);
    if (t->found && pg_row_check(&f, "pow", "an item's proof-of-work terms") < 0)
        return SK_INTERNAL;
    pow_cache_set_terms(a->pow, t);
    return SK_OK;
}

/* The challenges' key into key: derived once from the room master (read
 * now if this instance has not yet). SK_OK, SK_BACKEND_DOWN or SK_INTERNAL. */
static sk_status key_of(app *a, pool_session *s, unsigned char *key)
{
    unsigned char master[ROOM_SECRET_LEN];
    if (pow_cache_key(a->pow, key))
        return SK_OK;
    if (room_store_master_of(a->rooms, s, master) < 0)
        return SK_BACKEND_DOWN;
    if (pow_key_derive(master, key) < 0)
        return SK_INTERNAL;
    pow_cache_set_key(a->pow, key);
    return SK_OK;
}

int pow_gate_used_key(const pow_gate_mark *m, char *key, size_t cap, int64_t *ttl_s)
{
    if (!m->needed)
        return 0;
    keys_pow_used(key, cap, m->item, m->got.challenge);
    *ttl_s = m->got.expires_s - m->now_s + 1;
    return 1;
}

/* SK_POW_REPLAYED when m's solution was used already (an entry marks it
 * only once it is made: a replay must still be refused before), SK_OK
 * when not, SK_BACKEND_DOWN when Redis failed. */
static sk_status was_used(pool_session *s, const pow_gate_mark *m)
{
    char key[KEYS_MAX];
    int64_t ttl_s, used;
    pow_gate_used_key(m, key, sizeof(key), &ttl_s);
    const char *argv[] = {"EXISTS", key};
    if (redis_reply_int(pool_session_redis(s, 2, argv), "pow", "EXISTS of a used solution", &used) <
        0)
        return SK_BACKEND_DOWN;
    return used ? SK_POW_REPLAYED : SK_OK;
}

sk_status pow_gate_check(app *a, pool_session *s, int64_t item, int64_t user, const char *altcha,
                         pow_gate_mark *m)
{
    static const sk_status refused[] = {
        [POW_OK] = SK_OK,
        [POW_MISSING] = SK_POW_MISSING,
        [POW_MALFORMED] = SK_POW_MALFORMED,
        [POW_FORGED] = SK_POW_FORGED,
        [POW_WRONG_NUMBER] = SK_POW_WRONG_NUMBER,
        [POW_EXPIRED] = SK_POW_EXPIRED,
        [POW_WRONG_ITEM] = SK_POW_WRONG_ITEM,
        [POW_WRONG_BUYER] = SK_POW_WRONG_BUYER,
    };
    pow_item_terms t;
    unsigned char key[POW_KEY_LEN];
    *m = (pow_gate_mark){.item = item};
    sk_status st = terms_of(a, s, item, &t);
    if (st != SK_OK || !t.found || t.maxnumber == 0)
        return st;
    if ((st = key_of(a, s, key)) != SK_OK)
        return st;
    m->now_s = clock_wall_ms() / 1000;
    pow_result r = pow_verify(key, altcha, t.maxnumber, item, user, m->now_s, &m->got);
    m->needed = r == POW_OK;
    return refused[r];
}

sk_status pow_gate_verify(app *a, pool_session *s, int64_t item, int64_t user, const char *altcha,
                          pow_gate_mark *m)
{
    sk_status st = pow_gate_check(a, s, item, user, altcha, m);
    return st == SK_OK && m->needed ? was_used(s, m) : st;
}

sk_status pow_gate_use(pool_session *s, const pow_gate_mark *m)
{
    char key[KEYS_MAX], ttl[24];
    int64_t ttl_s;
    if (!pow_gate_used_key(m, key, sizeof(key), &ttl_s))
        return SK_OK;
    snprintf(ttl, sizeof(ttl), "%" PRId64, ttl_s);
    const char *argv[] = {"SET", key, "1", "NX", "EX", ttl};
    redisReply *r = pool_session_redis(s, 6, argv);
    if (r && r->type == REDIS_REPLY_NIL) {
        freeReplyObject(r);
        return SK_POW_REPLAYED;
    }
    /* OK, or an error reply (logged), which marked nothing. */
    return redis_reply_expect(r, REDIS_REPLY_STATUS, "pow", "SET NX of a used solution") == 0
               ? SK_OK
               : SK_BACKEND_DOWN;
}

/* --- the challenge route ------------------------------------------------------------ */

typedef struct challenge_job {
    app *a;
    http_exchange *ex;
    int64_t item, user;
} challenge_job;

/* The challenge of j, as JSON; or the refusal. */
static sk_status challenge_of(challenge_job *j, pool_session *s, char **text)
{
    pow_item_terms t;
    unsigned char key[POW_KEY_LEN];
    pow_challenge c;
    sk_status st = terms_of(j->a, s, j->item, &t);
    if (st == SK_OK && !t.found)
        st = SK_NOT_FOUND;
    else if (st == SK_OK && t.maxnumber == 0)
        st = SK_POW_OFF;
    if (st == SK_OK)
        st = key_of(j->a, s, key);
    if (st != SK_OK)
        return st;
    int64_t expires_s = clock_wall_ms() / 1000 + t.ttl_s;
    if (pow_challenge_make(key, t.maxnumber, j->item, j->user, expires_s, &c) < 0)
        return SK_INTERNAL;
    json_t *o =
        json_pack("{s:s, s:s, s:I, s:s, s:s}", "algorithm", "SHA-256", "challenge", c.challenge,
                  "maxnumber", (json_int_t)c.maxnumber, "salt", c.salt, "signature", c.signature);
    *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return *text ? SK_OK : SK_INTERNAL;
}

static void run_challenge(void *thread_ctx, void *arg)
{
    challenge_job *j = arg;
    char *text = NULL;
    sk_status st = thread_ctx ? challenge_of(j, thread_ctx, &text) : SK_BACKEND_DOWN;
    if (st == SK_OK)
        http_exchange_reply_new(j->ex, 200, text);
    else
        http_exchange_reply_error(j->ex, st, NULL);
    free(j);
}

void pow_gate_challenge(app *a, http_exchange *ex, int64_t item, int64_t user)
{
    challenge_job *j = malloc(sizeof(*j));
    if (!j) {
        http_exchange_reply_error(ex, SK_INTERNAL, "out of memory");
        return;
    }
    *j = (challenge_job){a, ex, item, user};
    pool_submit_exchange(a->pool, ex, run_challenge, j);
}
