/* purchase.c: one purchase is two commands written together on the loop's
 * connection (and pipelined with every other purchase of that turn):
 *   SET lock token NX PX ttl      the buyer's lock, token = the order id
 *   EVALSHA reserve ... 1         sells only if the lock holds our token, and
 *                                 frees the lock before it returns
 * One round trip instead of three, with the same guarantee as taking the
 * lock, reserving and unlocking one after another: the reserve script runs
 * only while the lock is ours, so a second concurrent request of the same
 * buyer gets in_progress. Freeing the lock inside the script rather than with
 * lock_release as a third command saves Redis one script call per purchase,
 * the most expensive part of its work. When the script did not run to its
 * end (an error reply, a lost connection) lock_release is still sent, so the
 * lock never outlives the request. Anonymous buyers need no lock. */
#include "purchase.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "backend.h"
#include "json_io.h"
#include "keys.h"
#include "log.h"

typedef struct purchase {
    app *a;
    http_exchange *ex;
    int64_t item;
    int64_t user;
    int64_t order_id;
    int anonymous;
    int use_eval; /* Redis forgot the script: send its text */
    int pending;  /* replies still owed */
    int reserve_noscript;
    int failed; /* no usable reply from Redis */
    char outcome[24];
    int64_t remaining;
    int64_t round;
    char state_key[KEYS_MAX], buyers_key[KEYS_MAX], lock_key[KEYS_MAX];
    char item_s[24], user_s[24], order_s[24], time_s[24], ttl_s[24], bound_s[24];
} purchase;

static void send_commands(redisAsyncContext *ac, purchase *p, int lock);
static int send_script(redisAsyncContext *ac, purchase *p, redisCallbackFn *cb, script_id id,
                       int nkeys, int nargs, const char **keys_args);

static void finish(purchase *p)
{
    app *a = p->a;
    char body[192];
    int n;
    if (p->failed) {
        metrics_purchase(a->metrics, METRICS_FAILED);
        metrics_backend_error(a->metrics, METRICS_REDIS);
        api_reply_error(p->ex, SK_BACKEND_DOWN, "Redis is unavailable");
    } else if (strcmp(p->outcome, "queued") == 0) {
        if (p->remaining == 0)
            soldout_set(a->soldout, p->item, p->round);
        metrics_purchase(a->metrics, METRICS_QUEUED);
        n = json_io_purchase_queued(body, sizeof(body), p->order_id, p->remaining);
        http_exchange_reply(p->ex, 202, body, (size_t)n, NULL);
    } else if (strcmp(p->outcome, "sold_out") == 0) {
        soldout_set(a->soldout, p->item, p->round);
        metrics_purchase(a->metrics, METRICS_SOLD_OUT);
        api_reply_error(p->ex, SK_SOLD_OUT, "the item is sold out");
    } else if (strcmp(p->outcome, "already_purchased") == 0) {
        metrics_purchase(a->metrics, METRICS_ALREADY_PURCHASED);
        api_reply_error(p->ex, SK_ALREADY_PURCHASED, "this buyer already bought the item");
    } else if (strcmp(p->outcome, "in_progress") == 0) {
        metrics_purchase(a->metrics, METRICS_IN_PROGRESS);
        api_reply_error(p->ex, SK_IN_PROGRESS, "another purchase of this buyer is in progress");
    } else if (strcmp(p->outcome, "queue_full") == 0) {
        metrics_purchase(a->metrics, METRICS_QUEUE_FULL);
        api_reply_error(p->ex, SK_QUEUE_FULL, "too many orders wait for the database; try again");
    } else if (strcmp(p->outcome, "unknown_item") == 0) {
        metrics_purchase(a->metrics, METRICS_UNKNOWN_ITEM);
        api_reply_error(p->ex, SK_NOT_FOUND, "no such item");
    } else {
        metrics_purchase(a->metrics, METRICS_FAILED);
        api_reply_error(p->ex, SK_INTERNAL, "unexpected answer from the reserve script");
    }
    free(p);
}

/* Called once per command reply; the last one decides. */
static void settle(redisAsyncContext *ac, purchase *p)
{
    if (--p->pending > 0)
        return;
    if (!p->failed && !p->use_eval && p->reserve_noscript) {
        /* A restarted Redis lost the script: send it again, as EVAL with its
         * text (which caches it for the EVALSHAs that follow). The lock is
         * still ours: no new SET. */
        p->use_eval = 1;
        p->reserve_noscript = 0;
        send_commands(ac, p, 0);
        return;
    }
    if ((p->failed || p->reserve_noscript) && !p->anonymous && ac) {
        /* The script may not have freed the lock: free it, without waiting
         * for the answer (compare-and-delete: never someone else's lock). */
        const char *ka[] = {p->lock_key, p->order_s};
        send_script(ac, p, NULL, SCRIPT_LOCK_RELEASE, 1, 1, ka);
    }
    finish(p);
}

static void on_lock(redisAsyncContext *ac, void *reply, void *privdata)
{
    /* Nothing to read: the reserve script checks that the lock is ours. */
    (void)reply;
    settle(ac, privdata);
}

