/* e2e_access.c: who may call what, on a real server: the shop's scoped
 * credentials (a payments credential pays but creates nothing, orders:read
 * reads but pays nothing, the admin_token of old configs still does it all,
 * both credentials of a rotated pair work, /metrics needs orders:read) and
 * CORS (a preflight from an allowed origin to a buyer's route is answered
 * with what the browser needs; from another origin, or to a shop's route,
 * without any Access-Control-Allow-Origin). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "buyer_token.h"
#include "clock.h"
#include "harness.h"
#include "harness_suite.h"
#include "sale.h"

#define LEGACY "e2e-access-admin-token"
#define A1 "e2e-access-admin-one-0123"
#define A2 "e2e-access-admin-two-0123"
#define P1 "e2e-access-payments-one-0123"
#define P2 "e2e-access-payments-two-0123"
#define R1 "e2e-access-reader-one-0123"
#define SECRET "e2e-access-buyer-token-secret-of-at-least-32-bytes"
#define SHOP "http://shop.test:8081"

static harness_system sys;
static char *env[] = {"SECKILL_ADMIN_TOKEN=" LEGACY,
                      "SECKILL_ADMIN_TOKENS=" A1 "," A2,
                      "SECKILL_PAYMENTS_TOKENS=" P1 ", " P2,
                      "SECKILL_ORDERS_READ_TOKENS=" R1,
                      "SECKILL_BUYER_AUTH=token",
                      "SECKILL_BUYER_TOKEN_SECRET=" SECRET,
                      "SECKILL_CORS_ORIGINS=https://other.test," SHOP,
                      "SECKILL_WORKER_ID=e2e-access",
                      NULL};

HARNESS_SYSTEM_SUITE(scopes, harness_system_start, sys, env, "e2e-access", .timeout = 120);
HARNESS_SYSTEM_SUITE(cors, harness_system_start, sys, env, "e2e-access", .timeout = 120);

static int call(const char *method, const char *path, const char *token, const char *body,
                char *resp, size_t cap)
{
    return harness_http(sys.port, method, path, token, body, resp, cap);
}

/* A buyer's token, valid for an hour. */
static const char *buyer(int64_t user, char *buf, size_t cap)
{
    cr_assert_gt(buyer_token_mint(SECRET, user, clock_wall_s() + 3600, buf, cap), 0);
    return buf;
}

static int64_t create_item(const char *token)
{
    char resp[4096];
    int status = call("POST", "/api/v1/items", token, "{\"name\":\"access\",\"stock\":10}", resp,
                      sizeof(resp));
    cr_assert_eq(status, 201, "create with a credential of scope admin: %d %s", status, resp);
    int64_t id = 0;
    cr_assert_eq(sscanf(resp, "{\"id\":%" SCNd64, &id), 1, "%s", resp);
    return id;
}

/* Buys one unit of item as user (their token) and waits until the order
 * is in PostgreSQL; its id. */
static int64_t persisted_order(int64_t item, int64_t user)
{
    char path[96], resp[1024], tok[BUYER_TOKEN_MAX];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/purchase", item);
    int status = call("POST", path, buyer(user, tok, sizeof(tok)), "{}", resp, sizeof(resp));
    cr_assert_eq(status, 202, "%d %s", status, resp);
    const char *at = strstr(resp, "\"order_id\":\"");
    cr_assert_not_null(at, "%s", resp);
    sale_wait_drained(20000);
    return strtoll(at + strlen("\"order_id\":\""), NULL, 10);
}

/* Asserts a refusal: status and a body that says code and holds `says`. */
static void refused(int status, const char *resp, int want, const char *code, const char *says)
{
    cr_assert_eq(status, want, "%d %s", status, resp);
    char quoted[64];
    snprintf(quoted, sizeof(quoted), "\"error\":\"%s\"", code);
    cr_assert(strstr(resp, quoted), "%s", resp);
    cr_assert(strstr(resp, says), "%s", resp);
}

