/* purchase.c: the purchase path. A purchase is checked in memory (sold-out
 * flag, the buyer's rate), then, on the same HTTP loop thread, put in the
 * batch of its item that the loop's turn gathers; the batch goes to Redis on
 * the loop's own connection as one call of lua/reserve_batch.lua (group
 * commit): Redis pays for a script call once a batch instead of once a
 * buyer, which was the largest part of its work (docs/PERFORMANCE.md). The
 * reply is read by the same loop, which answers each buyer and resumes the
 * connections of the turn together: nothing crosses threads. Each buyer gets
 * its own answer; a buyer who comes twice in one batch is settled twice, one
 * after the other, exactly as in two calls.
 *
 * A batch is sent when the loop's turn ends (an event made active by the
 * first purchase of the turn runs after the requests the turn read) or when
 * it is full (purchase_batch buyers): under light load a batch is one
 * purchase and costs no waiting; under heavy load a turn holds many.
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

#include <event2/event.h>

#include "clock.h"
#include "json_io.h"
#include "log.h"
#include "keys.h"
#include "reserve_batch.h"
#include "segment_route.h"

_Static_assert(RESERVE_BATCH_MAX == 64, "config.c bounds purchase_batch by RESERVE_BATCH_MAX");

/* Items (or segments) with a batch open in one turn at most; a purchase of
 * another sends the oldest batch first. */
#define PURCHASE_OPEN_ITEMS 8
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
    int64_t key;   /* the key id it was last sent to: the item's or a segment's */
    int64_t *keys; /* a segmented item's key ids (the route's), else NULL */
    segment_route route;
} purchase;

typedef struct batcher batcher;

/* The purchases of one item on their way to Redis as one call. */
typedef struct batch {
    batcher *owner;
    int by_text;       /* Redis forgot the script: its text is sent */
    int64_t sent_ms;   /* local monotonic: the bounds of Redis's clock */
    int slot;          /* the item's keys' (redis_cluster_slot) */
    int wait_replicas; /* what its WAIT asks for (reserve_wait_replicas, auto decided) */
    redis_cluster_attempt attempt; /* MOVED, ASK and TRYAGAIN followed so far */
    purchase *p[RESERVE_BATCH_MAX];
    reserve_batch call;
    /* What Redis answered, kept while WAIT (reserve_wait_replicas) runs: */
    reserve_item it;
    reserve_answer ans[RESERVE_BATCH_MAX];
    /* While its script or WAIT is on its way (the batcher's inflight list):
     * the connection it went on, and when an answer is too late. */
    struct batch *prev, *next;
    redisAsyncContext *ac; /* NULL while it waits to be sent again */
    int64_t deadline_ms;
    struct event *retry_ev; /* that wait (retry_later), made on its first */
} batch;

/* An HTTP loop's batches of the current turn (its thread only). */
struct batcher {
    app *a;
    redis_conn *conn;
    struct event *flush_ev; /* active: the turn's batches go when it runs */
    batch *inflight;        /* sent, their answer not yet come */
    struct event *watch_ev; /* while some are: looks for answers too late */
    batch *open[PURCHASE_OPEN_ITEMS];
    int nopen;
    struct {
        int64_t item;
        int segments;
        int64_t keys[KEYS_SEGMENTS_MAX];
    } segment_cache[PURCHASE_SEGMENT_CACHE];
    int segment_cache_next;
};

/* Each outcome's counter in /metrics. */
static const metrics_outcome counted[] = {
    [RESERVE_QUEUED] = METRICS_QUEUED,
    [RESERVE_NOT_STARTED] = METRICS_NOT_STARTED,
    [RESERVE_ENDED] = METRICS_ENDED,
    [RESERVE_SOLD_OUT] = METRICS_SOLD_OUT,
    [RESERVE_LIMIT_REACHED] = METRICS_LIMIT_REACHED,
    [RESERVE_INSUFFICIENT_STOCK] = METRICS_INSUFFICIENT_STOCK,
    [RESERVE_QUEUE_FULL] = METRICS_QUEUE_FULL,
    [RESERVE_UNKNOWN_ITEM] = METRICS_UNKNOWN_ITEM,
    [RESERVE_ARCHIVED] = METRICS_ARCHIVED,
    [RESERVE_BUYER_REQUIRED] = METRICS_BUYER_REQUIRED,
    [RESERVE_IN_PROGRESS] = METRICS_IN_PROGRESS,
};

