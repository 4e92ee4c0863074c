/* e2e_room.c: the waiting room end to end on real servers (issue 27): a
 * sale through the room (join, places fixed by the committed secret and
 * recomputed from the audit, admission, purchase with the token), late
 * joiners behind every pre-start joiner in arrival order, the metering
 * never above its formula, every wrong token refused with nothing sold,
 * and two instances polled by 16 threads a buyer: one admission each, the
 * same token everywhere, the stock sold exactly; joins at once (group
 * committed, room_joins.h) each counted once and placed exactly; the
 * secret shown only once the room's own node counts the start; and a poll
 * from far back answered from memory as Redis answered it. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "buyer_token.h"
#include "clock.h"
#include "digest.h"
#include "harness.h"
#include "harness_suite.h"
#include "keys.h"
#include "rfc3339.h"
#include "room_order.h"
#include "sale.h"

#define TOKEN "e2e-admin-token"

static harness_system sys;
static char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=e2e-room", NULL};

HARNESS_SYSTEM_SUITE(room, harness_system_start, sys, env, "e2e-room", .timeout = 120);

/* RFC 3339 text of Unix ms into buf (RFC3339_MAX). */
static const char *when(int64_t ms, char *buf)
{
    cr_assert_gt(rfc3339_format(ms, buf, RFC3339_MAX), 0);
    return buf;
}

/* A room item of stock units starting in starts_in ms, with more terms. */
static int64_t create_room(int64_t stock, int64_t starts_in, const char *more)
{
    char view[4096], starts[RFC3339_MAX];
    return sale_create_item_view(sys.port, TOKEN, view, sizeof(view), "room", stock,
                                 "\"admission\":\"room\",\"starts_at\":\"%s\"%s%s",
                                 when(clock_wall_ms() + starts_in, starts), more[0] ? "," : "",
                                 more);
}

/* One call; its JSON answer parsed into *out (the caller decrefs). */
static int call(int port, const char *method, const char *path, const char *body, json_t **out)
{
    static __thread char resp[65536];
    int status = harness_http(port, method, path, NULL, body, resp, sizeof(resp));
    *out = json_loads(resp, 0, NULL);
    cr_assert_not_null(*out, "%s %s: %d %s", method, path, status, resp);
    return status;
}

static int join_on(int port, int64_t item, int64_t user, json_t **out)
{
    char path[96], body[64];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/queue", item);
    snprintf(body, sizeof(body), "{\"user_id\":%" PRId64 "}", user);
    return call(port, "POST", path, body, out);
}

static int poll_on(int port, int64_t item, int64_t user, json_t **out)
{
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/queue?user_id=%" PRId64, item, user);
    return call(port, "GET", path, NULL, out);
}

static int buy_on(int port, int64_t item, int64_t user, const char *admission, json_t **out)
{
    char path[96], body[512];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/purchase", item);
    if (admission)
        snprintf(body, sizeof(body), "{\"user_id\":%" PRId64 ",\"admission\":\"%s\"}", user,
                 admission);
    else
        snprintf(body, sizeof(body), "{\"user_id\":%" PRId64 "}", user);
    return call(port, "POST", path, body, out);
}

static const char *str(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    cr_assert(json_is_string(v), "no string %s in %s", key, json_dumps(o, 0));
    return json_string_value(v);
}

static int64_t num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    cr_assert(json_is_integer(v), "no integer %s in %s", key, json_dumps(o, 0));
    return json_integer_value(v);
}

/* The item's view. */
static json_t *item_view(int64_t item)
{
    char path[64];
    json_t *o;
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64, item);
    cr_assert_eq(call(sys.port, "GET", path, NULL, &o), 200);
    return o;
}

/* Polls user until admitted (or timeout_ms); the token into tok. */
static void wait_admitted(int64_t item, int64_t user, char *tok, size_t cap, int timeout_ms)
{
    int64_t until = clock_mono_ms() + timeout_ms;
    for (;;) {
        json_t *o;
        cr_assert_eq(poll_on(sys.port, item, user, &o), 200);
        if (strcmp(str(o, "state"), "admitted") == 0) {
            snprintf(tok, cap, "%s", str(o, "admission"));
            json_decref(o);
            return;
        }
        json_decref(o);
        cr_assert_lt(clock_mono_ms(), until, "user %" PRId64 " never admitted", user);
        usleep(50 * 1000);
    }
}

static void wait_until_started(int64_t item)
{
    for (int i = 0; i < 200; i++) {
        json_t *v = item_view(item);
        int started = num(v, "starts_in_ms") == 0;
        json_decref(v);
        if (started)
            return;
        usleep(50 * 1000);
    }
    cr_assert_fail("the sale never started");
}

