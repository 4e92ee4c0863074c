/* webhooks.c: the deliverer's loop. One thread: PostgreSQL is asked in
 * short statements (webhook_store.c) between turns of libcurl's multi
 * handle, and one epoll set (webhook_poll.c) waits on the transfers'
 * sockets, PostgreSQL's (for the trigger's NOTIFY) and the stop signals at
 * once.
 *
 * Each endpoint has a cursor in PostgreSQL, the last event it is done with,
 * and a window in memory (webhook_window.h) of the events read after it: a
 * page of the feed read once for every endpoint, the events posted, the
 * cursors moved once for many deliveries. A delivery that went well costs
 * PostgreSQL no write of its own. Only a failed delivery, and an event of an
 * order that has one, becomes a row of webhook_deliveries, retried from
 * there on the back-off as before (the due query, the dead-letter). */
#include "webhooks.h"

#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "backoff.h"
#include "clock.h"
#include "log.h"
#include "outbox.h"
#include "pg_session.h"
#include "pg_value.h"
#include "version.h"
#include "webhook_endpoints.h"
#include "webhook_sign.h"
#include "webhooks_state.h"
webhooks *webhooks_create(const config *cfg, char *err, size_t errlen)
{
    webhooks *w = calloc(1, sizeof(*w));
    webhook_endpoint *list = calloc(WEBHOOK_ENDPOINTS_MAX, sizeof(*list));
    if (!w || !list) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    w->cfg = cfg;
    w->epfd = -1;
    int n =
        webhook_endpoints_parse(cfg->webhook_endpoints, list, WEBHOOK_ENDPOINTS_MAX, err, errlen);
    if (n == 0)
        snprintf(err, errlen, "webhook_endpoints is empty: nothing to deliver to");
    if (n <= 0)
        goto fail;
    w->endpoints = calloc((size_t)n, sizeof(*w->endpoints));
    w->multi = curl_multi_init();
    if (!w->endpoints || !w->multi || webhook_poll_init(w) < 0) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    w->nendpoints = (size_t)n;
    for (int i = 0; i < n; i++) {
        w->endpoints[i].conf = list[i];
        if (webhook_window_init(&w->endpoints[i].win, WINDOW_EVENTS, 0) < 0) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
    }
    curl_multi_setopt(w->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)IN_FLIGHT_PER_ENDPOINT);
    memset(list, 0, WEBHOOK_ENDPOINTS_MAX * sizeof(*list));
    free(list);
    return w;
fail:
    free(list);
    webhooks_free(w);
    return NULL;
}

/* Ends a transfer, sent or not, and keeps it for the next delivery. */
static void transfer_done(webhooks *w, transfer *t)
{
    for (int i = 0; i < w->nin_flight; i++)
        if (w->in_flight[i] == t) {
            w->in_flight[i] = w->in_flight[--w->nin_flight];
            break;
        }
    w->endpoints[t->ep].in_flight--;
    curl_multi_remove_handle(w->multi, t->easy);
    free(t->body);
    t->body = NULL;
    w->idle[w->nidle++] = t;
}

void webhooks_drop_pg(webhooks *w)
{
    while (w->nin_flight > 0)
        transfer_done(w, w->in_flight[0]);
    w->ndone = 0;
    webhook_poll_pg(w, -1);
    PQfinish(w->pg);
    w->pg = NULL;
    w->leader = 0;
    atomic_store(&w->leading, 0);
    webhook_storm_reset(w);
    w->next_connect_ms = clock_mono_ms() + SLOW_TICK_MS;
}

void webhooks_free(webhooks *w)
{
    if (!w)
        return;
    if (w->pg)
        webhooks_drop_pg(w);
    curl_multi_cleanup(w->multi);
    webhook_poll_close(w);
    while (w->nidle > 0) {
        transfer *t = w->idle[--w->nidle];
        curl_easy_cleanup(t->easy);
        free(t);
    }
    for (size_t i = 0; w->endpoints && i < w->nendpoints; i++)
        webhook_window_close(&w->endpoints[i].win);
    if (w->endpoints)
        memset(w->endpoints, 0, w->nendpoints * sizeof(*w->endpoints));
    free(w->endpoints);
    free(w);
}

