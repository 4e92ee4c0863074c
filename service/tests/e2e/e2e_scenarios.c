/* e2e_scenarios.c: the documents' failure scenarios that need more than one
 * server process (issue 5): two instances sharing Redis and PostgreSQL
 * (cluster), a lock holder killed with SIGKILL (crash_holding_lock), and
 * document 000's GETSET lock leaving its key behind when two racers are made
 * to meet at its expiry (leftover_key). Which strategies each scenario tries
 * and the verdict expected of each come from loadtest/scenarios.json, the
 * table `make experiments SCENARIO=...` runs under load. The fourth, one
 * sweeper per period among three workers (singleton_job), is
 * e2e_worker_sweep's. */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "blast.h"
#include "harness.h"
#include "sale.h"

#define TOKEN "e2e-scenarios-token"

static pid_t pids[2];
static json_t *table; /* loadtest/scenarios.json */

static void kill_leftovers(void)
{
    for (int i = 0; i < 2; i++)
        harness_kill_leftover(&pids[i]);
    json_decref(table);
    table = NULL;
}

/* The strategies of scenario name and the verdict expected of each:
 * {"strategy": "verdict", ...}, owned by the table. */
static json_t *expected_of(const char *name)
{
    json_error_t err;
    if (!table)
        table = json_load_file(SECKILL_SOURCE_DIR "/loadtest/scenarios.json", 0, &err);
    cr_assert_not_null(table, "loadtest/scenarios.json: %s (line %d)", err.text, err.line);
    json_t *expect =
        json_object_get(json_object_get(json_object_get(table, "scenarios"), name), "expect");
    cr_assert(json_is_object(expect) && json_object_size(expect) > 0, "no expectations for %s",
              name);
    return expect;
}

static int is(json_t *verdict, const char *word)
{
    return strcmp(json_string_value(verdict) ? json_string_value(verdict) : "", word) == 0;
}

TestSuite(scenarios, .init = harness_reset_backends, .fini = kill_leftovers, .timeout = 120);

/* Server i on a free port with up to three extra "KEY=VALUE" settings. */
static int start(int i, char *extra1, char *extra2, char *extra3)
{
    char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, extra1, extra2, extra3, NULL};
    char log[64];
    int port;
    snprintf(log, sizeof(log), "e2e-scenarios-server-%d.log", i);
    pids[i] = harness_start_server(&port, env, log);
    return port;
}

static int buy(int port, const char *strategy, int64_t item, int delay_ms, const char *extra)
{
    char path[192], resp[512];
    snprintf(path, sizeof(path), "/api/v1/experiments/%s/purchase?item=%" PRId64 "&delay_ms=%d%s",
             strategy, item, delay_ms, extra ? extra : "");
    return harness_http(port, "GET", path, NULL, NULL, resp, sizeof(resp));
}

static long long lock_pttl(const char *strategy, int64_t item)
{
    char key[96];
    snprintf(key, sizeof(key), "{item:%" PRId64 "}:lab:lock:%s", item, strategy);
    redisContext *c = harness_redis();
    long long ttl = harness_redis_int(c, "PTTL", key);
    redisFree(c);
    return ttl;
}

typedef struct storm {
    const char *strategy;
    int64_t item;
    int delay_ms;
    blast_spec spec;
    blast_result res;
    pthread_t thread;
} storm;

static size_t build_buy(void *ctx, size_t index, char *buf, size_t cap)
{
    const storm *s = ctx;
    (void)index;
    return harness_lab_buy_request(buf, cap, s->strategy, s->item, 0, s->delay_ms);
}

static void storm_init(storm *s, int port, const char *strategy, int64_t item, int delay_ms,
                       size_t buyers)
{
    *s = (storm){.strategy = strategy, .item = item, .delay_ms = delay_ms};
    s->spec = (blast_spec){.port = port,
                           .connections = buyers,
                           .requests = buyers,
                           .timeout_ms = 60000,
                           .build = build_buy,
                           .ctx = s};
}

static void *storm_thread(void *arg)
{
    storm *s = arg;
    blast_run(&s->spec, &s->res);
    return NULL;
}

/* --- cluster --- */

#define CLUSTER_STOCK 10
#define CLUSTER_BUYERS 20 /* per instance */

/* CLUSTER_BUYERS buyers on each instance at once; returns the 200s. */
static size_t sell_through_both(const int ports[2], const char *strategy)
{
    int64_t item = sale_create_lab_item(ports[0], TOKEN, "cluster", CLUSTER_STOCK);
    storm s[2];
    for (int i = 0; i < 2; i++) {
        storm_init(&s[i], ports[i], strategy, item, 50, CLUSTER_BUYERS);
        cr_assert_eq(pthread_create(&s[i].thread, NULL, storm_thread, &s[i]), 0);
    }
    size_t sold = 0;
    for (int i = 0; i < 2; i++) {
        pthread_join(s[i].thread, NULL);
        cr_assert_eq(s[i].res.missing, 0, "%s on instance %d: %s", strategy, i, s[i].res.errstr);
        sold += blast_count(&s[i].res, 200);
    }
    cr_expect_eq(harness_lab_audit(ports[0], strategy, item, "sold"), (int64_t)sold,
                 "%s: sales counted", strategy);
    return sold;
}

