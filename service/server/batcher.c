/* batcher.c: group commit of one HTTP loop's purchases (batcher.h): the
 * batches of a turn, their way to Redis and back (redirects, NOSCRIPT, WAIT,
 * deadlines), and what memory learns from each answer. */
#include "batcher.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "clock.h"
#include "backoff.h"
#include "keys.h"
#include "log.h"

_Static_assert(RESERVE_BATCH_MAX == 64, "config.c bounds purchase_batch by RESERVE_BATCH_MAX");

/* Items (or segments) with a batch open in one turn at most; a buyer of
 * another sends the oldest batch first. */
#define BATCHER_OPEN_ITEMS 8

/* How often the batches on their way are looked at: a late answer is
 * noticed within this much after its deadline. */
#define BATCHER_WATCH_MS 250

/* The pause before a command is sent again after TRYAGAIN or a redirect to
 * a node not yet connected: 10 ms, doubling to 160 ms (backoff_after).
 * TRYAGAIN lasts as long as the slot migrates, not only while its keys are
 * split: the script names keys that often do not exist (an empty queue, no
 * units given back), and a migrating slot answers TRYAGAIN to a command some
 * of whose keys are missing. With the bound below, a batch waits out a move
 * of about 2 s. */
#define BATCHER_RETRY_PAUSE_MS 10
#define BATCHER_RETRY_PAUSE_MAX_MS 160

/* The bound of MOVED, ASK and TRYAGAIN a batch follows: a reshard moves an
 * item's few keys in one MIGRATE, so this leaves room for a failover's
 * map refresh too. */
#define BATCHER_MAX_REDIRECTS 16

