/* integration_sweep.c: the recovery sweep's pieces against a real Redis:
 * heartbeats, the election of one sweeper per period, the move of a dead
 * worker's lists onto their items' queues (and not of a list a new run
 * claimed), and a worker refusing an id that a live worker holds. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "clock.h"
#include "harness.h"
#include "keys.h"
#include "redis_nodes.h"
#include "sweep.h"

static pid_t worker_pid;

/* The scripts by their text: the sweep sends EVAL until a digest is known. */
static scripts sc;
/* The run's config: the sweep's calls go through a redis_nodes made of it. */
static config cfg;

static void setup(void)
{
    cr_assert_eq(scripts_init(&sc), 0);
    harness_config(&cfg);
}

static void teardown(void)
{
    harness_kill_leftover(&worker_pid);
    config_free(&cfg);
}

TestSuite(sweep, .init = setup, .fini = teardown, .timeout = 60);

static void push(redisContext *c, const char *key, const char *value)
{
    redisReply *r = redisCommand(c, "LPUSH %s %s", key, value);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER);
    freeReplyObject(r);
}

/* The element at index of list key, into buf. */
static const char *element(redisContext *c, const char *key, long index, char *buf, size_t cap)
{
    redisReply *r = redisCommand(c, "LINDEX %s %ld", key, index);
    cr_assert(r && r->type == REDIS_REPLY_STRING, "no element %ld in %s", index, key);
    snprintf(buf, cap, "%s", r->str);
    freeReplyObject(r);
    return buf;
}

static void set_heartbeat(redisContext *c, const char *id, const char *token, int ttl_ms)
{
    char key[KEYS_MAX];
    keys_worker_alive(key, sizeof(key), id);
    redisReply *r = redisCommand(c, "SET %s %s PX %d", key, token, ttl_ms);
    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
}

#define ITEM 5

Test(sweep, a_dead_workers_list_goes_back_to_the_queue_oldest_first_and_a_live_ones_stays)
{
    harness_reset_backends();
    redisContext *c = harness_redis();
    redis_nodes *rn = redis_nodes_create(&cfg, "test");
    cr_assert_not_null(rn);
    char dead[KEYS_MAX], live[KEYS_MAX], queue[KEYS_MAX], buf[64];
    keys_processing(dead, sizeof(dead), ITEM, "dead");
    keys_processing(live, sizeof(live), ITEM, "live");
    keys_queue(queue, sizeof(queue), ITEM);
    /* Moves push at the head: "o1" is the oldest, at the tail. */
    push(c, dead, "o1");
    push(c, dead, "o2");
    push(c, dead, "o3");
    push(c, live, "l1");
    push(c, queue, "q1");
    set_heartbeat(c, "live", "live:1:x", 10000);

    cr_assert_eq(sweep_recover(rn, &sc, ITEM, "live"), -2, "a live worker keeps its list");
    cr_assert_eq(harness_redis_int(c, "LLEN", live), 1);
    cr_assert_eq(sweep_recover(rn, &sc, ITEM, "dead"), 3);
    cr_assert_eq(harness_redis_int(c, "EXISTS", dead), 0);
    cr_assert_eq(harness_redis_int(c, "LLEN", queue), 4);
    /* Workers take from the tail: the recovered come first, oldest first. */
    cr_assert_str_eq(element(c, queue, -1, buf, sizeof(buf)), "o1");
    cr_assert_str_eq(element(c, queue, -2, buf, sizeof(buf)), "o2");
    cr_assert_str_eq(element(c, queue, -3, buf, sizeof(buf)), "o3");
    cr_assert_str_eq(element(c, queue, 0, buf, sizeof(buf)), "q1");
    cr_assert_eq(sweep_recover(rn, &sc, ITEM, "dead"), 0, "a second sweep finds nothing");
    redis_nodes_free(rn);
    redisFree(c);
}

