/* integration_redis_nodes.c: redis_nodes.c on the test run's single Redis:
 * commands, pipelines, scans and scripts all reach that one server, a
 * connection killed under it is remade by the next call (before it, when
 * it was killed while idle), and a Redis that does not answer is a failure
 * of each call, not a crash. The cluster side is in
 * integration_redis_cluster.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <criterion/criterion.h>
#include <hiredis/hiredis.h>

#include "harness.h"
#include "redis_nodes.h"
#include "scripts.h"

static config cfg;
static redisContext *plain; /* the test's own view of the same Redis */
static scripts sc;

static void setup(void)
{
    plain = harness_redis_with_scripts(&sc);
    harness_config(&cfg);
}

static void teardown(void)
{
    redisFree(plain);
    plain = NULL;
    config_free(&cfg);
}

TestSuite(redis_nodes, .init = setup, .fini = teardown, .timeout = 60);

/* GET key through the plain connection into out ("" when absent). */
static void plain_get(const char *key, char *out, size_t cap)
{
    redisReply *r = redisCommand(plain, "GET %s", key);
    cr_assert(r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL), "GET %s", key);
    snprintf(out, cap, "%s", r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
}

/* SET key value through rn, asserting +OK. */
static void nodes_set(redis_nodes *rn, const char *key, const char *value)
{
    const char *argv[] = {"SET", key, value};
    redisReply *r = redis_nodes_command(rn, key, 3, argv, NULL);
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "SET %s through redis_nodes", key);
    freeReplyObject(r);
}

static int count_key(void *ctx, const char *key, size_t len)
{
    (void)key;
    (void)len;
    (*(int *)ctx)++;
    return 0;
}

Test(redis_nodes, a_single_redis_is_one_master_reached_for_every_key)
{
    redis_nodes *rn = redis_nodes_create(&cfg, "test");
    cr_assert_not_null(rn);
    cr_assert_eq(redis_nodes_is_cluster(rn), 0);
    cr_assert_eq(redis_nodes_count(rn), 1);
    redisContext *c = redis_nodes_at(rn, 0);
    cr_assert_not_null(c);
    cr_assert_eq(redis_nodes_for_key(rn, "a"), c, "one connection for every key");
    cr_assert_eq(redis_nodes_for_key(rn, "{item:7}:state"), c);
    cr_assert_eq(redis_nodes_any(rn), c);
    cr_assert_null(redis_nodes_at(rn, 1));
    for (int i = 0; i < 200; i++) {
        char key[32], value[32], got[32];
        snprintf(key, sizeof(key), "nodes:%d", i);
        snprintf(value, sizeof(value), "v%d", i);
        nodes_set(rn, key, value);
        plain_get(key, got, sizeof(got));
        cr_assert_str_eq(got, value);
    }
    redis_nodes_free(rn);
}

Test(redis_nodes, an_error_reply_is_null_and_the_connection_stays)
{
    redis_nodes *rn = redis_nodes_create(&cfg, "test");
    nodes_set(rn, "text", "abc");
    redisContext *c = redis_nodes_for_key(rn, "text");
    const char *argv[] = {"INCR", "text"};
    cr_assert_null(redis_nodes_command(rn, "text", 2, argv, NULL));
    cr_assert_eq(redis_nodes_for_key(rn, "text"), c, "an error reply is no lost connection");
    /* A caller's own command judged the same way. */
    redisReply *r = redisCommand(c, "INCR text");
    cr_assert_null(redis_nodes_reply(rn, c, r, "INCR"));
    r = redis_nodes_reply(rn, c, redisCommand(c, "GET text"), "GET");
    cr_assert(r && r->type == REDIS_REPLY_STRING);
    cr_assert_str_eq(r->str, "abc");
    freeReplyObject(r);
    redis_nodes_free(rn);
}

