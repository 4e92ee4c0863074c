/* harness.h: what the integration and end-to-end tests share: the config of
 * the Redis and PostgreSQL that scripts/test.sh started (SECKILL_* variables),
 * clean slates, free ports, and child processes that die with the test
 * (harness_proc.c); the services of scripts/services.sh (harness.c), a Redis
 * Cluster (harness_cluster.c) and a one-node one (harness_node.c). */
#ifndef SECKILL_HARNESS_H
#define SECKILL_HARNESS_H

#include <stdint.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>
#include <libpq-fe.h>

#include "blast.h"
#include "config.h"
#include "redis_cluster.h"
#include "reserve_batch.h"
#include "scripts.h"

/* Defaults overlaid with the SECKILL_* environment of the test run. The
 * caller frees it with config_free(). Aborts the test when the environment
 * names no servers (run the suite with `make test`). */
void harness_config(config *cfg);

/* Connections to the run's servers; the test frees them. Abort on failure. */
redisContext *harness_redis(void);
PGconn *harness_pg(void);

/* Redis's clock (TIME) on c, in Unix ms. Aborts the test when it does not
 * answer. */
int64_t harness_redis_now_ms(redisContext *c);

/* Empties Redis (FLUSHALL) and the tables (TRUNCATE items, orders). */
void harness_reset_backends(void);

/* Empties the tables alone (harness_reset_backends' TRUNCATE): for a test
 * whose Redis harness_redis_with_scripts empties. */
void harness_reset_tables(void);

/* A connection to an emptied Redis (FLUSHALL) with every script of sc
 * loaded, for the tests that need Redis alone; the test frees it. */
redisContext *harness_redis_with_scripts(scripts *sc);

/* A new round of item in Redis alone (lua/item_reset.lua with sc's digest):
 * stock, initial stock and round set, the buyers cleared. Aborts the test
 * unless the script answers 1. */
void harness_item_reset(redisContext *c, const scripts *sc, int64_t item, long long stock,
                        long long round);

/* The same with the round's terms: its window (Unix ms, 0: no bound) and
 * per-buyer limit. */
void harness_item_round(redisContext *c, const scripts *sc, int64_t item, long long stock,
                        long long round, long long starts_ms, long long ends_ms, int limit);

/* One call of the reserve script (sc's) on c, on the keys of key (item's own
 * or a segment's): buyers users[i] (0: anonymous) in modes[i] (NULL: "0"
 * for a named buyer, "1" for an anonymous one), one unit each, order ids
 * first_order..; their order locks taken for guard_ttl_ms (0: none, as
 * order_guard = script). The n answers land in out. Aborts the test on an
 * error or a reply it cannot read. */
void harness_reserve(redisContext *c, const scripts *sc, int64_t item, int64_t key, int n,
                     const int64_t *users, const char **modes, int64_t first_order,
                     int guard_ttl_ms, reserve_answer *out);

/* Runs "<cmd> <key>" (LLEN, EXISTS, HLEN...) and returns its integer reply;
 * aborts the test on anything else. */
long long harness_redis_int(redisContext *c, const char *cmd, const char *key);

/* An integer field of item's state hash (stock, round, returns...); aborts
 * the test when it is absent. */
long long harness_item_field(redisContext *c, int64_t item, const char *field);

/* LPUSHes n orders in the queue format onto item's queue, pipelined, and
 * registers the item (KEYS_ITEMS) as its creation would: ids first_id..,
 * buyers first_user.., all of item and round, acceptance times
 * created_ms... Aborts the test on failure. */
void harness_push_orders(redisContext *c, int64_t first_id, int64_t first_user, int n, int64_t item,
                         int64_t round, int64_t created_ms);
/* The same onto list key (a processing list, as a crashed worker leaves
 * it); the item is registered too. */
void harness_push_orders_onto(redisContext *c, const char *key, int64_t first_id,
                              int64_t first_user, int n, int64_t item, int64_t round,
                              int64_t created_ms);

/* item's queue and pending hash keys, in static buffers (one of each,
 * overwritten by the next call): for tests of one item. */
const char *harness_queue_key(int64_t item);
const char *harness_pending_key(int64_t item);

/* The sum of "<cmd> <key>" (LLEN, HLEN) over the key that keyfn makes for
 * every registered item (keys_queue, keys_pending, keys_dead). Aborts the
 * test on a failure. */