static void on_reserve(redisAsyncContext *ac, void *reply, void *privdata)
{
    purchase *p = privdata;
    redisReply *r = reply;
    if (scripts_is_noscript(r)) {
        p->reserve_noscript = 1;
    } else if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
               r->element[0]->type == REDIS_REPLY_STRING) {
        snprintf(p->outcome, sizeof(p->outcome), "%s", r->element[0]->str);
        p->remaining = r->element[1]->integer;
        p->round = r->element[2]->integer;
    } else {
        if (r && r->type == REDIS_REPLY_ERROR)
            log_msg(LOG_ERROR, "purchase", "reserve: %s", r->str);
        p->failed = 1;
    }
    settle(ac, p);
}

static int send_script(redisAsyncContext *ac, purchase *p, redisCallbackFn *cb, script_id id,
                       int nkeys, int nargs, const char **keys_args)
{
    const script *sc = &p->a->scripts.s[id];
    const char *argv[16];
    size_t lens[16];
    char numkeys[8];
    snprintf(numkeys, sizeof(numkeys), "%d", nkeys);
    argv[0] = p->use_eval ? "EVAL" : "EVALSHA";
    argv[1] = p->use_eval ? sc->text : sc->sha;
    argv[2] = numkeys;
    for (int i = 0; i < nkeys + nargs; i++)
        argv[3 + i] = keys_args[i];
    int argc = 3 + nkeys + nargs;
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    return redisAsyncCommandArgv(ac, cb, cb ? p : NULL, argc, argv, lens);
}

/* lock: take the buyer's lock first (not when resending the script). */
static void send_commands(redisAsyncContext *ac, purchase *p, int lock)
{
    int sent = 0;
    if (lock && !p->anonymous) {
        const char *set[] = {"SET", p->lock_key, p->order_s, "NX", "PX", p->ttl_s};
        size_t lens[6];
        for (int i = 0; i < 6; i++)
            lens[i] = strlen(set[i]);
        if (redisAsyncCommandArgv(ac, on_lock, p, 6, set, lens) == REDIS_OK)
            sent++;
    }
    /* KEYS: state, buyers, lock, queue, pending. ARGV: item, user, lock
     * token, order id (the token is the order id: unique per request), time,
     * anonymous flag, "1": free the lock before returning, the bound of
     * the pending orders. */
    const char *ka[] = {p->state_key,
                        p->buyers_key,
                        p->lock_key,
                        KEYS_QUEUE,
                        KEYS_PENDING,
                        p->item_s,
                        p->user_s,
                        p->order_s,
                        p->order_s,
                        p->time_s,
                        p->anonymous ? "1" : "0",
                        "1",
                        p->bound_s};
    if (send_script(ac, p, on_reserve, SCRIPT_RESERVE, 5, 8, ka) == REDIS_OK)
        sent++;
    else
        p->failed = 1;
    p->pending += sent;
    if (p->pending == 0)
        finish(p);
}

static void run_on_loop(redisAsyncContext *ac, void *arg)
{
    purchase *p = arg;
    if (!ac) {
        p->failed = 1;
        finish(p);
        return;
    }
    send_commands(ac, p, 1);
}

void purchase_start(app *a, http_exchange *ex, int64_t item, int64_t user)
{
    if (soldout_is_set(a->soldout, item)) {
        metrics_purchase(a->metrics, METRICS_SOLD_OUT_FLAG);
        api_reply_error(ex, SK_SOLD_OUT, "the item is sold out");
        return;
    }
    if (a->ratelimit && user != 0) {
        int64_t wait_ms = ratelimit_take(a->ratelimit, user, backend_mono_ms());
        if (wait_ms > 0) {
            metrics_purchase(a->metrics, METRICS_RATE_LIMITED);
            http_exchange_retry_after(ex, (int)((wait_ms + 999) / 1000));
            api_reply_error(ex, SK_RATE_LIMITED, "too many purchases by this buyer; slow down");
            return;
        }
    }
    purchase *p = calloc(1, sizeof(*p));
    if (!p) {
        api_reply_error(ex, SK_INTERNAL, "out of memory");
        return;
    }
    p->a = a;
    p->ex = ex;
    p->item = item;
    /* One clock reading: the order id and the acceptance time agree. */
    int64_t now_ms = backend_now_ms();
    p->order_id = order_id_next(&a->ids, now_ms);
    p->anonymous = user == 0;
    p->user = p->anonymous ? p->order_id : user;
    keys_item_state(p->state_key, sizeof(p->state_key), item);
    keys_item_buyers(p->buyers_key, sizeof(p->buyers_key), item);
    keys_buyer_lock(p->lock_key, sizeof(p->lock_key), item, p->user);
    snprintf(p->item_s, sizeof(p->item_s), "%" PRId64, item);
    snprintf(p->user_s, sizeof(p->user_s), "%" PRId64, p->user);
    snprintf(p->order_s, sizeof(p->order_s), "%" PRId64, p->order_id);
    snprintf(p->time_s, sizeof(p->time_s), "%" PRId64, now_ms);
    snprintf(p->ttl_s, sizeof(p->ttl_s), "%d", a->cfg->lock_ttl_ms);
    snprintf(p->bound_s, sizeof(p->bound_s), "%d", a->cfg->max_pending_orders);

    http_exchange_defer(ex);
    if (redis_loop_submit(app_next_loop(a), run_on_loop, p) < 0) {
        p->failed = 1;
        finish(p);
    }
}
