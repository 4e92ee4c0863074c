/* e2e_webhooks.c: seckill-webhooks end to end, with the sample receiver
 * (loadtest/webhook_receiver.py) as the shop: every event reaches every
 * endpoint, signed, in order per order, through a receiver that fails, then
 * hangs past the timeout, then recovers; one that never recovers fills the
 * dead-letter, which the admin lists and replays; the worker and the
 * deliverer killed -9 during a sale lose no event; and the receiver's check
 * refuses a forged or stale signature; a sale's backlog with pays, cancels
 * and expiries reaches two endpoints once per change, quickly, with no
 * delivery written as a row; a failing order's later events wait behind it
 * while other orders' flow; the cursor survives a kill -9; a draw's
 * entry.waitlisted reaches the endpoint before the order.won of its
 * entrant served later from the waitlist, while the endpoint fails, and
 * shows no order id in the dead-letter; deliveries wait out a storm of
 * events (webhook_storm_rate), webhook_storm_wait_ms at most. */
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "clock.h"
#include "draw_sale.h"
#include "harness.h"
#include "hook_post.h"
#include "outbox.h"
#include "sale.h"
#include "webhook_sign.h"

#define TOKEN "e2e-webhooks-admin-token"
#define SECRET_A "whsec-e2e-endpoint-a-0123456789"
#define SECRET_B "whsec-e2e-endpoint-b-0123456789"
#define RECEIVER SECKILL_SOURCE_DIR "/loadtest/webhook_receiver.py"

static harness_system sys;
static pid_t receivers[2], deliverer, standby;
/* A worker restarted after a kill -9 waits out its old heartbeat, three
 * sweep periods (15 s by default); expiries are looked for every 250 ms. */
static char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=e2e-webhooks",
                      "SECKILL_WORKER_SWEEP_MS=1000", "SECKILL_WORKER_EXPIRY_MS=250", NULL};

static void start_system(void)
{
    harness_system_start(&sys, env, "e2e-webhooks");
}

static void kill_leftovers(void)
{
    harness_kill_leftover(&deliverer);
    harness_kill_leftover(&standby);
    harness_kill_leftover(&receivers[0]);
    harness_kill_leftover(&receivers[1]);
    harness_system_kill(&sys);
}

TestSuite(webhooks, .init = start_system, .fini = kill_leftovers, .timeout = 300);

/* A receiver on a free port, recording into a fresh file named name. */
static pid_t start_receiver(int *port, const char *secret, const char *name, const char *mode)
{
    *port = harness_free_port();
    char port_s[12], record[512];
    snprintf(port_s, sizeof(port_s), "%d", *port);
    snprintf(record, sizeof(record), "%s", harness_path(name));
    remove(record);
    char *argv[] = {"env",        "python3",      RECEIVER,   "--port", port_s,
                    "--secret",   (char *)secret, "--record", record,   "--mode",
                    (char *)mode, "--hang-s",     "3",        NULL};
    char log[600];
    snprintf(log, sizeof(log), "%s.log", name);
    pid_t pid = harness_spawn("/usr/bin/env", argv, NULL, harness_path(log));
    cr_assert_eq(harness_wait_http(*port, "/health", 10000), 0, "receiver %s not up", name);
    return pid;
}

/* The deliverer for the endpoints (a "url secret,..." list), with extra
 * settings (more: up to two more NAME=value, NULL-terminated, or NULL); up
 * once it registered them. Deliveries never wait out a storm of events
 * (webhook_storm_rate 0) unless more says so: the tests of a sale's faults
 * deliver during the sale. */
static pid_t start_deliverer_with(const char *endpoints, const char *attempts, const char *first_ms,
                                  int metrics_port, const char *const *more)
{
    static char e[7][1200];
    snprintf(e[0], sizeof(e[0]), "SECKILL_WEBHOOK_ENDPOINTS=%s", endpoints);
    snprintf(e[1], sizeof(e[1]), "SECKILL_WEBHOOK_MAX_ATTEMPTS=%s", attempts);
    snprintf(e[2], sizeof(e[2]), "SECKILL_WEBHOOK_RETRY_FIRST_MS=%s", first_ms);
    snprintf(e[3], sizeof(e[3]), "SECKILL_WEBHOOK_TIMEOUT_MS=1000");
    snprintf(e[4], sizeof(e[4]), "SECKILL_WEBHOOK_METRICS_PORT=%d", metrics_port);
    snprintf(e[5], sizeof(e[5]), "SECKILL_LOG_LEVEL=debug");
    snprintf(e[6], sizeof(e[6]), "SECKILL_WEBHOOK_STORM_RATE=0");
    char *extra[10] = {e[0], e[1], e[2], e[3], e[4], e[5], e[6]};
    for (int i = 0; more && more[i]; i++) {
        cr_assert_lt(i, 2, "at most two more settings");
        extra[7 + i] = (char *)more[i];
    }
    char *argv[] = {"seckill-webhooks", NULL};
    pid_t pid = harness_spawn(SECKILL_WEBHOOKS_BIN, argv, extra, harness_path("e2e-webhooks.log"));
    PGconn *pg = harness_pg();
    int64_t want = 1;
    for (const char *c = endpoints; *c; c++)
        want += *c == ',';
    for (int waited = 0; waited < 10000; waited += 50) {
        if (harness_pg_int(pg, "SELECT count(*) FROM webhook_endpoints") >= want)
            break;
        harness_sleep_ms(50);
    }
    cr_assert_eq(harness_pg_int(pg, "SELECT count(*) FROM webhook_endpoints"), want,
                 "the deliverer registered its endpoints");
    PQfinish(pg);
    return pid;
}

static pid_t start_deliverer(const char *endpoints, const char *attempts, const char *first_ms,
                             int metrics_port)
{
    return start_deliverer_with(endpoints, attempts, first_ms, metrics_port, NULL);
}

/* One request the receiver verified. */
typedef struct record {
    int64_t event_id, order_id, item_id, user_id, at_ms;
    int answered, attempt;
    char type[24], sha[65];
} record;

/* An id of the event's subject as the receiver recorded it: a JSON
 * integer, or a string of digits (0 when null). */
static int64_t id_of(json_t *j, const char *key)
{
    json_t *v = json_object_get(j, key);
    return json_is_string(v) ? strtoll(json_string_value(v), NULL, 10) : json_integer_value(v);
}

/* The receiver's records in arrival order; *n of them. */
static record *read_records(const char *name, size_t *n)
{
    FILE *f = fopen(harness_path(name), "r");
    size_t cap = 256;
    record *r = malloc(cap * sizeof(*r));
    *n = 0;
    char line[2048];
    while (f && fgets(line, sizeof(line), f)) {
        json_t *j = json_loads(line, 0, NULL);
        if (!j)
            continue; /* a line still being written */
        if (*n == cap)
            r = realloc(r, (cap *= 2) * sizeof(*r));
        record *x = &r[(*n)++];
        x->event_id = json_integer_value(json_object_get(j, "event_id"));
        /* null for an entry's event: assert_books gives it its key */
        x->order_id = id_of(j, "order_id");
        x->item_id = id_of(j, "item_id");
        x->user_id = id_of(j, "user_id");
        x->at_ms = json_integer_value(json_object_get(j, "at_ms"));
        x->answered = (int)json_integer_value(json_object_get(j, "answered"));
        x->attempt = (int)json_integer_value(json_object_get(j, "attempt"));
        snprintf(x->type, sizeof(x->type), "%s", json_string_value(json_object_get(j, "type")));
        snprintf(x->sha, sizeof(x->sha), "%s",
                 json_string_value(json_object_get(j, "body_sha256")));
        json_decref(j);
    }
    if (f)
        fclose(f);
    return r;
}

/* How many distinct events the receiver answered 200 to. */
static size_t delivered(const record *r, size_t n)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        if (r[i].answered != 200)
            continue;
        int first = 1;
        for (size_t k = 0; k < i && first; k++)
            first = !(r[k].answered == 200 && r[k].event_id == r[i].event_id);
        count += (size_t)first;
    }
    return count;
}