long long harness_redis_sum(redisContext *c, const char *cmd,
                            int (*keyfn)(char *, size_t, int64_t));

/* Runs sql (one statement, no parameters) and returns the first column of the
 * first row as an integer; aborts the test on error. */
int64_t harness_pg_int(PGconn *pg, const char *sql);

/* A TCP port on 127.0.0.1 that nothing is bound to right now, chosen as
 * scripts/services.sh's free_port chooses one: at random in 10000-65535,
 * outside the kernel's ephemeral range (ip_local_port_range), where no
 * client connection can take it before the server binds it. The harness's
 * one way of choosing a port. Returns -1 when 100 tries found none;
 * harness_free_port aborts the test instead. */
int harness_port_pick(void);
int harness_free_port(void);

/* The one way the harness starts a process: forks, and in the child
 * applies extra_env ("KEY=VALUE" entries, NULL-terminated, may be NULL; a
 * "KEY" alone takes KEY out of the child's environment), sends stdout and
 * stderr to out (a descriptor, when >= 0; the caller closes its own) and
 * execs bin with argv (argv[0] included, NULL-terminated), under valgrind
 * when the child's SECKILL_TEST_VALGRIND is 1. The child gets SIGKILL when
 * the thread that called this ends (PR_SET_PDEATHSIG), so with the test's
 * process, however it ends (a failed assert, kill -9, ctest's timeout):
 * nothing a test started outlives it. Call it from a thread that lives as
 * long as the child should (a test's main thread). Returns the child's pid, or -1 (fork
 * failed, errno set); asserts nothing, so the runner's report hooks may call
 * it outside any test. */
pid_t harness_launch(const char *bin, char *const argv[], char *const extra_env[], int out);

/* harness_launch with stdout and stderr appended to log_path (shown, its
 * last lines, when the process does not stop cleanly). Returns -1 (errno
 * set) when the log cannot be opened or fork fails; asserts nothing. */
pid_t harness_launch_logged(const char *bin, char *const argv[], char *const extra_env[],
                            const char *log_path);

/* harness_launch_logged that aborts the test when bin cannot start. With SECKILL_TEST_VALGRIND=1
 * the child runs under valgrind and exits 99 on any memory error or definite leak. */
pid_t harness_spawn(const char *bin, char *const argv[], char *const extra_env[],
                    const char *log_path);

/* A TCP connection to 127.0.0.1:port (blocking, close-on-exec), or -1. */
int harness_connect(int port);

/* Waits until 127.0.0.1:port answers GET path with 200, up to timeout_ms.
 * Returns 0, or -1 on timeout. */
int harness_wait_http(int port, const char *path, int timeout_ms);

/* One HTTP/1.1 request to 127.0.0.1:port (Connection: close). token, when
 * not NULL, goes as "Authorization: Bearer <token>"; body may be NULL. The
 * response body lands NUL-terminated in resp (cut at cap - 1). Returns the
 * status code, or -1 when the server could not be reached. */
int harness_http(int port, const char *method, const char *path, const char *token,
                 const char *body, char *resp, size_t cap);

/* harness_http in two halves: the request sent (the connection's fd
 * returned, -1 when the server could not be reached), and later its answer
 * read and the fd closed (the status, or -1). A server frozen in between
 * (harness_freeze) has the request waiting in its socket. */
int harness_http_send(int port, const char *method, const char *path, const char *token,
                      const char *body);
int harness_http_answer(int fd, char *resp, size_t cap);

/* A lab purchase request, as blast sends it: GET /api/v1/experiments/
 * <strategy>/purchase?item=N&user_id=U&delay_ms=D (no user_id when user is
 * 0: an anonymous buyer). Returns snprintf's length (0 on error). */
size_t harness_lab_buy_request(char *buf, size_t cap, const char *strategy, int64_t item,
                               size_t user, int delay_ms);

/* A storm on the laboratory: buyers purchases of item through strategy at
 * once on the server at port, one connection each, buyer i + 1 the i-th,
 * each working delay_ms in the critical section. Asserts that every one
 * was answered (within 60 s); the answers are in the result. */
blast_result harness_lab_storm(int port, const char *strategy, int64_t item, size_t buyers,
                               int delay_ms);

/* The number `field` of GET /api/v1/experiments/<strategy>/audit?item=N
 * from the server on port; asserts a 200 that holds the field. */
int64_t harness_lab_audit(int port, const char *strategy, int64_t item, const char *field);

