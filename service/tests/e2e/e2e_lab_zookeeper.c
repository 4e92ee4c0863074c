/* e2e_lab_zookeeper.c: the strategy zookeeper_lock against a real ZooKeeper
 * (services.sh zk-start), Redis, PostgreSQL and servers. 50 buyers at once
 * on a stock of 10 with 100 ms of work under the lock sell exactly the
 * stock; a holder killed with SIGKILL keeps its lock only until ZooKeeper
 * expires its session (no TTL), then another server sells; a server frozen
 * past its session makes a new one; a reset deletes the item's lock nodes;
 * without zookeeper_servers the strategy says so; a port taken before
 * ZooKeeper binds it is left for another. */
#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "clock.h"
#include "blast.h"
#include "harness.h"
#include "sale.h"

#define TOKEN "e2e-zk-token"
#define STOCK 10
#define BUYERS 50
#define DELAY_MS 100
/* The session timeout the servers ask for: how long a dead holder's lock
 * outlives it. ZooKeeper (tick 500 ms) grants it as asked. */
#define SESSION_MS 2000
/* What ZooKeeper may add to it: its expiry runs on ticks. */
#define EXPIRY_MARGIN_MS 3000

static char zk_servers[64];
static int port, port_b;
static pid_t server_pid, server_b_pid;

/* A server on a free port that uses the run's ZooKeeper (wait_ms: its
 * lab_lock_wait_ms). */
static pid_t start_server(int *at, int wait_ms, const char *log_name)
{
    char zk[96], session[64], wait[64];
    snprintf(zk, sizeof(zk), "SECKILL_ZOOKEEPER_SERVERS=%s", zk_servers);
    snprintf(session, sizeof(session), "SECKILL_ZOOKEEPER_SESSION_MS=%d", SESSION_MS);
    snprintf(wait, sizeof(wait), "SECKILL_LAB_LOCK_WAIT_MS=%d", wait_ms);
    char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, zk, session, wait, NULL};
    return harness_start_server(at, env, log_name);
}

static void start_all(void)
{
    harness_reset_backends();
    harness_zk_start(zk_servers, sizeof(zk_servers));
    server_pid = start_server(&port, 5000, "e2e-zk-server.log");
}

static void stop_all(void)
{
    harness_kill_leftover(&server_pid);
    harness_kill_leftover(&server_b_pid);
    harness_zk_stop();
}

TestSuite(zookeeper, .init = start_all, .fini = stop_all, .timeout = 120);

static int64_t create_item(int at, int64_t stock)
{
    return sale_create_lab_item(at, TOKEN, "zk", stock);
}

static int buy(int at, int64_t item, int delay_ms, char *resp, size_t cap)
{
    char path[160];
    snprintf(path, sizeof(path),
             "/api/v1/experiments/zookeeper_lock/purchase?item=%" PRId64 "&delay_ms=%d", item,
             delay_ms);
    return harness_http(at, "GET", path, NULL, NULL, resp, cap);
}

/* The audit's number for `field`, as server `at` sees it. */
static int64_t audited(int at, int64_t item, const char *field)
{
    return harness_lab_audit(at, "zookeeper_lock", item, field);
}

/* Waits up to timeout_ms for the item's lock nodes to number `want`.
 * Returns the milliseconds it took, or -1. */
static int64_t await_lock_nodes(int at, int64_t item, int64_t want, int timeout_ms)
{
    int64_t start = clock_mono_ms();
    while (audited(at, item, "lock_keys") != want) {
        if (clock_mono_ms() - start > timeout_ms)
            return -1;
        harness_sleep_ms(20);
    }
    return clock_mono_ms() - start;
}

Test(zookeeper, fifty_buyers_with_the_race_window_open_buy_exactly_the_stock)
{
    int64_t item = create_item(port, STOCK);
    blast_result res = harness_lab_storm(port, "zookeeper_lock", item, BUYERS, DELAY_MS);
    size_t sold = blast_count(&res, 200);
    cr_expect_eq(sold, STOCK, "sold %zu of %d units", sold, STOCK);
    cr_expect_eq(blast_count(&res, 409), BUYERS - STOCK, "200: %zu, 409: %zu, 429: %zu, 503: %zu",
                 sold, blast_count(&res, 409), blast_count(&res, 429), blast_count(&res, 503));
    cr_expect_eq(audited(port, item, "sold"), STOCK);
    cr_expect_eq(audited(port, item, "oversold"), 0);
    cr_expect_eq(audited(port, item, "remaining"), 0);
    cr_expect_eq(audited(port, item, "lock_keys"), 0, "lock nodes left behind");
    harness_stop_clean(&server_pid, "server");
}

typedef struct held {
    int port;
    int64_t item;
    int delay_ms;
    int status;
} held;

static void *buy_in_thread(void *arg)
{
    held *h = arg;
    char resp[256];
    h->status = buy(h->port, h->item, h->delay_ms, resp, sizeof(resp));
    return NULL;
}