/* Waits until the receiver had every event of the feed; returns its records. */
static record *wait_all_delivered(const char *name, size_t *n, int timeout_ms)
{
    PGconn *pg = harness_pg();
    int64_t want = harness_pg_int(pg, "SELECT count(*) FROM order_events");
    PQfinish(pg);
    record *r = NULL;
    for (int waited = 0;; waited += 250) {
        free(r);
        r = read_records(name, n);
        if ((int64_t)delivered(r, *n) == want)
            return r;
        cr_assert_lt(waited, timeout_ms, "%s: %zu of %" PRId64 " events delivered", name,
                     delivered(r, *n), want);
        harness_sleep_ms(250);
    }
}

/* Every event of the feed reached the receiver, each event id always with
 * the same body, and per order the ids it saw never went back. An order's
 * event shows its order; an entry's (no order yet, order_id null) shows
 * the item and the buyer of the entry whose reserved order id (sql/017)
 * keys it, and takes that key into its records for the order rule. */
static void assert_books(record *r, size_t n)
{
    PGconn *pg = harness_pg();
    PGresult *res = PQexec(pg, "SELECT e.id, e.order_id, e.type, e.item_id, d.item_id, d.user_id"
                               " FROM order_events e LEFT JOIN draw_entries d"
                               "   ON e.type LIKE 'entry.%' AND d.waitlist_order_id = e.order_id"
                               " ORDER BY e.id");
    cr_assert_eq(PQresultStatus(res), PGRES_TUPLES_OK, "%s", PQerrorMessage(pg));
    for (int row = 0; row < PQntuples(res); row++) {
        int64_t id = strtoll(PQgetvalue(res, row, 0), NULL, 10);
        int64_t key = strtoll(PQgetvalue(res, row, 1), NULL, 10);
        int entry = strncmp(PQgetvalue(res, row, 2), "entry.", 6) == 0;
        cr_assert(!entry || !PQgetisnull(res, row, 4),
                  "entry event %" PRId64 ": its key is an entry's reserved order id", id);
        int found = 0;
        for (size_t i = 0; i < n; i++)
            if (r[i].event_id == id) {
                cr_assert_str_eq(r[i].type, PQgetvalue(res, row, 2));
                cr_assert_eq(r[i].item_id, strtoll(PQgetvalue(res, row, 3), NULL, 10),
                             "event %" PRId64 ": its item", id);
                if (entry) {
                    cr_assert_eq(r[i].order_id, 0, "entry event %" PRId64 ": no order id", id);
                    cr_assert_eq(r[i].item_id, strtoll(PQgetvalue(res, row, 4), NULL, 10),
                                 "entry event %" PRId64 ": the entry's item", id);
                    cr_assert_eq(r[i].user_id, strtoll(PQgetvalue(res, row, 5), NULL, 10),
                                 "entry event %" PRId64 ": the entry's buyer", id);
                    r[i].order_id = key;
                }
                cr_assert_eq(r[i].order_id, key, "event %" PRId64 ": its order", id);
                found |= r[i].answered == 200;
            }
        cr_assert(found, "event %" PRId64 " delivered", id);
    }
    PQclear(res);
    PQfinish(pg);
    for (size_t i = 0; i < n; i++)
        for (size_t k = i + 1; k < n; k++) {
            if (r[k].event_id == r[i].event_id)
                cr_assert_str_eq(r[k].sha, r[i].sha, "event %" PRId64 " came again the same",
                                 r[i].event_id);
            if (r[k].order_id == r[i].order_id)
                cr_assert_geq(r[k].event_id, r[i].event_id,
                              "order %" PRId64 ": event %" PRId64 " after %" PRId64, r[i].order_id,
                              r[k].event_id, r[i].event_id);
        }
}

static int64_t create_item(int64_t stock)
{
    char body[160], resp[4096];
    snprintf(body, sizeof(body),
             "{\"name\":\"webhooks\",\"stock\":%" PRId64 ",\"payment_timeout_s\":120}", stock);
    int status = harness_http(sys.port, "POST", "/api/v1/items", TOKEN, body, resp, sizeof(resp));
    cr_assert_eq(status, 201, "create item: %d %s", status, resp);
    int64_t id = 0;
    cr_assert_eq(sscanf(resp, "{\"id\":%" SCNd64, &id), 1, "create item: %s", resp);
    return id;
}

/* Sells item to buyers first.., pays every other order and cancels a
 * quarter: three kinds of events per order, some orders with three. */
static void sell_and_settle(int64_t item, size_t buyers, size_t first)
{
    sale s;
    sale_init(&s, sys.port, item, buyers, 20, first, buyers);
    cr_assert_eq(sale_run(&s), 0);
    cr_assert_eq(s.naccepted, buyers);
    for (size_t i = 0; i < s.naccepted; i++) {
        char path[96], resp[2048];
        snprintf(path, sizeof(path), "/api/v1/orders/%" PRId64 "/%s", s.accepted[i],
                 i % 2 == 0 ? "pay" : "cancel");
        if (i % 4 == 3)
            continue;
        int status = harness_http(sys.port, "POST", path, TOKEN, NULL, resp, sizeof(resp));
        cr_assert_eq(status, 200, "%s: %d %s", path, status, resp);
    }
    sale_free(&s);
    sale_wait_drained(30000);
}

static void set_mode(int port, const char *mode)
{
    char path[64], resp[256];
    snprintf(path, sizeof(path), "/control?mode=%s", mode);
    cr_assert_eq(harness_http(port, "GET", path, NULL, NULL, resp, sizeof(resp)), 200);
}

/* The value of series in a metrics text into *value (strtod: a gauge's
 * fraction too); 0 when the text has no such series or no number there. */
static int metric_value(const char *text, const char *series, double *value)
{
    char needle[256], *end;
    snprintf(needle, sizeof(needle), "\n%s ", series);
    const char *at = strstr(text, needle);
    if (!at)
        return 0;
    at += strlen(needle);
    *value = strtod(at, &end);
    return end != at;
}

/* How many of the receiver's records answered status. */
static size_t answered(const record *r, size_t n, int status)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        count += r[i].answered == status;
    return count;
}

/* The latest first delivery (answered 200) of an event in r: when the
 * receiver had them all. */
static int64_t last_first_delivery_ms(const record *r, size_t n)
{
    int64_t last = 0;
    for (size_t i = 0; i < n; i++) {
        int first = r[i].answered == 200;
        for (size_t k = 0; k < i && first; k++)
            first = !(r[k].answered == 200 && r[k].event_id == r[i].event_id);
        if (first && r[i].at_ms > last)
            last = r[i].at_ms;
    }
    return last;
}

/* While b hangs past the deliverer's timeout, it has timed out at least
 * once, and a, which answers, has every event of the feed, its lag reads
 * 0 (nothing owed) beside b's of a second or more. Polls until all of it
 * holds, up to HANG_MAX_MS; returns when a's receiver had its last event. */
static int64_t wait_a_caught_up_while_b_hangs(int mport, int64_t events)
{
    enum { HANG_MAX_MS = 15000 };
    char text[8192] = "";
    double lag_a = -1, lag_b = -1, failed_b = -1;
    size_t na = 0, nb = 0, had = 0, hung = 0, failed_500 = 0;
    int64_t last_a = 0;
    for (int64_t until = clock_mono_ms() + HANG_MAX_MS;; harness_sleep_ms(100)) {
        /* The metrics first: b's receiver notes a 500 before it answers,
         * so failures beyond the 500s noted after are timeouts. */
        int got = harness_http(mport, "GET", "/metrics", NULL, NULL, text, sizeof(text)) == 200;
        int series = got &&
                     metric_value(text, "seckill_webhook_lag_seconds{endpoint=\"1\"}", &lag_a) &&
                     metric_value(text, "seckill_webhook_lag_seconds{endpoint=\"2\"}", &lag_b) &&
                     metric_value(text, "seckill_webhook_failed_total{endpoint=\"2\"}", &failed_b);
        record *a = read_records("wh-a.jsonl", &na), *b = read_records("wh-b.jsonl", &nb);
        hung = answered(b, nb, 0);
        failed_500 = answered(b, nb, 500);
        had = delivered(a, na);
        last_a = last_first_delivery_ms(a, na);
        free(a);
        free(b);
        if (series && (int64_t)had == events && lag_a == 0 && lag_b >= 1 && hung > 0 &&
            failed_b > (double)failed_500)
            return last_a;
        cr_assert_lt(clock_mono_ms(), until,
                     "while b hangs: a had %zu of %" PRId64 " events, lags a %.3f b %.3f s, b hung"
                     " %zu times, failed %.0f (%zu of them 500s); metrics: %s",
                     had, events, lag_a, lag_b, hung, failed_b, failed_500, text);
    }
}