Test(redis_nodes, a_pipeline_answers_in_order_with_an_error_reply_as_null)
{
    redis_nodes *rn = redis_nodes_create(&cfg, "test");
    enum { N = 500 };
    static char keys[N][32], values[N][32];
    static const char *argv[N * 3];
    static redisReply *replies[N];
    for (int i = 0; i < N; i++) {
        snprintf(keys[i], sizeof(keys[i]), "pipe:%d", i);
        snprintf(values[i], sizeof(values[i]), "%d", i * 3);
        argv[i * 3] = "SET";
        argv[i * 3 + 1] = keys[i];
        argv[i * 3 + 2] = values[i];
    }
    cr_assert_eq(redis_nodes_pipeline(rn, N, 3, argv, replies), 0);
    for (int i = 0; i < N; i++) {
        cr_assert(replies[i] && replies[i]->type == REDIS_REPLY_STATUS, "SET %d", i);
        freeReplyObject(replies[i]);
    }
    /* INCRBY by each key's own value doubles it; one key holds text. */
    nodes_set(rn, keys[7], "text");
    for (int i = 0; i < N; i++)
        argv[i * 3] = "INCRBY";
    cr_assert_eq(redis_nodes_pipeline(rn, N, 3, argv, replies), 0);
    for (int i = 0; i < N; i++) {
        if (i == 7) {
            cr_assert_null(replies[i], "the error reply of a key holding text");
            continue;
        }
        cr_assert(replies[i] && replies[i]->type == REDIS_REPLY_INTEGER, "INCRBY %d", i);
        cr_assert_eq(replies[i]->integer, i * 6, "reply %d is command %d's", i, i);
        freeReplyObject(replies[i]);
    }
    redis_nodes_free(rn);
}

Test(redis_nodes, a_scan_meets_every_matching_key_once_and_its_callback_may_send_commands)
{
    redis_nodes *rn = redis_nodes_create(&cfg, "test");
    enum { N = 2500 };
    for (int i = 0; i < N; i++) {
        redisAppendCommand(plain, "SET scan:%d x", i);
        redisAppendCommand(plain, "SET other:%d x", i);
    }
    for (int i = 0; i < 2 * N; i++) {
        redisReply *r = NULL;
        cr_assert_eq(redisGetReply(plain, (void **)&r), REDIS_OK);
        freeReplyObject(r);
    }
    int n = 0;
    cr_assert_eq(redis_nodes_scan(rn, "scan:*", count_key, &n), 0);
    cr_assert_eq(n, N);
    cr_assert_eq(harness_redis_int(plain, "EXISTS", "other:1"), 1);
    redis_nodes_free(rn);
}

/* Deletes each key it meets through the same redis_nodes, and stops at
 * the 100th with 7. */
static int delete_key(void *ctx, const char *key, size_t len)
{
    redis_nodes *rn = ctx;
    char k[64];
    snprintf(k, sizeof(k), "%.*s", (int)len, key);
    const char *argv[] = {"DEL", k};
    redisReply *r = redis_nodes_command(rn, k, 2, argv, NULL);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1, "DEL %s", k);
    freeReplyObject(r);
    static int deleted;
    return ++deleted == 100 ? 7 : 0;
}

Test(redis_nodes, a_scan_callback_that_answers_non_zero_stops_the_scan_with_that_value)
{
    redis_nodes *rn = redis_nodes_create(&cfg, "test");
    for (int i = 0; i < 1000; i++) {
        char key[32];
        snprintf(key, sizeof(key), "del:%d", i);
        nodes_set(rn, key, "x");
    }
    cr_assert_eq(redis_nodes_scan(rn, "del:*", delete_key, rn), 7);
    int left = 0;
    cr_assert_eq(redis_nodes_scan(rn, "del:*", count_key, &left), 0);
    cr_assert_eq(left, 900);
    redis_nodes_free(rn);
}