/* What a buyer whose order lock stands hears in Retry-After (seconds): a
 * worker persists an order within milliseconds, the lock's TTL bounds it. */
#define PURCHASE_IN_PROGRESS_RETRY_S 1

/* What a buyer of an archived item reads (404, as for no item). */
#define PURCHASE_ARCHIVED_MESSAGE "the item is archived: it is no longer on sale"

static void purchase_free(purchase *p)
{
    free(p->keys);
    free(p);
}

/* Redis gave no usable answer: 503, nothing was sold to this buyer. */
static void fail(purchase *p)
{
    metrics_purchase(p->a->metrics, METRICS_FAILED);
    metrics_backend_error(p->a->metrics, METRICS_REDIS);
    http_exchange_reply_error(p->ex, SK_BACKEND_DOWN, "Redis is unavailable");
    purchase_free(p);
}

/* A refusal with what the buyer needs to know of it. */
static void reply_refusal(http_exchange *ex, const purchase_refusal *r)
{
    char body[512];
    int n = json_io_purchase_refused(body, sizeof(body), r);
    if (n < 0)
        http_exchange_reply_error(ex, r->status, NULL);
    else
        http_exchange_reply(ex, sk_status_http(r->status), body, (size_t)n, NULL);
}

static void answer(purchase *p, const reserve_item *it, const reserve_answer *ans)
{
    app *a = p->a;
    metrics_purchase(a->metrics, counted[ans->outcome]);
    if (ans->outcome == RESERVE_QUEUED) {
        char body[192];
        int n =
            json_io_purchase_queued(body, sizeof(body), p->order_id, p->quantity, ans->remaining);
        http_exchange_reply(p->ex, sk_status_http(SK_QUEUED), body, (size_t)n, NULL);
        purchase_free(p);
        return;
    }
    if (ans->outcome == RESERVE_UNKNOWN_ITEM || ans->outcome == RESERVE_ARCHIVED) {
        http_exchange_reply_error(p->ex, SK_NOT_FOUND,
                                  ans->outcome == RESERVE_ARCHIVED ? PURCHASE_ARCHIVED_MESSAGE
                                                                   : "no such item");
        purchase_free(p);
        return;
    }
    if (ans->outcome == RESERVE_IN_PROGRESS) /* the worker persists within moments */
        http_exchange_retry_after(p->ex, PURCHASE_IN_PROGRESS_RETRY_S);
    purchase_refusal r = {.status = reserve_status(ans->outcome),
                          .remaining = ans->remaining,
                          .bought = ans->bought,
                          .per_buyer_limit = it->per_buyer_limit,
                          .quantity = p->quantity,
                          .starts_ms = it->starts_ms,
                          .starts_in_ms = it->starts_ms - it->now_ms,
                          .ends_ms = it->ends_ms};
    reply_refusal(p->ex, &r);
    purchase_free(p);
}

/* Reserved, but no replica confirmed it in time: the order may still go
 * through (or be lost with its master), so the buyer hears 503 with the
 * order id to read later. */
static void unconfirmed(purchase *p)
{
    metrics_purchase(p->a->metrics, METRICS_UNCONFIRMED);
    char body[512];
    int n = json_io_purchase_unconfirmed(body, sizeof(body), p->order_id);
    if (n < 0)
        http_exchange_reply_error(p->ex, SK_UNCONFIRMED, NULL);
    else
        http_exchange_reply(p->ex, sk_status_http(SK_UNCONFIRMED), body, (size_t)n, NULL);
    purchase_free(p);
}

static int batcher_add(batcher *bt, purchase *p, int64_t key, const char *mode);
static void dispatch(batcher *bt, purchase *p, int segments);

/* The answer a buyer hears, once its way ends: queued (unless the replicas
 * did not confirm it), a refusal, or 503. */
static void conclude(purchase *p, const reserve_item *it, const reserve_answer *ans, int confirmed)
{
    if (ans->outcome == RESERVE_BAD_REPLY || (unsigned)ans->outcome > RESERVE_UNKNOWN_ITEM)
        fail(p);
    else if (ans->outcome == RESERVE_QUEUED && !confirmed)
        unconfirmed(p);
    else
        answer(p, it, ans);
}