/* Endpoint b fails (500), then hangs past the deliverer's timeout, then
 * recovers: b gets every event in order, its retries on schedule; and a,
 * which answers throughout, is not slowed by b: it has every event soon
 * after the last is committed, while b still hangs, and its lag reads 0. */
Test(webhooks, a_receiver_that_fails_then_hangs_then_recovers_gets_every_event_in_order)
{
    /* A's bound on its last event: this machine took 0.2-0.4 s (load 6);
     * with an order's next event held to the 50 ms look one after the other
     * while b had transfers in flight, 1.6-6.5 s. */
    enum { FIRST_MS = 200, A_WITHIN_MS = 1500 };
    int pa, pb, mport = harness_free_port();
    receivers[0] = start_receiver(&pa, SECRET_A, "wh-a.jsonl", "ok");
    receivers[1] = start_receiver(&pb, SECRET_B, "wh-b.jsonl", "fail");
    char endpoints[512];
    snprintf(endpoints, sizeof(endpoints),
             "http://127.0.0.1:%d/hook " SECRET_A ",http://127.0.0.1:%d/hook " SECRET_B, pa, pb);
    deliverer = start_deliverer(endpoints, "50", "200" /* FIRST_MS */, mport);
    int64_t item = create_item(120);
    sell_and_settle(item, 120, 1);
    PGconn *pg = harness_pg();
    int64_t events = harness_pg_int(pg, "SELECT count(*) FROM order_events");
    int64_t last_event_ms = harness_pg_int(
        pg, "SELECT (extract(epoch FROM max(created_at)) * 1000)::bigint FROM order_events");
    /* b fails until some event of it was tried a third time (two retries
     * to time), then hangs. */
    for (int64_t until = clock_mono_ms() + 15000;; harness_sleep_ms(100)) {
        size_t nb;
        record *b = read_records("wh-b.jsonl", &nb);
        int third = 0;
        for (size_t i = 0; i < nb && !third; i++)
            third = b[i].attempt >= 3 && b[i].answered == 500;
        free(b);
        if (third)
            break;
        cr_assert_lt(clock_mono_ms(), until, "no event of b tried a third time");
    }
    set_mode(pb, "hang"); /* past the deliverer's 1 s timeout */
    int64_t last_a = wait_a_caught_up_while_b_hangs(mport, events);
    cr_assert_lt(last_a - last_event_ms, A_WITHIN_MS,
                 "a had its last event %" PRId64 " ms after the last commit",
                 last_a - last_event_ms);
    set_mode(pb, "ok");

    size_t na, nb;
    record *a = wait_all_delivered("wh-a.jsonl", &na, 60000);
    record *b = wait_all_delivered("wh-b.jsonl", &nb, 90000);
    assert_books(a, na);
    assert_books(b, nb);
    /* The failures were retried on schedule: the k-th retry of an event
     * waited at least FIRST_MS * 2^(k-1) (a little early for the clocks'
     * grain), never sooner. */
    size_t retried = 0;
    for (size_t i = 0; i < nb; i++)
        for (size_t k = i + 1; k < nb; k++)
            if (b[k].event_id == b[i].event_id && b[i].answered == 500 && b[k].answered == 500 &&
                b[k].attempt == b[i].attempt + 1) {
                int64_t want = (int64_t)FIRST_MS << (b[i].attempt - 1);
                cr_assert_geq(b[k].at_ms - b[i].at_ms, want - 50,
                              "event %" PRId64 ": retry %d after %" PRId64 " ms, not %" PRId64,
                              b[i].event_id, b[i].attempt, b[k].at_ms - b[i].at_ms, want);
                retried++;
            }
    cr_assert_gt(retried, 0, "some events were retried while the receiver failed");

    char resp[8192];
    cr_assert_eq(harness_http(mport, "GET", "/metrics", NULL, NULL, resp, sizeof(resp)), 200);
    cr_assert_eq(harness_metric(resp, "seckill_webhook_delivered_total{endpoint=\"2\"}"), events,
                 "%s", resp);
    cr_assert_gt(harness_metric(resp, "seckill_webhook_failed_total{endpoint=\"2\"}"), 0);
    cr_assert_eq(harness_metric(resp, "seckill_webhook_failed_total{endpoint=\"1\"}"), 0);
    cr_assert_eq(harness_pg_int(pg, "SELECT count(*) FROM webhook_deliveries"), 0,
                 "nothing owed any more");
    PQfinish(pg);
    free(a);
    free(b);
    harness_stop_clean(&deliverer, "seckill-webhooks");
    harness_system_stop(&sys);
}

/* The dead-letter's rows (GET /api/v1/webhooks/dead, every page). */
static size_t dead_rows(void)
{
    size_t rows = 0;
    int64_t after = 0;
    for (;;) {
        char path[96], resp[65536];
        snprintf(path, sizeof(path), "/api/v1/webhooks/dead?limit=50&after=%" PRId64, after);
        cr_assert_eq(harness_http(sys.port, "GET", path, TOKEN, NULL, resp, sizeof(resp)), 200,
                     "%s", resp);
        json_t *j = json_loads(resp, 0, NULL);
        cr_assert_not_null(j, "%s", resp);
        rows += json_array_size(json_object_get(j, "dead"));
        json_t *next = json_object_get(j, "next_after");
        after = json_is_integer(next) ? json_integer_value(next) : 0;
        json_decref(j);
        if (!after)
            return rows;
    }
}

/* The one receiver of a test (file: its record, mode: its first answers),
 * as webhook_endpoints lists it into endpoints; returns its port. */
static int one_endpoint(const char *file, const char *mode, char *endpoints, size_t cap)
{
    int port;
    receivers[0] = start_receiver(&port, SECRET_A, file, mode);
    snprintf(endpoints, cap, "http://127.0.0.1:%d/hook " SECRET_A, port);
    return port;
}

Test(webhooks, a_receiver_that_never_recovers_fills_the_dead_letter_and_its_replay_delivers_it)
{
    char endpoints[256];
    int pa = one_endpoint("wh-dead.jsonl", "fail", endpoints, sizeof(endpoints));
    deliverer = start_deliverer(endpoints, "3", "100", 0);
    int64_t item = create_item(24);
    sell_and_settle(item, 24, 1);
    PGconn *pg = harness_pg();
    int64_t events = harness_pg_int(pg, "SELECT count(*) FROM order_events");
    for (int waited = 0; dead_rows() < (size_t)events; waited += 250) {
        cr_assert_lt(waited, 30000, "the dead-letter holds %zu of %" PRId64, dead_rows(), events);
        harness_sleep_ms(250);
    }
    cr_assert_eq(harness_pg_int(pg, "SELECT max(attempts) FROM webhook_deliveries"), 3,
                 "three attempts, then the dead-letter");
    char resp[4096];
    cr_assert_eq(
        harness_http(sys.port, "GET", "/api/v1/webhooks/dead", NULL, NULL, resp, sizeof(resp)), 401,
        "the admin's");
    cr_assert_eq(harness_http(sys.port, "GET", "/api/v1/webhooks/dead?endpoint_id=x", TOKEN, NULL,
                              resp, sizeof(resp)),
                 400);

    set_mode(pa, "ok");
    cr_assert_eq(harness_http(sys.port, "POST", "/api/v1/webhooks/dead/replay", TOKEN, NULL, resp,
                              sizeof(resp)),
                 200, "%s", resp);
    char want[64];
    snprintf(want, sizeof(want), "{\"replayed\":%" PRId64 "}", events);
    cr_assert_str_eq(resp, want);
    size_t n;
    record *r = wait_all_delivered("wh-dead.jsonl", &n, 30000);
    assert_books(r, n);
    cr_assert_eq(dead_rows(), 0);
    free(r);
    PQfinish(pg);
    harness_stop_clean(&deliverer, "seckill-webhooks");
    harness_system_stop(&sys);
}

