/* purchase.c: the purchase path. A purchase is checked in memory (archived,
 * sold-out flag, the sale window, the buyer's rate), then, on the same HTTP
 * loop thread, handed to the loop's batcher (batcher.h: group commit, one
 * script call for the buyers of an item that a loop turn gathers), which
 * hands it back with Redis's answer; the buyer's answer is purchase_reply.h's.
 * A buyer of an item of several segments goes from segment to segment as
 * segment_route.h decides, one batch at a time.
 *
 * Before Redis, memory answers what it surely knows: an item sold out at its
 * current stock version, and a sale window Redis's answers carried, judged by
 * bounds on Redis's clock (redis_clock.h): the pre-start storm and the
 * buyers who come after the end cost Redis nothing. Near the start (within
 * PURCHASE_START_MARGIN_MS) every purchase goes to Redis, which decides. */
#include "purchase.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "batcher.h"
#include "clock.h"
#include "json_io.h"
#include "log.h"
#include <event2/event.h>
#include "keys.h"
#include "purchase_reply.h"
#include "room_admission.h"
#include "segment_route.h"

/* Segmented items whose key ids a loop keeps (computing them hashes). */
#define PURCHASE_SEGMENT_CACHE 4

/* Purchases this close to the start, by the upper bound of Redis's clock, go
 * to Redis rather than being refused from memory. */
#define PURCHASE_START_MARGIN_MS 5
/* Redis's TIME and our clock are read to the millisecond: the bounds may be
 * this far off, so the end is judged from memory only past it. */
#define PURCHASE_CLOCK_SLACK_MS 2

typedef struct purchase {
    app *a;
    http_exchange *ex;
    int64_t item;
    int64_t user; /* 0: anonymous */
    int quantity;
    int64_t order_id;
    int64_t *keys; /* a segmented item's key ids (the route's), else NULL */
    segment_route route;
    /* A room's buyer: "+<round>:<expiry ms>" of the admission checked, that
     * the script's entry modes carry (lua/reserve_batch.lua); "" else. */
    char admitted[48];
    int64_t admitted_round;
} purchase;

/* An HTTP loop's purchase state (its thread only; redis_conn_local). */
typedef struct purchase_loop {
    app *a;
    batcher *bt;
    struct {
        int64_t item;
        int segments;
        int64_t keys[KEYS_SEGMENTS_MAX];
    } segment_cache[PURCHASE_SEGMENT_CACHE];
    int segment_cache_next;
} purchase_loop;

static void purchase_free(purchase *p)
{
    free(p->keys);
    free(p);
}

static void fail(purchase *p)
{
    purchase_reply_failed(p->a, p->ex);
    purchase_free(p);
}

/* Puts p in this turn's batch of key id key (the item's, or a segment's),
 * as a buyer of the script's mode; answers 503 when out of memory. */
static void send_to(purchase_loop *pl, purchase *p, int64_t key, const char *mode)
{
    char marked[RESERVE_MODE_MAX];
    if (p->admitted[0] && strchr("01ah", mode[0])) {
        snprintf(marked, sizeof(marked), "%s%s", mode, p->admitted);
        mode = marked;
    }
    if (batcher_add(pl->bt, p, p->item, key, reserve_buyer(p->user, p->user == 0, p->order_id),
                    p->order_id, p->quantity, mode) < 0)
        fail(p);
}

/* Answers the buyer Redis's final word; a purchase made with an admission
 * ends the admission's active time. */
static void finish(purchase *p, const reserve_item *it, const reserve_answer *ans, int confirmed)
{
    if (p->admitted[0] && ans->outcome == RESERVE_QUEUED)
        room_admission_used(p->a, p->item, p->admitted_round, p->user);
    purchase_reply_answer(p->a, p->ex, p->order_id, p->quantity, it, ans, confirmed);
    purchase_free(p);
}

/* --- segments ------------------------------------------------------------------- */