/* Connects and registers the endpoints. 0 or -1 (logged, retried a tick
 * later). Every commit waits for its WAL on disk, whatever the server's
 * default: a cursor move or a row's delete lets an order's next event go,
 * and one lost in a crash of PostgreSQL would send the earlier event again
 * after it. */
static int connect_pg(webhooks *w)
{
    static const char *const setup[] = {"SET synchronous_commit = on", NULL};
    const pg_session_spec spec = {.component = COMPONENT, .setup = setup};
    w->next_connect_ms = clock_mono_ms() + SLOW_TICK_MS;
    /* A connection of its own, not a pg_session's: a session's quiet
     * reconnect would lose the leader's lock (a session lock) unseen. */
    if (!(w->pg = pg_session_connect(w->cfg, &spec)))
        return -1;
    int ok = 1;
    for (size_t i = 0; ok && i < w->nendpoints; i++)
        ok = (w->endpoints[i].id = webhook_store_endpoint(w->pg, w->endpoints[i].conf.url)) > 0;
    if (!ok) {
        log_msg(LOG_WARN, COMPONENT, "postgresql: %s", PQerrorMessage(w->pg));
        webhooks_drop_pg(w);
        return -1;
    }
    return 0;
}

/* The leader's windows start at the cursors PostgreSQL has. 0 or -1. */
static int load_cursors(webhooks *w)
{
    for (size_t i = 0; i < w->nendpoints; i++) {
        int64_t cursor = webhook_store_cursor(w->pg, w->endpoints[i].id);
        if (cursor < 0)
            return -1;
        webhook_window_reset(&w->endpoints[i].win, cursor);
    }
    return 0;
}

/* Takes the lead if no other deliverer holds it, and only then listens
 * for the trigger's wake-ups: a standby never reads them, and libpq would
 * keep every one of a sale's in memory while it waits. */
static void try_lead(webhooks *w)
{
    PGresult *res = PQexec(w->pg, "SELECT pg_try_advisory_lock(" LEADER_KEY ")");
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        PQclear(res);
        webhooks_drop_pg(w);
        return;
    }
    int lead = 0;
    if (pg_value_bool(res, 0, 0, &lead) < 0)
        log_msg(LOG_WARN, COMPONENT, "postgresql: pg_try_advisory_lock answered no boolean");
    PQclear(res);
    if (lead && (webhook_store_listen(w->pg) < 0 || load_cursors(w) < 0 ||
                 webhook_poll_pg(w, PQsocket(w->pg)) < 0)) {
        webhooks_drop_pg(w);
        return;
    }
    w->leader = lead;
    if (w->leader) {
        atomic_store(&w->leading, 1);
        w->next_read_ms = 0;
        w->due_changed = 1;
        w->rows = 0;
        w->first_movable_ms = 0;
        w->analyze_at = ANALYZE_FIRST;
        log_msg(LOG_INFO, COMPONENT, "leading: delivering to %zu endpoints", w->nendpoints);
    }
}

static size_t discard(char *data, size_t size, size_t n, void *ctx)
{
    (void)data;
    (void)ctx;
    return size * n;
}

/* An idle transfer, or a new one: an easy handle with the options every
 * delivery shares, and its header list (the fixed lines filled in). NULL
 * when out of memory. */