Test(webhooks, a_deliverer_with_webhook_priority_idle_runs_under_sched_idle_and_delivers_a_sale)
{
    char endpoints[256];
    one_endpoint("wh-idle.jsonl", "ok", endpoints, sizeof(endpoints));
    const char *const idle[] = {"SECKILL_WEBHOOK_PRIORITY=idle", NULL};
    deliverer = start_deliverer_with(endpoints, "20", "100", 0, idle);
    cr_assert_eq(sched_getscheduler(deliverer), SCHED_IDLE, "webhook_priority = idle");
    sell_and_settle(create_item(24), 24, 1);
    size_t n;
    record *r = wait_all_delivered("wh-idle.jsonl", &n, 30000);
    assert_books(r, n);
    free(r);
    harness_stop_clean(&deliverer, "seckill-webhooks");
    harness_system_stop(&sys);
}

Test(webhooks, the_worker_and_the_deliverer_killed_during_a_sale_lose_no_event)
{
    char endpoints[256];
    one_endpoint("wh-kill.jsonl", "ok", endpoints, sizeof(endpoints));
    deliverer = start_deliverer(endpoints, "50", "100", 0);
    int64_t item = create_item(1500);
    sale s;
    sale_init(&s, sys.port, item, 1500, 50, 1, 1500);
    sale_start(&s);
    srand((unsigned)time(NULL));
    for (int round = 0; round < 3; round++) {
        harness_sleep_ms(100 + rand() % 400);
        harness_stop(deliverer, SIGKILL);
        harness_stop(sys.worker, SIGKILL);
        sys.worker = harness_start_worker(env, "e2e-webhooks-worker.log");
        deliverer = start_deliverer(endpoints, "50", "100", 0);
    }
    sale_join(&s);
    sale_wait_drained(30000);
    for (size_t i = 0; i < s.naccepted; i += 3) {
        char path[96], resp[2048];
        snprintf(path, sizeof(path), "/api/v1/orders/%" PRId64 "/pay", s.accepted[i]);
        cr_assert_eq(harness_http(sys.port, "POST", path, TOKEN, NULL, resp, sizeof(resp)), 200,
                     "%s", resp);
        if (i == 300) {
            harness_stop(deliverer, SIGKILL);
            deliverer = start_deliverer(endpoints, "50", "100", 0);
        }
    }
    PGconn *pg = harness_pg();
    cr_assert_eq(harness_pg_int(pg, "SELECT count(*) FROM order_events WHERE type = "
                                    "'order.persisted'"),
                 harness_pg_int(pg, "SELECT count(*) FROM orders"), "every order has its event");
    size_t n;
    record *r = wait_all_delivered("wh-kill.jsonl", &n, 60000);
    assert_books(r, n);
    free(r);
    PQfinish(pg);
    sale_free(&s);
    harness_stop_clean(&deliverer, "seckill-webhooks");
    harness_system_stop(&sys);
}

/* Sells a new item's units to buyers 1..units over connections, every one
 * accepted and persisted. The caller sale_free()s s. */
static void sell_all(sale *s, size_t units, size_t connections)
{
    int64_t item = create_item((int64_t)units);
    sale_init(s, sys.port, item, units, connections, 1, units);
    cr_assert_eq(sale_run(s), 0);
    cr_assert_eq(s->naccepted, units);
    sale_wait_drained(30000);
}

/* A sale of UNITS with pays, cancels and expiries (a third each), while the
 * deliverer is down: every order's events, as the orders table says they
 * must be. */
static void sell_pay_cancel_expire(size_t units)
{
    sale s;
    sell_all(&s, units, 50);
    for (size_t i = 0; i < s.naccepted; i++) {
        char path[96], resp[2048];
        if (i % 3 == 2)
            continue;
        snprintf(path, sizeof(path), "/api/v1/orders/%" PRId64 "/%s", s.accepted[i],
                 i % 3 == 0 ? "pay" : "cancel");
        int status = harness_http(sys.port, "POST", path, TOKEN, NULL, resp, sizeof(resp));
        cr_assert_eq(status, 200, "%s: %d %s", path, status, resp);
    }
    sale_free(&s);
    /* The last third's deadline passes: the worker's sweep expires them
     * and gives their units back. */
    PGconn *pg = harness_pg(); /* the orders of this test alone */
    cr_assert_eq(
        harness_pg_int(pg, "WITH due AS (UPDATE orders SET pay_by = now()"
                           " WHERE status = 'persisted' RETURNING 1) SELECT count(*) FROM due"),
        (int64_t)units / 3);
    const char *settled = "SELECT count(*) FROM orders WHERE status = 'persisted'"
                          " OR (status IN ('cancelled', 'expired') AND returned_at IS NULL)";
    for (int waited = 0; harness_pg_int(pg, settled) > 0 && waited < 20000; waited += 100)
        harness_sleep_ms(100);
    cr_assert_eq(harness_pg_int(pg, settled), 0, "every order paid or back on sale");
    /* Each order's events are its changes, each once, in order. */
    cr_assert_eq(
        harness_pg_int(pg,
                       "SELECT count(*) FROM orders o WHERE (SELECT array_agg(e.type ORDER BY e.id)"
                       " FROM order_events e WHERE e.order_id = o.id) IS DISTINCT FROM"
                       " array_remove(ARRAY['order.persisted', CASE WHEN o.status <> 'persisted'"
                       " THEN 'order.' || o.status END, CASE WHEN o.returned_at IS NOT NULL"
                       " THEN 'order.returned' END], NULL)"),
        0, "one event per change of every order");
    PQfinish(pg);
}

/* A sale of 1000 units with pays, cancels and expiries taken in while the
 * deliverer was down: each of two receivers gets exactly one event per
 * change (every event of the feed, a repeat only as the same id and body,
 * in order per order), and cheaply: the events are read from the feed in
 * pages and each endpoint's cursor moves past them, no delivery that went
 * well is written as a row of webhook_deliveries (a row each cost
 * PostgreSQL about 150 us an event in make bench; the time here is only a
 * loose bound, the rows are what this checks). */
/* Rows of webhook_deliveries ever inserted, once the deliverer's session
 * ended (a session's counts reach pg_stat when it ends). */
static int64_t rows_written(PGconn *pg)
{
    const char *sessions = "SELECT count(*) FROM pg_stat_activity"
                           " WHERE query LIKE '%webhook\\_%' AND pid <> pg_backend_pid()";
    for (int waited = 0; harness_pg_int(pg, sessions) > 0 && waited < 5000; waited += 50)
        harness_sleep_ms(50);
    PQclear(PQexec(pg, "SELECT pg_stat_clear_snapshot()"));
    return harness_pg_int(pg, "SELECT n_tup_ins FROM pg_stat_user_tables"
                              " WHERE relname = 'webhook_deliveries'");
}

