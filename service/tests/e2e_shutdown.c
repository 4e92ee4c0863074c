/* e2e_shutdown.c: SIGTERM under load. The server stops accepting, answers
 * what is in flight and exits 0; the worker commits or keeps its batch and
 * exits 0; afterwards the books balance and every 202 is persisted once. */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "backend.h"
#include "blast.h"
#include "harness.h"
#include "keys.h"

#define TOKEN "shutdown-admin-token"

static int port;
static pid_t server_pid, worker_pid;
static char resp[1 << 16];
static char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=shutdown", NULL};

static void start_system(void)
{
    harness_reset_backends();
    server_pid = harness_start_server(&port, env, "shutdown-server.log");
    worker_pid = harness_start_worker(env, "shutdown-worker.log");
}

static void kill_leftovers(void)
{
    harness_kill_leftover(&server_pid);
    harness_kill_leftover(&worker_pid);
}

TestSuite(shutdown, .init = start_system, .fini = kill_leftovers, .timeout = 300);

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

static void wait_sold(int64_t item, int64_t units)
{
    char state[KEYS_MAX];
    keys_item_state(state, sizeof(state), item);
    redisContext *c = harness_redis();
    int64_t deadline = backend_mono_ms() + 30000;
    for (;;) {
        redisReply *r = redisCommand(c, "HGET %s initial", state);
        long long initial = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;
        freeReplyObject(r);
        r = redisCommand(c, "HGET %s stock", state);
        long long left = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : initial;
        freeReplyObject(r);
        if (initial - left >= units)
            break;
        cr_assert(backend_mono_ms() < deadline, "the sale did not get going");
        usleep(1000);
    }
    redisFree(c);
}

Test(shutdown, sigterm_under_load_stops_both_cleanly_and_loses_nothing)
{
    enum { STOCK = 20000, BUYERS = 30000 };
    char body[96];
    snprintf(body, sizeof(body), "{\"name\":\"stop\",\"stock\":%d}", STOCK);
    cr_assert_eq(harness_http(port, "POST", "/api/v1/items", TOKEN, body, resp, sizeof(resp)), 201);
    sale s = {0};
    cr_assert_eq(sscanf(resp, "{\"id\":%" SCNd64, &s.item), 1);
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
    wait_sold(s.item, 2000);
    /* Both stop in the middle of the sale: the worker holds a batch, the
     * server has requests in flight. */
    harness_stop_clean(&worker_pid, "worker");
    harness_stop_clean(&server_pid, "server");
    pthread_join(t, NULL);
    cr_log_info("accepted %zu; %zu requests got no answer", s.naccepted, s.result.lost);

    /* A new worker finishes what the old one kept. */
    worker_pid = harness_start_worker(env, "shutdown-worker.log");
    redisContext *c = harness_redis();
    int64_t deadline = backend_mono_ms() + 60000;
    while (harness_redis_int(c, "HLEN", KEYS_PENDING) > 0)
        cr_assert(backend_mono_ms() < deadline, "not drained");
    redisFree(c);
    char *args[] = {"reconcile", NULL};
    cr_expect_eq(harness_admin(args, resp, sizeof(resp)), 0, "%s", resp);
    PGconn *pg = harness_pg();
    char sql[128];
    for (size_t i = 0; i < s.naccepted; i++) {
        snprintf(sql, sizeof(sql), "SELECT count(*) FROM orders WHERE id = %" PRId64,
                 s.accepted[i]);
        cr_assert_eq(harness_pg_int(pg, sql), 1, "accepted order %" PRId64 " was lost",
                     s.accepted[i]);
    }
    PQfinish(pg);
    /* What was in flight got its answer: no request was cut without one. */
    cr_expect_eq(s.result.lost, 0, "%zu requests in flight at the stop got no answer",
                 s.result.lost);
    free(s.accepted);
    harness_stop_clean(&worker_pid, "worker");
}