Test(scopes, a_payments_credential_pays_and_reads_but_changes_no_sale)
{
    char resp[4096], path[96];
    int64_t item = create_item(LEGACY);
    refused(call("POST", "/api/v1/items", P1, "{\"name\":\"x\",\"stock\":1}", resp, sizeof(resp)),
            resp, 403, "forbidden", "scope admin");
    refused(call("POST", "/api/v1/items", NULL, "{\"name\":\"x\",\"stock\":1}", resp, sizeof(resp)),
            resp, 401, "unauthorized", "scope admin");
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/stock", item);
    refused(call("POST", path, P2, "{\"add\":1}", resp, sizeof(resp)), resp, 403, "forbidden",
            "scope admin");
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/purchase", item);
    refused(call("POST", path, P1, "{\"user_id\":5}", resp, sizeof(resp)), resp, 403, "forbidden",
            "buyer token");

    int64_t order = persisted_order(item, 5);
    snprintf(path, sizeof(path), "/api/v1/orders/%" PRId64, order);
    cr_assert_eq(call("GET", path, P1, NULL, resp, sizeof(resp)), 200, "payments reads: %s", resp);
    cr_assert_eq(call("GET", "/api/v1/orders?user_id=5", P2, NULL, resp, sizeof(resp)), 200, "%s",
                 resp);
    snprintf(path, sizeof(path), "/api/v1/orders/%" PRId64 "/cancel", order);
    refused(call("POST", path, P1, "{\"user_id\":5}", resp, sizeof(resp)), resp, 403, "forbidden",
            "scope admin");
    snprintf(path, sizeof(path), "/api/v1/orders/%" PRId64 "/pay", order);
    int status = call("POST", path, P1, NULL, resp, sizeof(resp));
    cr_assert_eq(status, 200, "payments pays: %d %s", status, resp);
    cr_assert(strstr(resp, "\"status\":\"paid\""), "%s", resp);
}

Test(scopes, an_orders_read_credential_reads_every_order_but_pays_none)
{
    char resp[4096], path[96], tok[BUYER_TOKEN_MAX];
    int64_t item = create_item(A1);
    int64_t order = persisted_order(item, 7);
    snprintf(path, sizeof(path), "/api/v1/orders/%" PRId64, order);
    cr_assert_eq(call("GET", path, R1, NULL, resp, sizeof(resp)), 200, "%s", resp);
    cr_assert_eq(call("GET", path, buyer(8, tok, sizeof(tok)), NULL, resp, sizeof(resp)), 404,
                 "another buyer does not see it: %s", resp);
    cr_assert_eq(call("GET", "/api/v1/orders?user_id=7", R1, NULL, resp, sizeof(resp)), 200);
    cr_assert(strstr(resp, "\"user_id\":\"7\""), "%s", resp);
    refused(call("GET", "/api/v1/orders", R1, NULL, resp, sizeof(resp)), resp, 400,
            "invalid_request", "user_id");

    snprintf(path, sizeof(path), "/api/v1/orders/%" PRId64 "/pay", order);
    refused(call("POST", path, R1, NULL, resp, sizeof(resp)), resp, 403, "forbidden",
            "scope payments");
    refused(call("POST", path, buyer(7, tok, sizeof(tok)), NULL, resp, sizeof(resp)), resp, 401,
            "unauthorized", "scope payments");
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/reset", item);
    refused(call("POST", path, R1, "{}", resp, sizeof(resp)), resp, 403, "forbidden",
            "scope admin");
}

Test(scopes, metrics_on_the_http_port_need_orders_read)
{
    char resp[65536];
    refused(call("GET", "/metrics", NULL, NULL, resp, sizeof(resp)), resp, 401, "unauthorized",
            "orders:read");
    refused(call("GET", "/metrics", "wrong-but-long-enough-token", NULL, resp, sizeof(resp)), resp,
            401, "unauthorized", "orders:read");
    const char *allowed[] = {R1, P1, A2, LEGACY};
    for (size_t i = 0; i < 4; i++) {
        cr_assert_eq(call("GET", "/metrics", allowed[i], NULL, resp, sizeof(resp)), 200);
        cr_assert(strstr(resp, "seckill_http_requests_total"), "%s", resp);
    }
}

Test(scopes, the_old_admin_token_and_both_tokens_of_each_pair_still_work)
{
    char resp[4096], path[96];
    const char *admins[] = {LEGACY, A1, A2};
    const char *payers[] = {LEGACY, P1, P2};
    for (int i = 0; i < 3; i++) {
        int64_t item = create_item(admins[i]);
        snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/reset", item);
        cr_assert_eq(call("POST", path, admins[i], "{\"stock\":10}", resp, sizeof(resp)), 200, "%s",
                     resp);
        int64_t order = persisted_order(item, 20 + i);
        snprintf(path, sizeof(path), "/api/v1/orders/%" PRId64 "/pay", order);
        cr_assert_eq(call("POST", path, payers[i], NULL, resp, sizeof(resp)), 200,
                     "credential %d pays: %s", i, resp);
    }
    int64_t item = create_item(LEGACY);
    int64_t order = persisted_order(item, 30);
    snprintf(path, sizeof(path), "/api/v1/orders/%" PRId64 "/cancel", order);
    cr_assert_eq(call("POST", path, LEGACY, "{}", resp, sizeof(resp)), 200,
                 "admin cancels any order: %s", resp);
}