Test(webhooks, a_sales_backlog_reaches_two_endpoints_once_per_change_quickly_and_in_order)
{
    enum { UNITS = 1000, WITHIN_MS = 30000 };
    int pa, pb;
    receivers[0] = start_receiver(&pa, SECRET_A, "wh-backlog-a.jsonl", "ok");
    receivers[1] = start_receiver(&pb, SECRET_B, "wh-backlog-b.jsonl", "ok");
    char endpoints[512];
    snprintf(endpoints, sizeof(endpoints),
             "http://127.0.0.1:%d/hook " SECRET_A ",http://127.0.0.1:%d/hook " SECRET_B, pa, pb);
    deliverer = start_deliverer(endpoints, "50", "300", 0);
    harness_stop_clean(&deliverer, "seckill-webhooks");
    sell_pay_cancel_expire(UNITS);

    /* Rows ever written, by earlier tests' deliverers too (a backend's
     * counts reach pg_stat when its session ends). */
    PGconn *pg = harness_pg();
    int64_t rows_before = rows_written(pg);
    int64_t t0 = clock_mono_ms();
    deliverer = start_deliverer(endpoints, "50", "300", 0);
    size_t na, nb;
    record *a = wait_all_delivered("wh-backlog-a.jsonl", &na, 60000);
    record *b = wait_all_delivered("wh-backlog-b.jsonl", &nb, 60000);
    int64_t took = clock_mono_ms() - t0;
    cr_assert_lt(took, WITHIN_MS, "%zu deliveries took %" PRId64 " ms", na + nb, took);
    assert_books(a, na);
    assert_books(b, nb);
    cr_assert_eq(harness_pg_int(pg, "SELECT count(*) FROM order_events"),
                 UNITS + 2 * (UNITS / 3) * 2 + (UNITS - 2 * (UNITS / 3)),
                 "1000 persisted, 334 paid, 333 cancelled and 333 expired, 666 returned");
    cr_assert_eq(harness_pg_int(pg, "SELECT count(*) FROM webhook_deliveries"), 0);
    harness_stop_clean(&deliverer, "seckill-webhooks");
    cr_assert_eq(rows_written(pg), rows_before, "no delivery became a row");
    cr_assert_eq(harness_pg_int(pg, "SELECT min(after_event) FROM webhook_endpoints"),
                 harness_pg_int(pg, "SELECT max(id) FROM order_events"),
                 "each endpoint's cursor is at the last event");
    PQfinish(pg);
    free(a);
    free(b);
    harness_system_stop(&sys);
}

/* The receiver answers 500 to the events of user's orders ("": to none). */
static void set_fail_user(int port, const char *user)
{
    char path[64], resp[256];
    snprintf(path, sizeof(path), "/control?fail_user=%s", user);
    cr_assert_eq(harness_http(port, "GET", path, NULL, NULL, resp, sizeof(resp)), 200);
}

/* Waits until sql (an integer) reads want, up to two seconds: a cursor or a
 * row's delete is written a few milliseconds after the answer. */
static void wait_pg_int(PGconn *pg, const char *sql, int64_t want, const char *what)
{
    for (int waited = 0; harness_pg_int(pg, sql) != want && waited < 2000; waited += 20)
        harness_sleep_ms(20);
    cr_assert_eq(harness_pg_int(pg, sql), want, "%s", what);
}

/* Each endpoint's cursor at the last event, and no row left. */
static void assert_caught_up(PGconn *pg)
{
    wait_pg_int(pg, "SELECT min(after_event) FROM webhook_endpoints",
                harness_pg_int(pg, "SELECT max(id) FROM order_events"),
                "every endpoint's cursor is at the last event");
    wait_pg_int(pg, "SELECT count(*) FROM webhook_deliveries", 0, "no row left");
}

/* One buyer's orders fail at the endpoint: the first event of its order is
 * retried as a row, and the order's next event waits behind it as a row,
 * never tried, while every other order's events are delivered and the
 * endpoint's cursor moves past them all; once the endpoint takes that
 * buyer's events again, they arrive in their order. */
Test(webhooks, a_failing_orders_later_events_wait_behind_it_while_other_orders_flow)
{
    enum { BUYERS = 40 };
    char endpoints[256];
    int pa = one_endpoint("wh-order.jsonl", "ok", endpoints, sizeof(endpoints));
    set_fail_user(pa, "7");
    deliverer = start_deliverer(endpoints, "50", "200", 0);
    sale s;
    sell_all(&s, BUYERS, 10);
    for (size_t i = 0; i < s.naccepted; i++) {
        char path[96], resp[2048];
        snprintf(path, sizeof(path), "/api/v1/orders/%" PRId64 "/pay", s.accepted[i]);
        cr_assert_eq(harness_http(sys.port, "POST", path, TOKEN, NULL, resp, sizeof(resp)), 200,
                     "%s", resp);
    }
    sale_free(&s);
    PGconn *pg = harness_pg();
    int64_t failing = harness_pg_int(pg, "SELECT id FROM orders WHERE user_id = 7");
    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM order_events WHERE order_id <> %" PRId64,
             failing);
    int64_t others = harness_pg_int(pg, sql);
    cr_assert_eq(others, 2 * (BUYERS - 1));
    size_t n;
    record *r = NULL;
    for (int waited = 0;; waited += 100) {
        free(r);
        r = read_records("wh-order.jsonl", &n);
        if ((int64_t)delivered(r, n) == others)
            break;
        cr_assert_lt(waited, 30000, "%zu of %" PRId64 " other events", delivered(r, n), others);
        harness_sleep_ms(100);
    }
    for (size_t i = 0; i < n; i++)
        if (r[i].order_id == failing) {
            cr_assert_str_eq(r[i].type, "order.persisted", "its paid event was never sent");
            cr_assert_eq(r[i].answered, 500);
        }
    wait_pg_int(pg, "SELECT min(after_event) FROM webhook_endpoints",
                harness_pg_int(pg, "SELECT max(id) FROM order_events"),
                "the cursor passed the failing order's events: they are rows");
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM webhook_deliveries WHERE order_id = %" PRId64
             " AND dead_at IS NULL AND (attempts > 0) = (event_id = (SELECT min(id)"
             " FROM order_events WHERE order_id = %" PRId64 "))",
             failing, failing);
    cr_assert_eq(harness_pg_int(pg, sql), 2,
                 "its persisted event retried, its paid event waiting with no attempt");
    cr_assert_eq(harness_pg_int(pg, "SELECT count(*) FROM webhook_deliveries"), 2);

    set_fail_user(pa, "");
    free(r);
    r = wait_all_delivered("wh-order.jsonl", &n, 30000);
    assert_books(r, n);
    assert_caught_up(pg);
    free(r);
    PQfinish(pg);
    harness_stop_clean(&deliverer, "seckill-webhooks");
    harness_system_stop(&sys);
}

/* The one receiver of a test (file), registered first (an endpoint starts
 * at the end of the feed), then a backlog owed to it (units' orders, their
 * pays and cancels) taken in while no deliverer runs; then the deliverer
 * that is to work through it. */
static void backlog_for_one(const char *file, size_t units)
{
    char endpoints[256];
    one_endpoint(file, "ok", endpoints, sizeof(endpoints));
    deliverer = start_deliverer(endpoints, "50", "100", 0);
    harness_stop_clean(&deliverer, "seckill-webhooks");
    sell_and_settle(create_item((int64_t)units), units, 1);
    deliverer = start_deliverer(endpoints, "50", "100", 0);
}

/* The end of a backlog test: every event reached file's receiver, once
 * answered and in order per order, the cursor caught up, and the test's
 * processes stop cleanly. */
static void assert_backlog_delivered(const char *file)
{
    size_t n;
    record *r = wait_all_delivered(file, &n, 60000);
    assert_books(r, n);
    PGconn *pg = harness_pg();
    assert_caught_up(pg);
    PQfinish(pg);
    free(r);
    harness_stop_clean(&deliverer, "seckill-webhooks");
    harness_system_stop(&sys);
}

/* A backlog with one buyer's orders failing, the deliverer killed -9 three
 * times while it works through it: its cursor and rows lose no event, and a
 * repeat after a restart never comes after a later event of its order. */
