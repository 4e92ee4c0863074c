/* lab_strategy.c: what the strategies share: request parsing, the
 * check-work-take skeleton, waits. */
#include "lab_strategy.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "backoff.h"
#include "clock.h"
#include "keys.h"
#include "redis_reply.h"
#include "validate.h"

sk_status lab_request_parse(const char *item, const char *user, const char *delay,
                            int default_delay_ms, lab_request *out, const char **why)
{
    memset(out, 0, sizeof(*out));
    if (!item || validate_id(item, strlen(item), &out->item) < 0) {
        *why = "item must be a positive integer";
        return SK_INVALID;
    }
    if (user && validate_id(user, strlen(user), &out->user) < 0) {
        *why = "user_id must be a positive integer";
        return SK_INVALID;
    }
    int64_t ms = default_delay_ms;
    if (delay && (validate_i64(delay, strlen(delay), &ms) < 0 || ms < 0 || ms > LAB_DELAY_MAX_MS)) {
        *why = "delay_ms must be an integer from 0 to 10000";
        return SK_INVALID;
    }
    out->delay_ms = (int)ms;
    return SK_OK;
}

sk_status lab_request_fault(const char *crash, const char *race, int faults_enabled,
                            lab_request *out, const char **why)
{
    out->fault = LAB_FAULT_NONE;
    if (!crash && !race)
        return SK_OK;
    if (!faults_enabled) {
        *why = "crash and race need lab_faults = true (fault injection is off)";
        return SK_INVALID;
    }
    if (crash && race) {
        *why = "one fault at a time: crash or race";
        return SK_INVALID;
    }
    if (crash) {
        if (strcmp(crash, "after_setnx") != 0) {
            *why = "crash must be after_setnx";
            return SK_INVALID;
        }
        out->fault = LAB_FAULT_CRASH_AFTER_SETNX;
        return SK_OK;
    }
    if (strcmp(race, "first") != 0 && strcmp(race, "second") != 0) {
        *why = "race must be first or second";
        return SK_INVALID;
    }
    out->fault = strcmp(race, "first") == 0 ? LAB_FAULT_RACE_FIRST : LAB_FAULT_RACE_SECOND;
    return SK_OK;
}

sk_status lab_counter_read(lab_ctx *c, const lab_request *r, const lab_counter *k, void *arg,
                           int64_t *value)
{
    sk_status st = k->read(c, r, arg, value);
    if (st != SK_NOT_FOUND || !k->make)
        return st;
    /* Concurrent first users all make it; the stock is made once. */
    st = k->make(c, r, arg);
    return st == SK_OK ? k->read(c, r, arg, value) : st;
}

sk_status lab_check_work_take(lab_ctx *c, const lab_request *r, const lab_counter *k, void *arg,
                              int64_t *remaining)
{
    int64_t seen;
    sk_status st = lab_counter_read(c, r, k, arg, &seen);
    if (st != SK_OK)
        return st;
    if (seen <= 0) {
        *remaining = seen;
        return SK_SOLD_OUT;
    }
    lab_work(r);
    return k->take(c, r, arg, seen, remaining);
}

sk_status lab_retry_until_won(lab_ctx *c, const lab_request *r, const lab_counter *k, void *arg,
                              int64_t *remaining)
{
    int64_t deadline = lab_deadline(c);
    for (;;) {
        sk_status st = lab_check_work_take(c, r, k, arg, remaining);
        if (st != SK_BUSY || clock_mono_ms() >= deadline)
            return st;
    }
}

void lab_pause_ms(int ms)
{
    backoff_sleep_ms(ms, NULL);
}

void lab_work(const lab_request *r)
{
    if (r->delay_ms > 0)
        lab_pause_ms(r->delay_ms);
}

int64_t lab_deadline(const lab_ctx *c)
{
    return clock_mono_ms() + c->cfg->lab_lock_wait_ms;
}

sk_status lab_initial_stock(lab_ctx *c, int64_t item, int64_t *initial, int64_t *round)
{
    char state[KEYS_MAX];
    keys_item_state(state, sizeof(state), item);
    redisReply *rep = lab_ctx_redis(c, state, "HMGET %s initial round", state);
    if (!rep)
        return SK_BACKEND_DOWN;
    sk_status st = SK_NOT_FOUND;
    if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
        rep->element[0]->type == REDIS_REPLY_STRING) {
        int64_t r = 0;
        st = redis_reply_number(rep->element[0], initial) < 0 ||
                     redis_reply_number_or(rep->element[1], 0, &r) < 0
                 ? SK_INTERNAL
                 : SK_OK;
        if (st == SK_OK && round)
            *round = r;
    }
    freeReplyObject(rep);
    return st;
}
