/* lab_race.c: the forced meeting of two racers at a lock (lab_race.h). */
#include "lab_race.h"

#include <inttypes.h>
#include <string.h>

#include "clock.h"
#include "keys.h"
#include "lab_keys.h"
#include "log.h"

/* The marker lives a minute: long enough for any forced run, short enough
 * that a forgotten one does not steer the next round's requests. */
#define RACE_MARK_TTL_MS 60000

#define WAITING "waiting"
#define PASSED "passed"

/* Marks the race with value (only when unmarked if nx). */
static void mark(lab_ctx *c, const char *key, const char *value, int nx)
{
    freeReplyObject(lab_ctx_redis(c, key, nx ? "SET %s %s NX PX %d" : "SET %s %s PX %d", key, value,
                                  RACE_MARK_TTL_MS));
}

/* 1 when the mark is there (and is `want`, when not NULL). */
static int marked(lab_ctx *c, const char *key, const char *want)
{
    redisReply *rep = lab_ctx_redis(c, key, "GET %s", key);
    int yes = rep && rep->type == REDIS_REPLY_STRING && (!want || strcmp(rep->str, want) == 0);
    freeReplyObject(rep);
    return yes;
}

/* Polls the mark every millisecond until it is there, or LAB_RACE_WAIT_MS.
 * A poll rather than a blocking read: the wait is the exception (forced
 * runs only), and a poll cannot miss a mark set before it began. */
static void await_mark(lab_ctx *c, const lab_request *r, const char *key, const char *want,
                       const char *what)
{
    int64_t deadline = clock_mono_ms() + LAB_RACE_WAIT_MS;
    while (!marked(c, key, want)) {
        if (clock_mono_ms() >= deadline) {
            log_msg(LOG_WARN, "lab", "%s of item %" PRId64 ": waited %d ms for %s; going on alone",
                    r->strategy, r->item, LAB_RACE_WAIT_MS, what);
            return;
        }
        lab_pause_ms(1);
    }
}

void lab_race_before_take(lab_ctx *c, const lab_request *r)
{
    if (r->fault != LAB_FAULT_RACE_FIRST && r->fault != LAB_FAULT_RACE_SECOND)
        return;
    char key[KEYS_MAX];
    lab_keys_race(key, sizeof(key), r->item, r->strategy);
    if (r->fault == LAB_FAULT_RACE_FIRST) {
        await_mark(c, r, key, NULL, "the second racer");
        return;
    }
    /* NX: on a later attempt first may have passed already. */
    mark(c, key, WAITING, 1);
    await_mark(c, r, key, PASSED, "the first racer to take");
}

void lab_race_after_take(lab_ctx *c, const lab_request *r)
{
    if (r->fault != LAB_FAULT_RACE_FIRST)
        return;
    char key[KEYS_MAX];
    lab_keys_race(key, sizeof(key), r->item, r->strategy);
    mark(c, key, PASSED, 0);
}