/* One request with extra header lines (each ending in \r\n); the whole
 * answer, head and body, in resp. Returns the status. */
static int raw(const char *method, const char *path, const char *headers, char *resp, size_t cap)
{
    char req[2048];
    int n = snprintf(req, sizeof(req),
                     "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%sContent-Length: 0\r\n"
                     "Connection: close\r\n\r\n",
                     method, path, headers);
    return harness_raw(sys.port, req, (size_t)n, 5000, resp, cap);
}

/* The value of header name in a response's head (case-insensitive name),
 * into out; 0, or -1 when absent. */
static int header(const char *resp, const char *name, char *out, size_t cap)
{
    size_t len = strlen(name);
    for (const char *line = strstr(resp, "\r\n"); line && line[2] != '\r';
         line = strstr(line + 2, "\r\n")) {
        if (strncasecmp(line + 2, name, len) == 0 && line[2 + len] == ':') {
            const char *v = line + 3 + len;
            while (*v == ' ')
                v++;
            size_t vlen = strcspn(v, "\r");
            snprintf(out, cap, "%.*s", (int)vlen, v);
            return 0;
        }
    }
    return -1;
}

#define PREFLIGHT(origin, method)                                                                  \
    "Origin: " origin "\r\nAccess-Control-Request-Method: " method                                 \
    "\r\nAccess-Control-Request-Headers: authorization,content-type\r\n"

Test(cors, a_preflight_from_an_allowed_origin_to_a_buyers_route_says_what_it_may_send)
{
    char resp[4096], v[256];
    const char *routes[][2] = {{"/api/v1/items/1/purchase", "POST"},
                               {"/api/v1/orders/5/cancel", "POST"},
                               {"/api/v1/orders/5", "GET"},
                               {"/api/v1/orders?user_id=5", "GET"}};
    for (size_t i = 0; i < 4; i++) {
        char headers[256];
        snprintf(headers, sizeof(headers), PREFLIGHT(SHOP, "%s"), routes[i][1]);
        cr_assert_eq(raw("OPTIONS", routes[i][0], headers, resp, sizeof(resp)), 204, "%s", resp);
        cr_assert_eq(header(resp, "Access-Control-Allow-Origin", v, sizeof(v)), 0, "%s", resp);
        cr_assert_str_eq(v, SHOP, "the origin itself, never *");
        cr_assert_eq(header(resp, "Access-Control-Allow-Methods", v, sizeof(v)), 0, "%s", resp);
        cr_assert_str_eq(v, routes[i][1]);
        cr_assert_eq(header(resp, "Access-Control-Allow-Headers", v, sizeof(v)), 0, "%s", resp);
        cr_assert(strstr(v, "Authorization") && strstr(v, "Content-Type"), "%s", v);
        cr_assert_eq(header(resp, "Access-Control-Max-Age", v, sizeof(v)), 0, "%s", resp);
        cr_assert_eq(header(resp, "Vary", v, sizeof(v)), 0, "%s", resp);
        cr_assert_str_eq(v, "Origin");
    }
}

