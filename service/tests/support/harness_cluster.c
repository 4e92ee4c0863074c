/* harness_cluster.c: a server and a worker on the Redis Cluster of 3 masters
 * and 3 replicas that services.sh cluster-start makes (harness_cluster_start):
 * one cluster for a whole suite, handed to its tests through the
 * environment, emptied for each test, and the binaries pointed at it by the
 * config key redis_cluster. */
#include "harness.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "backend.h"
#include "clock.h"
#include "keys.h"

/* What the runner hands the tests: the seeds, or why there are none. */
#define SEEDS_ENV "SECKILL_TEST_CLUSTER_SEEDS"
#define SEEDS_ERROR_ENV "SECKILL_TEST_CLUSTER_ERROR"

static pid_t runner; /* the process that started the suite's cluster */

/* At the runner's exit; not at a test's (the tests are its children). */
static void stop_shared(void)
{
    if (getpid() == runner)
        harness_cluster_stop();
}

int harness_cluster_start_shared(void)
{
    /* First: a cluster that started in part goes too. */
    runner = getpid();
    atexit(stop_shared);
    char seeds[1024];
    if (harness_cluster_start(seeds, sizeof(seeds)) == 0) {
        setenv(SEEDS_ENV, seeds, 1);
        return 0;
    }
    fprintf(stderr, "harness: the Redis Cluster did not start\n");
    setenv(SEEDS_ERROR_ENV,
           "services.sh cluster-start failed (logs: $SECKILL_TEST_DIR/cluster/node-*/redis.log, "
           "create.log)",
           1);
    unsetenv(SEEDS_ENV);
    return -1;
}

const char *harness_cluster_seeds(void)
{
    const char *seeds = getenv(SEEDS_ENV), *why = getenv(SEEDS_ERROR_ENV);
    cr_assert(seeds && *seeds, "the suite's Redis Cluster did not start: %s",
              why ? why : "no HARNESS_CLUSTER_SUITE() in the test file");
    return seeds;
}

void harness_cluster_config(config *cfg)
{
    harness_config(cfg);
    free(cfg->redis_cluster);
    cfg->redis_cluster = strdup(harness_cluster_seeds());
    cr_assert_not_null(cfg->redis_cluster);
}

/* The slot map from the seeds (a seed that is down is skipped), or NULL
 * with err. */
static redis_cluster_map *fetch_map(int timeout_ms, char *err, size_t errlen)
{
    const char *text = harness_cluster_seeds();
    redis_cluster_node seeds[16];
    int n = redis_cluster_seeds_parse(text, seeds, 16, err, errlen);
    cr_assert_gt(n, 0, "seeds '%s': %s", text, err);
    return backend_redis_cluster_map(seeds, (size_t)n, timeout_ms, NULL, err, errlen);
}

redis_cluster_map *harness_cluster_map(void)
{
    char err[1024];
    redis_cluster_map *map = fetch_map(2000, err, sizeof(err));
    cr_assert_not_null(map, "the slot map: %s", err);
    cr_assert_eq(redis_cluster_map_unowned(map), 0, "slots without a master");
    return map;
}

redisContext *harness_cluster_connect(const redis_cluster_node *n)
{
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout(n->host, n->port, tv);
    cr_assert(c && !c->err, "connect to %s:%d: %s", n->host, n->port, c ? c->errstr : "no memory");
    redisSetTimeout(c, tv);
    return c;
}

long long harness_cluster_int(const redis_cluster_map *map, const char *cmd, const char *key)
{
    const redis_cluster_node *n = redis_cluster_map_master_of_key(map, key, strlen(key));
    cr_assert_not_null(n, "no master serves %s", key);
    redisContext *c = harness_cluster_connect(n);
    long long v = harness_redis_int(c, cmd, key);
    redisFree(c);
    return v;
}

void harness_cluster_reset(void)
{
    redis_cluster_map *map = harness_cluster_map();
    for (size_t i = 0; i < redis_cluster_map_masters(map); i++) {
        const redis_cluster_node *n = redis_cluster_map_master_at(map, i);
        redisContext *c = harness_cluster_connect(n);
        redisReply *r = redisCommand(c, "FLUSHALL");
        cr_assert(r && r->type == REDIS_REPLY_STATUS, "FLUSHALL on %s:%d: %s", n->host, n->port,
                  r && r->type == REDIS_REPLY_ERROR ? r->str : c->errstr);
        freeReplyObject(r);
        redisFree(c);
    }
    redis_cluster_map_free(map);
    harness_reset_backends();
}

