/* harness_suite.h: the top of a test file, written once: the runner's hook
 * that starts one Redis Cluster (or one cluster node) for all of a file's
 * tests, a suite whose every test runs its own server and worker, one
 * whose every test finds an emptied Redis with the scripts loaded, and one
 * that adds the product's way to that Redis (redis_nodes). */
#ifndef SECKILL_HARNESS_SUITE_H
#define SECKILL_HARNESS_SUITE_H

#include <criterion/criterion.h>
#include <criterion/hooks.h>

#include "harness.h"
#include "redis_nodes.h"

/* At a file's top level: a Redis Cluster of 3 masters and 3 replicas for
 * all its tests, started in the runner before the first test (a start costs
 * seconds; each test, in a process of its own, finds the seeds in the
 * environment it inherits) and stopped when the runner exits. At most one
 * of these two a file: each is the file's PRE_ALL report hook. */
#define HARNESS_CLUSTER_SUITE() HARNESS_BEFORE_ALL_(harness_cluster_start_shared)

/* The same for the one-node cluster (harness_cluster_node_start_shared). */
#define HARNESS_CLUSTER_NODE_SUITE() HARNESS_BEFORE_ALL_(harness_cluster_node_start_shared)

/* A Criterion suite (options such as .timeout after name) whose every test
 * starts with the backends emptied and sys (a harness_system) running with
 * env, through start (harness_system_start or harness_cluster_system_start;
 * logs <name>-server.log, <name>-worker.log); the test ends with
 * harness_system_stop(&sys), and whatever a test that failed early left
 * running is killed after it. */
#define HARNESS_SYSTEM_SUITE(suite, start, sys, env, name, ...)                                    \
    static void suite##_start_system(void)                                                         \
    {                                                                                              \
        start(&(sys), (env), (name));                                                              \
    }                                                                                              \
    static void suite##_kill_leftovers(void)                                                       \
    {                                                                                              \
        harness_system_kill(&(sys));                                                               \
    }                                                                                              \
    TestSuite(suite, .init = suite##_start_system, .fini = suite##_kill_leftovers, __VA_ARGS__)

/* A Criterion suite (options after sc) whose every test finds redis (a
 * redisContext *) connected to an emptied Redis with the scripts of sc (a
 * scripts) loaded (harness_redis_with_scripts); it is freed after the test. */
#define HARNESS_SCRIPTS_SUITE(suite, redis, sc, ...)                                               \
    static void suite##_open_redis(void)                                                           \
    {                                                                                              \
        (redis) = harness_redis_with_scripts(&(sc));                                               \
    }                                                                                              \
    static void suite##_close_redis(void)                                                          \
    {                                                                                              \
        redisFree(redis);                                                                          \
        (redis) = NULL;                                                                            \
    }                                                                                              \
    TestSuite(suite, .init = suite##_open_redis, .fini = suite##_close_redis, __VA_ARGS__)

/* At a file's top level: HARNESS_CLUSTER_SUITE() and a
 * HARNESS_SYSTEM_SUITE whose server and worker run on that cluster
 * (harness_cluster_system_start), in one. */
#define HARNESS_CLUSTER_SYSTEM_SUITE(suite, sys, env, name, ...)                                   \
    HARNESS_CLUSTER_SUITE();                                                                       \
    HARNESS_SYSTEM_SUITE(suite, harness_cluster_system_start, sys, env, name, __VA_ARGS__)

/* A Criterion suite (options after nodes) whose every test finds redis (a
 * redisContext *) connected by open (harness_redis_with_scripts, or
 * harness_cluster_node_open for the one-node cluster) to an emptied Redis
 * with the scripts of sc loaded, cfg (a config) made by configure
 * (harness_config, or harness_cluster_node_config) to point there, and nodes
 * (a redis_nodes *) made from cfg: the way the server and the worker reach
 * Redis. All three are freed after the test. */
#define HARNESS_NODES_SUITE(suite, open, configure, redis, sc, cfg, nodes, ...)                    \
    static void suite##_open_nodes(void)                                                           \
    {                                                                                              \
        (redis) = open(&(sc));                                                                     \
        configure(&(cfg));                                                                         \
        (nodes) = redis_nodes_create(&(cfg), "test");                                              \
        cr_assert_not_null(nodes);                                                                 \
    }                                                                                              \
    static void suite##_close_nodes(void)                                                          \
    {                                                                                              \
        redis_nodes_free(nodes);                                                                   \
        (nodes) = NULL;                                                                            \
        config_free(&(cfg));                                                                       \
        redisFree(redis);                                                                          \
        (redis) = NULL;                                                                            \
    }                                                                                              \
    TestSuite(suite, .init = suite##_open_nodes, .fini = suite##_close_nodes, __VA_ARGS__)

/* The PRE_ALL report hook; the declaration at the end takes the caller's
 * ';'. */
#define HARNESS_BEFORE_ALL_(start)                                                                 \
    ReportHook(PRE_ALL)(struct criterion_test_set * set)                                           \
    {                                                                                              \
        (void)set;                                                                                 \
        start();                                                                                   \
    }                                                                                              \
    extern int harness_before_all_

#endif