Test(room, a_sale_through_the_room_follows_the_committed_shuffle)
{
    int64_t item = create_room(3, 1500, "\"admit_per_s\":1000");
    json_t *o, *v = item_view(item);
    cr_assert_str_eq(str(v, "admission"), "room");
    json_t *room = json_object_get(v, "room");
    char commitment[ROOM_HEX_LEN + 1];
    snprintf(commitment, sizeof(commitment), "%s", str(room, "commitment"));
    cr_assert(json_is_null(json_object_get(room, "secret")), "no secret before the start");
    json_decref(v);

    enum { N = 12 };
    char entrant[N + 1][ROOM_HEX_LEN + 1];
    for (int64_t u = 1; u <= N; u++) {
        cr_assert_eq(join_on(sys.port, item, u, &o), 200);
        cr_assert_str_eq(str(o, "state"), "prequeue");
        cr_assert(json_is_null(json_object_get(o, "place")));
        snprintf(entrant[u], sizeof(entrant[u]), "%s", str(o, "entrant"));
        json_decref(o);
    }
    cr_assert_eq(join_on(sys.port, item, 1, &o), 200, "joining again");
    cr_assert_str_eq(str(o, "entrant"), entrant[1]);
    json_decref(o);
    cr_assert_eq(buy_on(sys.port, item, 1, NULL, &o), 409);
    cr_assert_str_eq(str(o, "error"), "not_started", "the window answers first");
    json_decref(o);

    wait_until_started(item);
    /* The published order: K matches its commitment, and the places are
     * the HMACs' order. */
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/queue/audit", item);
    cr_assert_eq(call(sys.port, "GET", path, NULL, &o), 200);
    unsigned char k[ROOM_SECRET_LEN];
    char check[ROOM_HEX_LEN + 1];
    cr_assert_eq(digest_unhex(str(o, "secret"), k, sizeof(k)), 0);
    room_commitment(k, check);
    cr_assert_str_eq(check, commitment);
    json_t *list = json_object_get(o, "entrants");
    cr_assert_eq(json_array_size(list), N);
    double last = -1;
    for (size_t i = 0; i < N; i++) {
        json_t *e = json_array_get(list, i);
        cr_assert_eq(num(e, "place"), (int64_t)i + 1);
        double score = room_score(k, str(e, "entrant"));
        cr_assert_gt(score, last, "the audit's order is the scores'");
        last = score;
    }
    cr_assert(json_is_null(json_object_get(o, "next_after")));
    json_decref(o);

    /* Every buyer is admitted (the rate is high), each at its audited place,
     * and three of them buy with their tokens. */
    char tok[ROOM_TOKEN_MAX];
    int sold = 0;
    for (int64_t u = 1; u <= N; u++) {
        wait_admitted(item, u, tok, sizeof(tok), 5000);
        cr_assert_eq(poll_on(sys.port, item, u, &o), 200);
        cr_assert_str_eq(str(o, "admission"), tok, "the same token every poll");
        json_decref(o);
        int status = buy_on(sys.port, item, u, tok, &o);
        cr_assert(status == 202 || status == 409, "%d", status);
        sold += status == 202;
        json_decref(o);
    }
    cr_assert_eq(sold, 3);
    v = item_view(item);
    room = json_object_get(v, "room");
    cr_assert_str_eq(str(room, "secret"), str(room, "secret"));
    cr_assert_eq(num(room, "joined"), N);
    cr_assert_eq(num(v, "sold"), 3);
    json_decref(v);
}

Test(room, late_joiners_go_behind_every_pre_start_joiner_in_arrival_order)
{
    int64_t item = create_room(100, 1200, "\"admit_per_s\":4,\"admit_burst\":0");
    json_t *o;
    for (int64_t u = 1; u <= 5; u++) {
        cr_assert_eq(join_on(sys.port, item, u, &o), 200);
        json_decref(o);
    }
    wait_until_started(item);
    for (int64_t u = 101; u <= 105; u++) {
        cr_assert_eq(join_on(sys.port, item, u, &o), 200);
        cr_assert_eq(num(o, "place"), 5 + (u - 100), "late joiner %" PRId64, u);
        json_decref(o);
    }
    /* While the room admits, a late joiner is never in before a pre-start one. */
    int64_t until = clock_mono_ms() + 6000;
    int all = 0;
    while (!all && clock_mono_ms() < until) {
        int pre_waiting = 0, late_admitted = 0;
        all = 1;
        for (int64_t u = 1; u <= 105; u = u == 5 ? 101 : u + 1) {
            cr_assert_eq(poll_on(sys.port, item, u, &o), 200);
            int in = strcmp(str(o, "state"), "admitted") == 0;
            all &= in;
            if (u <= 5)
                pre_waiting |= !in;
            else
                late_admitted |= in;
            json_decref(o);
        }
        cr_assert_not(pre_waiting && late_admitted, "a late joiner admitted first");
        usleep(100 * 1000);
    }
    cr_assert(all, "every buyer admitted at 4 a second within 6 s");
}