Test(sweep, a_list_claimed_by_a_new_run_after_the_sweep_looked_is_left_to_it)
{
    harness_reset_backends();
    redisContext *c = harness_redis();
    redis_nodes *rn = redis_nodes_create(&cfg, "test");
    cr_assert_not_null(rn);
    char list[KEYS_MAX], queue[KEYS_MAX], claim[KEYS_MAX];
    keys_processing(list, sizeof(list), ITEM, "w");
    keys_queue(queue, sizeof(queue), ITEM);
    keys_claim(claim, sizeof(claim), ITEM, "w");
    push(c, list, "o1");
    cr_assert_eq(sweep_claim(rn, ITEM, "w", "w:1:old"), 0);
    /* The sweep read the old run's claim and found no heartbeat; then a new
     * run took the id and claimed the list before the sweep's script ran. */
    cr_assert_eq(sweep_claim(rn, ITEM, "w", "w:2:new"), 0);
    const char *ka[] = {list, queue, claim, "w:1:old"};
    redisReply *r = scripts_call(c, &sc.s[SCRIPT_SWEEP_RECOVER], 3, 1, ka);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER);
    cr_assert_eq(r->integer, -2, "the new run keeps its list");
    freeReplyObject(r);
    cr_assert_eq(harness_redis_int(c, "LLEN", list), 1);
    /* Without a live run, the sweep takes it, whatever claim it holds. */
    cr_assert_eq(sweep_recover(rn, &sc, ITEM, "w"), 1);
    cr_assert_eq(harness_redis_int(c, "LLEN", queue), 1);
    cr_assert_eq(harness_redis_int(c, "EXISTS", claim), 0, "the claim goes with the list");
    redis_nodes_free(rn);
    redisFree(c);
}

Test(sweep, the_sweep_recovers_every_dead_list_of_every_item_but_never_its_own_or_a_live_ones)
{
    harness_reset_backends();
    redisContext *c = harness_redis();
    redis_nodes *rn = redis_nodes_create(&cfg, "test");
    cr_assert_not_null(rn);
    char key[KEYS_MAX];
    const char *ids[] = {"self", "alive", "dead1", "dead2"};
    for (int64_t item = 1; item <= 2; item++) {
        for (int i = 0; i < 4; i++) {
            keys_processing(key, sizeof(key), item, ids[i]);
            push(c, key, "a");
            push(c, key, "b");
        }
    }
    set_heartbeat(c, "alive", "alive:1:x", 10000);

    sweep_result res;
    cr_assert_eq(sweep_run(rn, &sc, "self", &res), 0);
    cr_assert_eq(res.lists, 4);
    cr_assert_eq(res.orders, 8);
    for (int64_t item = 1; item <= 2; item++) {
        keys_queue(key, sizeof(key), item);
        cr_assert_eq(harness_redis_int(c, "LLEN", key), 4, "item %lld", (long long)item);
        keys_processing(key, sizeof(key), item, "self");
        cr_assert_eq(harness_redis_int(c, "LLEN", key), 2,
                     "its own list is the worker's to finish");
        keys_processing(key, sizeof(key), item, "alive");
        cr_assert_eq(harness_redis_int(c, "LLEN", key), 2);
    }
    cr_assert_eq(sweep_run(rn, &sc, "self", &res), 0);
    cr_assert_eq(res.lists, 0);
    redis_nodes_free(rn);
    redisFree(c);
}

Test(sweep, one_worker_is_elected_per_period_and_another_after_it)
{
    harness_reset_backends();
    redisContext *c = harness_redis();
    redis_nodes *rn = redis_nodes_create(&cfg, "test");
    cr_assert_not_null(rn);
    cr_assert_eq(sweep_elect(rn, KEYS_SWEEP_LOCK, "a:1:x", 300), 1);
    cr_assert_eq(sweep_elect(rn, KEYS_SWEEP_LOCK, "b:1:y", 300), 0);
    cr_assert_eq(sweep_elect(rn, KEYS_SWEEP_LOCK, "a:1:x", 300), 0,
                 "not even the holder twice in a period");
    harness_sleep_ms(350);
    cr_assert_eq(sweep_elect(rn, KEYS_SWEEP_LOCK, "b:1:y", 300), 1);
    redis_nodes_free(rn);
    redisFree(c);
}

