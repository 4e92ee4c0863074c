/* e2e_chaos_server.c: a server killed under load, and a server paused
 * (SIGSTOP) while a buyer's lock would expire. The books must balance after
 * each: no reservation without its order, no order without its
 * reservation, no buyer twice. */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "backend.h"
#include "blast.h"
#include "harness.h"
#include "keys.h"

#define TOKEN "chaos-admin-token"

static int port;
static pid_t server_pid, worker_pid;
static char resp[1 << 16];
static char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=chaos", NULL};

static void start_system(void)
{
    harness_reset_backends();
    server_pid = harness_start_server(&port, env, "chaos-server.log");
    worker_pid = harness_start_worker(env, "chaos-worker.log");
}

/* The end of every test: what still runs stops cleanly (the killed server
 * of the first test is gone already). */
static void stop_system(void)
{
    if (server_pid > 0)
        harness_stop_clean(&server_pid, "server");
    harness_stop_clean(&worker_pid, "worker");
}

static void kill_leftovers(void)
{
    harness_kill_leftover(&server_pid);
    harness_kill_leftover(&worker_pid);
}

TestSuite(chaos_server, .init = start_system, .fini = kill_leftovers, .timeout = 300);

static int64_t create_item(int srv_port, int64_t stock)
{
    char body[96];
    int64_t id = 0;
    snprintf(body, sizeof(body), "{\"name\":\"chaos\",\"stock\":%" PRId64 "}", stock);
    cr_assert_eq(harness_http(srv_port, "POST", "/api/v1/items", TOKEN, body, resp, sizeof(resp)),
                 201, "%s", resp);
    cr_assert_eq(sscanf(resp, "{\"id\":%" SCNd64, &id), 1);
    return id;
}

static int buy(int srv_port, int64_t item, int64_t user)
{
    char path[96], body[48];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/purchase", item);
    snprintf(body, sizeof(body), "{\"user_id\":%" PRId64 "}", user);
    return harness_http(srv_port, "POST", path, NULL, body, resp, sizeof(resp));
}

static void wait_drained(void)
{
    int64_t deadline = backend_mono_ms() + 60000;
    for (;;) {
        redisContext *c = harness_redis();
        long long pending = harness_redis_int(c, "HLEN", KEYS_PENDING);
        long long queue = harness_redis_int(c, "LLEN", KEYS_QUEUE);
        redisFree(c);
        if (pending == 0 && queue == 0)
            return;
        cr_assert(backend_mono_ms() < deadline, "not drained: %lld pending", pending);
        usleep(50 * 1000);
    }
}

typedef struct sale {
    int64_t item;
    int64_t *accepted;
    size_t naccepted;
    blast_spec spec;
    blast_result result;
} sale;

static size_t build_purchase(void *ctx, size_t index, char *buf, size_t cap)
{
    sale *s = ctx;
    char body[48];
    int blen = snprintf(body, sizeof(body), "{\"user_id\":%zu}", index + 1);
    int n = snprintf(buf, cap,
                     "POST /api/v1/items/%" PRId64 "/purchase HTTP/1.1\r\nHost: t\r\n"
                     "Content-Length: %d\r\n\r\n%s",
                     s->item, blen, body);
    return n > 0 ? (size_t)n : 0;
}

static void on_purchase(void *ctx, size_t index, int status, const char *body, size_t len)
{
    sale *s = ctx;
    (void)index;
    (void)len;
    const char *id = body ? strstr(body, "\"order_id\":\"") : NULL;
    if (status == 202 && id)
        s->accepted[s->naccepted++] = strtoll(id + 12, NULL, 10);
}

static void *run_sale(void *arg)
{
    sale *s = arg;
    blast_run(&s->spec, &s->result);
    return NULL;
}