/* The room's polls this instance answered where ("memory" or "pool"). */
static long long polls_answered(const char *where)
{
    static char metrics[65536];
    char series[80];
    cr_assert_eq(harness_http(sys.port, "GET", "/metrics", TOKEN, NULL, metrics, sizeof(metrics)),
                 200);
    snprintf(series, sizeof(series), "seckill_room_polls_total{answered=\"%s\"}", where);
    return harness_metric(metrics, series);
}

Test(room, a_poll_from_far_back_is_answered_from_memory_as_redis_answered_it)
{
    int64_t item = create_room(100, 1200, "\"admit_per_s\":0.001,\"admit_burst\":0");
    json_t *first, *o;
    for (int64_t u = 1; u <= 3; u++) {
        cr_assert_eq(join_on(sys.port, item, u, &o), 200);
        json_decref(o);
    }
    wait_until_started(item);
    long long memory = polls_answered("memory"), pool = polls_answered("pool");
    cr_assert_eq(poll_on(sys.port, item, 2, &first), 200); /* the place read from Redis */
    cr_assert_eq(polls_answered("pool"), pool + 1);
    /* Then from memory while the frontier is fresh (500 ms; a slow machine
     * may see it refreshed from Redis in between). */
    for (int i = 0; i < 5 && polls_answered("memory") == memory; i++) {
        cr_assert_eq(poll_on(sys.port, item, 2, &o), 200);
        cr_assert_eq(json_object_size(o), json_object_size(first), "%s", json_dumps(o, 0));
        cr_assert_str_eq(str(o, "state"), "waiting");
        cr_assert_str_eq(str(o, "entrant"), str(first, "entrant"));
        cr_assert_eq(num(o, "place"), num(first, "place"));
        cr_assert_eq(num(o, "ahead"), num(first, "ahead"));
        cr_assert_eq(num(o, "wait_ms"), num(first, "wait_ms"));
        cr_assert(num(o, "refresh_after_ms") >= 8000 && num(o, "refresh_after_ms") <= 12000);
        json_decref(o);
    }
    cr_assert_gt(polls_answered("memory"), memory, "no poll answered from memory");
    json_decref(first);
}

Test(room, admitted_never_passes_the_metering_formula)
{
    enum { BURST = 5, PER_S = 40, N = 300 };
    int64_t starts_ms = clock_wall_ms() + 1000;
    char starts[RFC3339_MAX], view[4096];
    int64_t item = sale_create_item_view(
        sys.port, TOKEN, view, sizeof(view), "room", 1000,
        "\"admission\":\"room\",\"starts_at\":\"%s\",\"admit_per_s\":%d,\"admit_burst\":%d",
        when(starts_ms, starts), PER_S, BURST);
    json_t *o;
    for (int64_t u = 1; u <= N; u++) {
        cr_assert_eq(join_on(sys.port, item, u, &o), 200);
        json_decref(o);
    }
    redisContext *r = harness_redis();
    int64_t until = clock_mono_ms() + 3500, last = 0;
    while (clock_mono_ms() < until) {
        cr_assert_eq(poll_on(sys.port, item, 1, &o), 200); /* drives the admission */
        json_decref(o);
        json_t *v = item_view(item);
        int64_t admitted = num(json_object_get(v, "room"), "admitted");
        json_decref(v);
        int64_t now = harness_redis_now_ms(r);
        int64_t bound = room_admit_target(N, BURST, PER_S, starts_ms, now);
        cr_assert_leq(admitted, bound, "admitted %" PRId64 " above %" PRId64, admitted, bound);
        cr_assert_geq(admitted, last, "the frontier never moves back");
        last = admitted;
        usleep(20 * 1000);
    }
    cr_assert_gt(last, BURST + PER_S, "the room admitted past its burst: %" PRId64, last);
    /* While people wait the room admits at admit_per_s, not slower: once the instance's frontier
     * is due for its refresh (500 ms), a poll brings it to the formula of the poll's moment. */
    usleep(600 * 1000);
    int64_t before = harness_redis_now_ms(r);
    cr_assert_eq(poll_on(sys.port, item, 1, &o), 200);
    json_decref(o);
    int64_t after = harness_redis_now_ms(r);
    json_t *v = item_view(item);
    int64_t admitted = num(json_object_get(v, "room"), "admitted");
    json_decref(v);
    int64_t low = room_admit_target(N, BURST, PER_S, starts_ms, before);
    int64_t high = room_admit_target(N, BURST, PER_S, starts_ms, after);
    cr_assert(admitted >= low && admitted <= high,
              "admitted %" PRId64 " outside the formula's %" PRId64 "..%" PRId64, admitted, low,
              high);
    double rate = (double)(admitted - BURST) * 1000.0 / (double)(before - starts_ms);
    cr_assert_geq(rate, PER_S * 0.98, "admitted %.2f a second, admit_per_s %d", rate, PER_S);
    redisFree(r);
}