/* Writes len raw bytes to 127.0.0.1:port, then reads until the server closes
 * or timeout_ms passes. Returns the response's status code, 0 when the
 * server closed without answering, -1 when it could not be reached. The
 * response (head and body) lands NUL-terminated in resp. */
int harness_raw(int port, const char *bytes, size_t len, int timeout_ms, char *resp, size_t cap);

/* Whether a process a start waits for is up: 1 up, 0 not yet, -1 never
 * (why, of cap bytes, says why). ctx is the start's. */
typedef int (*harness_ready_fn)(void *ctx, char *why, size_t cap);

/* How long a start waits for its process to be up, and how often it asks.
 * Not more often: each probe of a server's /ready is a connection from
 * 127.0.0.1 that the server may count a moment after it closed (its
 * per-IP limit, e2e_connection_limit). */
#define HARNESS_START_TIMEOUT_MS 15000
#define HARNESS_START_POLL_MS 50

/* The one start of a long-running binary the tests use: bin (argv[0] its
 * base name) through harness_spawn with extra_env, logging to
 * harness_path(log_name), then ready(ctx) asked every HARNESS_START_POLL_MS
 * until it says up. Returns the pid. A process that exits first, says never, or is not up
 * within HARNESS_START_TIMEOUT_MS aborts the test, and one still running is
 * killed first (its log's end shown): a failed start leaves nothing behind. */
pid_t harness_start(const char *bin, char *const extra_env[], const char *log_name,
                    harness_ready_fn ready, void *ctx);

/* The worker id SECKILL_WORKER_ID gives in env ("KEY=VALUE" entries,
 * NULL-terminated, may be NULL), "1" (the default) without it. */
const char *harness_worker_id(char *const env[]);

/* Starts seckill-server on a free port (returned in *port) with the run's
 * backends plus extra "KEY=VALUE" entries (NULL-terminated, may be NULL),
 * logging to harness_path(log_name), and waits until /ready answers 200.
 * Returns its pid; a failed start is as harness_start's. */
pid_t harness_start_server(int *port, char *const extra_env[], const char *log_name);

/* Starts seckill-worker with the run's backends plus extra_env and waits
 * until it is connected to Redis (so that a SIGTERM is a clean stop); a
 * failed start is as harness_start's. */
pid_t harness_start_worker(char *const extra_env[], const char *log_name);

/* Crashes (SIGKILL) the run's Redis, and starts it again from its own data
 * (AOF) on the same port, through scripts/services.sh and its pid file. */
void harness_redis_crash(void);
void harness_redis_restart(void);
/* Sends sig (SIGSTOP, SIGCONT) to the run's Redis, by its pid file: a Redis
 * frozen with its connections open, as a host gone without a reset. A
 * SIGSTOP returns once Redis has stopped (harness_freeze). */
void harness_redis_signal(int sig);

/* Stops the run's PostgreSQL in immediate mode (a crash: clients cut off,
 * crash recovery at the next start), and starts it again on the same port,
 * through scripts/services.sh. */
void harness_pg_crash(void);
void harness_pg_restart(void);

/* Starts nginx under the run's folder (services.sh nginx-start) on a free
 * port in front of the seckill servers on the n upstream ports (round
 * robin, keep-alive), and returns that port once /ready answers through it.
 * Aborts the test when it does not start. */
int harness_nginx_start(const int *upstreams, int n);
/* Stops it, by its pid file, if it runs (for .fini too). */
void harness_nginx_stop(void);

/* Starts two more Redis servers under the run's folder (services.sh
 * redlock-start) and writes the three servers of a Redlock, the run's Redis
 * first, as "127.0.0.1:<port>,..." into servers. */
void harness_redlock_start(char *servers, size_t cap);
/* Crashes (SIGKILL, by its pid file) extra server n (1 or 2). */
void harness_redlock_kill(int n);
/* Stops the extra servers that are still running (for .fini too). */
void harness_redlock_stop(void);

/* Starts one more Redis under the run's folder (services.sh
 * redis-auth-start) that asks for password, and returns its port. Aborts
 * the test when it does not start. */
int harness_redis_auth_start(const char *password);
/* Stops it, by its pid file, if it runs (for .fini too). */
void harness_redis_auth_stop(void);

/* Starts a ZooKeeper under the run's folder (services.sh zk-start: tick
 * 500 ms, sessions from 1 s) and writes its address "127.0.0.1:<port>"
 * into servers. Aborts the test when it does not start. */