/* A buyer of a segmented item: the next segment, or the answer. */
static void route(batcher *bt, purchase *p, const reserve_item *it, const reserve_answer *ans,
                  int confirmed)
{
    segment_step step;
    if (ans->outcome == RESERVE_HELD && !confirmed)
        segment_route_abandon(&p->route, it->round, &step);
    else
        segment_route_next(&p->route, ans->outcome, ans->remaining, ans->first_unit, it->round,
                           &step);
    if (!step.answer) {
        if (batcher_add(bt, p, p->keys[step.segment], step.mode) < 0)
            fail(p);
        return;
    }
    reserve_answer final = *ans;
    final.outcome = step.outcome;
    conclude(p, it, &final, confirmed);
}

static void batch_free(batch *b)
{
    if (b->retry_ev)
        event_free(b->retry_ev);
    free(b);
}

/* How often the batches on their way are looked at: a late answer is
 * noticed within this much after its deadline. */
#define PURCHASE_WATCH_MS 250

static void watch_arm(batcher *bt)
{
    if (!evtimer_pending(bt->watch_ev, NULL)) {
        struct timeval tv = {0, PURCHASE_WATCH_MS * 1000};
        evtimer_add(bt->watch_ev, &tv);
    }
}

/* b went on ac and should be answered within ms; without a connection it
 * waits to be sent again, and has no deadline. */
static void inflight_add(batch *b, redisAsyncContext *ac, int ms)
{
    batcher *bt = b->owner;
    b->ac = ac;
    b->deadline_ms = ac ? clock_mono_ms() + ms : INT64_MAX;
    b->prev = NULL;
    b->next = bt->inflight;
    if (bt->inflight)
        bt->inflight->prev = b;
    bt->inflight = b;
    watch_arm(bt);
}

/* b's answer came (NULL included). */
static void inflight_remove(batch *b)
{
    batcher *bt = b->owner;
    if (b->prev)
        b->prev->next = b->next;
    else if (bt->inflight == b)
        bt->inflight = b->next;
    if (b->next)
        b->next->prev = b->prev;
    b->prev = b->next = NULL;
    b->ac = NULL;
}

/* Answers every buyer of b from b->ans (or sends a buyer of a segmented item
 * on to its next segment), and frees b. confirmed: the batch's writes
 * reached the replicas asked for (or none were asked for). */
static void batch_settle(batch *b, int confirmed)
{
    batcher *bt = b->owner;
    int64_t version = reserve_stock_version(b->it.round, b->it.changes);
    for (int i = 0; i < b->call.n; i++) {
        purchase *p = b->p[i];
        const reserve_answer *ans = &b->ans[i];
        reserve_outcome o = ans->outcome;
        if (o == RESERVE_SOLD_OUT ||
            ((o == RESERVE_QUEUED || o == RESERVE_HELD) && ans->remaining <= 0))
            gate_set_sold_out(bt->a->gate, b->call.key_id, version);
        if (o == RESERVE_ARCHIVED) /* an announcement this server missed */
            gate_set_archived(bt->a->gate, b->call.item);
        if (o == RESERVE_SEGMENTED && !p->keys && b->it.segments > 1)
            dispatch(bt, p, (int)b->it.segments); /* asked as one: now as segments */
        else if (p->keys && o != RESERVE_BAD_REPLY)
            route(bt, p, &b->it, ans, confirmed);
        else
            conclude(p, &b->it, ans, confirmed);
    }
    batch_free(b);
}

static void on_wait_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
    batch *b = privdata;
    const redisReply *r = reply;
    (void)ac;
    inflight_remove(b);
    int want = b->wait_replicas;
    int confirmed = r && r->type == REDIS_REPLY_INTEGER && r->integer >= want;
    if (!confirmed)
        log_msg(LOG_WARN, "purchase", "WAIT %d: %lld replicas confirmed a batch of %d in %d ms",
                want, r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1LL, b->call.n,
                b->owner->a->cfg->reserve_wait_timeout_ms);
    batch_settle(b, confirmed);
}

/* With reserve_wait_replicas, a batch that queued orders or held units is
 * answered only once that many replicas hold its writes: WAIT on the same
 * connection, just after the script (Redis answers it when the replicas
 * acknowledged the connection's writes so far, or at the timeout). A hold
 * too: a take confirmed on another master must not outlive the hold that
 * counts it against the limit. Returns 1 when it was sent. */