/* The environment of a binary on the cluster: extra_env, then redis_cluster
 * (the seeds; static storage: one suite's cluster). */
static void cluster_env(char **env, size_t cap, char *const extra_env[])
{
    static char seeds_env[1100];
    snprintf(seeds_env, sizeof(seeds_env), "SECKILL_REDIS_CLUSTER=%s", harness_cluster_seeds());
    size_t n = 0;
    for (char *const *e = extra_env; e && *e && n + 2 < cap; e++)
        env[n++] = *e;
    env[n++] = seeds_env;
    env[n] = NULL;
}

pid_t harness_cluster_start_server(int *port, char *const extra_env[], const char *log_name)
{
    char *env[32];
    cluster_env(env, 32, extra_env);
    return harness_start_server(port, env, log_name);
}

typedef struct cluster_worker_up {
    const char *id;
    char alive[KEYS_MAX]; /* its heartbeat's key */
    redis_cluster_map *map;
    redisContext *single; /* the run's single Redis */
} cluster_worker_up;

/* Up means its heartbeat is on the cluster: it connected, after it set up
 * its signals, so a stop from now on is a clean stop. A heartbeat on the
 * run's single Redis instead says the worker ignored redis_cluster. */
static int cluster_worker_ready(void *ctx, char *why, size_t cap)
{
    cluster_worker_up *w = ctx;
    if (harness_cluster_int(w->map, "EXISTS", w->alive) == 1)
        return 1;
    if (harness_redis_int(w->single, "EXISTS", w->alive) == 0)
        return 0;
    snprintf(why, cap,
             "wrote its heartbeat %s to the single Redis, not to the cluster it was given "
             "(redis_cluster=%s): it does not use the cluster",
             w->alive, harness_cluster_seeds());
    return -1;
}

pid_t harness_cluster_start_worker(char *const extra_env[], const char *log_name)
{
    char *env[32];
    cluster_env(env, 32, extra_env);
    cluster_worker_up w = {
        .id = harness_worker_id(env), .map = harness_cluster_map(), .single = harness_redis()};
    keys_worker_alive(w.alive, sizeof(w.alive), w.id);
    pid_t pid = harness_start(SECKILL_WORKER_BIN, env, log_name, cluster_worker_ready, &w);
    redisFree(w.single);
    redis_cluster_map_free(w.map);
    return pid;
}

void harness_cluster_system_start(harness_system *s, char *const extra_env[], const char *name)
{
    harness_cluster_reset();
    harness_system_start_with(s, extra_env, name, harness_cluster_start_server,
                              harness_cluster_start_worker);
}

/* --- faults: a slot moved, a master killed --------------------------------- */

int64_t harness_cluster_item_on_master(const redis_cluster_map *map, size_t master_index,
                                       int64_t after)
{
    const redis_cluster_node *want = redis_cluster_map_master_at(map, master_index);
    for (int64_t id = after + 1; id < after + 100000; id++) {
        char key[KEYS_MAX];
        keys_item_state(key, sizeof(key), id);
        const redis_cluster_node *n = redis_cluster_map_master_of_key(map, key, strlen(key));
        if (n && redis_cluster_node_equal(n, want))
            return id;
    }
    cr_assert_fail("no item id for master %zu", master_index);
    return 0;
}

/* A command that must answer +OK. */
static void expect_ok(redisContext *c, const char *what, redisReply *r)
{
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "%s: %s", what,
              r && r->type == REDIS_REPLY_ERROR ? r->str : c->errstr);
    freeReplyObject(r);
}

static void my_id(redisContext *c, char *id, size_t cap)
{
    redisReply *r = redisCommand(c, "CLUSTER MYID");
    cr_assert(r && r->type == REDIS_REPLY_STRING, "CLUSTER MYID");
    snprintf(id, cap, "%s", r->str);
    freeReplyObject(r);
}

/* Moves the slot's keys, keys_per_step at a time with pause_ms between two
 * steps (while the slot is half moved, a command of its keys gets ASK or
 * TRYAGAIN), then gives the slot to `to` on every master. */