/* The key ids of the segments of item (keys_segment), kept by the loop. */
static const int64_t *segment_keys(purchase_loop *pl, int64_t item, int segments)
{
    for (int i = 0; i < PURCHASE_SEGMENT_CACHE; i++)
        if (pl->segment_cache[i].item == item && pl->segment_cache[i].segments == segments)
            return pl->segment_cache[i].keys;
    int at = pl->segment_cache_next;
    pl->segment_cache_next = (at + 1) % PURCHASE_SEGMENT_CACHE;
    pl->segment_cache[at].item = item;
    pl->segment_cache[at].segments = segments;
    for (int j = 0; j < segments; j++)
        pl->segment_cache[at].keys[j] = keys_segment(item, j, segments);
    return pl->segment_cache[at].keys;
}

static int segment_sold_out(void *ctx, int64_t key)
{
    app *a = ctx;
    return gate_is_sold_out(a->gate, key, clock_mono_ms());
}

/* True when every segment of a segmented item is flagged sold out. */
static int segments_sold_out(purchase_loop *pl, int64_t item, int segments)
{
    const int64_t *keys = segment_keys(pl, item, segments);
    for (int j = 0; j < segments; j++)
        if (!gate_is_sold_out(pl->a->gate, keys[j], clock_mono_ms()))
            return 0;
    return 1;
}

/* Sends p on its way: to the item's keys, or, for an item of several
 * segments, to the first segment segment_route.h names. */
static void dispatch(purchase_loop *pl, purchase *p, int segments)
{
    if (segments <= 1) {
        send_to(pl, p, p->item, p->user == 0 ? "1" : "0");
        return;
    }
    p->keys = malloc((size_t)segments * sizeof(*p->keys));
    if (!p->keys) {
        fail(p);
        return;
    }
    memcpy(p->keys, segment_keys(pl, p->item, segments), (size_t)segments * sizeof(*p->keys));
    segment_step step;
    segment_route_start(&p->route, p->keys, segments,
                        reserve_buyer(p->user, p->user == 0, p->order_id), p->user == 0,
                        segment_sold_out, pl->a, &step);
    if (step.answer) { /* anonymous, and every segment known sold out */
        purchase_reply_sold_out_flag(p->a, p->ex);
        purchase_free(p);
        return;
    }
    send_to(pl, p, p->keys[step.segment], step.mode);
}

/* A buyer of a segmented item after a segment's answer: the next segment,
 * or the answer. */
static void next_segment(purchase_loop *pl, purchase *p, const reserve_item *it,
                         const reserve_answer *ans, int confirmed)
{
    segment_step step;
    if (ans->outcome == RESERVE_HELD && !confirmed)
        segment_route_abandon(&p->route, it->round, &step);
    else
        segment_route_next(&p->route, ans->outcome, ans->remaining, ans->first_unit, it->round,
                           &step);
    if (!step.answer) {
        send_to(pl, p, p->keys[step.segment], step.mode);
        return;
    }
    reserve_answer final = *ans;
    final.outcome = step.outcome;
    finish(p, it, &final, confirmed);
}

/* --- what the batcher hands back ---------------------------------------------- */

static void on_answered(void *ctx, void *who, const reserve_item *it, const reserve_answer *ans,
                        int confirmed)
{
    purchase_loop *pl = ctx;
    purchase *p = who;
    if (ans->outcome == RESERVE_SEGMENTED && !p->keys && it->segments > 1) {
        dispatch(pl, p, (int)it->segments); /* asked as one: now as segments */
    } else if (p->keys && ans->outcome != RESERVE_BAD_REPLY) {
        next_segment(pl, p, it, ans, confirmed);
    } else {
        finish(p, it, ans, confirmed);
    }
}

static void on_failed(void *ctx, void *who)
{
    (void)ctx;
    fail(who);
}

/* The connection went with the answer: the script may have run, and its
 * orders be on their way to PostgreSQL. A buyer whose step could queue an
 * order hears 503 unconfirmed with its order id, not that nothing was sold;
 * one whose hold was being given back bought nothing. */
static void on_lost(void *ctx, void *who)
{
    purchase *p = who;
    (void)ctx;
    if (p->keys && p->route.stage == SEGMENT_RELEASE) {
        fail(p);
        return;
    }
    metrics_backend_error(p->a->metrics, METRICS_REDIS);
    purchase_reply_unconfirmed(p->a, p->ex, p->order_id);
    purchase_free(p);
}