Test(sweep, a_heartbeat_is_refreshed_by_its_token_refused_to_another_and_released_by_its_own)
{
    harness_reset_backends();
    redisContext *c = harness_redis();
    redis_nodes *rn = redis_nodes_create(&cfg, "test");
    cr_assert_not_null(rn);
    char holder[SWEEP_TOKEN_MAX], key[KEYS_MAX];
    int64_t pttl = 0;
    keys_worker_alive(key, sizeof(key), "w");
    cr_assert_eq(sweep_heartbeat(rn, &sc, "w", "w:1:a", 5000, holder, sizeof(holder), &pttl), 1);
    cr_assert_eq(sweep_heartbeat(rn, &sc, "w", "w:1:a", 5000, holder, sizeof(holder), &pttl), 1);
    cr_assert_eq(sweep_heartbeat(rn, &sc, "w", "w:2:b", 5000, holder, sizeof(holder), &pttl), 0);
    cr_assert_str_eq(holder, "w:1:a");
    cr_assert(pttl > 0 && pttl <= 5000, "pttl %lld", (long long)pttl);
    cr_assert_eq(sweep_heartbeat_release(rn, &sc, "w", "w:2:b"), 0);
    cr_assert_eq(harness_redis_int(c, "EXISTS", key), 1, "only its holder releases it");
    cr_assert_eq(sweep_heartbeat_release(rn, &sc, "w", "w:1:a"), 0);
    cr_assert_eq(harness_redis_int(c, "EXISTS", key), 0);

    char a[SWEEP_TOKEN_MAX], b[SWEEP_TOKEN_MAX];
    sweep_token(a, sizeof(a), "w");
    sweep_token(b, sizeof(b), "w");
    cr_assert_str_neq(a, b, "every run has its own token");
    cr_assert_eq(strncmp(a, "w:", 2), 0);
    redis_nodes_free(rn);
    redisFree(c);
}

static pid_t spawn_worker(const char *id)
{
    char *argv[] = {"seckill-worker", "--worker-id", (char *)id, "--worker-sweep-ms", "300", NULL};
    return harness_spawn(SECKILL_WORKER_BIN, argv, NULL, harness_path("integration_sweep.log"));
}

Test(sweep, a_worker_refuses_an_id_whose_heartbeat_a_live_worker_keeps)
{
    harness_reset_backends();
    redisContext *c = harness_redis();
    set_heartbeat(c, "twin", "twin:1:live", 600);
    worker_pid = spawn_worker("twin");
    int status = 0;
    int64_t deadline = clock_mono_ms() + 10000;
    for (;;) {
        /* The other worker's refreshes. */
        set_heartbeat(c, "twin", "twin:1:live", 600);
        pid_t done = waitpid(worker_pid, &status, WNOHANG);
        if (done == worker_pid)
            break;
        cr_assert(clock_mono_ms() < deadline, "the worker did not refuse the id");
        harness_sleep_ms(100);
    }
    worker_pid = 0;
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 2, "status %d", status);
    char key[KEYS_MAX], buf[64];
    keys_worker_alive(key, sizeof(key), "twin");
    redisReply *r = redisCommand(c, "GET %s", key);
    cr_assert(r && r->type == REDIS_REPLY_STRING);
    snprintf(buf, sizeof(buf), "%s", r->str);
    freeReplyObject(r);
    cr_assert_str_eq(buf, "twin:1:live", "the live worker's heartbeat is left alone");
    redisFree(c);
}

Test(sweep, a_worker_waits_out_a_crashed_runs_heartbeat_and_takes_the_id)
{
    harness_reset_backends();
    redisContext *c = harness_redis();
    set_heartbeat(c, "phoenix", "phoenix:1:crashed", 800);
    worker_pid = spawn_worker("phoenix");
    char key[KEYS_MAX];
    keys_worker_alive(key, sizeof(key), "phoenix");
    int64_t deadline = clock_mono_ms() + 10000;
    for (;;) {
        redisReply *r = redisCommand(c, "GET %s", key);
        cr_assert(r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL));
        int taken = r->type == REDIS_REPLY_STRING && strcmp(r->str, "phoenix:1:crashed") != 0;
        freeReplyObject(r);
        if (taken)
            break;
        cr_assert(clock_mono_ms() < deadline, "the worker did not take the id");
        harness_sleep_ms(50);
    }
    /* A clean stop releases the heartbeat: the next run need not wait. */
    harness_stop_clean(&worker_pid, "worker");
    cr_assert_eq(harness_redis_int(c, "EXISTS", key), 0);
    redisFree(c);
}
