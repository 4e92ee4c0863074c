/* harness_node.c: the one-node Redis Cluster of the suites that hold the
 * product's calls to a cluster's slot rules: one node for a whole suite,
 * started by its PRE_ALL report hook (through harness_launch, so it dies
 * with the runner) and stopped when the runner exits, each test starting
 * from an emptied node. A start costs two seconds (a new master waits that
 * long before it says cluster_state:ok), a FLUSHALL nothing. */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "clock.h"
#include "redis_cluster.h"

/* Debian's redis-server, the one scripts/services.sh runs. */
#define NODE_SERVER "/usr/bin/redis-server"
/* What the runner hands the tests, each in a process of its own: the
 * node's port, or why there is none. */
#define NODE_PORT_ENV "SECKILL_TEST_CLUSTER_NODE_PORT"
#define NODE_ERROR_ENV "SECKILL_TEST_CLUSTER_NODE_ERROR"

/* The runner's node (the hooks run in the runner, the tests do not). */
static pid_t shared_node;

/* Whether the node on c owns every slot and says cluster_state:ok. */
static int node_ok(redisContext *c)
{
    redisReply *r = redisCommand(c, "CLUSTER INFO");
    int ok = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok") &&
             strstr(r->str, "cluster_slots_assigned:16384");
    freeReplyObject(r);
    return ok;
}

/* Starts redis-server in cluster mode on a free port, gives it all 16384
 * slots and waits until the cluster is ok. Returns its pid (its port in
 * *port), or -1 with the reason in err. Asserts nothing: the report hooks
 * call it outside any test. */
static pid_t node_spawn(int *port, char *err, size_t cap)
{
    /* A cluster node also listens on its cluster bus port: named, not the
     * default port + 10000, which could fall in the ephemeral range. */
    int bus = -1;
    *port = harness_port_pick();
    for (int tries = 0; *port > 0 && tries < 100 && (bus < 0 || bus == *port); tries++)
        bus = harness_port_pick();
    if (*port < 0 || bus < 0 || bus == *port) {
        snprintf(err, cap, "no free port pair for a cluster node");
        return -1;
    }
    char port_s[16], bus_s[16], name[64], dir[512], conf[544], log[544];
    snprintf(port_s, sizeof(port_s), "%d", *port);
    snprintf(bus_s, sizeof(bus_s), "%d", bus);
    snprintf(name, sizeof(name), "cluster-%d", *port);
    snprintf(dir, sizeof(dir), "%s", harness_path(name));
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        snprintf(err, cap, "mkdir %s: %s", dir, strerror(errno));
        return -1;
    }
    snprintf(conf, sizeof(conf), "%s/nodes.conf", dir);
    snprintf(log, sizeof(log), "%s/redis.log", dir);
    char *argv[] = {"redis-server",
                    "--port",
                    port_s,
                    "--cluster-port",
                    bus_s,
                    "--bind",
                    "127.0.0.1",
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    conf,
                    "--dir",
                    dir,
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    NULL};
    /* Redis is not ours to check for leaks in a valgrind run. */
    char *env[] = {"SECKILL_TEST_VALGRIND", NULL};
    pid_t pid = harness_launch_logged(NODE_SERVER, argv, env, log);
    if (pid < 0) {
        snprintf(err, cap, "start %s (log %s): %s", NODE_SERVER, log, strerror(errno));
        return -1;
    }
    int64_t deadline = clock_mono_ms() + HARNESS_START_TIMEOUT_MS;
    redisContext *c = NULL;
    int slots = 0, ok = 0;
    while (!ok && clock_mono_ms() < deadline) {
        if (!c || c->err) {
            redisFree(c);
            c = redisConnect("127.0.0.1", *port);
        }
        if (c && !c->err && !slots) {
            redisReply *r = redisCommand(c, "CLUSTER ADDSLOTSRANGE 0 %d", REDIS_CLUSTER_SLOTS - 1);
            slots = r && r->type == REDIS_REPLY_STATUS;
            freeReplyObject(r);
        }
        ok = slots && node_ok(c);
        if (!ok)
            usleep(20 * 1000);
    }
    redisFree(c);
    if (!ok) {
        harness_stop(pid, SIGKILL);
        snprintf(err, cap, "the one-node cluster on port %d was not ok within %d ms: see %s", *port,
                 HARNESS_START_TIMEOUT_MS, log);
        return -1;
    }
    return pid;
}

static pid_t runner; /* the process that started the suite's node */

/* At the runner's exit; not at a test's (the tests are its children). */
static void stop_shared(void)
{
    if (getpid() == runner && shared_node > 0)
        harness_stop(shared_node, SIGKILL);
    shared_node = 0;
}

int harness_cluster_node_start_shared(void)
{
    runner = getpid();
    atexit(stop_shared);
    char err[768];
    int port;
    shared_node = node_spawn(&port, err, sizeof(err));
    if (shared_node < 0) {
        shared_node = 0;
        fprintf(stderr, "harness: %s\n", err);
        setenv(NODE_ERROR_ENV, err, 1);
        unsetenv(NODE_PORT_ENV);
        return -1;
    }
    char port_s[16];
    snprintf(port_s, sizeof(port_s), "%d", port);
    setenv(NODE_PORT_ENV, port_s, 1);
    return 0;
}

int harness_cluster_node_port(void)
{
    const char *port = getenv(NODE_PORT_ENV), *why = getenv(NODE_ERROR_ENV);
    cr_assert(port && atoi(port) > 0, "the suite's cluster node did not start: %s",
              why ? why : "no HARNESS_CLUSTER_NODE_SUITE() in the test file");
    return atoi(port);
}

redisContext *harness_cluster_node_open(scripts *sc)
{
    int port = harness_cluster_node_port();
    redisContext *c = redisConnect("127.0.0.1", port);
    cr_assert(c && !c->err, "connect to the cluster node on port %d: %s", port,
              c ? c->errstr : "no memory");
    /* What an earlier test left, data and scripts, is gone. */
    const char *clean[] = {"FLUSHALL", "SCRIPT FLUSH"};
    for (size_t i = 0; i < sizeof(clean) / sizeof(clean[0]); i++) {
        redisReply *r = redisCommand(c, clean[i]);
        cr_assert(r && r->type == REDIS_REPLY_STATUS, "%s on the cluster node: %s", clean[i],
                  r && r->type == REDIS_REPLY_ERROR ? r->str : c->errstr);
        freeReplyObject(r);
    }
    cr_assert(node_ok(c), "the cluster node is not at cluster_state:ok");
    cr_assert_eq(scripts_init(sc), 0, "a script is missing from the build");
    cr_assert_eq(scripts_load(sc, c), 0, "SCRIPT LOAD on the cluster node");
    return c;
}

void harness_cluster_node_config(config *cfg)
{
    char seed[64];
    snprintf(seed, sizeof(seed), "127.0.0.1:%d", harness_cluster_node_port());
    harness_config(cfg);
    free(cfg->redis_cluster);
    cfg->redis_cluster = strdup(seed);
    cr_assert_not_null(cfg->redis_cluster);
}

void harness_expect_ran(redisContext *c, const char *what, redisReply *r)
{
    cr_assert(r, "%s: %s", what, c->errstr);
    cr_assert_neq(r->type, REDIS_REPLY_ERROR, "%s refused: %s", what, r->str);
    freeReplyObject(r);
}