/* Buys with token tok as user; asserts the 403 code. */
static void refused(int64_t item, int64_t user, const char *tok, const char *code)
{
    json_t *o;
    cr_assert_eq(buy_on(sys.port, item, user, tok, &o), 403, "%s", code);
    cr_assert_str_eq(str(o, "error"), code);
    json_decref(o);
}

Test(room, every_wrong_admission_is_refused_and_nothing_is_sold)
{
    int64_t item = create_room(10, 800, "\"admit_per_s\":1000,\"admission_ttl_s\":2");
    int64_t other = create_room(10, 800, "\"admit_per_s\":1000");
    json_t *o;
    for (int64_t u = 1; u <= 2; u++) {
        cr_assert_eq(join_on(sys.port, item, u, &o), 200);
        json_decref(o);
        cr_assert_eq(join_on(sys.port, other, u, &o), 200);
        json_decref(o);
    }
    wait_until_started(item);
    char tok[ROOM_TOKEN_MAX], tok_other[ROOM_TOKEN_MAX], bad[ROOM_TOKEN_MAX];
    wait_admitted(item, 1, tok, sizeof(tok), 5000);
    wait_admitted(other, 1, tok_other, sizeof(tok_other), 5000);

    refused(item, 1, NULL, "admission_missing");
    snprintf(bad, sizeof(bad), "%s", tok);
    bad[strlen(bad) - 1] = bad[strlen(bad) - 1] == '0' ? '1' : '0';
    refused(item, 1, bad, "admission_forged");
    bad[strlen(bad) - 5] = '\0';
    refused(item, 1, bad, "admission_forged");
    refused(item, 2, tok, "admission_wrong_buyer");
    refused(item, 1, tok_other, "admission_wrong_item");
    char buyer[BUYER_TOKEN_MAX];
    buyer_token_mint("e2e-room-buyer-secret-0123456789abcdef", 1, clock_wall_ms() / 1000 + 60,
                     buyer, sizeof(buyer));
    refused(item, 1, buyer, "admission_forged");
    sleep(2); /* admission_ttl_s */
    refused(item, 1, tok, "admission_expired");

    /* A new round: the old round's token is refused by Redis. */
    char path[64], body[256], starts[RFC3339_MAX];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/reset", other);
    snprintf(body, sizeof(body), "{\"stock\":10,\"starts_at\":\"%s\"}",
             when(clock_wall_ms() - 1000, starts));
    char resp[4096];
    cr_assert_eq(harness_http(sys.port, "POST", path, TOKEN, body, resp, sizeof(resp)), 200, "%s",
                 resp);
    refused(other, 1, tok_other, "admission_wrong_round");

    json_t *v = item_view(item);
    cr_assert_eq(num(v, "sold"), 0);
    json_decref(v);
    v = item_view(other);
    cr_assert_eq(num(v, "sold"), 0);
    json_decref(v);
}

Test(room, the_queue_of_a_race_item_and_bad_terms_are_refused)
{
    json_t *o;
    char view[4096];
    int64_t race = sale_create_item_view(sys.port, TOKEN, view, sizeof(view), "race", 5, "%s", "");
    cr_assert_eq(join_on(sys.port, race, 1, &o), 409);
    cr_assert_str_eq(str(o, "error"), "not_a_room");
    json_decref(o);
    static const char *const bad[] = {
        "{\"name\":\"r\",\"stock\":1,\"admission\":\"draw\"}",
        "{\"name\":\"r\",\"stock\":1,\"admission\":\"room\",\"admit_per_s\":1}",
        "{\"name\":\"r\",\"stock\":1,\"admission\":\"room\",\"starts_at\":\"2099-01-01T00:00:"
        "00Z\"}",
        "{\"name\":\"r\",\"stock\":1,\"admission\":\"room\",\"starts_at\":\"2099-01-01T00:00:00Z\","
        "\"admit_per_s\":0}",
        "{\"name\":\"r\",\"stock\":1,\"admission\":\"room\",\"starts_at\":\"2099-01-01T00:00:00Z\","
        "\"admit_per_s\":1,\"prequeue_opens_at\":\"2099-01-01T00:00:01Z\"}",
        "{\"name\":\"r\",\"stock\":1,\"admit_per_s\":1}",
    };
    static const char *const field[] = {"draw",        "starts_at",         "admit_per_s",
                                        "admit_per_s", "prequeue_opens_at", "admission"};
    char resp[1024];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int status =
            harness_http(sys.port, "POST", "/api/v1/items", TOKEN, bad[i], resp, sizeof(resp));
        cr_assert_eq(status, 400, "%s: %d %s", bad[i], status, resp);
        cr_assert(strstr(resp, field[i]), "%s names %s: %s", bad[i], field[i], resp);
    }
    /* Before the queue opens: 409 with the times. */
    char pq[RFC3339_MAX], more[128];
    snprintf(more, sizeof(more), "\"admit_per_s\":1,\"prequeue_opens_at\":\"%s\"",
             when(clock_wall_ms() + 30000, pq));
    int64_t item = create_room(5, 60000, more);
    cr_assert_eq(join_on(sys.port, item, 1, &o), 409);
    cr_assert_str_eq(str(o, "error"), "not_started");
    cr_assert_str_eq(str(o, "prequeue_opens_at"), pq);
    json_decref(o);
    cr_assert_eq(poll_on(sys.port, item, 1, &o), 404, "not in the queue");
    cr_assert_str_eq(str(o, "error"), "not_in_queue");
    json_decref(o);
}