static int wait_replicas(batch *b, redisAsyncContext *ac)
{
    const config *cfg = b->owner->a->cfg;
    int wrote = 0;
    for (int i = 0; i < b->call.n && !wrote; i++)
        wrote = b->ans[i].outcome == RESERVE_QUEUED || b->ans[i].outcome == RESERVE_HELD;
    b->wait_replicas = cfg->reserve_wait_replicas;
    if (b->wait_replicas == CONFIG_WAIT_AUTO)
        b->wait_replicas = redis_conn_replicas_for(b->owner->conn, b->slot) > 0 ? 1 : 0;
    if (b->wait_replicas == 0 || !wrote)
        return 0;
    char want[12], timeout[12];
    snprintf(want, sizeof(want), "%d", b->wait_replicas);
    snprintf(timeout, sizeof(timeout), "%d", cfg->reserve_wait_timeout_ms);
    const char *argv[] = {"WAIT", want, timeout};
    if (redisAsyncCommandArgv(ac, on_wait_reply, b, 3, argv, NULL) != REDIS_OK)
        batch_settle(b, 0);
    else
        inflight_add(b, ac, cfg->reserve_wait_timeout_ms + cfg->redis_timeout_ms);
    return 1;
}

/* Redis owes an answer past its deadline: its node neither answers nor
 * resets the connection (a host gone, a frozen server). The connection is
 * dropped, which answers every batch on it (batch_lost: the script may have
 * run), and the node is reconnected, or on a cluster the map read again. */
static void on_watch(evutil_socket_t fd, short what, void *arg)
{
    batcher *bt = arg;
    (void)fd;
    (void)what;
    int64_t now = clock_mono_ms();
    for (batch *b = bt->inflight; b;) {
        if (b->deadline_ms > now) {
            b = b->next;
            continue;
        }
        char why[64];
        snprintf(why, sizeof(why), "no answer in %d ms", bt->a->cfg->redis_timeout_ms);
        if (redis_conn_drop(bt->conn, b->ac, why) < 0)
            inflight_remove(b); /* not its connection any more: no answer will come by it */
        b = bt->inflight;       /* the drop answered (and unlinked) every batch on it */
    }
    if (bt->inflight)
        watch_arm(bt);
}

static void batch_fail(batch *b)
{
    for (int i = 0; i < b->call.n; i++)
        fail(b->p[i]);
    batch_free(b);
}

/* The connection went with the batch's answer: the script may have run, and
 * its orders be on their way to PostgreSQL. A buyer whose step could queue
 * an order hears 503 unconfirmed with its order id, not that nothing was
 * sold; one whose hold was being given back bought nothing. */
static void batch_lost(batch *b)
{
    for (int i = 0; i < b->call.n; i++) {
        purchase *p = b->p[i];
        if (p->keys && p->route.stage == SEGMENT_RELEASE) {
            fail(p);
        } else {
            metrics_backend_error(p->a->metrics, METRICS_REDIS);
            unconfirmed(p);
        }
    }
    batch_free(b);
}

static int batch_send(batch *b);
static int batch_send_on(batch *b, redisAsyncContext *ac, int asking);

/* The pause before a command is sent again after TRYAGAIN or a redirect to
 * a node not yet connected: 10 ms, doubling to 160 ms. TRYAGAIN lasts as
 * long as the slot migrates, not only while its keys are split: the script
 * names keys that often do not exist (an empty queue, no units given back),
 * and a migrating slot answers TRYAGAIN to a command some of whose keys are
 * missing. With the bound below, a batch waits out a move of about 2 s. */
#define PURCHASE_RETRY_PAUSE_MS 10
#define PURCHASE_RETRY_PAUSE_MAX_MS 160

/* The bound of MOVED, ASK and TRYAGAIN a batch follows: a reshard moves an
 * item's few keys in one MIGRATE, so this leaves room for a failover's
 * map refresh too. */
#define PURCHASE_MAX_REDIRECTS 16

static void on_retry_timer(evutil_socket_t fd, short what, void *arg);

/* Sends b again after a pause that grows with its redirects. Meanwhile it
 * is on the inflight list without a connection (no deadline), so that a
 * loop that stops answers it. Returns 0, or -1 when the timer could not be
 * set. */
