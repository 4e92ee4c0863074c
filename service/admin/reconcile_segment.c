/* reconcile_segment.c: a rebuilt segment's keys, its hold, and its state set
 * back in one MULTI. */
#include "reconcile_segment.h"

#include <stdio.h>
#include <string.h>

#include "backoff.h"
#include "order_return.h"
#include "reconcile_piece.h"
#include "scripts.h"

#define COMPONENT "reconcile"

/* Step 3's work on one segment. */
typedef struct commit {
    redis_nodes *rn;
    const reconcile_item *it;
    int archived; /* archived after the scan, as the snapshot says: it stays off sale */
    scripts sc;   /* item_reset's text */
    char *err;
    size_t errlen;
} commit;

void reconcile_segment_init(reconcile_segment *sg, const reconcile_item *it, int j)
{
    memset(sg, 0, sizeof(*sg));
    sg->j = j;
    sg->key = keys_segment(it->id, j, it->segments);
    keys_item_state(sg->state, sizeof(sg->state), sg->key);
    keys_item_buyers(sg->buyers, sizeof(sg->buyers), sg->key);
    keys_item_returned(sg->returned, sizeof(sg->returned), sg->key);
    keys_item_given_back(sg->given_back, sizeof(sg->given_back), sg->key);
    keys_item_granted(sg->granted, sizeof(sg->granted), sg->key);
    keys_staged(sg->staged_buyers, sizeof(sg->staged_buyers), sg->buyers);
    keys_staged(sg->staged_returned, sizeof(sg->staged_returned), sg->returned);
    keys_staged(sg->staged_given_back, sizeof(sg->staged_given_back), sg->given_back);
    keys_staged(sg->staged_granted, sizeof(sg->staged_granted), sg->granted);
}

/* Removes the segment's state and any staging keys a crash left: off sale.
 * 0, or -1 with err set. */
static int hold_segment(redis_nodes *rn, const reconcile_segment *sg, char *err, size_t errlen)
{
    const char *argv[] = {
        "UNLINK",          sg->state, sg->staged_buyers, sg->staged_returned, sg->staged_given_back,
        sg->staged_granted};
    return reconcile_retried(rn, sg->state, 6, argv, err, errlen) < 0 ? -1 : 0;
}

int reconcile_hold_item(redis_nodes *rn, const reconcile_item *it, char *err, size_t errlen)
{
    for (int j = 0; j < it->segments; j++) {
        reconcile_segment sg;
        reconcile_segment_init(&sg, it, j);
        if (hold_segment(rn, &sg, err, errlen) < 0)
            return -1;
    }
    return 0;
}

/* Appends to redis the call of lua/item_reset.lua (by its text: a MULTI
 * cannot fall back from NOSCRIPT) that sets sg's state, as the books say:
 * its share of the initial stock (and for segment 0 the restocks, which go
 * there) less the units taken from it, remaining. */
static void append_state(commit *c, redisContext *redis, const reconcile_segment *sg,
                         int64_t remaining, int64_t initial)
{
    const reconcile_item *it = c->it;
    char v[12][24], numkeys[12];
    const long long values[] = {remaining, it->round, it->starts_ms, it->ends_ms,
                                it->per_buyer_limit, it->segments,
                                /* the round's units over every segment */
                                it->initial + it->restocked, initial, sg->j == 0 ? it->restocks : 0,
                                sg->j == 0 ? it->restocked : 0, sg->settled, sg->back};
    /* The granted orders (a draw's) go with the rest: the rebuild renames
     * those of the books in. */
    const char *keys_args[18] = {sg->state, sg->buyers, sg->returned, sg->given_back, sg->granted};
    for (int k = 0; k < 12; k++) {
        snprintf(v[k], sizeof(v[k]), "%lld", values[k]);
        keys_args[5 + k] = v[k];
    }
    /* The admission as the books say: a Redis that lost the item's state
     * must not sell a room's item without admissions, nor a draw's at all. */
    keys_args[17] = it->admission;
    /* EVAL, the text, the key count and the 18 entries: argc is never -1. */
    const char *argv[3 + 18];
    size_t lens[3 + 18];
    int argc =
        scripts_argv(&c->sc.s[SCRIPT_ITEM_RESET], 1, 5, 13, keys_args, argv, lens, 3 + 18, numkeys);
    redisAppendCommandArgv(redis, argc, argv, lens);
}