/* --- two instances, 16 pollers a buyer ------------------------------------------- */

enum { BUYERS = 10, POLLERS = 16, STOCK = 8 };

typedef struct poller {
    int ports[2];
    int64_t item, user;
    int which;
    char token[ROOM_TOKEN_MAX];
    int status; /* a purchase's */
} poller;

/* Polls (on both instances by turns) until admitted; keeps the token. */
static void *poll_until_admitted(void *arg)
{
    poller *p = arg;
    int64_t until = clock_mono_ms() + 15000;
    for (int i = p->which; clock_mono_ms() < until; i++) {
        json_t *o;
        int status = poll_on(p->ports[i % 2], p->item, p->user, &o);
        const char *state = json_string_value(json_object_get(o, "state"));
        if (status == 200 && state && strcmp(state, "admitted") == 0) {
            snprintf(p->token, sizeof(p->token), "%s",
                     json_string_value(json_object_get(o, "admission")));
            json_decref(o);
            return NULL;
        }
        json_decref(o);
        usleep(20 * 1000);
    }
    return NULL;
}

static void *buy_with_token(void *arg)
{
    poller *p = arg;
    json_t *o;
    p->status = buy_on(p->ports[p->which % 2], p->item, p->user, p->token, &o);
    json_decref(o);
    return NULL;
}

/* A purchase with the token in the X-Admission header. */
static int buy_with_header(int port, int64_t item, int64_t user, const char *tok)
{
    char req[1024], resp[2048], body[64];
    int n = snprintf(body, sizeof(body), "{\"user_id\":%" PRId64 "}", user);
    int len = snprintf(req, sizeof(req),
                       "POST /api/v1/items/%" PRId64 "/purchase HTTP/1.1\r\nHost: x\r\n"
                       "X-Admission: %s\r\nContent-Type: application/json\r\n"
                       "Content-Length: %d\r\nConnection: close\r\n\r\n%s",
                       item, tok, n, body);
    return harness_raw(port, req, (size_t)len, 5000, resp, sizeof(resp));
}