Test(chaos_server, a_server_killed_under_load_leaves_no_reservation_without_its_order)
{
    enum { STOCK = 5000, BUYERS = 20000 };
    sale s = {.item = create_item(port, STOCK)};
    s.accepted = calloc(BUYERS, sizeof(int64_t));
    s.spec = (blast_spec){.port = port,
                          .connections = 100,
                          .requests = BUYERS,
                          .timeout_ms = 60000,
                          .build = build_purchase,
                          .on_response = on_purchase,
                          .ctx = &s};
    pthread_t t;
    pthread_create(&t, NULL, run_sale, &s);
    char state[KEYS_MAX];
    keys_item_state(state, sizeof(state), s.item);
    redisContext *c = harness_redis();
    int64_t deadline = backend_mono_ms() + 30000;
    for (;;) {
        redisReply *r = redisCommand(c, "HGET %s stock", state);
        long long left = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : STOCK;
        freeReplyObject(r);
        if (left <= STOCK - 1000)
            break;
        cr_assert(backend_mono_ms() < deadline, "the sale did not start");
        usleep(1000);
    }
    redisFree(c);
    harness_stop(server_pid, SIGKILL);
    server_pid = 0;
    pthread_join(t, NULL);
    cr_log_info("accepted %zu before the kill; %zu answers lost with it", s.naccepted,
                s.result.lost);
    wait_drained();

    /* Every unit Redis counts as sold is an order in PostgreSQL, and every
     * 202 is among them. */
    char *args[] = {"reconcile", NULL};
    cr_expect_eq(harness_admin(args, resp, sizeof(resp)), 0, "%s", resp);
    PGconn *pg = harness_pg();
    char sql[160];
    for (size_t i = 0; i < s.naccepted; i++) {
        snprintf(sql, sizeof(sql), "SELECT count(*) FROM orders WHERE id = %" PRId64,
                 s.accepted[i]);
        cr_assert_eq(harness_pg_int(pg, sql), 1, "accepted order %" PRId64 " was lost",
                     s.accepted[i]);
    }
    snprintf(sql, sizeof(sql),
             "SELECT count(*) - count(DISTINCT user_id) FROM orders WHERE item_id = %" PRId64,
             s.item);
    cr_expect_eq(harness_pg_int(pg, sql), 0, "a buyer got two units");
    PQfinish(pg);
    free(s.accepted);
    stop_system();
}

Test(chaos_server, a_lock_holder_paused_past_its_ttl_cannot_unlock_or_buy_twice)
{
    int64_t item = create_item(port, 10);
    char lock[KEYS_MAX];
    keys_buyer_lock(lock, sizeof(lock), item, 7);
    redisContext *c = harness_redis();
    /* A holder of buyer 7's lock, then paused (a GC pause, SIGSTOP): */
    redisReply *r = redisCommand(c, "SET %s paused-holder NX PX 300", lock);
    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    cr_expect_eq(buy(port, item, 7), 429, "while the lock is held: %s", resp);
    cr_expect(strstr(resp, "in_progress"), "%s", resp);
    usleep(400 * 1000); /* past the TTL: the lock frees itself */
    cr_expect_eq(buy(port, item, 7), 202, "after the TTL: %s", resp);

    /* The paused holder wakes up: its compare-and-delete finds another
     * token (or none) and frees nothing; buying again is refused. */
    r = redisCommand(c, "SET %s second-holder NX PX 5000", lock);
    freeReplyObject(r);
    r = redisCommand(c, "EVAL %s 1 %s paused-holder",
                     "if redis.call('GET', KEYS[1]) == ARGV[1] then "
                     "return redis.call('DEL', KEYS[1]) end return 0",
                     lock);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER);
    cr_expect_eq(r->integer, 0, "the woken holder freed another's lock");
    freeReplyObject(r);
    freeReplyObject(redisCommand(c, "DEL %s", lock));
    redisFree(c);
    cr_expect_eq(buy(port, item, 7), 409, "%s", resp);
    cr_expect(strstr(resp, "already_purchased"), "%s", resp);
    stop_system();
}

Test(chaos_server, a_server_stopped_mid_request_and_resumed_does_not_sell_twice_to_one_buyer)
{
    int64_t item = create_item(port, 10);
    int other_port;
    pid_t other = harness_start_server(&other_port, env, "chaos-server-b.log");
    /* Buyer 9 presses buy on server A, which is frozen (SIGSTOP) before it
     * reads the request; after a while the buyer tries server B. */
    kill(server_pid, SIGSTOP);
    pid_t child = fork();
    if (child == 0) {
        int status = buy(port, item, 9);
        _exit(status == 409 ? 0 : status == 202 ? 2 : 1);
    }
    usleep(300 * 1000);
    cr_expect_eq(buy(other_port, item, 9), 202, "server B: %s", resp);
    kill(server_pid, SIGCONT);
    int status;
    waitpid(child, &status, 0);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "server A, resumed, did not answer 409 already_purchased (exit %d)",
              WEXITSTATUS(status));
    harness_stop_clean(&other, "server B");
    wait_drained();
    PGconn *pg = harness_pg();
    char sql[128];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM orders WHERE item_id = %" PRId64 " AND user_id = 9", item);
    cr_expect_eq(harness_pg_int(pg, sql), 1);
    PQfinish(pg);
    stop_system();
}