static transfer *transfer_get(webhooks *w)
{
    if (w->nidle > 0)
        return w->idle[--w->nidle];
    transfer *t = calloc(1, sizeof(*t));
    if (!t || !(t->easy = curl_easy_init())) {
        free(t);
        return NULL;
    }
    static const char *const fixed[] = {"Content-Type: application/json",
                                        "Expect:", "User-Agent: seckill-webhooks/" SECKILL_VERSION};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        snprintf(t->lines[i], sizeof(t->lines[i]), "%s", fixed[i]);
    for (size_t i = 0; i < TRANSFER_HEADERS; i++) {
        t->headers[i].data = t->lines[i];
        t->headers[i].next = i + 1 < TRANSFER_HEADERS ? &t->headers[i + 1] : NULL;
    }
    curl_easy_setopt(t->easy, CURLOPT_HTTPHEADER, t->headers);
    curl_easy_setopt(t->easy, CURLOPT_TIMEOUT_MS, (long)w->cfg->webhook_timeout_ms);
    curl_easy_setopt(t->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(t->easy, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(t->easy, CURLOPT_ERRORBUFFER, t->error);
    curl_easy_setopt(t->easy, CURLOPT_PRIVATE, t);
    curl_easy_setopt(t->easy, CURLOPT_PROTOCOLS_STR, "http,https");
    return t;
}

/* The request of t: its body signed now with its endpoint's secret, the
 * lines of the event written into its headers. 0 or -1. */
static int prepare(webhooks *w, transfer *t)
{
    const endpoint_state *ep = &w->endpoints[t->ep];
    char *sig = t->lines[3];
    const size_t prefix = sizeof(WEBHOOK_SIGNATURE_HEADER) + 1; /* "Seckill-Signature: " */
    t->body = outbox_event_json(&t->d.ev);
    if (!t->body || webhook_sign(ep->conf.secret, clock_wall_ms() / 1000, t->body, strlen(t->body),
                                 sig + prefix, sizeof(t->lines[3]) - prefix) < 0)
        return -1;
    memcpy(sig, WEBHOOK_SIGNATURE_HEADER ": ", prefix);
    snprintf(t->lines[4], sizeof(t->lines[4]), "Seckill-Event-Id: %" PRId64, t->d.ev.id);
    snprintf(t->lines[5], sizeof(t->lines[5]), "Seckill-Event-Type: %s", t->d.ev.type);
    t->error[0] = '\0';
    curl_easy_setopt(t->easy, CURLOPT_URL, ep->conf.url);
    curl_easy_setopt(t->easy, CURLOPT_POSTFIELDS, t->body);
    curl_easy_setopt(t->easy, CURLOPT_POSTFIELDSIZE, (long)strlen(t->body));
    return curl_multi_add_handle(w->multi, t->easy) == CURLM_OK ? 0 : -1;
}

int webhooks_start(webhooks *w, const webhook_delivery *d, int64_t seq)
{
    size_t ep = 0;
    while (ep < w->nendpoints && w->endpoints[ep].id != d->endpoint_id)
        ep++;
    transfer *t = ep < w->nendpoints && w->nin_flight < IN_FLIGHT_MAX ? transfer_get(w) : NULL;
    if (!t)
        return -1;
    t->ep = ep;
    t->d = *d;
    t->seq = seq;
    w->in_flight[w->nin_flight++] = t;
    w->endpoints[ep].in_flight++;
    if (prepare(w, t) < 0) {
        log_msg(LOG_WARN, COMPONENT, "event %" PRId64 ": cannot make its request", t->d.ev.id);
        transfer_done(w, t);
        return -1;
    }
    if (seq >= 0)
        webhook_window_mark(&w->endpoints[ep].win, (uint64_t)seq, WEBHOOK_IN_FLIGHT);
    return 0;
}
/* Starts the deliveries due, as many as each endpoint has room for, asked
 * in one statement for all of them (those in flight left out). */
static void start_due(webhooks *w)
{
    int64_t ids[WEBHOOK_ENDPOINTS_MAX], room[WEBHOOK_ENDPOINTS_MAX];
    webhook_key busy[IN_FLIGHT_MAX];
    int total = 0;
    for (size_t i = 0; i < w->nendpoints; i++) {
        ids[i] = w->endpoints[i].id;
        room[i] = IN_FLIGHT_PER_ENDPOINT - w->endpoints[i].in_flight;
        total += (int)room[i];
    }
    for (int i = 0; i < w->nin_flight; i++)
        busy[i] = (webhook_key){w->in_flight[i]->d.endpoint_id, w->in_flight[i]->d.ev.id};
    webhook_delivery *due = total > 0 ? malloc((size_t)total * sizeof(*due)) : NULL;
    if (!due)
        return;
    int n =
        webhook_store_due(w->pg, ids, room, w->nendpoints, busy, (size_t)w->nin_flight, due, total);
    for (int i = 0; i < n; i++)
        webhooks_start(w, &due[i], -1);
    free(due);
    if (n < 0)
        webhooks_drop_pg(w);
}

/* Forgets the deliveries answered 2xx, in one statement. */
static void flush_done(webhooks *w)
{
    if (w->ndone == 0)
        return;
    if (webhook_store_delivered(w->pg, w->done, (size_t)w->ndone) < 0) {
        webhooks_drop_pg(w);
        return;
    }
    w->ndone = 0;
    w->due_changed = 1;
}

/* Notes how a finished transfer went, in PostgreSQL and the counters. */
static void finish(webhooks *w, transfer *t, CURLcode rc)
{
    long status = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    endpoint_state *ep = &w->endpoints[t->ep];
    int stored = 0;
    if (rc == CURLE_OK && status >= 200 && status < 300) {
        if (t->seq >= 0) {
            webhook_window_mark(&ep->win, (uint64_t)t->seq, WEBHOOK_DONE);
            webhook_cursor_movable(w);
        } else {
            if (w->ndone == 0)
                w->first_done_ms = clock_mono_ms();
            w->done[w->ndone++] = (webhook_key){t->d.endpoint_id, t->d.ev.id};
        }
        atomic_fetch_add(&ep->delivered, 1);
    } else {
        char why[CURL_ERROR_SIZE + 32];
        if (rc == CURLE_OK)
            snprintf(why, sizeof(why), "HTTP %ld", status);
        else
            snprintf(why, sizeof(why), "%s", t->error[0] ? t->error : curl_easy_strerror(rc));
        int attempts = t->d.attempts + 1;
        int dead = attempts >= w->cfg->webhook_max_attempts;
        int64_t delay =
            backoff_after(attempts, w->cfg->webhook_retry_first_ms, w->cfg->webhook_retry_max_ms);
        if (t->seq < 0) {
            stored = webhook_store_failed(w->pg, &t->d, why, delay, dead);
            w->due_changed = 1;
        } else {
            /* Its first attempt: it becomes a row, and its order's later
             * events wait behind it as rows too. */
            t->d.attempts = attempts;
            stored = webhook_cursor_park(w, t->ep, (uint64_t)t->seq, &t->d, why, delay, dead);
        }
        atomic_fetch_add(&ep->failed, 1);
        if (dead) {
            atomic_fetch_add(&ep->dead, 1);
            log_msg(LOG_WARN, COMPONENT,
                    "endpoint %" PRId64 ": event %" PRId64
                    " to the dead-letter after %d attempts (%s)",
                    ep->id, t->d.ev.id, attempts, why);
        } else {
            log_msg(LOG_DEBUG, COMPONENT,
                    "endpoint %" PRId64 ": event %" PRId64
                    " attempt %d failed (%s), next in %" PRId64 " ms",
                    ep->id, t->d.ev.id, attempts, why, delay);
        }
    }
    transfer_done(w, t);
    if (stored < 0 && w->pg)
        webhooks_drop_pg(w);
}

/* Notes the transfers libcurl finished. */
static void collect(webhooks *w)
{
    int left;
    CURLMsg *m;
    while (w->pg && (m = curl_multi_info_read(w->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        transfer *t = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&t);
        finish(w, t, m->data.result);
    }
}

/* Refreshes the rows' statistics once enough were written. */
static void analyze_rows(webhooks *w)
{
    if (w->rows < w->analyze_at)
        return;
    if (webhook_store_analyze(w->pg) < 0)
        webhooks_drop_pg(w);
    w->analyze_at = 2 * w->rows;
}

/* Measures every endpoint's lag, in one statement. */
static void measure_lag(webhooks *w)
{
    int64_t ids[WEBHOOK_ENDPOINTS_MAX], lag_ms[WEBHOOK_ENDPOINTS_MAX];
    for (size_t i = 0; i < w->nendpoints; i++)
        ids[i] = w->endpoints[i].id;
    if (webhook_store_lags_ms(w->pg, ids, w->nendpoints, lag_ms) < 0) {
        webhooks_drop_pg(w);
        return;
    }
    for (size_t i = 0; i < w->nendpoints; i++)
        atomic_store(&w->endpoints[i].lag_ms, (long long)lag_ms[i]);
}

/* Reads PostgreSQL's wake-ups (NOTIFY), from the socket when pg_ready (a
 * statement may have read some already). Returns whether any came, or -1
 * when the session was lost (logged, dropped). A socket that failed
 * (PostgreSQL gone) is closed by libpq itself: the session goes now, before
 * libcurl can be given that socket's number while the epoll set still names
 * it PostgreSQL's. */
static int read_wakeups(webhooks *w, int pg_ready)
{
    int woken = 0;
    if (pg_ready && !PQconsumeInput(w->pg)) {
        const char *why = PQerrorMessage(w->pg);
        log_msg(LOG_WARN, COMPONENT, "postgresql: %s", *why ? why : "the session was lost");
        webhooks_drop_pg(w);
        return -1;
    }
    for (PGnotify *n; (n = PQnotifies(w->pg)); PQfreemem(n))
        woken = 1;
    return woken;
}

/* The leader's chores of a turn: wake-ups read (from the socket when
 * pg_ready; a statement may have read some already), the cursors written
 * down, new events read, the lag measured, the rows answered forgotten, the
 * rows due and the events that may go started; during a sale's storm
 * (held) none is read or started. */
static void lead(webhooks *w, int pg_ready)
{
    int64_t now = clock_mono_ms();
    int woken = read_wakeups(w, pg_ready);
    if (woken < 0)
        return;
    webhook_cursor_move(w, now);
    int held = w->pg && webhook_storm_holds(w, now);
    /* After a full page, the next is read once a window is half empty, so
     * that a page is worth its statement: behind, a NOTIFY tells nothing
     * new (during a storm every commit of the worker sends one, and a page
     * read into the few slots freed since cost PostgreSQL a statement for a
     * handful of events). Caught up, a NOTIFY reads into any room; the tick
     * does anyway. */
    if (w->pg && !held && ((woken && !w->more) || now >= w->next_read_ms)) {
        webhook_cursor_read(w, 1);
        w->next_read_ms = now + SLOW_TICK_MS;
    } else if (w->pg && !held && w->more && webhook_cursor_wants_page(w)) {
        webhook_cursor_read(w, WINDOW_EVENTS / 2);
    }
    if (w->pg)
        analyze_rows(w);
    if (w->pg && now >= w->next_lag_ms) {
        measure_lag(w);
        w->next_lag_ms = now + SLOW_TICK_MS;
    }
    if (w->pg && w->ndone > 0 && (w->ndone >= w->nin_flight || now >= w->first_done_ms + FLUSH_MS))
        flush_done(w);
    /* Asked only after the flush: a row answered but not yet forgotten
     * still holds back the next event of its order. */
    if (w->pg && !held && w->ndone == 0 && (w->due_changed || now >= w->next_due_ms)) {
        w->due_changed = 0;
        w->next_due_ms = now + TICK_MS;
        start_due(w);
    }
    if (!held)
        webhook_cursor_send(w);
}

/* How long the turn's poll may wait: a tick, less while answered
 * deliveries wait for their flush. */
static int nap_ms(const webhooks *w)
{
    if (!w->pg || !w->leader)
        return SLOW_TICK_MS;
    int64_t nap = TICK_MS, now = clock_mono_ms();
    if (w->more && !w->storm.waits && webhook_cursor_wants_page(w))
        return 0;
    if (w->ndone > 0 && w->first_done_ms + FLUSH_MS - now < nap)
        nap = w->first_done_ms + FLUSH_MS - now;
    if (w->first_movable_ms > 0 && w->next_look_ms - now < nap)
        nap = w->next_look_ms - now;
    return nap < 0 ? 0 : (int)nap;
}

/* Waits out the rest of the millisecond of the last turn (a stop request
 * cuts it short). Answers come one at a time: a turn for each costs an
 * epoll_wait and the leader's chores (it cost a poll over every connection
 * before multi_socket); a turn a millisecond at most gathers those of the
 * millisecond, and 32 requests in flight still go out at up to 32,000 a
 * second. Returns 1 when asked to stop. */
static int gather(int stop_fd, int64_t *last_turn_ms)
{
    struct pollfd stop = {.fd = stop_fd, .events = POLLIN};
    if (clock_mono_ms() == *last_turn_ms && poll(&stop, 1, 1) > 0)
        return 1;
    *last_turn_ms = clock_mono_ms();
    return 0;
}

/* At a stop: the deliveries in flight are given up to STOP_DRAIN_MS to be
 * answered (none starts), then what was answered is written down (rows
 * forgotten, cursors moved), so that the next leader sends again only what
 * was still in flight. A cursor stops before the first event not answered:
 * a stop that did not wait had one early delivery in flight hold back every
 * answer after it (e2e_webhooks saw 163 of 169 answered events sent again).
 * The stop's signal is no longer watched; wake-ups are read and ignored.
 * Returns WEBHOOK_POLL_FAILED when the wait failed meanwhile, else 0. */
static int write_down(webhooks *w, int stop_fd)
{
    int64_t until = clock_mono_ms() + STOP_DRAIN_MS;
    webhook_poll_unwatch(w, stop_fd);
    collect(w);
    int64_t left;
    int failed = 0;
    while (w->pg && w->leader && w->nin_flight > 0 && (left = until - clock_mono_ms()) > 0) {
        int ready = webhook_poll_wait(w, (int)left);
        if ((failed = ready & WEBHOOK_POLL_FAILED))
            break;
        if (read_wakeups(w, ready & WEBHOOK_POLL_PG) < 0)
            break;
        collect(w);
    }
    if (w->pg && w->leader)
        flush_done(w);
    if (w->pg && w->leader && w->first_movable_ms != 0)
        webhook_cursor_write(w);
    return failed;
}

int webhooks_run(webhooks *w, int stop_fd)
{
    int64_t last_turn_ms = 0;
    int ready = 0;
    if (webhook_poll_stop_fd(w, stop_fd) < 0)
        return 1;
    while (!(ready & (WEBHOOK_POLL_STOP | WEBHOOK_POLL_FAILED)) &&
           !gather(stop_fd, &last_turn_ms)) {
        if (!w->pg && clock_mono_ms() >= w->next_connect_ms)
            connect_pg(w);
        if (w->pg && !w->leader)
            try_lead(w);
        collect(w);
        if (w->pg && w->leader)
            lead(w, ready & WEBHOOK_POLL_PG);
        ready = webhook_poll_wait(w, nap_ms(w));
    }
    ready |= write_down(w, stop_fd);
    log_msg(LOG_INFO, COMPONENT, "stopping: %d deliveries in flight stay owed", w->nin_flight);
    return ready & WEBHOOK_POLL_FAILED ? 1 : 0;
}