void harness_cluster_move_slot(int slot, const redis_cluster_node *to, int keys_per_step,
                               int pause_ms)
{
    redis_cluster_map *map = harness_cluster_map();
    const redis_cluster_node *from = redis_cluster_map_master(map, slot);
    cr_assert(!redis_cluster_node_equal(from, to), "slot %d is on %s:%d already", slot, to->host,
              to->port);
    redisContext *src = harness_cluster_connect(from), *dst = harness_cluster_connect(to);
    char src_id[64], dst_id[64];
    my_id(src, src_id, sizeof(src_id));
    my_id(dst, dst_id, sizeof(dst_id));
    expect_ok(dst, "IMPORTING", redisCommand(dst, "CLUSTER SETSLOT %d IMPORTING %s", slot, src_id));
    expect_ok(src, "MIGRATING", redisCommand(src, "CLUSTER SETSLOT %d MIGRATING %s", slot, dst_id));
    for (;;) {
        redisReply *keys = redisCommand(src, "CLUSTER GETKEYSINSLOT %d %d", slot, keys_per_step);
        cr_assert(keys && keys->type == REDIS_REPLY_ARRAY, "GETKEYSINSLOT");
        size_t n = keys->elements;
        if (n > 0) {
            char port[16];
            snprintf(port, sizeof(port), "%d", to->port);
            const char *head[] = {"MIGRATE", to->host, port, "", "0", "5000", "KEYS"};
            enum { HEAD = sizeof(head) / sizeof(head[0]), KEYS_MAX_STEP = 64 };
            const char *argv[HEAD + KEYS_MAX_STEP];
            cr_assert_leq(n, KEYS_MAX_STEP, "keys_per_step at most 64");
            int argc = 0;
            for (size_t i = 0; i < HEAD; i++)
                argv[argc++] = head[i];
            for (size_t i = 0; i < n; i++)
                argv[argc++] = keys->element[i]->str;
            expect_ok(src, "MIGRATE", redisCommandArgv(src, argc, argv, NULL));
        }
        freeReplyObject(keys);
        if (n == 0)
            break;
        harness_sleep_ms(pause_ms);
    }
    /* The new owner first, then the old one, then the rest (as redis-cli
     * --cluster reshard does): each learns before it is asked. */
    expect_ok(dst, "NODE", redisCommand(dst, "CLUSTER SETSLOT %d NODE %s", slot, dst_id));
    expect_ok(src, "NODE", redisCommand(src, "CLUSTER SETSLOT %d NODE %s", slot, dst_id));
    for (size_t i = 0; i < redis_cluster_map_masters(map); i++) {
        const redis_cluster_node *m = redis_cluster_map_master_at(map, i);
        if (redis_cluster_node_equal(m, from) || redis_cluster_node_equal(m, to))
            continue;
        redisContext *c = harness_cluster_connect(m);
        expect_ok(c, "NODE", redisCommand(c, "CLUSTER SETSLOT %d NODE %s", slot, dst_id));
        redisFree(c);
    }
    redisFree(src);
    redisFree(dst);
    redis_cluster_map_free(map);
}

pid_t harness_cluster_node_pid(const redis_cluster_node *n)
{
    redisContext *c = harness_cluster_connect(n);
    redisReply *r = redisCommand(c, "INFO server");
    cr_assert(r && r->type == REDIS_REPLY_STRING, "INFO server on %s:%d", n->host, n->port);
    const char *at = strstr(r->str, "process_id:");
    cr_assert_not_null(at, "no process_id in INFO server");
    pid_t pid = (pid_t)strtol(at + strlen("process_id:"), NULL, 10);
    freeReplyObject(r);
    redisFree(c);
    return pid;
}

void harness_cluster_wait_new_master(int slot, const redis_cluster_node *old, int timeout_ms)
{
    int64_t deadline = clock_mono_ms() + timeout_ms;
    for (;;) {
        char err[1024];
        redis_cluster_map *map = fetch_map(1000, err, sizeof(err));
        const redis_cluster_node *m = map ? redis_cluster_map_master(map, slot) : NULL;
        int done = m && !redis_cluster_node_equal(m, old);
        if (done) {
            redisContext *c = harness_cluster_connect(m);
            redisReply *r = redisCommand(c, "CLUSTER INFO");
            done = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok");
            freeReplyObject(r);
            redisFree(c);
        }
        redis_cluster_map_free(map);
        if (done)
            return;
        cr_assert(clock_mono_ms() < deadline,
                  "slot %d still on %s:%d (or the cluster not ok) after %d ms", slot, old->host,
                  old->port, timeout_ms);
        harness_sleep_ms(100);
    }
}

int harness_cluster_admin(char *const args[], char *out, size_t cap)
{
    cr_assert_eq(setenv("SECKILL_REDIS_CLUSTER", harness_cluster_seeds(), 1), 0);
    int status = harness_admin(args, out, cap);
    unsetenv("SECKILL_REDIS_CLUSTER");
    return status;
}