Test(webhooks, the_cursor_survives_kill_9_without_losing_or_reordering_an_event)
{
    char endpoints[256];
    int pa = one_endpoint("wh-cursor.jsonl", "ok", endpoints, sizeof(endpoints));
    set_fail_user(pa, "3");
    deliverer = start_deliverer(endpoints, "50", "100", 0);
    harness_stop_clean(&deliverer, "seckill-webhooks");
    sell_and_settle(create_item(400), 400, 1);
    deliverer = start_deliverer(endpoints, "50", "100", 0);
    srand((unsigned)time(NULL));
    size_t seen[3];
    for (int round = 0; round < 3; round++) {
        harness_sleep_ms(50 + rand() % 300);
        harness_stop(deliverer, SIGKILL);
        free(read_records("wh-cursor.jsonl", &seen[round]));
        deliverer = start_deliverer(endpoints, "50", "100", 0);
    }
    cr_log_info("killed after %zu, %zu and %zu requests", seen[0], seen[1], seen[2]);
    set_fail_user(pa, "");
    assert_backlog_delivered("wh-cursor.jsonl");
}

/* Ends the deliverer's PostgreSQL sessions (named by its program); how many. */
static int64_t end_deliverer_sessions(PGconn *pg)
{
    return harness_pg_int(pg, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                              " WHERE application_name = 'seckill-webhooks'");
}

Test(webhooks, the_deliverers_postgresql_session_ended_during_delivery_loses_no_event)
{
    backlog_for_one("wh-session.jsonl", 300); /* delivered while its sessions end */
    PGconn *pg = harness_pg();
    int64_t ended = 0;
    for (int round = 0; round < 3; round++) {
        harness_sleep_ms(150);
        ended += end_deliverer_sessions(pg);
    }
    PQfinish(pg);
    cr_expect_gt(ended, 0, "the deliverer's session was found and ended");
    assert_backlog_delivered("wh-session.jsonl");
}

/* Waits (polling the receiver's record every few ms) until it holds at
 * least want requests; how many it held. */
static size_t wait_records(const char *name, size_t want, int timeout_ms)
{
    size_t n = 0;
    for (int waited = 0; n < want && waited < timeout_ms; waited += 5) {
        free(read_records(name, &n));
        if (n < want)
            harness_sleep_ms(5);
    }
    cr_assert_geq(n, want, "%s: %zu requests of %zu", name, n, want);
    return n;
}

/* PostgreSQL crashes while the deliverer works through a backlog whose
 * orders have two or three events each: a cursor move or a row's delete
 * that let an order's next event go must survive the crash, or the
 * restarted deliverer sends the earlier event again after the later one
 * (the test's PostgreSQL runs with synchronous_commit off by default, so
 * this holds only if the deliverer's own session waits for its commits). */
Test(webhooks, a_postgresql_crash_during_delivery_reorders_no_orders_events)
{
    backlog_for_one("wh-pg-crash.jsonl", 300);
    PGconn *pg = harness_pg();
    /* The backlog itself on disk (the server's commits did not wait). */
    PQclear(PQexec(pg, "CHECKPOINT"));
    PQfinish(pg);
    size_t at = wait_records("wh-pg-crash.jsonl", 350, 20000);
    harness_pg_crash();
    harness_pg_restart();
    cr_log_info("PostgreSQL crashed after %zu requests", at);
    assert_backlog_delivered("wh-pg-crash.jsonl");
}

/* How many requests were answered 200 for an event answered 200 before. */
static size_t repeats(const record *r, size_t n)
{
    size_t answered = 0;
    for (size_t i = 0; i < n; i++)
        answered += r[i].answered == 200;
    return answered - delivered(r, n);
}

/* A deliverer stopped by SIGTERM during a backlog (one event an order, so
 * that no event waits on the cursor and nothing yet made it due) writes
 * down what was answered before it exits: the next one sends again nothing
 * at or below the cursor written at the stop, only what was still in
 * flight and the answers past the oldest of them (the cursor stops there:
 * a few dozen, more if one request stalled), not every answer since it
 * began (150 or more here, all sent again before the stop wrote it). */
Test(webhooks, a_deliverer_stopped_by_sigterm_writes_down_what_was_answered)
{
    enum { UNITS = 400 };
    char endpoints[256];
    int port = one_endpoint("wh-sigterm.jsonl", "ok", endpoints, sizeof(endpoints));
    deliverer = start_deliverer(endpoints, "50", "100", 0);
    harness_stop_clean(&deliverer, "seckill-webhooks");
    sale s;
    sell_all(&s, UNITS, 20);
    sale_free(&s);
    deliverer = start_deliverer(endpoints, "50", "100", 0);
    wait_records("wh-sigterm.jsonl", 150, 20000);
    harness_stop_clean(&deliverer, "seckill-webhooks");
    size_t at;
    free(read_records("wh-sigterm.jsonl", &at));
    char sql[160];
    snprintf(sql, sizeof(sql),
             "SELECT after_event FROM webhook_endpoints WHERE url = 'http://127.0.0.1:%d/hook'",
             port);
    PGconn *pg = harness_pg();
    int64_t cursor = harness_pg_int(pg, sql);
    PQfinish(pg);
    cr_log_info("stopped after %zu requests, the cursor at event %" PRId64, at, cursor);
    deliverer = start_deliverer(endpoints, "50", "100", 0);
    size_t n;
    record *r = wait_all_delivered("wh-sigterm.jsonl", &n, 30000);
    assert_books(r, n);
    for (size_t i = at; i < n; i++)
        cr_assert_gt(r[i].event_id, cursor,
                     "event %" PRId64 " sent again below the cursor %" PRId64, r[i].event_id,
                     cursor);
    cr_assert_lt(repeats(r, n), at / 2, "%zu events sent again after a stop at %zu requests",
                 repeats(r, n), at);
    free(r);
    harness_stop_clean(&deliverer, "seckill-webhooks");
    harness_system_stop(&sys);
}

/* The resident memory of process pid, in KiB (-1: unknown). */
/* Waits until the deliverer whose metrics are on port says it leads (1) or
 * not (0). */
static void wait_leader(int port, long long want)
{
    char resp[8192];
    for (int waited = 0;; waited += 100) {
        int status = harness_http(port, "GET", "/metrics", NULL, NULL, resp, sizeof(resp));
        if (status == 200 && harness_metric(resp, "seckill_webhook_leader") == want)
            return;
        cr_assert_lt(waited, 10000, "seckill_webhook_leader %lld on port %d: %d %s", want, port,
                     status, resp);
        harness_sleep_ms(100);
    }
}

/* A standby deliverer (another leads) is not woken by the trigger's
 * NOTIFYs: 30 MiB of them during a "sale" leave its memory as it was (a
 * standby that listened kept every one in libpq, unread, as long as it
 * waited); once the leader stops, it leads, listens, and delivers a sale. */