Test(scenarios, cluster_two_instances_oversell_with_local_mutex_but_not_with_redis_or_the_db)
{
    int ports[2] = {start(0, NULL, NULL, NULL), start(1, NULL, NULL, NULL)};
    const char *strategy;
    json_t *verdict;
    json_object_foreach(expected_of("cluster"), strategy, verdict)
    {
        size_t sold = sell_through_both(ports, strategy);
        /* A strategy that oversells sells each instance's own copy of the stock. */
        size_t want = is(verdict, "oversells") ? 2 * CLUSTER_STOCK : CLUSTER_STOCK;
        cr_expect_eq(sold, want, "%s (%s) on two instances sold %zu of %d", strategy,
                     json_string_value(verdict), sold, CLUSTER_STOCK);
    }
    /* Without lab_faults a crash cannot be asked for, nor a race forced. */
    int64_t item = sale_create_lab_item(ports[0], TOKEN, "no-faults", 1);
    cr_expect_eq(buy(ports[0], "redis_lock_setnx_expire", item, 0, "&crash=after_setnx"), 400);
    cr_expect_eq(buy(ports[0], "redis_lock_getset", item, 0, "&race=first"), 400);
    cr_expect_eq(harness_lab_audit(ports[0], "redis_lock_setnx_expire", item, "lock_keys"), 0);
    for (int i = 0; i < 2; i++)
        harness_stop_clean(&pids[i], "server");
}

/* --- crash_holding_lock --- */

#define CRASH_TTL_MS 1000

/* One purchase on a thread of its own: its answer lands in status. */
typedef struct holder {
    int port;
    const char *strategy;
    int64_t item;
    int delay_ms;
    const char *extra; /* more of the query, as buy()'s */
    int status;
    pthread_t thread;
} holder;

static void *hold(void *arg)
{
    holder *h = arg;
    h->status = buy(h->port, h->strategy, h->item, h->delay_ms, h->extra);
    return NULL;
}

static void hold_start(holder *h)
{
    cr_assert_eq(pthread_create(&h->thread, NULL, hold, h), 0);
}

#define CRASH_ENV                                                                                  \
    "SECKILL_LAB_LOCK_TTL_MS=1000", "SECKILL_LAB_LOCK_WAIT_MS=300", "SECKILL_LAB_FAULTS=true"

/* A lock stuck for good: the victim dies right after its SETNX won, no
 * EXPIRE ever comes, and only a DEL by hand frees the item. */
static void crash_stuck(int keeper, const char *s)
{
    int64_t item = sale_create_lab_item(keeper, TOKEN, "crash", 5);
    int victim_port = start(1, CRASH_ENV);
    cr_expect_leq(buy(victim_port, s, item, 0, "&crash=after_setnx"), 0, "the victim answered");
    int st = harness_stop(pids[1], 0);
    pids[1] = 0;
    cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the victim did not die by SIGKILL");
    cr_expect_eq(lock_pttl(s, item), -1, "the lock key has a TTL after all");
    cr_expect_eq(buy(keeper, s, item, 0, NULL), 429);
    harness_sleep_ms(CRASH_TTL_MS + 300);
    cr_expect_eq(buy(keeper, s, item, 0, NULL), 429, "%s freed itself after the TTL", s);
    cr_expect_eq(harness_lab_audit(keeper, s, item, "lock_keys"), 1);
    redisContext *c = harness_redis();
    char key[96];
    snprintf(key, sizeof(key), "{item:%" PRId64 "}:lab:lock:%s", item, s);
    freeReplyObject(redisCommand(c, "DEL %s", key));
    redisFree(c);
    cr_expect_eq(buy(keeper, s, item, 0, NULL), 200, "a sale once the key is deleted by hand");
}

/* A lock freed by its TTL: the victim holds it (10 s of work) when it is
 * killed; the keeper sells once the TTL has passed, not before. */