static int retry_later(batch *b)
{
    int ms = PURCHASE_RETRY_PAUSE_MS;
    for (int k = 1; k < b->attempt.redirects && ms < PURCHASE_RETRY_PAUSE_MAX_MS; k++)
        ms *= 2;
    struct timeval pause = {0, ms * 1000};
    if (!b->retry_ev)
        b->retry_ev = evtimer_new(redis_conn_base(b->owner->conn), on_retry_timer, b);
    if (!b->retry_ev || evtimer_add(b->retry_ev, &pause) < 0)
        return -1;
    inflight_add(b, NULL, 0);
    return 0;
}

static void on_retry_timer(evutil_socket_t fd, short what, void *arg)
{
    batch *b = arg;
    (void)fd;
    (void)what;
    inflight_remove(b);
    if (batch_send(b) == 0)
        return;
    /* The node the slot is on now is not connected yet (a master back after
     * a failback, a node a redirect named): it is waited for, within the
     * bound of redirects, as a TRYAGAIN is. */
    if (b->attempt.redirects < b->attempt.max_redirects &&
        (redis_conn_connecting_for(b->owner->conn, b->slot) || b->attempt.redirects > 0)) {
        b->attempt.redirects++;
        if (retry_later(b) == 0)
            return;
    }
    batch_fail(b);
}

/* On a Redis Cluster, an error reply may only say "not here": the script did
 * not run, nothing was sold, and the batch goes again where the reply says.
 * Returns 1 when the batch is on its way again (or failed), 0 when r is the
 * batch's answer. */
static int followed(batch *b, const redisAsyncContext *ac, const redisReply *r)
{
    redisAsyncContext *next;
    redis_cluster_action act = redis_conn_follow(b->owner->conn, ac, r, &b->attempt, &next);
    if (act == REDIS_CLUSTER_DELIVER || act == REDIS_CLUSTER_TOO_MANY)
        return 0;
    metrics_redis_redirect(b->owner->a->metrics, act == REDIS_CLUSTER_RETRY ? METRICS_MOVED
                                                 : act == REDIS_CLUSTER_RETRY_ASKING
                                                     ? METRICS_ASK
                                                     : METRICS_TRYAGAIN);
    int sent = -1;
    if (act == REDIS_CLUSTER_RETRY_ASKING && next)
        sent = batch_send_on(b, next, 1);
    else if (act == REDIS_CLUSTER_RETRY && next)
        sent = batch_send_on(b, next, 0);
    else
        sent = retry_later(b);
    if (sent < 0)
        batch_fail(b);
    return 1;
}

static void on_batch_reply(redisAsyncContext *ac, void *reply, void *privdata)
{
    batch *b = privdata;
    redisReply *r = reply;
    inflight_remove(b);
    if (r && r->type == REDIS_REPLY_ERROR && followed(b, ac, r))
        return;
    if (scripts_is_noscript(r) && !b->by_text) {
        /* A restarted Redis lost the script: send its text once (which
         * caches it for the calls that follow). Nothing ran: no buyer was
         * settled. */
        b->by_text = 1;
        if (batch_send(b) < 0)
            batch_fail(b);
        return;
    }
    if (!r) {
        batch_lost(b);
        return;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        log_msg(LOG_ERROR, "purchase", "reserve_batch: %s", r->str);
        batch_fail(b);
        return;
    }
    reserve_item it;
    if (reserve_batch_item(r, b->call.n, &it) < 0) {
        log_msg(LOG_ERROR, "purchase", "reserve_batch: an answer of another shape");
        batch_fail(b);
        return;
    }
    app *a = b->owner->a;
    redis_clock_sample(&a->clock, b->sent_ms, clock_mono_ms(), it.now_ms);
    if (it.round > 0) {
        gate_new_version(a->gate, b->call.key_id, reserve_stock_version(it.round, it.changes));
        gate_set_window(a->gate, b->call.item, it.round, it.starts_ms, it.ends_ms);
        if (it.segments > 0 && it.segments <= KEYS_SEGMENTS_MAX)
            gate_set_segments(a->gate, b->call.item, (int)it.segments);
    }
    b->it = it;
    for (int i = 0; i < b->call.n; i++)
        if (reserve_batch_answer(r, b->call.n, i, &b->ans[i]) == RESERVE_BAD_REPLY)
            b->ans[i].outcome = RESERVE_BAD_REPLY;
    if (!wait_replicas(b, ac))
        batch_settle(b, 1);
}

/* Sends b on ac, after ASKING when asking (an ASK redirect: the node takes
 * the one command that follows). Returns 0, or -1 (b unchanged). */