Test(room, two_instances_admit_each_buyer_once_and_sell_the_stock_exactly)
{
    int port_b = 0;
    pid_t second = harness_start_server(&port_b, env, "e2e-room-b-server.log");
    int64_t item = create_room(STOCK, 1500, "\"admit_per_s\":30,\"admit_burst\":0");
    json_t *o;
    for (int64_t u = 1; u <= BUYERS; u++) {
        cr_assert_eq(join_on(u % 2 ? sys.port : port_b, item, u, &o), 200);
        json_decref(o);
    }
    wait_until_started(item);
    static poller p[BUYERS][POLLERS];
    pthread_t t[BUYERS][POLLERS];
    for (int b = 0; b < BUYERS; b++)
        for (int k = 0; k < POLLERS; k++) {
            p[b][k] = (poller){{sys.port, port_b}, item, b + 1, k, "", 0};
            cr_assert_eq(pthread_create(&t[b][k], NULL, poll_until_admitted, &p[b][k]), 0);
        }
    for (int b = 0; b < BUYERS; b++)
        for (int k = 0; k < POLLERS; k++)
            pthread_join(t[b][k], NULL);
    for (int b = 0; b < BUYERS; b++)
        for (int k = 0; k < POLLERS; k++) {
            cr_assert_neq(p[b][k].token[0], '\0', "buyer %d poller %d never admitted", b + 1, k);
            cr_assert_str_eq(p[b][k].token, p[b][0].token, "one admission, one token");
        }
    json_t *v = item_view(item);
    cr_assert_eq(num(json_object_get(v, "room"), "admitted"), BUYERS, "each admitted once");
    json_decref(v);

    /* Buyer 1 with the header; then every buyer twice at once, on both
     * instances: the limit (1) and the stock (8) hold. */
    int sold = buy_with_header(sys.port, item, 1, p[0][0].token) == 202;
    cr_assert_eq(sold, 1);
    for (int b = 0; b < BUYERS; b++)
        for (int k = 0; k < 2; k++)
            cr_assert_eq(pthread_create(&t[b][k], NULL, buy_with_token, &p[b][k]), 0);
    int per_buyer[BUYERS] = {1};
    for (int b = 0; b < BUYERS; b++)
        for (int k = 0; k < 2; k++) {
            pthread_join(t[b][k], NULL);
            /* 409 limit_reached or sold_out, 429 in_progress (the order lock). */
            cr_assert(p[b][k].status == 202 || p[b][k].status == 409 || p[b][k].status == 429, "%d",
                      p[b][k].status);
            per_buyer[b] += p[b][k].status == 202;
            sold += p[b][k].status == 202;
        }
    for (int b = 0; b < BUYERS; b++)
        cr_assert_leq(per_buyer[b], 1, "buyer %d above the limit", b + 1);
    cr_assert_eq(sold, STOCK);
    v = item_view(item);
    cr_assert_eq(num(v, "sold"), STOCK);
    cr_assert_eq(num(v, "remaining"), 0);
    json_decref(v);

    char metrics[65536], series[96];
    cr_assert_eq(harness_http(sys.port, "GET", "/metrics", TOKEN, NULL, metrics, sizeof(metrics)),
                 200);
    snprintf(series, sizeof(series), "seckill_room_joined{item=\"%" PRId64 "\"}", item);
    cr_assert_eq(harness_metric(metrics, series), BUYERS, "%s", series);
    snprintf(series, sizeof(series), "seckill_room_admitted{item=\"%" PRId64 "\"}", item);
    cr_assert_eq(harness_metric(metrics, series), BUYERS);
    /* A purchase ends its buyer's active admission (on the pool, just after
     * the answer). */
    snprintf(series, sizeof(series), "seckill_room_active{item=\"%" PRId64 "\"}", item);
    for (int i = 0; i < 20 && harness_metric(metrics, series) != BUYERS - STOCK; i++) {
        usleep(100 * 1000);
        harness_http(sys.port, "GET", "/metrics", TOKEN, NULL, metrics, sizeof(metrics));
    }
    cr_assert_eq(harness_metric(metrics, series), BUYERS - STOCK);
    harness_stop_clean(&second, "server B");
}

Test(room, a_redis_that_lost_everything_keeps_the_room_its_secret_and_its_refusals)
{
    int64_t item = create_room(5, 1500, "\"admit_per_s\":1000");
    json_t *v = item_view(item), *o;
    char commitment[ROOM_HEX_LEN + 1];
    snprintf(commitment, sizeof(commitment), "%s", str(json_object_get(v, "room"), "commitment"));
    json_decref(v);
    redisContext *r = harness_redis();
    freeReplyObject(redisCommand(r, "FLUSHALL"));
    redisFree(r);
    char out[8192];
    char *args[] = {"reconcile", "--rebuild", NULL};
    cr_assert_eq(harness_admin(args, out, sizeof(out)), 0, "%s", out);

    /* The rebuilt state is a room's: no sale without an admission. */
    wait_until_started(item);
    cr_assert_eq(buy_on(sys.port, item, 1, NULL, &o), 403);
    cr_assert_str_eq(str(o, "error"), "admission_missing");
    json_decref(o);
    /* The room comes back from PostgreSQL with its secret. */
    cr_assert_eq(join_on(sys.port, item, 1, &o), 200);
    json_decref(o);
    v = item_view(item);
    cr_assert_str_eq(str(json_object_get(v, "room"), "commitment"), commitment);
    json_decref(v);
    char tok[ROOM_TOKEN_MAX];
    wait_admitted(item, 1, tok, sizeof(tok), 5000);
    cr_assert_eq(buy_on(sys.port, item, 1, tok, &o), 202);
    json_decref(o);
}

/* A thread's joins: buyers first.. first+n-1, then the first again. */
typedef struct joiner {
    int64_t item, first;
    int n;
    int status[26];
    char entrant[26][ROOM_HEX_LEN + 1];
    int64_t place[26]; /* 0: null */
    char state[26][16];
} joiner;

static void *join_many(void *arg)
{
    joiner *jn = arg;
    for (int i = 0; i <= jn->n; i++) {
        json_t *o;
        jn->status[i] = join_on(sys.port, jn->item, jn->first + (i < jn->n ? i : 0), &o);
        json_t *place = json_object_get(o, "place");
        jn->place[i] = json_is_integer(place) ? json_integer_value(place) : 0;
        snprintf(jn->entrant[i], sizeof(jn->entrant[i]), "%s",
                 json_string_value(json_object_get(o, "entrant")) ?: "");
        snprintf(jn->state[i], sizeof(jn->state[i]), "%s",
                 json_string_value(json_object_get(o, "state")) ?: "");
        json_decref(o);
    }
    return NULL;
}