static void crash_freed(int keeper, const char *s)
{
    int64_t item = sale_create_lab_item(keeper, TOKEN, "crash", 5);
    int victim = start(1, CRASH_ENV);
    holder h = {.port = victim, .strategy = s, .item = item, .delay_ms = 10000};
    hold_start(&h);
    while (lock_pttl(s, item) == -2)
        harness_sleep_ms(5);
    harness_stop(pids[1], SIGKILL);
    pids[1] = 0;
    pthread_join(h.thread, NULL);
    long long left = lock_pttl(s, item);
    cr_expect(left > 0 && left <= CRASH_TTL_MS, "PTTL %lld after the crash", left);
    if (left > 400)
        cr_expect_eq(buy(keeper, s, item, 0, NULL), 429, "sold while the dead holder's lock held");
    harness_sleep_ms((int)(left > 0 ? left : 0) + 100);
    cr_expect_eq(buy(keeper, s, item, 0, NULL), 200, "not freed after the TTL");
    cr_expect_eq(harness_lab_audit(keeper, s, item, "sold"), 1);
}

Test(scenarios, crash_holding_lock_setnx_expire_is_stuck_for_good_redis_lock_frees_after_its_ttl)
{
    int keeper = start(0, CRASH_ENV);
    const char *strategy;
    json_t *verdict;
    int tried = 0;
    json_object_foreach(expected_of("crash_holding_lock"), strategy, verdict)
    {
        if (is(verdict, "stuck")) {
            crash_stuck(keeper, strategy);
            tried++;
        } else if (strncmp(strategy, "redis_", 6) == 0) {
            cr_expect(is(verdict, "freed"), "%s: verdict %s", strategy, json_string_value(verdict));
            crash_freed(keeper, strategy);
            tried++;
        } /* else a lock outside Redis (ZooKeeper's): e2e_lab_zookeeper's */
    }
    cr_expect_geq(tried, 2, "the table names a stuck lock and a Redis lock freed by its TTL");
    harness_stop_clean(&pids[0], "server");
}

/* --- leftover_key --- */

#define LEFTOVER_TTL_MS 1000

/* The answers of a meeting at expiry, and the lock keys it left. */
typedef struct meeting {
    int holder, first, second;
    int64_t keys;
} meeting;

/* Document 000's story on a new item: a holder takes the lock of strategy
 * and works three TTLs; once its lock has expired (it still works), two
 * racers with 100 ms of work arrive, forced (?race=) to meet at the taking
 * command: the second has looked at the lock before the first takes it,
 * and takes after the first. */
static meeting meet_at_expiry(int port, const char *strategy)
{
    int64_t item = sale_create_lab_item(port, TOKEN, "leftover", 10);
    holder a = {.port = port, .strategy = strategy, .item = item, .delay_ms = 3 * LEFTOVER_TTL_MS};
    hold_start(&a);
    while (lock_pttl(strategy, item) == -2)
        harness_sleep_ms(5);
    harness_sleep_ms(LEFTOVER_TTL_MS + 100);
    holder first = {
        .port = port, .strategy = strategy, .item = item, .delay_ms = 100, .extra = "&race=first"};
    holder second = first;
    second.extra = "&race=second";
    hold_start(&second);
    hold_start(&first);
    pthread_join(first.thread, NULL);
    pthread_join(second.thread, NULL);
    pthread_join(a.thread, NULL);
    return (meeting){a.status, first.status, second.status,
                     harness_lab_audit(port, strategy, item, "lock_keys")};
}

Test(scenarios, leftover_key_the_getset_lock_leaves_its_key_behind_redis_lock_does_not)
{
    /* Expiry well past the wait (000's 200 ms): the loser gives up before
     * the value it wrote expires, so nobody takes it over and deletes it. */
    int port = start(0, "SECKILL_LAB_LOCK_TTL_MS=1000", "SECKILL_LAB_LOCK_WAIT_MS=200",
                     "SECKILL_LAB_FAULTS=true");
    const char *strategy;
    json_t *verdict;
    json_object_foreach(expected_of("leftover_key"), strategy, verdict)
    {
        meeting m = meet_at_expiry(port, strategy);
        cr_expect_eq(m.holder, 200, "%s: the holder whose lock expired", strategy);
        if (is(verdict, "leaves a key")) {
            cr_expect_eq(m.first, 200, "%s: the first racer's GETSET got the expired value: it won",
                         strategy);
            cr_expect_eq(m.second, 429,
                         "%s: the second racer's GETSET got the first's value: it lost (and "
                         "overwrote it)",
                         strategy);
            cr_expect_eq(m.keys, 1, "%s: the winner's unlock found another value", strategy);
        } else {
            cr_expect(is(verdict, "leaves none"), "%s: verdict %s", strategy,
                      json_string_value(verdict));
            cr_expect_eq(m.first, 200, "%s: the first racer's SET NX found the expired lock gone",
                         strategy);
            cr_expect(m.second == 200 || m.second == 429, "%s: second racer: %d", strategy,
                      m.second);
            cr_expect_eq(m.keys, 0, "%s left its key under the same forcing", strategy);
        }
    }
    harness_stop_clean(&pids[0], "server");
}
