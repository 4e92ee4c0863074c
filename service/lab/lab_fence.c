/* lab_fence.c: fencing tokens, and redis_lock_fenced, redis_lock whose stock
 * checks them. */
#include "lab_fence.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "keys.h"
#include "lab_keys.h"
#include "lab_lock.h"

/* One fenced script: SK_OK with *value, SK_FENCED, or SK_BACKEND_DOWN. */
static sk_status fenced_call(lab_ctx *c, script_id id, lab_fence *a, const char *value_arg,
                             int64_t *value)
{
    const char *keys_args[] = {a->stock_key, a->seen_key, a->token, value_arg};
    redisReply *rep = lab_ctx_script(c, id, 2, 2, keys_args);
    if (!rep)
        return SK_BACKEND_DOWN;
    sk_status st = SK_BACKEND_DOWN;
    if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
        rep->element[1]->type == REDIS_REPLY_INTEGER) {
        st = rep->element[0]->integer == 1 ? SK_OK : SK_FENCED;
        if (st == SK_OK)
            *value = rep->element[1]->integer;
    }
    freeReplyObject(rep);
    return st;
}

static sk_status fenced_read(lab_ctx *c, const lab_request *r, void *arg, int64_t *value)
{
    int64_t initial;
    sk_status st = lab_initial_stock(c, r->item, &initial, NULL);
    if (st != SK_OK)
        return st;
    char initial_s[24];
    snprintf(initial_s, sizeof(initial_s), "%" PRId64, initial);
    return fenced_call(c, SCRIPT_LAB_FENCE_READ, arg, initial_s, value);
}

static sk_status fenced_take(lab_ctx *c, const lab_request *r, void *arg, int64_t seen,
                             int64_t *remaining)
{
    (void)r;
    char left[24];
    snprintf(left, sizeof(left), "%" PRId64, seen - 1);
    return fenced_call(c, SCRIPT_LAB_FENCE_TAKE, arg, left, remaining);
}

/* The read script makes the stock itself from the initial stock it is given. */
const lab_counter lab_fence_stock = {fenced_read, fenced_take, NULL};

sk_status lab_fence_issue(lab_ctx *c, const lab_request *r, lab_fence *f)
{
    char issued[KEYS_MAX];
    lab_keys_fence_issued(issued, sizeof(issued), r->item, r->strategy);
    redisReply *rep = lab_ctx_redis(c, issued, "INCR %s", issued);
    if (!rep)
        return SK_BACKEND_DOWN;
    sk_status st = SK_BACKEND_DOWN;
    if (rep->type == REDIS_REPLY_INTEGER) {
        snprintf(f->token, sizeof(f->token), "%lld", rep->integer);
        st = SK_OK;
    }
    freeReplyObject(rep);
    lab_keys_stock(f->stock_key, sizeof(f->stock_key), r->item, r->strategy);
    lab_keys_fence_seen(f->seen_key, sizeof(f->seen_key), r->item, r->strategy);
    return st;
}

/* Runs under the lock: the token is issued only to a holder, so tokens
 * follow the order in which the lock was won. */
static sk_status sell_with_token(lab_ctx *c, const lab_request *r, void *arg, int64_t *remaining)
{
    (void)arg;
    lab_fence f;
    sk_status st = lab_fence_issue(c, r, &f);
    if (st != SK_OK)
        return st;
    return lab_check_work_take(c, r, &lab_fence_stock, &f, remaining);
}

sk_status lab_fence_redis_lock(lab_ctx *c, const lab_request *r, int64_t *remaining)
{
    return lab_lock_redis_run(c, r, sell_with_token, NULL, remaining);
}