Test(webhooks, a_standby_deliverer_keeps_no_wake_ups_and_delivers_once_it_leads)
{
    enum { NOTIFIES = 4000, GROWTH_KIB = 12 * 1024 };
    char endpoints[256];
    one_endpoint("wh-standby.jsonl", "ok", endpoints, sizeof(endpoints));
    int lead_port = harness_free_port();
    deliverer = start_deliverer(endpoints, "50", "100", lead_port);
    wait_leader(lead_port, 1);
    int standby_port = harness_free_port();
    PGconn *pg = harness_pg();
    const char *sessions = "SELECT count(*) FROM pg_stat_activity"
                           " WHERE application_name = 'seckill-webhooks'";
    int64_t others = harness_pg_int(pg, sessions);
    standby = start_deliverer(endpoints, "50", "100", standby_port);
    for (int waited = 0; harness_pg_int(pg, sessions) <= others && waited < 10000; waited += 50)
        harness_sleep_ms(50);
    cr_assert_gt(harness_pg_int(pg, sessions), others, "the standby is connected");
    /* Its session: the newest of the deliverers'. */
    int64_t standby_backend =
        harness_pg_int(pg, "SELECT pid FROM pg_stat_activity WHERE application_name ="
                           " 'seckill-webhooks' ORDER BY backend_start DESC LIMIT 1");
    wait_leader(standby_port, 0);
    long before = harness_rss_kib(standby);
    PGresult *res = PQexec(pg, "SELECT count(pg_notify('" OUTBOX_CHANNEL "',"
                               " i || repeat('x', 7900))) FROM generate_series(1, 4000) i");
    cr_assert_eq(PQresultStatus(res), PGRES_TUPLES_OK, "%s", PQerrorMessage(pg));
    PQclear(res);
    /* Two of the standby's statements after the NOTIFYs (a turn each): a
     * standby that listened would have read them all into libpq by then. */
    char last_statement[200];
    snprintf(last_statement, sizeof(last_statement),
             "SELECT coalesce((extract(epoch FROM state_change) * 1e6)::bigint, 0)"
             " FROM pg_stat_activity WHERE pid = %" PRId64,
             standby_backend);
    int64_t since = harness_pg_int(pg, "SELECT (extract(epoch FROM now()) * 1e6)::bigint");
    for (int turn = 0; turn < 2; turn++) {
        int64_t at = since;
        for (int waited = 0; at <= since && waited < 10000; waited += 50) {
            harness_sleep_ms(50);
            at = harness_pg_int(pg, last_statement);
        }
        cr_assert_gt(at, since, "the standby ran no statement after the NOTIFYs");
        since = at;
    }
    long after = harness_rss_kib(standby);
    cr_assert(before > 0 && after > 0);
    cr_assert_lt(after - before, GROWTH_KIB, "the standby grew from %ld to %ld KiB", before, after);
    wait_leader(standby_port, 0);

    harness_stop_clean(&deliverer, "seckill-webhooks");
    deliverer = standby;
    standby = 0;
    wait_leader(standby_port, 1);
    sell_and_settle(create_item(24), 24, 1);
    size_t n;
    record *r = wait_all_delivered("wh-standby.jsonl", &n, 30000);
    assert_books(r, n);
    assert_caught_up(pg);
    free(r);
    PQfinish(pg);
    harness_stop_clean(&deliverer, "seckill-webhooks");
    harness_system_stop(&sys);
}

Test(webhooks, the_sample_receiver_refuses_a_forged_or_stale_signature)
{
    int port;
    receivers[0] = start_receiver(&port, SECRET_A, "wh-sig.jsonl", "ok");
    const char body[] = "{\"id\":7,\"type\":\"order.paid\",\"created_at\":\"2026-11-22T20:00:00Z\","
                        "\"order\":{\"order_id\":\"9\"}}";
    char sig[WEBHOOK_SIGNATURE_MAX];
    int64_t now = clock_wall_ms() / 1000;
    webhook_sign(SECRET_A, now, body, strlen(body), sig, sizeof(sig));
    cr_assert_eq(hook_post(port, body, sig, 7), 200, "signed by the endpoint's secret");
    webhook_sign(SECRET_B, now, body, strlen(body), sig, sizeof(sig));
    cr_assert_eq(hook_post(port, body, sig, 7), 400, "another secret's signature");
    webhook_sign(SECRET_A, now - 600, body, strlen(body), sig, sizeof(sig));
    cr_assert_eq(hook_post(port, body, sig, 7), 400, "ten minutes old: a replay");
    webhook_sign(SECRET_A, now, body, strlen(body), sig, sizeof(sig));
    char forged[sizeof(body)];
    memcpy(forged, body, sizeof(body));
    forged[5] = '8'; /* the event id changed after signing */
    cr_assert_eq(hook_post(port, forged, sig, 8), 400, "a body changed after signing");
    cr_assert_eq(hook_post(port, body, "t=1,v1=00", 7), 400);
    cr_assert_eq(hook_post(port, body, "", 7), 400, "no signature");
    size_t n;
    record *r = read_records("wh-sig.jsonl", &n);
    cr_assert_eq(n, 1, "only the genuine delivery was recorded");
    free(r);
}

/* A draw of stock units among buyers 1..entrants, one unit each, its
 * orders to be paid within ten minutes: drawn when this returns. */
static void draw_of(PGconn *pg, size_t entrants, int64_t stock)
{
    int64_t item = draw_sale_create(sys.port, TOKEN, stock, -1000, 600000,
                                    "\"per_buyer_limit\":1,\"payment_timeout_s\":600");
    cr_assert_eq(draw_sale_enter_many(sys.port, item, 1, entrants, 1, 1, 4), entrants);
    draw_sale_close_now(pg, item);
    json_t *o;
    cr_assert_eq(draw_sale_draw(sys.port, TOKEN, item, NULL, &o), 200);
    json_decref(o);
}

/* A draw while the endpoint fails: its order.won and entry.waitlisted
 * events become rows; a winner cancels, the worker serves the first
 * waitlisted entrant, whose order.won waits, never tried, behind its
 * entry.waitlisted (one key: the order id the draw reserved); once the
 * endpoint recovers, every event arrives, the entry's before its order's. */
Test(webhooks, a_draws_waitlisted_entry_arrives_before_the_order_its_entrant_wins_later)
{
    enum { ENTRANTS = 12, STOCK = 4 };
    char endpoints[256];
    int pa = one_endpoint("wh-draw.jsonl", "fail", endpoints, sizeof(endpoints));
    deliverer = start_deliverer(endpoints, "50", "200", 0);
    PGconn *pg = harness_pg();
    draw_of(pg, ENTRANTS, STOCK);
    cr_assert_eq(harness_pg_int(pg, "SELECT count(*) FROM order_events"
                                    " WHERE type = 'entry.waitlisted'"),
                 ENTRANTS - STOCK);
    char path[96], resp[2048];
    snprintf(path, sizeof(path), "/api/v1/orders/%" PRId64 "/cancel",
             harness_pg_int(pg, "SELECT order_id FROM draw_entries WHERE position = 1"));
    cr_assert_eq(harness_http(sys.port, "POST", path, TOKEN, NULL, resp, sizeof(resp)), 200, "%s",
                 resp);
    const char *served = "SELECT count(*) FROM draw_entries WHERE outcome = 'won_from_waitlist'";
    for (int waited = 0; harness_pg_int(pg, served) == 0; waited += 50) {
        cr_assert_lt(waited, 10000, "nobody served from the waitlist");
        harness_sleep_ms(50);
    }
    wait_pg_int(pg,
                "SELECT count(*) FROM webhook_deliveries d JOIN order_events e ON e.id = d.event_id"
                " JOIN draw_entries x ON x.order_id = d.order_id AND x.position = 5"
                " WHERE (e.type = 'entry.waitlisted' AND d.attempts > 0)"
                "    OR (e.type = 'order.won' AND d.attempts = 0)",
                2, "the served entrant's order.won waits, untried, behind its entry.waitlisted");
    set_mode(pa, "ok");
    size_t n;
    record *r = wait_all_delivered("wh-draw.jsonl", &n, 30000);
    assert_books(r, n);
    int64_t key = harness_pg_int(pg, "SELECT order_id FROM draw_entries WHERE position = 5");
    int entry_first = -1;
    for (size_t i = 0; i < n && entry_first < 0; i++)
        if (r[i].order_id == key && r[i].answered == 200)
            entry_first = strcmp(r[i].type, "entry.waitlisted") == 0;
    cr_assert_eq(entry_first, 1, "the entry's event delivered before its order's");
    free(r);
    PQfinish(pg);
    harness_stop_clean(&deliverer, "seckill-webhooks");
    harness_system_stop(&sys);
}

/* A draw's events in the dead-letter: an order.won shows its order's id,
 * an entry.waitlisted shows order_id null (the id it is keyed by is only
 * reserved for an order, sql/017), as the feed shows the entry. */