Test(redis_nodes, a_script_redis_forgot_is_sent_again_as_text)
{
    redis_nodes *rn = redis_nodes_create(&cfg, "test");
    const script *release = &sc.s[SCRIPT_LOCK_RELEASE];
    nodes_set(rn, "lock:1", "token-a");
    const char *wrong[] = {"lock:1", "token-b"}, *right[] = {"lock:1", "token-a"};
    redisReply *r = redis_nodes_script(rn, release, 1, 1, wrong);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 0, "not our lock: kept");
    freeReplyObject(r);
    /* A restarted Redis has no scripts: EVALSHA is refused, EVAL runs. */
    freeReplyObject(redisCommand(plain, "SCRIPT FLUSH"));
    r = redis_nodes_script(rn, release, 1, 1, right);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1, "our lock: freed");
    freeReplyObject(r);
    cr_assert_eq(harness_redis_int(plain, "EXISTS", "lock:1"), 0);
    redis_nodes_free(rn);
}

/* Kills rn's connection from the plain one: CLIENT KILL by its id. */
static void kill_connection(redis_nodes *rn)
{
    redisReply *r = redis_nodes_reply(rn, redis_nodes_any(rn),
                                      redisCommand(redis_nodes_any(rn), "CLIENT ID"), "CLIENT ID");
    cr_assert(r && r->type == REDIS_REPLY_INTEGER);
    long long id = r->integer;
    freeReplyObject(r);
    r = redisCommand(plain, "CLIENT KILL ID %lld", id);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1, "CLIENT KILL ID %lld", id);
    freeReplyObject(r);
}

Test(redis_nodes, a_killed_connection_fails_one_command_and_the_next_makes_a_new_one)
{
    redis_nodes *rn = redis_nodes_create(&cfg, "test");
    nodes_set(rn, "k", "1");
    kill_connection(rn);
    const char *argv[] = {"GET", "k"};
    cr_assert_null(redis_nodes_command(rn, "k", 2, argv, NULL), "the dead connection's command");
    redisReply *r = redis_nodes_command(rn, "k", 2, argv, NULL);
    cr_assert(r && r->type == REDIS_REPLY_STRING, "a new connection answers");
    cr_assert_str_eq(r->str, "1");
    freeReplyObject(r);

    /* The same through a caller's own command on the context, ... */
    kill_connection(rn);
    redisContext *c = redis_nodes_for_key(rn, "k");
    cr_assert_null(redis_nodes_reply(rn, c, redisCommand(c, "GET k"), "GET"));
    c = redis_nodes_for_key(rn, "k");
    cr_assert_not_null(c);
    r = redis_nodes_reply(rn, c, redisCommand(c, "GET k"), "GET");
    cr_assert(r && r->type == REDIS_REPLY_STRING);
    freeReplyObject(r);

    /* ...a pipeline (every reply NULL, then all of them again), ... */
    kill_connection(rn);
    const char *pipe[] = {"GET", "k", "GET", "k"};
    redisReply *replies[2];
    cr_assert_eq(redis_nodes_pipeline(rn, 2, 2, pipe, replies), -1);
    cr_assert(!replies[0] && !replies[1]);
    cr_assert_eq(redis_nodes_pipeline(rn, 2, 2, pipe, replies), 0);
    cr_assert(replies[0] && replies[1] && strcmp(replies[1]->str, "1") == 0);
    freeReplyObject(replies[0]);
    freeReplyObject(replies[1]);

    /* ...and a scan. */
    kill_connection(rn);
    int n = 0;
    cr_assert_eq(redis_nodes_scan(rn, "k", count_key, &n), -1);
    cr_assert_eq(redis_nodes_scan(rn, "k", count_key, &n), 0);
    cr_assert_eq(n, 1);
    redis_nodes_free(rn);
}

/* A connection its Redis closed while it sat idle (a Redis restarted or
 * failed over, a server timeout) is remade before the next command of
 * rn's own, which succeeds: old code failed that command, as it still does
 * right after a use (above: that test needs its command within the second
 * after the kill, IDLE_CHECK_MS). */