/* The buyers of one item on their way to Redis as one call. */
typedef struct batch {
    batcher *owner;
    int by_text;       /* Redis forgot the script: its text is sent */
    int64_t sent_ms;   /* local monotonic: the bounds of Redis's clock */
    int slot;          /* the item's keys' (redis_cluster_slot) */
    int wait_replicas; /* what its WAIT asks for (reserve_wait_replicas, auto decided) */
    redis_cluster_attempt attempt; /* MOVED, ASK and TRYAGAIN followed so far */
    void *who[RESERVE_BATCH_MAX];
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

/* An HTTP loop's batches (its thread only). */
struct batcher {
    app *a;
    redis_conn *conn;
    const batcher_calls *calls;
    void *ctx;
    struct event *flush_ev; /* active: the turn's batches go when it runs */
    batch *inflight;        /* sent, their answer not yet come */
    struct event *watch_ev; /* while some are: looks for answers too late */
    batch *open[BATCHER_OPEN_ITEMS];
    int nopen;
};

static void batch_free(batch *b)
{
    if (b->retry_ev)
        event_free(b->retry_ev);
    free(b);
}

/* Every buyer of b hears that nothing was sold; b is freed. */
static void batch_fail(batch *b)
{
    const batcher *bt = b->owner;
    for (int i = 0; i < b->call.n; i++)
        bt->calls->failed(bt->ctx, b->who[i]);
    batch_free(b);
}

/* The connection went with b's answer: the script may have run. */
static void batch_lost(batch *b)
{
    const batcher *bt = b->owner;
    for (int i = 0; i < b->call.n; i++)
        bt->calls->lost(bt->ctx, b->who[i]);
    batch_free(b);
}

/* --- the batches on their way ------------------------------------------------ */

static void watch_arm(batcher *bt)
{
    if (!evtimer_pending(bt->watch_ev, NULL)) {
        struct timeval tv = {0, BATCHER_WATCH_MS * 1000};
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

/* --- answers ------------------------------------------------------------------- */

/* Hands every buyer of b its answer from b->ans, after the gate learnt what
 * they say of the item, and frees b. confirmed: the batch's writes reached
 * the replicas asked for (or none were asked for). */
static void batch_settle(batch *b, int confirmed)
{
    batcher *bt = b->owner;
    int64_t version = reserve_stock_version(b->it.round, b->it.changes);
    for (int i = 0; i < b->call.n; i++) {
        const reserve_answer *ans = &b->ans[i];
        reserve_outcome o = ans->outcome;
        if (o == RESERVE_SOLD_OUT ||
            ((o == RESERVE_QUEUED || o == RESERVE_HELD) && ans->remaining <= 0))
            gate_set_sold_out(bt->a->gate, b->call.key_id, version);
        if (o == RESERVE_ARCHIVED) /* an announcement this server missed */
            gate_set_archived(bt->a->gate, b->call.item);
        bt->calls->answered(bt->ctx, b->who[i], &b->it, ans, confirmed);
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

/* What the item's state in a script's answer tells memory: Redis's clock,
 * the stock's version, the sale window, the segments. */
static void learn(batch *b, const reserve_item *it)
{
    app *a = b->owner->a;
    redis_clock_sample(&a->clock, b->sent_ms, clock_mono_ms(), it->now_ms);
    if (it->round <= 0)
        return;
    gate_new_version(a->gate, b->call.key_id, reserve_stock_version(it->round, it->changes));
    gate_set_window(a->gate, b->call.item, it->round, it->starts_ms, it->ends_ms);
    if (it->segments > 0 && it->segments <= KEYS_SEGMENTS_MAX)
        gate_set_segments(a->gate, b->call.item, (int)it->segments);
}

/* --- sending, and sending again ------------------------------------------------ */

static int batch_send(batch *b);
static int batch_send_on(batch *b, redisAsyncContext *ac, int asking);
static void on_retry_timer(evutil_socket_t fd, short what, void *arg);

/* Sends b again after a pause that grows with its redirects. Meanwhile it
 * is on the inflight list without a connection (no deadline), so that a
 * loop that stops answers it. Returns 0, or -1 when the timer could not be
 * set. */
static int retry_later(batch *b)
{
    int64_t ms =
        backoff_after(b->attempt.redirects, BATCHER_RETRY_PAUSE_MS, BATCHER_RETRY_PAUSE_MAX_MS);
    struct timeval pause = {0, (suseconds_t)(ms * 1000)};
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
 * not run, nothing was sold, and the batch goes again where the reply says
 * (redis_conn_follow decides, as redis_cluster_follow does for every
 * caller). Returns 1 when the batch is on its way again (or failed), 0 when
 * r is the batch's answer. */
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
    int sent = act == REDIS_CLUSTER_RETRY_LATER || !next
                   ? retry_later(b)
                   : batch_send_on(b, next, act == REDIS_CLUSTER_RETRY_ASKING);
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
    if (scripts_send_text(r, &b->by_text)) { /* nothing ran: no buyer was settled */
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
    learn(b, &it);
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

/* --- the turn's open batches ---------------------------------------------------- */

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

void batcher_free(batcher *bt)
{
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

batcher *batcher_create(app *a, redis_conn *conn, const batcher_calls *calls, void *ctx)
{
    batcher *bt = calloc(1, sizeof(*bt));
    if (!bt)
        return NULL;
    bt->a = a;
    bt->conn = conn;
    bt->calls = calls;
    bt->ctx = ctx;
    bt->flush_ev = event_new(redis_conn_base(conn), -1, 0, on_flush, bt);
    bt->watch_ev = evtimer_new(redis_conn_base(conn), on_watch, bt);
    if (!bt->flush_ev || !bt->watch_ev) {
        batcher_free(bt);
        return NULL;
    }
    return bt;
}

/* A new batch of the keys of key id key of item, open in bt. NULL when out
 * of memory. */
static batch *batch_open(batcher *bt, int64_t item, int64_t key)
{
    if (bt->nopen == BATCHER_OPEN_ITEMS)
        batcher_send(bt, 0);
    batch *b = malloc(sizeof(*b));
    if (!b)
        return NULL;
    b->owner = bt;
    b->by_text = 0;
    b->retry_ev = NULL;
    reserve_batch_init_segment(&b->call, item, key, bt->a->cfg->max_pending_orders);
    if (bt->a->cfg->order_guard == CONFIG_ORDER_GUARD_LOCK)
        reserve_batch_guard(&b->call, bt->a->cfg->order_lock_ttl_ms);
    b->slot = redis_cluster_slot(b->call.state_key, strlen(b->call.state_key));
    redis_cluster_attempt_init(&b->attempt, BATCHER_MAX_REDIRECTS);
    bt->open[bt->nopen++] = b;
    return b;
}

int batcher_add(batcher *bt, void *who, int64_t item, int64_t key, int64_t buyer, int64_t order_id,
                int quantity, const char *mode)
{
    int i = 0;
    while (i < bt->nopen && bt->open[i]->call.key_id != key)
        i++;
    if (i == bt->nopen) {
        if (!batch_open(bt, item, key))
            return -1;
        i = bt->nopen - 1;
    }
    batch *b = bt->open[i];
    int at = reserve_batch_add_mode(&b->call, buyer, order_id, quantity, mode);
    b->who[at] = who;
    if (b->call.n >= bt->a->cfg->purchase_batch)
        batcher_send(bt, i);
    else
        event_active(bt->flush_ev, EV_TIMEOUT, 1); /* once a turn however often */
    return 0;
}