static int batch_send_on(batch *b, redisAsyncContext *ac, int asking)
{
    if (!ac)
        return -1;
    if (asking && redisAsyncCommand(ac, NULL, NULL, "ASKING") != REDIS_OK)
        return -1;
    if (b->attempt.redirects == 0 && !b->by_text)
        metrics_purchase_batch(b->owner->a->metrics, b->call.n);
    b->sent_ms = clock_mono_ms();
    int argc =
        reserve_batch_argv(&b->call, &b->owner->a->scripts.s[SCRIPT_RESERVE_BATCH], b->by_text);
    if (redisAsyncCommandArgv(ac, on_batch_reply, b, argc, b->call.argv, b->call.lens) != REDIS_OK)
        return -1;
    inflight_add(b, ac, b->owner->a->cfg->redis_timeout_ms);
    return 0;
}

/* Sends b to the node serving its item. Returns 0, or -1 (b unchanged). */
static int batch_send(batch *b)
{
    return batch_send_on(b, redis_conn_context_for(b->owner->conn, b->slot), 0);
}

/* Sends the open batch at index i and closes it. A batch for a node that
 * is connecting waits for it (on_retry_timer); one for a node down fails
 * at once. */
static void batcher_send(batcher *bt, int i)
{
    batch *b = bt->open[i];
    bt->open[i] = bt->open[--bt->nopen];
    if (batch_send(b) == 0)
        return;
    if (redis_conn_connecting_for(bt->conn, b->slot) && retry_later(b) == 0)
        return;
    batch_fail(b);
}

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
    batcher *bt = arg;
    (void)fd;
    (void)what;
    while (bt->nopen > 0)
        batcher_send(bt, bt->nopen - 1);
    /* Written now, not on the loop's next turn. */
    redis_conn_flush(bt->conn);
}

static void batcher_free(void *arg)
{
    batcher *bt = arg;
    if (!bt)
        return;
    /* The loop stopped before its turn ended: Redis never saw these, nor
     * the batches waiting to be sent again (the connections are gone: those
     * sent were answered NULL). */
    while (bt->nopen > 0)
        batch_fail(bt->open[--bt->nopen]);
    while (bt->inflight) {
        batch *b = bt->inflight;
        inflight_remove(b);
        batch_fail(b);
    }
    if (bt->flush_ev)
        event_free(bt->flush_ev);
    if (bt->watch_ev)
        event_free(bt->watch_ev);
    free(bt);
}

/* The connection's batcher, made on its first purchase. NULL when out of
 * memory. */
static batcher *batcher_of(app *a, redis_conn *c)
{
    batcher *bt = redis_conn_local(c);
    if (bt)
        return bt;
    bt = calloc(1, sizeof(*bt));
    if (!bt)
        return NULL;
    bt->a = a;
    bt->conn = c;
    bt->flush_ev = event_new(redis_conn_base(c), -1, 0, on_flush, bt);
    bt->watch_ev = evtimer_new(redis_conn_base(c), on_watch, bt);
    if (!bt->flush_ev || !bt->watch_ev) {
        batcher_free(bt);
        return NULL;
    }
    redis_conn_set_local(c, bt, batcher_free);
    return bt;
}

/* Puts p in the batch of this turn of the keys of key (the item's, or a
 * segment's), as a buyer of the script's mode. Returns 0, or -1 when out of
 * memory (p not taken). */
static int batcher_add(batcher *bt, purchase *p, int64_t key, const char *mode)
{
    int i = 0;
    while (i < bt->nopen && bt->open[i]->call.key_id != key)
        i++;
    if (i == bt->nopen) {
        if (bt->nopen == PURCHASE_OPEN_ITEMS)
            batcher_send(bt, 0);
        batch *b = malloc(sizeof(*b));
        if (!b)
            return -1;
        b->owner = bt;
        b->by_text = 0;
        b->retry_ev = NULL;
        reserve_batch_init_segment(&b->call, p->item, key, bt->a->cfg->max_pending_orders);
        if (bt->a->cfg->order_guard == CONFIG_ORDER_GUARD_LOCK)
            reserve_batch_guard(&b->call, bt->a->cfg->order_lock_ttl_ms);
        b->slot = redis_cluster_slot(b->call.state_key, strlen(b->call.state_key));
        redis_cluster_attempt_init(&b->attempt, PURCHASE_MAX_REDIRECTS);
        i = bt->nopen++;
        bt->open[i] = b;
    }
    batch *b = bt->open[i];
    int at = reserve_batch_add_mode(&b->call, reserve_buyer(p->user, p->user == 0, p->order_id),
                                    p->order_id, p->quantity, mode);
    b->p[at] = p;
    p->key = key;
    if (b->call.n >= bt->a->cfg->purchase_batch)
        batcher_send(bt, i);
    else
        event_active(bt->flush_ev, EV_TIMEOUT, 1); /* once a turn however often */
    return 0;
}