/* Runs threads joiners of each buyers at once (so that they share the
 * batches of room_joins.h), buyers from base + 1000 * thread + 1. */
static void join_at_once(int64_t item, joiner *jn, int threads, int each, int64_t base)
{
    pthread_t t[16];
    for (int i = 0; i < threads; i++) {
        jn[i] = (joiner){.item = item, .first = base + 1000 * i + 1, .n = each};
        cr_assert_eq(pthread_create(&t[i], NULL, join_many, &jn[i]), 0);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < threads; i++)
        for (int k = 0; k <= each; k++)
            cr_assert_eq(jn[i].status[k], 200, "join %d of thread %d", k, i);
}

Test(room, joins_at_once_are_counted_once_and_placed_exactly)
{
    enum { THREADS = 16, EACH = 25, LATE = 5 };
    int64_t item = create_room(10, 5000, "\"admit_per_s\":0.001,\"admit_burst\":0");
    static joiner jn[THREADS];
    join_at_once(item, jn, THREADS, EACH, 0);
    json_t *v = item_view(item);
    cr_assert_gt(num(v, "starts_in_ms"), 0, "the joins took until the start: a machine too busy");
    cr_assert_eq(num(json_object_get(v, "room"), "joined"), THREADS * EACH);
    json_decref(v);
    for (int i = 0; i < THREADS; i++) {
        cr_assert_str_eq(jn[i].entrant[EACH], jn[i].entrant[0], "joining again: the same entrant");
        for (int k = 0; k <= EACH; k++)
            cr_assert_str_eq(jn[i].state[k], "prequeue");
    }

    /* The published order holds every pre-start joiner once, in score order. */
    wait_until_started(item);
    char path[128];
    json_t *o;
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/queue/audit?limit=1000", item);
    cr_assert_eq(call(sys.port, "GET", path, NULL, &o), 200);
    unsigned char k[ROOM_SECRET_LEN];
    cr_assert_eq(digest_unhex(str(o, "secret"), k, sizeof(k)), 0);
    json_t *list = json_object_get(o, "entrants");
    cr_assert_eq(json_array_size(list), THREADS * EACH);
    double last = -1;
    for (size_t i = 0; i < json_array_size(list); i++) {
        double score = room_score(k, str(json_array_get(list, i), "entrant"));
        cr_assert_gt(score, last, "each entrant once, in the scores' order");
        last = score;
    }
    json_decref(o);

    /* Late joiners at once: each a place of its own behind them all, kept
     * when joining again. */
    static joiner late[THREADS];
    join_at_once(item, late, THREADS, LATE, 500);
    char seen[THREADS * LATE + 1] = {0};
    for (int i = 0; i < THREADS; i++) {
        cr_assert_eq(late[i].place[LATE], late[i].place[0], "joining again: the same place");
        for (int j = 0; j < LATE; j++) {
            int64_t behind = late[i].place[j] - THREADS * EACH;
            cr_assert(behind >= 1 && behind <= THREADS * LATE, "place %" PRId64, late[i].place[j]);
            cr_assert_not(seen[behind], "place %" PRId64 " given twice", late[i].place[j]);
            seen[behind] = 1;
        }
    }
    v = item_view(item);
    cr_assert_eq(num(json_object_get(v, "room"), "joined"), THREADS * (EACH + LATE));
    json_decref(v);
}

/* Joins racing the reveal: fresh buyers joined one after another until
 * *stop, each with the time it was sent and whether it was placed before
 * the start (state "prequeue"). */
typedef struct racer {
    int64_t item, first;
    const volatile int *stop;
    int n;
    int64_t sent_ms[2000];
    int prestart[2000];
} racer;

static void *race_joins(void *arg)
{
    racer *r = arg;
    for (r->n = 0; r->n < 2000 && !*r->stop; r->n++) {
        json_t *o;
        usleep(2000); /* a few hundred before the start, and more after */
        r->sent_ms[r->n] = clock_mono_ms();
        cr_assert_eq(join_on(sys.port, r->item, r->first + r->n, &o), 200);
        r->prestart[r->n] = strcmp(str(o, "state"), "prequeue") == 0;
        json_decref(o);
    }
    return NULL;
}

/* Polls the item's view until it shows the secret; when it was received. */
static int64_t wait_revealed(int64_t item)
{
    for (int64_t until = clock_mono_ms() + 8000; clock_mono_ms() < until; usleep(10 * 1000)) {
        json_t *v = item_view(item);
        int shown = json_is_string(json_object_get(json_object_get(v, "room"), "secret"));
        json_decref(v);
        if (shown)
            return clock_mono_ms();
    }
    cr_assert_fail("the secret was never shown");
    return 0;
}

/* The entrants the audit lists, over its pages (of 200: a page of 1,000
 * is longer than call()'s buffer). */
