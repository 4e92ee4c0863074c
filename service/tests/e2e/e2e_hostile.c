/* e2e_hostile.c: hostile and broken input against a real server: every bad
 * request gets a clear 4xx (or is cut), the server keeps serving real
 * buyers, and nothing is sold by any of it. */
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "clock.h"
#include "harness.h"

#define TOKEN "hostile-admin-token"
#define STOCK 50

static int port;
static pid_t server_pid;
static int64_t item;
static char resp[1 << 16];

static void start_server(void)
{
    harness_reset_backends();
    char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_CONNECTION_TIMEOUT_S=2",
                   "SECKILL_MAX_BODY_BYTES=1024", NULL};
    server_pid = harness_start_server(&port, env, "e2e-hostile.log");
    int status = harness_http(port, "POST", "/api/v1/items", TOKEN,
                              "{\"name\":\"target\",\"stock\":50}", resp, sizeof(resp));
    cr_assert_eq(status, 201, "%s", resp);
    cr_assert_eq(sscanf(resp, "{\"id\":%" SCNd64, &item), 1);
}

/* The end of every test: nothing it sent sold a unit, and the server lives
 * and stops cleanly. */
static void finish(void)
{
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64, item);
    cr_expect_eq(harness_http(port, "GET", path, NULL, NULL, resp, sizeof(resp)), 200);
    cr_expect(strstr(resp, "\"remaining\":50,"), "something was sold: %s", resp);
    harness_stop_clean(&server_pid, "server");
}

static void kill_leftover(void)
{
    harness_kill_leftover(&server_pid);
}

TestSuite(hostile, .init = start_server, .fini = kill_leftover, .timeout = 120);

/* A raw POST to the item's purchase path with this body. */
static int post_raw_body(const char *body, size_t len)
{
    char req[4096];
    int n = snprintf(req, sizeof(req),
                     "POST /api/v1/items/%" PRId64 "/purchase HTTP/1.1\r\nHost: t\r\n"
                     "Connection: close\r\nContent-Length: %zu\r\n\r\n",
                     item, len);
    cr_assert(n > 0 && (size_t)n + len < sizeof(req));
    memcpy(req + n, body, len);
    return harness_raw(port, req, (size_t)n + len, 5000, resp, sizeof(resp));
}

Test(hostile, nul_bytes_control_characters_and_invalid_utf8_in_a_body_get_400)
{
    static const char nul[] = "{\"user_id\":1,\"x\":\"a\0b\"}";
    static const char ctrl[] = "{\"user_id\":1,\"x\":\"a\x01z\"}";
    static const char latin1[] = "{\"user_id\":1,\"x\":\"caf\xe9\"}";
    static const char overlong[] = "{\"user_id\":1,\"x\":\"\xc0\xaf\"}";
    static const char escaped_nul[] = "{\"user_id\":1,\"x\":\"\\u0000\"}";
    const char *bodies[] = {nul, ctrl, latin1, overlong, escaped_nul};
    size_t lens[] = {sizeof(nul) - 1, sizeof(ctrl) - 1, sizeof(latin1) - 1, sizeof(overlong) - 1,
                     sizeof(escaped_nul) - 1};
    for (size_t i = 0; i < 5; i++) {
        cr_expect_eq(post_raw_body(bodies[i], lens[i]), 400, "body %zu: %s", i, resp);
        cr_expect(strstr(resp, "\"error\":\"invalid_request\""), "body %zu: %s", i, resp);
    }
    finish();
}

Test(hostile, deeply_nested_json_gets_400)
{
    enum { DEPTH = 500 };
    char body[2 * DEPTH + 1];
    memset(body, '[', DEPTH);
    memset(body + DEPTH, ']', DEPTH);
    cr_expect_eq(post_raw_body(body, 2 * DEPTH), 400, "%s", resp);
    finish();
}

Test(hostile, a_body_over_the_limit_gets_413)
{
    char body[2048];
    memset(body, ' ', sizeof(body));
    memcpy(body, "{\"user_id\":1}", 13);
    cr_expect_eq(post_raw_body(body, sizeof(body)), 413, "%s", resp);
    cr_expect(strstr(resp, "\"error\":\"payload_too_large\""), "%s", resp);
    finish();
}