Test(redis_nodes, a_connection_closed_while_idle_is_remade_before_the_next_command)
{
    redis_nodes *rn = redis_nodes_create(&cfg, "test");
    nodes_set(rn, "k", "2");
    kill_connection(rn);
    harness_sleep_ms(1100); /* idle past IDLE_CHECK_MS */
    const char *argv[] = {"GET", "k"};
    redisReply *r = redis_nodes_command(rn, "k", 2, argv, NULL);
    cr_assert(r && r->type == REDIS_REPLY_STRING, "the command after the idle close");
    cr_assert_str_eq(r->str, "2");
    freeReplyObject(r);

    /* Not for a context handed to a caller, which may hold a WATCH that a
     * new connection would silently lack: its command fails, as before,
     * and the next is on a new connection. */
    kill_connection(rn);
    harness_sleep_ms(1100);
    redisContext *c = redis_nodes_for_key(rn, "k");
    cr_assert_null(redis_nodes_reply(rn, c, redisCommand(c, "GET k"), "GET"),
                   "a caller's context is the one it had");
    c = redis_nodes_for_key(rn, "k");
    r = redis_nodes_reply(rn, c, redisCommand(c, "GET k"), "GET");
    cr_assert(r && r->type == REDIS_REPLY_STRING, "then a new one");
    freeReplyObject(r);
    redis_nodes_free(rn);
}

Test(redis_nodes, a_redis_that_does_not_answer_fails_every_call)
{
    cfg.redis_port = harness_free_port();
    cfg.redis_timeout_ms = 500;
    redis_nodes *rn = redis_nodes_create(&cfg, "test");
    cr_assert_not_null(rn, "nothing is connected at creation");
    const char *argv[] = {"GET", "k"};
    cr_assert_null(redis_nodes_for_key(rn, "k"));
    cr_assert_null(redis_nodes_any(rn));
    cr_assert_null(redis_nodes_at(rn, 0));
    cr_assert_null(redis_nodes_command(rn, "k", 2, argv, NULL));
    cr_assert_null(redis_nodes_script(rn, &sc.s[SCRIPT_LOCK_RELEASE], 1, 1, argv));
    redisReply *replies[1] = {(redisReply *)1};
    cr_assert_eq(redis_nodes_pipeline(rn, 1, 2, argv, replies), -1);
    cr_assert_null(replies[0]);
    int n = 0;
    cr_assert_eq(redis_nodes_scan(rn, "*", count_key, &n), -1);
    redis_nodes_free(rn);
}

/* Connections a listener that never answers has been offered so far. */
static int accepted(int listener)
{
    int n = 0, fd;
    while ((fd = accept(listener, NULL, NULL)) >= 0) {
        close(fd);
        n++;
    }
    return n;
}

Test(redis_nodes, a_cluster_that_gives_no_map_is_asked_again_only_a_second_later)
{
    /* A seed that accepts and never answers: each read of the map costs a
     * connection and redis_timeout_ms. A read that failed must not be
     * repeated before every command. */
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    cr_assert_geq(listener, 0);
    struct sockaddr_in at = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(bind(listener, (struct sockaddr *)&at, sizeof(at)), 0);
    cr_assert_eq(listen(listener, 16), 0);
    socklen_t len = sizeof(at);
    cr_assert_eq(getsockname(listener, (struct sockaddr *)&at, &len), 0);
    char seeds[64];
    snprintf(seeds, sizeof(seeds), "127.0.0.1:%d", ntohs(at.sin_port));
    free(cfg.redis_cluster);
    cfg.redis_cluster = strdup(seeds);
    cfg.redis_timeout_ms = 100;
    redis_nodes *rn = redis_nodes_create(&cfg, "test");
    cr_assert_not_null(rn);
    const char *argv[] = {"GET", "k"};
    cr_assert_null(redis_nodes_command(rn, "k", 2, argv, NULL));
    cr_assert_eq(accepted(listener), 1, "the map was asked for");
    cr_assert_null(redis_nodes_command(rn, "k", 2, argv, NULL));
    cr_assert_null(redis_nodes_command(rn, "k", 2, argv, NULL));
    cr_assert_eq(accepted(listener), 0, "not again at once");
    harness_sleep_ms(1100);
    cr_assert_null(redis_nodes_command(rn, "k", 2, argv, NULL));
    cr_assert_eq(accepted(listener), 1, "asked again a second later");
    redis_nodes_free(rn);
    close(listener);
}