/* The key ids of the segments of item (keys_segment), kept by the loop. */
static const int64_t *segment_keys(batcher *bt, int64_t item, int segments)
{
    for (int i = 0; i < PURCHASE_SEGMENT_CACHE; i++)
        if (bt->segment_cache[i].item == item && bt->segment_cache[i].segments == segments)
            return bt->segment_cache[i].keys;
    int at = bt->segment_cache_next;
    bt->segment_cache_next = (at + 1) % PURCHASE_SEGMENT_CACHE;
    bt->segment_cache[at].item = item;
    bt->segment_cache[at].segments = segments;
    for (int j = 0; j < segments; j++)
        bt->segment_cache[at].keys[j] = keys_segment(item, j, segments);
    return bt->segment_cache[at].keys;
}

static int segment_sold_out(void *ctx, int64_t key)
{
    app *a = ctx;
    return gate_is_sold_out(a->gate, key, clock_mono_ms());
}

/* Sends p on its way: to the item's keys, or, for an item of several
 * segments, as segment_route.h says. */
static void dispatch(batcher *bt, purchase *p, int segments)
{
    if (segments <= 1) {
        if (batcher_add(bt, p, p->item, p->user == 0 ? "1" : "0") < 0)
            fail(p);
        return;
    }
    p->keys = malloc((size_t)segments * sizeof(*p->keys));
    if (!p->keys) {
        fail(p);
        return;
    }
    memcpy(p->keys, segment_keys(bt, p->item, segments), (size_t)segments * sizeof(*p->keys));
    segment_step step;
    segment_route_start(&p->route, p->keys, segments,
                        reserve_buyer(p->user, p->user == 0, p->order_id), p->user == 0,
                        segment_sold_out, bt->a, &step);
    if (step.answer) { /* anonymous, and every segment known sold out */
        metrics_purchase(bt->a->metrics, METRICS_SOLD_OUT_FLAG);
        http_exchange_reply_error(p->ex, SK_SOLD_OUT, NULL);
        purchase_free(p);
        return;
    }
    if (batcher_add(bt, p, p->keys[step.segment], step.mode) < 0)
        fail(p);
}

/* True when every segment of a segmented item is flagged sold out. */
static int segments_sold_out(batcher *bt, int64_t item, int segments)
{
    const int64_t *keys = segment_keys(bt, item, segments);
    for (int j = 0; j < segments; j++)
        if (!gate_is_sold_out(bt->a->gate, keys[j], clock_mono_ms()))
            return 0;
    return 1;
}

/* Answers from memory what it surely knows: archived, sold out at the
 * item's current stock version, or outside the window by the bounds of
 * Redis's clock. Returns 1 when answered. */
static int answered_from_memory(app *a, batcher *bt, http_exchange *ex, int64_t item, int segments)
{
    if (gate_is_archived(a->gate, item)) {
        metrics_purchase(a->metrics, METRICS_ARCHIVED);
        http_exchange_reply_error(ex, SK_NOT_FOUND, PURCHASE_ARCHIVED_MESSAGE);
        return 1;
    }
    if (segments > 1 ? bt && segments_sold_out(bt, item, segments)
                     : gate_is_sold_out(a->gate, item, clock_mono_ms())) {
        metrics_purchase(a->metrics, METRICS_SOLD_OUT_FLAG);
        http_exchange_reply_error(ex, SK_SOLD_OUT, NULL);
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
    reply_refusal(ex, &r);
    return 1;
}

void purchase_start(app *a, http_exchange *ex, int64_t item, int64_t user, int quantity)
{
    redis_conn *c = app_exchange_conn(ex);
    batcher *bt = c ? batcher_of(a, c) : NULL;
    int segments = gate_segments(a->gate, item);
    if (answered_from_memory(a, bt, ex, item, segments))
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

    http_exchange_defer(ex);
    if (!bt)
        fail(p);
    else
        dispatch(bt, p, segments);
}