Test(webhooks, a_dead_entry_event_shows_no_order_id)
{
    enum { ENTRANTS = 6, STOCK = 2 };
    char endpoints[256];
    one_endpoint("wh-dead-draw.jsonl", "fail", endpoints, sizeof(endpoints));
    deliverer = start_deliverer(endpoints, "2", "100", 0);
    PGconn *pg = harness_pg();
    draw_of(pg, ENTRANTS, STOCK);
    for (int waited = 0; dead_rows() < ENTRANTS; waited += 250) {
        cr_assert_lt(waited, 15000, "the dead-letter holds %zu of %d", dead_rows(), ENTRANTS);
        harness_sleep_ms(250);
    }
    char resp[65536];
    cr_assert_eq(harness_http(sys.port, "GET", "/api/v1/webhooks/dead?limit=50", TOKEN, NULL, resp,
                              sizeof(resp)),
                 200, "%s", resp);
    json_t *j = json_loads(resp, 0, NULL), *row;
    size_t i, entries = 0;
    json_array_foreach(json_object_get(j, "dead"), i, row)
    {
        const char *type = json_string_value(json_object_get(row, "type"));
        json_t *order_id = json_object_get(row, "order_id");
        if (strcmp(type, "entry.waitlisted") == 0) {
            cr_assert(json_is_null(order_id), "an entry's event shows no order id: %s", resp);
            entries++;
            continue;
        }
        cr_assert_str_eq(type, "order.won");
        char sql[160];
        snprintf(sql, sizeof(sql),
                 "SELECT count(*) FROM draw_entries WHERE outcome = 'won' AND order_id = %s",
                 json_string_value(order_id));
        cr_assert_eq(harness_pg_int(pg, sql), 1, "an order.won shows its order's id: %s", resp);
    }
    cr_assert_eq(entries, ENTRANTS - STOCK, "%s", resp);
    json_decref(j);
    PQfinish(pg);
    harness_stop_clean(&deliverer, "seckill-webhooks");
    harness_system_stop(&sys);
}

/* A storm of events: for ms, every 50 ms, step orders of item persisted
 * straight into PostgreSQL (the trigger writes an event each), ids and
 * buyers from *next on. */
static void storm(PGconn *pg, int64_t item, int64_t *next, int64_t ms, int step)
{
    for (int64_t until = clock_mono_ms() + ms; clock_mono_ms() < until; harness_sleep_ms(50)) {
        char sql[512];
        snprintf(sql, sizeof(sql),
                 "INSERT INTO orders (id, item_id, user_id, round, created_at)"
                 " SELECT g, %" PRId64 ", g, (SELECT round FROM items WHERE id = %" PRId64 "),"
                 " now() FROM generate_series(%" PRId64 ", %" PRId64 ") g",
                 item, item, *next, *next + step - 1);
        PGresult *res = PQexec(pg, sql);
        cr_assert_eq(PQresultStatus(res), PGRES_COMMAND_OK, "%s", PQerrorMessage(pg));
        PQclear(res);
        *next += step;
    }
}

/* The deliverer's seckill_webhook_storm_waiting on its metrics port. */
static long long storm_waiting(int mport)
{
    char resp[8192];
    int status = harness_http(mport, "GET", "/metrics", NULL, NULL, resp, sizeof(resp));
    cr_assert_eq(status, 200, "metrics: %d", status);
    double waiting = -1;
    cr_assert(metric_value(resp, "seckill_webhook_storm_waiting", &waiting), "no storm gauge: %s",
              resp);
    return (long long)waiting;
}

/* How many distinct events the receiver's file holds answered 200. */
static size_t delivered_now(const char *file)
{
    size_t n;
    record *r = read_records(file, &n);
    size_t had = delivered(r, n);
    free(r);
    return had;
}

/* A deliverer that waits out storms (webhook_storm_rate) and a receiver;
 * the deliverer leads before it returns. mport: its metrics' port. */
static void start_storm_deliverer(const char *file, const char *rate, const char *wait_ms,
                                  int *mport)
{
    char endpoints[256], r[64], w[64];
    one_endpoint(file, "ok", endpoints, sizeof(endpoints));
    snprintf(r, sizeof(r), "SECKILL_WEBHOOK_STORM_RATE=%s", rate);
    snprintf(w, sizeof(w), "SECKILL_WEBHOOK_STORM_WAIT_MS=%s", wait_ms);
    const char *const more[] = {r, w, NULL};
    *mport = harness_free_port();
    deliverer = start_deliverer_with(endpoints, "20", "100", *mport, more);
    wait_leader(*mport, 1);
}

/* Orders persisted every 50 ms in a storm: 1,000 events a second. */
#define STORM_STEP 50

/* A deliverer that waits out storms of 100 events a second, for wait_ms at
 * most, and a storm of a second's events of a new item (*item), ids from
 * *next on: the deliverer waits by then. Returns the session it wrote on. */
static PGconn *storm_for_a_second(const char *file, const char *wait_ms, int *mport, int64_t *item,
                                  int64_t *next)
{
    start_storm_deliverer(file, "100", wait_ms, mport);
    PGconn *pg = harness_pg();
    *item = create_item(10);
    storm(pg, *item, next, 1000, STORM_STEP);
    cr_assert_eq(storm_waiting(*mport), 1, "a storm after a second of it");
    return pg;
}

/* Events written at 1,000 a second (the deliverer's storm: 100 a second):
 * once it has seen the storm, it starts no delivery while the storm lasts
 * (those already in flight end), says so in its metrics, and when the
 * storm is over delivers every event, in order per order. Without the
 * wait, the receiver answers hundreds a second meanwhile. */
Test(webhooks, deliveries_wait_out_a_storm_of_events_then_all_go_in_order)
{
    enum { IN_FLIGHT = 16 };
    int mport;
    int64_t item, next = 1000000;
    PGconn *pg = storm_for_a_second("wh-storm.jsonl", "60000", &mport, &item, &next);
    size_t before = delivered_now("wh-storm.jsonl");
    storm(pg, item, &next, 2000, STORM_STEP);
    size_t after = delivered_now("wh-storm.jsonl");
    cr_assert_leq(after, before + IN_FLIGHT,
                  "%zu events delivered during two seconds of storm (%zu before)", after - before,
                  before);
    cr_assert_eq(storm_waiting(mport), 1, "still a storm after three seconds");
    for (int waited = 0; storm_waiting(mport) != 0; waited += 100) {
        cr_assert_lt(waited, 5000, "the storm is over, and the deliverer waits on");
        harness_sleep_ms(100);
    }
    size_t n;
    record *r = wait_all_delivered("wh-storm.jsonl", &n, 30000);
    assert_books(r, n);
    cr_assert_eq(delivered(r, n), (size_t)(next - 1000000), "every event of the storm");
    free(r);
    PQfinish(pg);
    harness_stop_clean(&deliverer, "seckill-webhooks");
    harness_system_stop(&sys);
}

/* webhook_storm_wait_ms bounds the wait: a storm that lasts longer is
 * waited out (the gauge reads 1) until then, and has its events delivered
 * while it goes on after. */
Test(webhooks, a_storm_longer_than_webhook_storm_wait_ms_is_waited_out_no_longer)
{
    int mport;
    int64_t item, next = 2000000;
    PGconn *pg = storm_for_a_second("wh-long-storm.jsonl", "2000", &mport, &item, &next);
    storm(pg, item, &next, 2000, STORM_STEP);
    /* 2 s from the wait's start, a look at most later: polled while the
     * storm goes on (a starved deliverer may look late). */
    for (int waited = 0; storm_waiting(mport) != 0; waited += 50) {
        cr_assert_lt(waited, 1500, "still waiting 3.5 s into a storm with a wait of 2 s");
        storm(pg, item, &next, 50, STORM_STEP);
    }
    size_t before = delivered_now("wh-long-storm.jsonl");
    storm(pg, item, &next, 2000, STORM_STEP);
    size_t after = delivered_now("wh-long-storm.jsonl");
    /* Waiting, only those in flight would end (16 at most). */
    cr_assert_geq(after, before + 40, "%zu events delivered during the storm's last two seconds",
                  after - before);
    size_t n;
    record *r = wait_all_delivered("wh-long-storm.jsonl", &n, 30000);
    assert_books(r, n);
    free(r);
    PQfinish(pg);
    harness_stop_clean(&deliverer, "seckill-webhooks");
    harness_system_stop(&sys);
}
