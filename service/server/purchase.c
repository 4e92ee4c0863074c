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

#include "backend.h"
#include "json_io.h"
#include "log.h"
#include "reserve.h"

typedef struct purchase {
    app *a;
    http_exchange *ex;
    int64_t item;
    int anonymous;
    int use_eval; /* Redis forgot the script: send its text */
    int pending;  /* replies still owed */
    int reserve_noscript;
    int failed; /* no usable reply from Redis */
    reserve_outcome outcome;
    int64_t order_id;
    int64_t remaining;
    int64_t round;
    reserve_call call; /* the script's keys and arguments */
    char ttl_s[24];
} purchase;

static void send_commands(redisAsyncContext *ac, purchase *p, int lock);
static int send_script(redisAsyncContext *ac, purchase *p, redisCallbackFn *cb, script_id id,
                       int nkeys, int nargs, const char *const *keys_args);

/* Each outcome's counter in /metrics. */
static const metrics_outcome counted[] = {
    [RESERVE_QUEUED] = METRICS_QUEUED,
    [RESERVE_SOLD_OUT] = METRICS_SOLD_OUT,
    [RESERVE_ALREADY_PURCHASED] = METRICS_ALREADY_PURCHASED,
    [RESERVE_IN_PROGRESS] = METRICS_IN_PROGRESS,
    [RESERVE_QUEUE_FULL] = METRICS_QUEUE_FULL,
    [RESERVE_UNKNOWN_ITEM] = METRICS_UNKNOWN_ITEM,
    [RESERVE_BAD_REPLY] = METRICS_FAILED,
};

static void finish(purchase *p)
{
    app *a = p->a;
    if (p->failed) {
        metrics_purchase(a->metrics, METRICS_FAILED);
        metrics_backend_error(a->metrics, METRICS_REDIS);
        http_exchange_reply_error(p->ex, SK_BACKEND_DOWN, "Redis is unavailable");
        free(p);
        return;
    }
    metrics_purchase(a->metrics, counted[p->outcome]);
    if ((p->outcome == RESERVE_QUEUED && p->remaining == 0) || p->outcome == RESERVE_SOLD_OUT)
        soldout_set(a->soldout, p->item, p->round);
    if (p->outcome == RESERVE_QUEUED) {
        char body[192];
        int n = json_io_purchase_queued(body, sizeof(body), p->order_id, p->remaining);
        http_exchange_reply(p->ex, sk_status_http(SK_QUEUED), body, (size_t)n, NULL);
    } else if (p->outcome == RESERVE_UNKNOWN_ITEM) {
        http_exchange_reply_error(p->ex, SK_NOT_FOUND, "no such item");
    } else if (p->outcome == RESERVE_BAD_REPLY) {
        http_exchange_reply_error(p->ex, SK_INTERNAL, "unexpected answer from the reserve script");
    } else {
        http_exchange_reply_error(p->ex, reserve_status(p->outcome), NULL);
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
        const char *ka[] = {p->call.lock_key, p->call.order_s};
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
    } else {
        p->outcome = reserve_parse(r, &p->remaining, &p->round);
        if (p->outcome == RESERVE_BAD_REPLY) {
            if (r && r->type == REDIS_REPLY_ERROR)
                log_msg(LOG_ERROR, "purchase", "reserve: %s", r->str);
            p->failed = 1;
        }
    }
    settle(ac, p);
}

static int send_script(redisAsyncContext *ac, purchase *p, redisCallbackFn *cb, script_id id,
                       int nkeys, int nargs, const char *const *keys_args)
{
    const char *argv[SCRIPTS_ARGV_MAX];
    size_t lens[SCRIPTS_ARGV_MAX];
    char numkeys[12];
    int argc = scripts_argv(&p->a->scripts.s[id], p->use_eval, nkeys, nargs, keys_args, argv, lens,
                            numkeys);
    if (argc < 0)
        return REDIS_ERR;
    return redisAsyncCommandArgv(ac, cb, cb ? p : NULL, argc, argv, lens);
}

/* lock: take the buyer's lock first (not when resending the script). */
static void send_commands(redisAsyncContext *ac, purchase *p, int lock)
{
    int sent = 0;
    if (lock && !p->anonymous) {
        const char *set[] = {"SET", p->call.lock_key, p->call.order_s, "NX", "PX", p->ttl_s};
        size_t lens[6];
        for (int i = 0; i < 6; i++)
            lens[i] = strlen(set[i]);
        if (redisAsyncCommandArgv(ac, on_lock, p, 6, set, lens) == REDIS_OK)
            sent++;
    }
    if (send_script(ac, p, on_reserve, SCRIPT_RESERVE, RESERVE_NKEYS, RESERVE_NARGS,
                    p->call.keys_args) == REDIS_OK)
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
        http_exchange_reply_error(ex, SK_SOLD_OUT, NULL);
        return;
    }
    if (a->ratelimit && user != 0) {
        int64_t wait_ms = ratelimit_take(a->ratelimit, user, backend_mono_ms());
        if (wait_ms > 0) {
            metrics_purchase(a->metrics, METRICS_RATE_LIMITED);
            http_exchange_retry_after(ex, (int)((wait_ms + 999) / 1000));
            http_exchange_reply_error(ex, SK_RATE_LIMITED, NULL);
            return;
        }
    }
    purchase *p = calloc(1, sizeof(*p));
    if (!p) {
        http_exchange_reply_error(ex, SK_INTERNAL, "out of memory");
        return;
    }
    p->a = a;
    p->ex = ex;
    p->item = item;
    /* One clock reading: the order id and the acceptance time agree. */
    int64_t now_ms = backend_now_ms();
    p->order_id = order_id_next(&a->ids, now_ms);
    p->anonymous = user == 0;
    reserve_call_init(&p->call, item, user, p->anonymous, p->order_id, now_ms,
                      a->cfg->max_pending_orders, 1);
    snprintf(p->ttl_s, sizeof(p->ttl_s), "%d", a->cfg->lock_ttl_ms);

    http_exchange_defer(ex);
    if (redis_loop_submit(app_next_loop(a), run_on_loop, p) < 0) {
        p->failed = 1;
        finish(p);
    }
}