Test(zookeeper, a_holder_killed_keeps_its_lock_only_until_its_session_expires)
{
    /* B gives up a wait after 300 ms, so that it can ask while A's lock stands. */
    server_b_pid = start_server(&port_b, 300, "e2e-zk-server-b.log");
    held h = {port, create_item(port, 2), 10000, 0}; /* the longest work asked */
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, buy_in_thread, &h), 0);
    cr_assert_neq(await_lock_nodes(port_b, h.item, 1, 5000), -1, "A never took the lock");

    harness_kill_leftover(&server_pid); /* SIGKILL, in the middle of the work */
    int64_t killed = clock_mono_ms();
    pthread_join(t, NULL);
    cr_expect_neq(h.status, 200, "A answered although it was killed");

    /* No TTL: the dead holder's node stands while its session does. */
    char resp[256];
    int status = buy(port_b, h.item, 0, resp, sizeof(resp));
    cr_expect_eq(status, 429, "B bought while the dead holder's session lived: %d %s", status,
                 resp);
    cr_expect_eq(audited(port_b, h.item, "lock_keys"), 1, "B's node stayed after it gave up");

    int64_t waited = await_lock_nodes(port_b, h.item, 0, SESSION_MS + EXPIRY_MARGIN_MS);
    cr_assert_neq(waited, -1, "the lock node outlived A's session by more than %d ms",
                  EXPIRY_MARGIN_MS);
    int64_t held_for = clock_mono_ms() - killed;
    cr_expect_geq(held_for, SESSION_MS / 2, "the lock went after %" PRId64 " ms only", held_for);
    cr_log_info("the dead holder's lock went %" PRId64 " ms after the kill (session %d ms)",
                held_for, SESSION_MS);
    status = buy(port_b, h.item, 0, resp, sizeof(resp));
    cr_expect_eq(status, 200, "B after A's session expired: %d %s", status, resp);
    cr_expect_eq(audited(port_b, h.item, "sold"), 1);
    cr_expect_eq(audited(port_b, h.item, "lock_keys"), 0);
    harness_stop_clean(&server_b_pid, "server B");
}

Test(zookeeper, a_server_whose_session_expired_makes_a_new_one_and_sells_again)
{
    int64_t item = create_item(port, 5);
    char resp[256];
    cr_assert_eq(buy(port, item, 0, resp, sizeof(resp)), 200, "%s", resp);
    /* Frozen (a pause as of a long GC) past its session: ZooKeeper expires it. */
    harness_freeze(server_pid);
    harness_sleep_ms(SESSION_MS + EXPIRY_MARGIN_MS / 2);
    kill(server_pid, SIGCONT);
    /* The client learns of the expiry when it reconnects: until then 503. */
    int status = 0;
    int64_t deadline = clock_mono_ms() + 10000;
    while ((status = buy(port, item, 0, resp, sizeof(resp))) != 200 && clock_mono_ms() < deadline) {
        cr_expect_eq(status, 503, "%d %s", status, resp);
        harness_sleep_ms(100);
    }
    cr_expect_eq(status, 200, "no sale with a new session: %d %s", status, resp);
    cr_expect_eq(audited(port, item, "sold"), 2);
    cr_expect_eq(audited(port, item, "lock_keys"), 0);
    harness_stop_clean(&server_pid, "server");
}

Test(zookeeper, a_reset_deletes_the_items_lock_nodes)
{
    held h = {port, create_item(port, 2), 1500, 0};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, buy_in_thread, &h), 0);
    cr_assert_neq(await_lock_nodes(port, h.item, 1, 5000), -1, "the lock was never taken");
    char path[96], resp[512];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/reset", h.item);
    cr_assert_eq(harness_http(port, "POST", path, TOKEN, "{\"stock\":3}", resp, sizeof(resp)), 200,
                 "%s", resp);
    cr_expect_eq(audited(port, h.item, "lock_keys"), 0, "the reset left the lock node");
    pthread_join(t, NULL);
    cr_expect_eq(h.status, 200, "the holder's sale");
    cr_expect_eq(buy(port, h.item, 0, resp, sizeof(resp)), 200, "%s", resp);
    cr_expect_eq(audited(port, h.item, "lock_keys"), 0);
    harness_stop_clean(&server_pid, "server");
}

Test(zookeeper, without_zookeeper_servers_the_strategy_answers_503_not_configured)
{
    harness_stop_clean(&server_pid, "server");
    char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, NULL};
    server_pid = harness_start_server(&port, env, "e2e-zk-server-none.log");
    int64_t item = create_item(port, 1);
    char resp[512];
    int status = buy(port, item, 0, resp, sizeof(resp));
    cr_expect_eq(status, 503, "%d %s", status, resp);
    cr_expect(strstr(resp, "\"error\":\"not_configured\"") && strstr(resp, "zookeeper_servers"),
              "%s", resp);
    cr_expect_eq(audited(port, item, "lock_keys"), 0);
    cr_expect_eq(audited(port, item, "remaining"), 1);
    harness_stop_clean(&server_pid, "server");
}

/* services.sh zk-start: the JVM takes seconds to bind the port chosen for it,
 * and another program may take that port meanwhile (a CI run lost a test to
 * it). Such a start is tried again on another port. The port tried first is
 * held here, as the other program would. */
Test(zookeeper_start, a_port_taken_before_zookeeper_binds_it_is_left_for_another)
{
    int holder = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in at = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(at);
    cr_assert(holder >= 0 && bind(holder, (struct sockaddr *)&at, sizeof(at)) == 0 &&
              listen(holder, 1) == 0 && getsockname(holder, (struct sockaddr *)&at, &len) == 0);
    char taken[16], servers[64];
    snprintf(taken, sizeof(taken), "%d", ntohs(at.sin_port));
    setenv("SECKILL_RUN_ZK_PORT", taken, 1);
    harness_zk_start(servers, sizeof(servers));
    unsetenv("SECKILL_RUN_ZK_PORT");
    cr_expect(strcmp(strchr(servers, ':') + 1, taken) != 0, "ZooKeeper at %s, the port held",
              servers);
    harness_zk_stop();
    close(holder);
}