/* Step 3 for one segment, in one MULTI on its node: the state set
 * (append_state, which removes the old keys) and the staging keys renamed
 * in. One try: 0 done, 1 unknown (no answer: it may have run), -1 refused,
 * with err set. */
static int commit_once(commit *c, const reconcile_segment *sg, int64_t remaining, int64_t initial)
{
    redisContext *redis = redis_nodes_for_key(c->rn, sg->state);
    if (!redis) {
        snprintf(c->err, c->errlen, "redis: the node of %s does not answer (logged above)",
                 sg->state);
        return 1;
    }
    const char *renames[][2] = {{sg->staged_buyers, sg->buyers},
                                {sg->staged_returned, sg->returned},
                                {sg->staged_given_back, sg->given_back},
                                {sg->staged_granted, sg->granted}};
    const int staged[] = {sg->has_buyers, sg->has_returned, sg->has_given_back, sg->has_granted};
    size_t replies = 3; /* MULTI, EVAL, EXEC */
    redisAppendCommand(redis, "MULTI");
    if (c->archived) { /* kept by the script */
        redisAppendCommand(redis, "HSET %s archived 1", sg->state);
        replies++;
    }
    append_state(c, redis, sg, remaining, initial);
    for (int k = 0; k < 4; k++) {
        if (staged[k]) {
            redisAppendCommand(redis, "RENAME %s %s", renames[k][0], renames[k][1]);
            replies++;
        }
    }
    redisAppendCommand(redis, "EXEC");
    int ok = 1;
    for (size_t i = 0; i < replies; i++) {
        redisReply *r = NULL;
        if (redisGetReply(redis, (void **)&r) != REDIS_OK) {
            redis_nodes_reply(c->rn, redis, NULL, "MULTI");
            snprintf(c->err, c->errlen, "redis: the node of %s failed (logged above)", sg->state);
            return 1;
        }
        /* An error reply is logged (a MOVED marks the slot map stale). */
        r = redis_nodes_reply(c->rn, redis, r, i + 1 < replies ? "MULTI" : "EXEC");
        ok = ok && r;
        freeReplyObject(r);
    }
    if (!ok)
        snprintf(c->err, c->errlen, "redis: the MULTI on %s failed (logged above)", sg->state);
    return ok ? 0 : -1;
}

/* Step 3, tried again while Redis does not answer. Never twice: the MULTI
 * runs whole or not at all, and its state exists only once it ran (the
 * item was held), so an answer lost on the way is told from a MULTI that
 * never ran by asking for the state before trying again. 0, or -1 with
 * err set. */
static int commit_segment(commit *c, const reconcile_segment *sg)
{
    const reconcile_item *it = c->it;
    int64_t initial = keys_segment_share(it->initial, sg->j, it->segments);
    int64_t remaining = initial + (sg->j == 0 ? it->restocked : 0) - sg->held - sg->pending;
    const char *exists[] = {"EXISTS", sg->state};
    int64_t delay = 0;
    for (int tries = 1;; tries++) {
        int rc = commit_once(c, sg, remaining > 0 ? remaining : 0, initial);
        if (rc <= 0)
            return rc;
        if (tries == RECONCILE_TRIES)
            return -1;
        delay = backoff_next(delay, RECONCILE_BACKOFF_MAX_MS);
        reconcile_pause_ms(delay);
        long long ran = reconcile_retried(c->rn, sg->state, 2, exists, c->err, c->errlen);
        if (ran != 0)
            return ran > 0 ? 0 : -1;
    }
}

int reconcile_segment_commit(redis_nodes *rn, const reconcile_item *it, const reconcile_segment *sg,
                             int archived, char *err, size_t errlen)
{
    commit c = {.rn = rn, .it = it, .archived = archived, .err = err, .errlen = errlen};
    if (scripts_init(&c.sc) < 0) {
        snprintf(err, errlen, "lua/item_reset.lua is missing from the build");
        return -1;
    }
    if (commit_segment(&c, sg) < 0)
        return -1;
    /* Every return call that gave units back covered an order of its own,
     * so `settled` is at least the returns a server may have seen.
     * Announced, so flagged servers clear at once. */
    int64_t changes = (sg->j == 0 ? it->restocks : 0) + sg->settled;
    if (changes > 0)
        order_return_announce(rn, sg->key, it->round, changes, COMPONENT);
    return 0;
}