Test(cors, another_origin_or_a_shops_route_gets_no_allow_origin_at_all)
{
    char resp[4096], v[256];
    struct {
        const char *path, *headers, *why;
    } cases[] = {
        {"/api/v1/items/1/purchase", PREFLIGHT("http://evil.test:8081", "POST"), "other origin"},
        {"/api/v1/items/1/purchase", PREFLIGHT("http://shop.test", "POST"), "other port"},
        {"/api/v1/items/1/purchase", PREFLIGHT("null", "POST"), "a sandboxed page"},
        {"/api/v1/items", PREFLIGHT(SHOP, "POST"), "create: the shop's"},
        {"/api/v1/items/1/stock", PREFLIGHT(SHOP, "POST"), "restock: the shop's"},
        {"/api/v1/items/1/reset", PREFLIGHT(SHOP, "POST"), "reset: the shop's"},
        {"/api/v1/orders/5/pay", PREFLIGHT(SHOP, "POST"), "pay: the shop's"},
        {"/metrics", PREFLIGHT(SHOP, "GET"), "metrics"},
        {"/api/v1/items/1/purchase", PREFLIGHT(SHOP, "DELETE"), "a method the route refuses"},
        {"/api/v1/items/1/purchase", "Origin: " SHOP "\r\n", "not a preflight"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cr_assert_eq(raw("OPTIONS", cases[i].path, cases[i].headers, resp, sizeof(resp)), 204,
                     "%s: %s", cases[i].why, resp);
        cr_assert_eq(header(resp, "Access-Control-Allow-Origin", v, sizeof(v)), -1, "%s: %s",
                     cases[i].why, resp);
        cr_assert_eq(header(resp, "Access-Control-Allow-Methods", v, sizeof(v)), -1, "%s",
                     cases[i].why);
        cr_assert_eq(header(resp, "Allow", v, sizeof(v)), 0, "%s: OPTIONS says Allow",
                     cases[i].why);
        cr_assert(strstr(v, "OPTIONS"), "%s", v);
    }
    cr_assert_eq(raw("OPTIONS", "/api/v1/nothing", PREFLIGHT(SHOP, "GET"), resp, sizeof(resp)), 404,
                 "%s", resp);
    cr_assert_eq(raw("PUT", "/api/v1/orders/5", "", resp, sizeof(resp)), 405, "%s", resp);
    cr_assert_eq(header(resp, "Allow", v, sizeof(v)), 0, "%s", resp);
    cr_assert_str_eq(v, "GET, HEAD, OPTIONS", "a 405 lists OPTIONS too");
}

Test(cors, answers_of_buyers_routes_to_an_allowed_origin_carry_allow_origin_and_vary)
{
    char resp[4096], v[256], headers[512], tok[BUYER_TOKEN_MAX];
    char path[96];
    int64_t item = create_item(LEGACY);
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64, item);
    cr_assert_eq(raw("GET", path, "Origin: " SHOP "\r\n", resp, sizeof(resp)), 200, "%s", resp);
    cr_assert_eq(header(resp, "Access-Control-Allow-Origin", v, sizeof(v)), 0, "%s", resp);
    cr_assert_str_eq(v, SHOP);
    cr_assert_eq(header(resp, "Vary", v, sizeof(v)), 0, "%s", resp);

    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/purchase", item);
    snprintf(headers, sizeof(headers), "Origin: " SHOP "\r\nAuthorization: Bearer %s\r\n",
             buyer(41, tok, sizeof(tok)));
    cr_assert_eq(raw("POST", path, headers, resp, sizeof(resp)), 202, "%s", resp);
    cr_assert_eq(header(resp, "Access-Control-Allow-Origin", v, sizeof(v)), 0, "%s", resp);
    cr_assert_str_eq(v, SHOP);
    cr_assert_eq(raw("POST", path, "Origin: " SHOP "\r\n", resp, sizeof(resp)), 401, "%s", resp);
    cr_assert_eq(header(resp, "Access-Control-Allow-Origin", v, sizeof(v)), 0,
                 "the page can read why it was refused: %s", resp);

    cr_assert_eq(raw("GET", path + 0, "Origin: http://evil.test\r\n", resp, sizeof(resp)), 405);
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64, item);
    cr_assert_eq(raw("GET", path, "Origin: http://evil.test\r\n", resp, sizeof(resp)), 200);
    cr_assert_eq(header(resp, "Access-Control-Allow-Origin", v, sizeof(v)), -1, "%s", resp);
    cr_assert_eq(header(resp, "Vary", v, sizeof(v)), 0, "caches keep origins apart: %s", resp);

    cr_assert_eq(raw("POST", "/api/v1/reset-nothing", "Origin: " SHOP "\r\n", resp, sizeof(resp)),
                 404);
    cr_assert_eq(raw("GET", "/metrics", "Origin: " SHOP "\r\nAuthorization: Bearer " R1 "\r\n",
                     resp, sizeof(resp)),
                 200);
    cr_assert_eq(header(resp, "Access-Control-Allow-Origin", v, sizeof(v)), -1,
                 "no shop's route answers another origin: %s", resp);
    sale_wait_drained(20000);
}