Test(hostile, a_chunked_body_over_the_limit_gets_413)
{
    char req[8192];
    int n = snprintf(req, sizeof(req),
                     "POST /api/v1/items/%" PRId64 "/purchase HTTP/1.1\r\nHost: t\r\n"
                     "Connection: close\r\nTransfer-Encoding: chunked\r\n\r\n",
                     item);
    for (int i = 0; i < 3; i++) {
        n += snprintf(req + n, sizeof(req) - (size_t)n, "400\r\n");
        memset(req + n, ' ', 0x400);
        n += 0x400;
        n += snprintf(req + n, sizeof(req) - (size_t)n, "\r\n");
    }
    n += snprintf(req + n, sizeof(req) - (size_t)n, "0\r\n\r\n");
    cr_expect_eq(harness_raw(port, req, (size_t)n, 5000, resp, sizeof(resp)), 413, "%s", resp);
    finish();
}

Test(hostile, a_very_long_url_is_refused_and_the_server_goes_on)
{
    enum { LEN = 200000 };
    char *req = malloc(LEN + 128);
    int n = snprintf(req, 128, "GET /api/v1/items/%" PRId64 "?pad=", item);
    memset(req + n, 'a', LEN);
    n += LEN;
    n += snprintf(req + n, 64, " HTTP/1.1\r\nHost: t\r\n\r\n");
    int status = harness_raw(port, req, (size_t)n, 5000, resp, sizeof(resp));
    free(req);
    cr_expect(status == 414 || status == 431 || status == 0, "long URL answered %d", status);
    cr_expect_eq(harness_http(port, "GET", "/health", NULL, NULL, resp, sizeof(resp)), 200);
    finish();
}

Test(hostile, a_flood_of_headers_is_refused_and_the_server_goes_on)
{
    enum { HEADERS = 5000 };
    char *req = malloc(HEADERS * 32 + 256);
    int n = sprintf(req, "GET /health HTTP/1.1\r\nHost: t\r\n");
    for (int i = 0; i < HEADERS; i++)
        n += sprintf(req + n, "X-Flood-%d: yes\r\n", i);
    n += sprintf(req + n, "\r\n");
    int status = harness_raw(port, req, (size_t)n, 5000, resp, sizeof(resp));
    free(req);
    cr_expect(status == 431 || status == 413 || status == 400 || status == 0,
              "header flood answered %d", status);
    cr_expect_eq(harness_http(port, "GET", "/health", NULL, NULL, resp, sizeof(resp)), 200);
    finish();
}

Test(hostile, garbage_instead_of_http_gets_400_or_is_cut)
{
    static const char junk[] =
        "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 not http at all\r\n\r\n";
    int status = harness_raw(port, junk, sizeof(junk) - 1, 5000, resp, sizeof(resp));
    cr_expect(status == 400 || status == 0, "garbage answered %d", status);
    finish();
}

Test(hostile, unknown_routes_get_404_and_wrong_methods_405_with_allow)
{
    cr_expect_eq(harness_http(port, "GET", "/nope", NULL, NULL, resp, sizeof(resp)), 404);
    cr_expect(strstr(resp, "\"error\":\"not_found\""), "%s", resp);
    cr_expect_eq(harness_http(port, "GET", "/api/v1/items/-1", NULL, NULL, resp, sizeof(resp)),
                 404);
    cr_expect_eq(harness_http(port, "GET", "/api/v1/items/99999999999999999999999", NULL, NULL,
                              resp, sizeof(resp)),
                 404);
    char req[256];
    int n = snprintf(req, sizeof(req),
                     "PATCH /api/v1/items/%" PRId64 " HTTP/1.1\r\nHost: t\r\nConnection: close"
                     "\r\n\r\n",
                     item);
    cr_expect_eq(harness_raw(port, req, (size_t)n, 5000, resp, sizeof(resp)), 405, "%s", resp);
    cr_expect(strstr(resp, "Allow: DELETE, GET, HEAD, OPTIONS"), "%s", resp);
    finish();
}

Test(hostile, negative_zero_and_overflowing_buyers_in_the_query_get_400)
{
    const char *users[] = {"-1", "0", "00", "1e3", "99999999999999999999", "", "1%00"};
    for (size_t i = 0; i < sizeof(users) / sizeof(users[0]); i++) {
        char path[128];
        snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/purchase?user_id=%s", item,
                 users[i]);
        cr_expect_eq(harness_http(port, "POST", path, NULL, NULL, resp, sizeof(resp)), 400,
                     "user_id=%s: %s", users[i], resp);
    }
    finish();
}