void harness_zk_start(char *servers, size_t cap);
/* Stops it, by its pid file, if it runs (for .fini too). */
void harness_zk_stop(void);

/* Starts a Redis Cluster of 3 masters and 3 replicas under the run's folder
 * (services.sh cluster-start: fresh nodes on free ports, `redis-cli
 * --cluster create`, every node at cluster_state:ok with all slots assigned,
 * replicas in sync; about 4 s) and writes its seeds, all six nodes as
 * "127.0.0.1:<port>,...", into seeds. Returns 0, or -1 when it did not
 * start (services.sh says why on stderr). It does not abort: a suite may
 * start one cluster for all its tests from a Criterion report hook. */
int harness_cluster_start(char *seeds, size_t cap);
/* Stops it, by its pid files, if it runs (for .fini too). */
void harness_cluster_stop(void);
/* Starts again its node that listened on port (killed by the test), from
 * its own config and data: it rejoins, as a replica when its slots went to
 * another master meanwhile. */
void harness_cluster_node_restart(int port);

/* A suite on that cluster (harness_cluster.c; HARNESS_CLUSTER_SUITE in
 * harness_suite.h). In the runner, before the first test: starts it for all
 * the suite's tests, hands them its seeds through the environment, and
 * stops it when the runner exits. Asserts nothing (it runs outside any
 * test): returns 0, or -1 and every test fails in harness_cluster_seeds
 * saying why. */
int harness_cluster_start_shared(void);

/* In a test: the suite's seeds, "127.0.0.1:<port>,..."; aborts the test when
 * the cluster did not start. */
const char *harness_cluster_seeds(void);

/* The run's config (harness_config) with redis_cluster set to the seeds:
 * config_free it. */
void harness_cluster_config(config *cfg);

/* Its slot map, read from the seeds, every slot owned
 * (redis_cluster_map_free it). Aborts the test on failure. */
redis_cluster_map *harness_cluster_map(void);

/* A connection to node n (the test frees it); aborts the test on failure. */
redisContext *harness_cluster_connect(const redis_cluster_node *n);

/* "<cmd> <key>" (EXISTS, LLEN, HLEN...) on the master that serves key, as
 * map says; its integer reply. Aborts the test on anything else. */
long long harness_cluster_int(const redis_cluster_map *map, const char *cmd, const char *key);

/* Empties every master of the cluster (FLUSHALL; the replicas follow), and
 * the run's Redis and tables (harness_reset_backends). */
void harness_cluster_reset(void);

/* harness_start_server and harness_start_worker with redis_cluster set to
 * the suite's seeds. The worker is up once its heartbeat is on the cluster;
 * the test aborts at once when it lands on the run's single Redis instead
 * (a worker that ignores redis_cluster). */
pid_t harness_cluster_start_server(int *port, char *const extra_env[], const char *log_name);
pid_t harness_cluster_start_worker(char *const extra_env[], const char *log_name);

/* The smallest item id above `after` whose keys the master_index-th master
 * of map serves. */
int64_t harness_cluster_item_on_master(const redis_cluster_map *map, size_t master_index,
                                       int64_t after);

/* Reshards one slot to master `to` as redis-cli --cluster reshard does
 * (IMPORTING and MIGRATING, MIGRATE of its keys keys_per_step (<= 64) at a
 * time, pause_ms between steps, then the slot given to `to` on every
 * master). Aborts the test on any refusal. */
void harness_cluster_move_slot(int slot, const redis_cluster_node *to, int keys_per_step,
                               int pause_ms);

/* The pid of cluster node n's redis-server (INFO server), for kill -9. */
pid_t harness_cluster_node_pid(const redis_cluster_node *n);

/* Waits until a master other than old serves slot and says cluster_state:ok
 * (a failover done); aborts the test after timeout_ms. */
void harness_cluster_wait_new_master(int slot, const redis_cluster_node *old, int timeout_ms);

/* harness_admin with redis_cluster set to the suite's seeds. */
int harness_cluster_admin(char *const args[], char *out, size_t cap);

/* Runs seckill-admin with args (NULL-terminated, without argv[0]) and the
 * run's config; its output lands NUL-terminated in out. Returns its exit
 * code. */
int harness_admin(char *const args[], char *out, size_t cap);

/* Stops *pid with SIGTERM and asserts it exited 0 (under valgrind: without
 * memory errors or leaks); *pid becomes 0. Call it at the end of a test:
 * a failed check in a suite's .fini does not fail the test. */