static const batcher_calls handed_back = {on_answered, on_failed, on_lost};

static void loop_free(void *arg)
{
    purchase_loop *pl = arg;
    if (!pl)
        return;
    batcher_free(pl->bt); /* answers its buyers first: pl is still whole */
    free(pl);
}

/* The connection's purchase state, made on its first purchase. NULL when
 * out of memory. */
static purchase_loop *loop_of(app *a, redis_conn *c)
{
    purchase_loop *pl = redis_conn_local(c);
    if (pl)
        return pl;
    pl = calloc(1, sizeof(*pl));
    if (!pl)
        return NULL;
    pl->a = a;
    pl->bt = batcher_create(a, c, &handed_back, pl);
    if (!pl->bt) {
        free(pl);
        return NULL;
    }
    redis_conn_set_local(c, pl, loop_free);
    return pl;
}

/* --- from memory ---------------------------------------------------------------- */

/* Answers from memory what it surely knows: archived, sold out at the
 * item's current stock version, or outside the window by the bounds of
 * Redis's clock. Returns 1 when answered. */
static int answered_from_memory(app *a, purchase_loop *pl, http_exchange *ex, int64_t item,
                                int segments)
{
    if (gate_is_archived(a->gate, item)) {
        purchase_reply_archived(a, ex);
        return 1;
    }
    if (segments > 1 ? pl && segments_sold_out(pl, item, segments)
                     : gate_is_sold_out(a->gate, item, clock_mono_ms())) {
        purchase_reply_sold_out_flag(a, ex);
        return 1;
    }
    int64_t starts, ends, lo, hi;
    if (!gate_window(a->gate, item, &starts, &ends) || (starts == 0 && ends == 0) ||
        !redis_clock_bounds(&a->clock, clock_mono_ms(), &lo, &hi))
        return 0;
    purchase_refusal r = {.starts_ms = starts, .starts_in_ms = starts - hi, .ends_ms = ends};
    if (starts > 0 && starts - hi > PURCHASE_START_MARGIN_MS) {
        metrics_purchase(a->metrics, METRICS_NOT_STARTED_MEMORY);
        r.status = SK_NOT_STARTED;
    } else if (ends > 0 && lo - PURCHASE_CLOCK_SLACK_MS >= ends) {
        metrics_purchase(a->metrics, METRICS_ENDED_MEMORY);
        r.status = SK_ENDED;
    } else {
        return 0;
    }
    purchase_reply_refusal(ex, &r);
    return 1;
}

/* Checks a room buyer's admission token into p->admitted. Returns 0, or -1
 * when refused (answered). */
static int admission_of(app *a, http_exchange *ex, purchase *p, const char *admission)
{
    int64_t round, expiry;
    sk_status st = room_check_admission(a, p->item, p->user, admission, &round, &expiry);
    if (st != SK_OK) {
        metrics_purchase(a->metrics, METRICS_ADMISSION_REFUSED);
        http_exchange_reply_error(ex, st, NULL);
        return -1;
    }
    snprintf(p->admitted, sizeof(p->admitted), "+%" PRId64 ":%" PRId64, round, expiry);
    p->admitted_round = round;
    return 0;
}

void purchase_start(app *a, http_exchange *ex, int64_t item, int64_t user, int quantity,
                    const char *admission)
{
    redis_conn *c = app_exchange_conn(ex);
    purchase_loop *pl = c ? loop_of(a, c) : NULL;
    int segments = gate_segments(a->gate, item);
    if (answered_from_memory(a, pl, ex, item, segments))
        return;
    if (a->ratelimit && user != 0) {
        int64_t wait_ms = ratelimit_take(a->ratelimit, user, clock_mono_ms());
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
    p->user = user;
    p->quantity = quantity;
    p->order_id = order_id_next(&a->ids, clock_wall_ms());
    if (admission && admission[0] && admission_of(a, ex, p, admission) < 0) {
        purchase_free(p);
        return;
    }

    http_exchange_defer(ex);
    if (!pl)
        fail(p);
    else
        dispatch(pl, p, segments);
}