/* Opens a connection and sends half a request head, never the rest. */
static int half_open(void)
{
    int fd = harness_connect(port);
    cr_assert(fd >= 0, "connect to port %d", port);
    static const char part[] = "POST /api/v1/items/1/purchase HTTP/1.1\r\nHost: slow\r\nX-A: ";
    cr_assert_eq(send(fd, part, sizeof(part) - 1, MSG_NOSIGNAL), (ssize_t)sizeof(part) - 1);
    return fd;
}

Test(hostile, slowloris_connections_are_cut_while_real_buyers_are_served)
{
    enum { SLOW = 200 };
    int fds[SLOW];
    for (int i = 0; i < SLOW; i++)
        fds[i] = half_open();
    /* A real buyer gets through at once (a 409 for an unknown item is an
     * answer too: what matters is that the server answers). */
    int64_t t0 = clock_mono_ms();
    cr_expect_eq(harness_http(port, "GET", "/health", NULL, NULL, resp, sizeof(resp)), 200);
    /* Served while they are held, not once they are cut (connection_timeout_s
     * is 2 here). */
    cr_expect_lt(clock_mono_ms() - t0, 2000, "a real request waited behind the slow ones");

    /* connection_timeout_s is 2 here: every slow connection is closed soon. */
    int closed = 0;
    int64_t deadline = clock_mono_ms() + 8000;
    for (int i = 0; i < SLOW; i++) {
        struct pollfd p = {.fd = fds[i], .events = POLLIN};
        int64_t left = deadline - clock_mono_ms();
        char buf[512];
        if (left > 0 && poll(&p, 1, (int)left) == 1 && recv(fds[i], buf, sizeof(buf), 0) <= 0)
            closed++;
        else if (p.revents)
            closed++; /* answered (408) and closed, or reset */
        close(fds[i]);
    }
    cr_expect_eq(closed, SLOW, "%d of %d slow connections were still open after 8 s", SLOW - closed,
                 SLOW);
    finish();
}

/* Sends req raw and expects exactly one answer, 400 bad_request, that
 * closes the connection: whatever followed in the stream must not be read as
 * a request of its own (request smuggling behind a proxy). */
static void expect_framing_refused(const char *req, const char *what)
{
    int status = harness_raw(port, req, strlen(req), 5000, resp, sizeof(resp));
    cr_expect_eq(status, 400, "%s answered %d: %s", what, status, resp);
    cr_expect(strstr(resp, "\"error\":\"invalid_request\""), "%s: %s", what, resp);
    cr_expect(strstr(resp, "Connection: close"), "%s left the connection open: %s", what, resp);
    const char *first = strstr(resp, "X-Request-Id:");
    cr_expect(first && !strstr(first + 1, "X-Request-Id:"), "%s: not one answer: %s", what, resp);
}

Test(hostile, two_different_content_lengths_get_400_and_sell_nothing)
{
    char req[512];
    snprintf(req, sizeof(req),
             "POST /api/v1/items/%" PRId64 "/purchase?user_id=7 HTTP/1.1\r\nHost: t\r\n"
             "Content-Length: 14\r\nContent-Length: 5\r\n\r\n{\"user_id\":7}\r\n",
             item);
    expect_framing_refused(req, "two Content-Length headers");
    finish();
}

Test(hostile, content_length_with_transfer_encoding_gets_400)
{
    char req[512];
    snprintf(req, sizeof(req),
             "POST /api/v1/items/%" PRId64 "/purchase?user_id=8 HTTP/1.1\r\nHost: t\r\n"
             "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
             "GET /health HTTP/1.1\r\nHost: t\r\n\r\n",
             item);
    expect_framing_refused(req, "Content-Length with Transfer-Encoding");
    finish();
}

Test(hostile, an_http_1_1_request_without_host_gets_400_and_http_1_0_needs_none)
{
    expect_framing_refused("GET /health HTTP/1.1\r\n\r\n", "HTTP/1.1 without Host");
    cr_expect_eq(harness_raw(port, "GET /health HTTP/1.0\r\n\r\n", 24, 5000, resp, sizeof(resp)),
                 200, "%s", resp);
    finish();
}

Test(hostile, a_header_name_with_a_space_gets_400)
{
    expect_framing_refused("GET /health HTTP/1.1\r\nHost: t\r\nBad Header: x\r\n\r\n",
                           "a header name with a space");
    finish();
}