void harness_stop_clean(pid_t *pid, const char *what);

/* For .fini: SIGKILLs *pid if a test ended early and left it running. */
void harness_kill_leftover(pid_t *pid);

/* The value of one sample of a Prometheus text exposition (the whole
 * series, labels included: "seckill_purchases_total{outcome=\"queued\"}");
 * 0 when absent. */
long long harness_metric(const char *text, const char *series);

/* A server and a worker on the run's backends, as most end-to-end suites
 * run them. */
typedef struct harness_system {
    int port; /* the server's */
    pid_t server, worker;
} harness_system;

/* How a system starts its server and its worker (harness_start_server and
 * harness_start_worker, or their cluster twins). */
typedef pid_t (*harness_server_start)(int *port, char *const extra_env[], const char *log_name);
typedef pid_t (*harness_worker_start)(char *const extra_env[], const char *log_name);

/* Starts s's server and worker through server and worker with extra_env,
 * logging to <name>-server.log and <name>-worker.log. */
void harness_system_start_with(harness_system *s, char *const extra_env[], const char *name,
                               harness_server_start server, harness_worker_start worker);

/* Empties the backends (harness_reset_backends) and starts a server and a
 * worker with extra_env (as harness_start_server), logging to
 * <name>-server.log and <name>-worker.log. */
void harness_system_start(harness_system *s, char *const extra_env[], const char *name);

/* The same on the suite's Redis Cluster: every backend emptied
 * (harness_cluster_reset), server and worker with redis_cluster. */
void harness_cluster_system_start(harness_system *s, char *const extra_env[], const char *name);

/* The end of a test: both stop cleanly (harness_stop_clean). */
void harness_system_stop(harness_system *s);

/* The one-node Redis Cluster of a suite (harness_node.c): a redis-server in
 * cluster mode on a free port that owns all 16384 slots, and refuses, as any
 * cluster does, a script call or a MULTI whose keys hash to different slots
 * (CROSSSLOT). Its files and log go under the run's scratch folder.
 *
 * In the runner, before the first test (HARNESS_CLUSTER_NODE_SUITE in
 * harness_suite.h): starts it for all the suite's tests (about 2 s), hands
 * its port to them through the environment, and kills it when the runner
 * exits. Asserts nothing (it runs outside any test): returns 0, or -1 and
 * says why on stderr and to every test, which then fails in
 * harness_cluster_node_port. */
int harness_cluster_node_start_shared(void);

/* In a test: the port of the suite's node; aborts the test, saying why,
 * when it did not start. */
int harness_cluster_node_port(void);

/* In a test: a connection to the suite's node, emptied (FLUSHALL, SCRIPT
 * FLUSH) and with every script of sc loaded; the test frees it. Aborts the
 * test on failure. */
redisContext *harness_cluster_node_open(scripts *sc);

/* In a test: the run's config (harness_config) with redis_cluster set to
 * the suite's node (config_free it). Aborts the test on failure. */
void harness_cluster_node_config(config *cfg);

/* Asserts that r, the reply on c to the script call what, is not an error
 * (a cluster's CROSSSLOT refusal included); frees it. */
void harness_expect_ran(redisContext *c, const char *what, redisReply *r);

/* For .fini: kills what a test that ended early left running. */
void harness_system_kill(harness_system *s);

/* Sends sig to pid and reaps it; returns its wait status. */
int harness_stop(pid_t pid, int sig);

/* Freezes pid with SIGSTOP and returns once it has stopped, which kill()
 * alone does not wait for: a process of several threads stops when the
 * thread that took the signal has stopped all the others, and until then
 * they run on (on a loaded machine for tens of ms, long enough to answer a
 * request). Stopped: every thread in state T (/proc/<pid>/task). Aborts the
 * test when it has not stopped within 10 s. */
void harness_freeze(pid_t pid);

/* pid's resident memory in KiB (VmRSS of /proc/<pid>/status; getpid() for
 * the test's own), or -1 when it cannot be read. */
long harness_rss_kib(pid_t pid);

/* Sleeps ms milliseconds (whole, across signals). */
void harness_sleep_ms(int ms);

/* A path under the run's scratch folder (SECKILL_TEST_DIR, else /tmp) for a
 * file named name; static storage, overwritten by the next call. */
const char *harness_path(const char *name);

#endif
