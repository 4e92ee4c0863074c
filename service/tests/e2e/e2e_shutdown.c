/* e2e_shutdown.c: SIGTERM under load. The server stops accepting, answers
 * what is in flight and exits 0; the worker commits or keeps its batch and
 * exits 0; afterwards the books balance and every 202 is persisted once. */
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

#include "backend.h"
#include "blast.h"
#include "harness.h"
#include "sale.h"
#include "keys.h"

#define TOKEN "shutdown-admin-token"

static harness_system sys;
static char resp[1 << 16];
static char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=shutdown", NULL};

static void start_system(void)
{
    harness_system_start(&sys, env, "shutdown");
}

static void kill_leftovers(void)
{
    harness_system_kill(&sys);
}

TestSuite(shutdown, .init = start_system, .fini = kill_leftovers, .timeout = 300);

Test(shutdown, sigterm_under_load_stops_both_cleanly_and_loses_nothing)
{
    enum { STOCK = 20000, BUYERS = 30000 };
    sale s;
    sale_init(&s, sys.port, sale_create_item(sys.port, TOKEN, "stop", STOCK), BUYERS, 100, 1,
              BUYERS);
    s.spec.timeout_ms = 60000;
    sale_start(&s);
    sale_wait_sold(s.item, 2000, 30000);
    /* Both stop in the middle of the sale: the worker holds a batch, the
     * server has requests in flight. */
    harness_stop_clean(&sys.worker, "worker");
    harness_stop_clean(&sys.server, "server");
    sale_join(&s);
    cr_log_info("accepted %zu; %zu requests got no answer", s.naccepted, s.result.lost);

    /* A new worker finishes what the old one kept. */
    sys.worker = harness_start_worker(env, "shutdown-worker.log");
    sale_wait_drained(60000);
    char *args[] = {"reconcile", NULL};
    cr_expect_eq(harness_admin(args, resp, sizeof(resp)), 0, "%s", resp);
    PGconn *pg = harness_pg();
    sale_assert_persisted(&s, pg);
    PQfinish(pg);
    /* What was in flight got its answer: no request was cut without one. */
    cr_expect_eq(s.result.lost, 0, "%zu requests in flight at the stop got no answer",
                 s.result.lost);
    sale_free(&s);
    harness_stop_clean(&sys.worker, "worker");
}

/* Reads one response from fd into buf (headers and a Content-Length body).
 * Returns its status, or 0 when the connection ended or stalled first. */
static int read_response(int fd, char *buf, size_t cap)
{
    size_t len = 0;
    for (;;) {
        buf[len] = '\0';
        char *end = strstr(buf, "\r\n\r\n");
        const char *cl = strcasestr(buf, "\r\nContent-Length:");
        if (end && cl && len >= (size_t)(end + 4 - buf) + strtoul(cl + 17, NULL, 10))
            return atoi(buf + 9);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (len + 1 >= cap || poll(&p, 1, 5000) != 1)
            return 0;
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n <= 0)
            return 0;
        len += (size_t)n;
    }
}

/* The race a drain must not lose: a client sends its next request on a
 * keep-alive connection that the server, stopping, sees idle. The request
 * still gets its answer, with Connection: close. */
Test(shutdown, a_request_on_an_idle_keepalive_connection_is_answered_while_stopping)
{
    static const char req[] = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
    int fd = harness_connect(sys.port);
    cr_assert(fd >= 0, "connect to port %d", sys.port);
    cr_assert_eq(write(fd, req, sizeof(req) - 1), (ssize_t)sizeof(req) - 1);
    cr_assert_eq(read_response(fd, resp, sizeof(resp)), 200, "%s", resp);

    /* The connection is idle; the server starts stopping; then the buyer's
     * next request arrives on it. */
    cr_assert_eq(kill(sys.server, SIGTERM), 0);
    harness_sleep_ms(300);
    cr_assert_eq(write(fd, req, sizeof(req) - 1), (ssize_t)sizeof(req) - 1);
    cr_expect_eq(read_response(fd, resp, sizeof(resp)), 200,
                 "the request sent while stopping got no answer: '%s'", resp);
    cr_expect(strcasestr(resp, "Connection: close") != NULL, "%s", resp);
    close(fd);

    int status = 0;
    cr_assert_eq(waitpid(sys.server, &status, 0), sys.server);
    sys.server = 0;
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "server status %d", status);
    harness_stop_clean(&sys.worker, "worker");
}