static int64_t audit_size(int64_t item)
{
    int64_t n = 0;
    for (json_t *next = NULL;;) {
        char path[128];
        json_t *o;
        snprintf(path, sizeof(path),
                 "/api/v1/items/%" PRId64 "/queue/audit?limit=200&after=%" PRId64, item, n);
        cr_assert_eq(call(sys.port, "GET", path, NULL, &o), 200);
        n += (int64_t)json_array_size(json_object_get(o, "entrants"));
        next = json_object_get(o, "next_after");
        int more = json_is_integer(next);
        json_decref(o);
        if (!more)
            return n;
    }
}

Test(room, the_secret_shows_once_the_rooms_node_started_and_no_join_is_pre_start_after)
{
    enum { RACERS = 3 };
    int64_t item = create_room(10, 1200, "\"admit_per_s\":0.001,\"admit_burst\":0");
    redisContext *c = harness_redis();
    char room[KEYS_MAX];
    keys_room(room, sizeof(room), item, NULL);
    cr_assert_eq(harness_redis_int(c, "EXISTS", room), 1);

    /* Buyers join through the start while the view is watched: no join sent
     * after the secret was seen is placed before the start, and the audit
     * lists exactly those that were. */
    volatile int stop = 0;
    static racer rc[RACERS];
    pthread_t t[RACERS];
    for (int i = 0; i < RACERS; i++) {
        rc[i] = (racer){.item = item, .first = 1000 * (i + 1), .stop = &stop};
        cr_assert_eq(pthread_create(&t[i], NULL, race_joins, &rc[i]), 0);
    }
    int64_t revealed = wait_revealed(item);
    usleep(300 * 1000);
    stop = 1;
    int64_t prestart = 0, after = 0;
    for (int i = 0; i < RACERS; i++) {
        pthread_join(t[i], NULL);
        for (int k = 0; k < rc[i].n; k++) {
            prestart += rc[i].prestart[k];
            if (rc[i].sent_ms[k] >= revealed) {
                after++;
                cr_assert_not(rc[i].prestart[k], "a join sent after the reveal placed pre-start");
            }
        }
    }
    cr_assert_gt(prestart, 0, "no join before the start: a machine too busy");
    cr_assert_gt(after, 0, "no join after the reveal");
    cr_assert_eq(audit_size(item), prestart);
    redisReply *r = redisCommand(c, "HGET %s started", room);
    cr_assert(r && r->type == REDIS_REPLY_STRING && strcmp(r->str, "1") == 0);
    freeReplyObject(r);

    /* The flag decides, not the clock: with the room's start moved an hour
     * ahead (as a node whose clock runs behind would see it), a join is
     * still placed behind everyone, and the secret stays shown. */
    r = redisCommand(c, "HGET %s starts", room);
    cr_assert(r && r->type == REDIS_REPLY_STRING);
    char starts[32];
    snprintf(starts, sizeof(starts), "%s", r->str);
    freeReplyObject(r);
    freeReplyObject(redisCommand(c, "HSET %s starts %lld", room,
                                 (long long)harness_redis_now_ms(c) + 3600 * 1000));
    json_t *o;
    cr_assert_eq(join_on(sys.port, item, 99, &o), 200);
    json_decref(o);
    char places[KEYS_MAX], e[ROOM_HEX_LEN + 1];
    keys_room(places, sizeof(places), item, "places");
    json_t *v = item_view(item);
    cr_assert_eq(room_entrant(item, num(v, "round"), 99, e), 0);
    cr_assert(json_is_string(json_object_get(json_object_get(v, "room"), "secret")));
    json_decref(v);
    r = redisCommand(c, "ZSCORE %s %s", places, e);
    cr_assert(r && r->type == REDIS_REPLY_STRING, "the join was placed");
    cr_assert_geq(strtod(r->str, NULL), ROOM_LATE_SCORE, "placed after the pre-start joiners");
    freeReplyObject(r);
    cr_assert_eq(audit_size(item), prestart, "the published order unchanged");
    freeReplyObject(redisCommand(c, "HSET %s starts %s", room, starts));
    redisFree(c);
}

Test(room, the_secret_shows_at_the_start_without_any_buyer)
{
    int64_t item = create_room(10, 1000, "\"admit_per_s\":1");
    json_t *v = item_view(item);
    cr_assert(json_is_null(json_object_get(json_object_get(v, "room"), "secret")));
    json_decref(v);
    char path[96];
    json_t *o;
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/queue/audit", item);
    cr_assert_eq(call(sys.port, "GET", path, NULL, &o), 409, "no audit before the start");
    cr_assert_str_eq(str(o, "error"), "not_started");
    json_decref(o);
    wait_revealed(item); /* by the view alone: nobody joined nor polled */
    cr_assert_eq(call(sys.port, "GET", path, NULL, &o), 200, "the audit answers");
    json_decref(o);
}
