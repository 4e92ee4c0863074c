/* harness.c: the shared plumbing of the tests that need live servers. */
#include "harness.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "backend.h"
#include "clock.h"
#include "keys.h"
#include "redis_reply.h"
#include "order.h"
#include "registry.h"

void harness_config(config *cfg)
{
    char err[CONFIG_ERRLEN];
    char *argv[] = {"test", NULL};
    if (!getenv("SECKILL_REDIS_PORT") || !getenv("SECKILL_PG_CONNINFO"))
        cr_assert_fail("SECKILL_REDIS_PORT and SECKILL_PG_CONNINFO are not set: run `make test`");
    config_init(cfg);
    if (config_load(cfg, "test", 1, argv, stdout, err, sizeof(err)) != CONFIG_OK)
        cr_assert_fail("config: %s", err);
}

redisContext *harness_redis(void)
{
    config cfg;
    char err[256];
    harness_config(&cfg);
    redisContext *c = backend_redis_connect(&cfg, err, sizeof(err));
    config_free(&cfg);
    cr_assert_not_null(c, "%s", err);
    return c;
}

int64_t harness_redis_now_ms(redisContext *c)
{
    redisReply *r = redisCommand(c, "TIME");
    int64_t secs, us;
    cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
                  redis_reply_number(r->element[0], &secs) == 0 &&
                  redis_reply_number(r->element[1], &us) == 0,
              "Redis's TIME did not answer");
    freeReplyObject(r);
    return secs * 1000 + us / 1000;
}

PGconn *harness_pg(void)
{
    config cfg;
    char err[512];
    harness_config(&cfg);
    PGconn *pg = backend_pg_connect(&cfg, err, sizeof(err));
    config_free(&cfg);
    cr_assert_not_null(pg, "%s", err);
    return pg;
}

static void flush_redis(redisContext *c)
{
    redisReply *r = redisCommand(c, "FLUSHALL");
    cr_assert(r && r->type == REDIS_REPLY_STATUS, "FLUSHALL failed");
    freeReplyObject(r);
}

redisContext *harness_redis_with_scripts(scripts *sc)
{
    redisContext *c = harness_redis();
    flush_redis(c);
    cr_assert_eq(scripts_init(sc), 0, "a script is missing from the build");
    cr_assert_eq(scripts_load(sc, c), 0, "SCRIPT LOAD failed");
    return c;
}

void harness_reset_backends(void)
{
    redisContext *c = harness_redis();
    flush_redis(c);
    redisFree(c);
    harness_reset_tables();
}

void harness_reset_tables(void)
{
    PGconn *pg = harness_pg();
    PGresult *res = PQexec(pg, "TRUNCATE orders, draw_entries, items, order_events, "
                               "webhook_deliveries, webhook_endpoints RESTART IDENTITY");
    cr_assert_eq(PQresultStatus(res), PGRES_COMMAND_OK, "TRUNCATE: %s", PQerrorMessage(pg));
    PQclear(res);
    PQfinish(pg);
}

void harness_item_reset(redisContext *c, const scripts *sc, int64_t item, long long stock,
                        long long round)
{
    harness_item_round(c, sc, item, stock, round, 0, 0, 1);
}

void harness_item_round(redisContext *c, const scripts *sc, int64_t item, long long stock,
                        long long round, long long starts_ms, long long ends_ms, int limit)
{
    char state[KEYS_MAX], buyers[KEYS_MAX], returned[KEYS_MAX], given_back[KEYS_MAX];
    keys_item_state(state, sizeof(state), item);
    keys_item_buyers(buyers, sizeof(buyers), item);
    keys_item_returned(returned, sizeof(returned), item);
    keys_item_given_back(given_back, sizeof(given_back), item);
    redisReply *r = redisCommand(c, "EVALSHA %s 4 %s %s %s %s %lld %lld %lld %lld %d",
                                 sc->s[SCRIPT_ITEM_RESET].sha, state, buyers, returned, given_back,
                                 stock, round, starts_ms, ends_ms, limit);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1, "item_reset: %s",
              r && r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    freeReplyObject(r);
}

void harness_reserve(redisContext *c, const scripts *sc, int64_t item, int64_t key, int n,
                     const int64_t *users, const char **modes, int64_t first_order,
                     int guard_ttl_ms, reserve_answer *out)
{
    reserve_batch *b = malloc(sizeof(*b));
    cr_assert(b);
    reserve_batch_init_segment(b, item, key, 0);
    reserve_batch_guard(b, guard_ttl_ms);
    for (int i = 0; i < n; i++)
        cr_assert_eq(reserve_batch_add_mode(b, users[i], first_order + i, 1,
                                            modes ? modes[i] : (users[i] ? "0" : "1")),
                     i);
    int argc = reserve_batch_argv(b, &sc->s[SCRIPT_RESERVE_BATCH], 0);
    redisReply *r = redisCommandArgv(c, argc, b->argv, b->lens);
    cr_assert(r && r->type == REDIS_REPLY_ARRAY, "reserve_batch: %s",
              r && r->type == REDIS_REPLY_ERROR ? r->str : "not an array");
    for (int i = 0; i < n; i++)
        cr_assert_neq(reserve_batch_answer(r, n, i, &out[i]), RESERVE_BAD_REPLY);
    freeReplyObject(r);
    free(b);
}

long long harness_redis_int(redisContext *c, const char *cmd, const char *key)
{
    redisReply *r = redisCommand(c, "%s %s", cmd, key);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER, "%s %s failed", cmd, key);
    long long n = r->integer;
    freeReplyObject(r);
    return n;
}

long long harness_item_field(redisContext *c, int64_t item, const char *field)
{
    char state[KEYS_MAX];
    keys_item_state(state, sizeof(state), item);
    redisReply *r = redisCommand(c, "HGET %s %s", state, field);
    cr_assert(r && r->type == REDIS_REPLY_STRING, "HGET %s %s", state, field);
    long long v = strtoll(r->str, NULL, 10);
    freeReplyObject(r);
    return v;
}

void harness_push_orders(redisContext *c, int64_t first_id, int64_t first_user, int n, int64_t item,
                         int64_t round, int64_t created_ms)
{
    char key[KEYS_MAX];
    keys_queue(key, sizeof(key), item);
    harness_push_orders_onto(c, key, first_id, first_user, n, item, round, created_ms);
}

void harness_push_orders_onto(redisContext *c, const char *key, int64_t first_id,
                              int64_t first_user, int n, int64_t item, int64_t round,
                              int64_t created_ms)
{
    char buf[256];
    /* Registered as registry_add does, on c (a plain connection). */
    redisReply *added = redisCommand(c, "SADD %s %" PRId64, KEYS_ITEMS, item);
    cr_assert(added && added->type == REDIS_REPLY_INTEGER, "SADD %s", KEYS_ITEMS);
    freeReplyObject(added);
    for (int i = 0; i < n; i++) {
        order o = {first_id + i, item, first_user + i, round, created_ms + i, 1, 1, 0, 0};
        cr_assert(order_encode(&o, buf, sizeof(buf)) > 0);
        redisAppendCommand(c, "LPUSH %s %s", key, buf);
    }
    for (int i = 0; i < n; i++) {
        redisReply *r = NULL;
        cr_assert_eq(redisGetReply(c, (void **)&r), REDIS_OK, "LPUSH failed");
        cr_assert(r->type == REDIS_REPLY_INTEGER, "LPUSH failed");
        freeReplyObject(r);
    }
}

const char *harness_queue_key(int64_t item)
{
    static char key[KEYS_MAX];
    keys_queue(key, sizeof(key), item);
    return key;
}

const char *harness_pending_key(int64_t item)
{
    static char key[KEYS_MAX];
    keys_pending(key, sizeof(key), item);
    return key;
}

long long harness_redis_sum(redisContext *c, const char *cmd, int (*keyfn)(char *, size_t, int64_t))
{
    int64_t *items;
    size_t n;
    redisReply *r = redisCommand(c, "SMEMBERS %s", KEYS_ITEMS);
    cr_assert_eq(registry_from_reply(r, &items, &n), 0, "SMEMBERS %s", KEYS_ITEMS);
    freeReplyObject(r);
    long long sum = 0;
    for (size_t i = 0; i < n; i++) {
        char key[KEYS_MAX];
        keyfn(key, sizeof(key), items[i]);
        sum += harness_redis_int(c, cmd, key);
    }
    free(items);
    return sum;
}

int64_t harness_pg_int(PGconn *pg, const char *sql)
{
    PGresult *res = PQexec(pg, sql);
    cr_assert_eq(PQresultStatus(res), PGRES_TUPLES_OK, "%s: %s", sql, PQerrorMessage(pg));
    cr_assert(PQntuples(res) > 0, "%s: no row", sql);
    int64_t n = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return n;
}

int harness_http_send(int port, const char *method, const char *path, const char *token,
                      const char *body)
{
    char req[8192], auth[512] = "";
    if (token)
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s\r\n", token);
    size_t blen = body ? strlen(body) : 0;
    int n = snprintf(req, sizeof(req),
                     "%s %s HTTP/1.1\r\nHost: test\r\nConnection: close\r\n%s"
                     "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                     method, path, auth, blen, body ? body : "");
    cr_assert(n > 0 && (size_t)n < sizeof(req), "request too long for harness_http");
    int fd = harness_connect(port);
    if (fd < 0)
        return -1;
    for (int off = 0; off < n;) {
        ssize_t w = write(fd, req + off, (size_t)(n - off));
        if (w <= 0) {
            close(fd);
            return -1;
        }
        off += (int)w;
    }
    return fd;
}

int harness_http_answer(int fd, char *resp, size_t cap)
{
    char buf[65536];
    size_t len = 0;
    ssize_t r;
    while (len < sizeof(buf) - 1 && (r = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
        len += (size_t)r;
    close(fd);
    buf[len] = '\0';
    int status = -1;
    if (len < 12 || sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
        return -1;
    const char *b = strstr(buf, "\r\n\r\n");
    snprintf(resp, cap, "%s", b ? b + 4 : "");
    return status;
}

int harness_http(int port, const char *method, const char *path, const char *token,
                 const char *body, char *resp, size_t cap)
{
    int fd = harness_http_send(port, method, path, token, body);
    return fd < 0 ? -1 : harness_http_answer(fd, resp, cap);
}

size_t harness_lab_buy_request(char *buf, size_t cap, const char *strategy, int64_t item,
                               size_t user, int delay_ms)
{
    char buyer[32] = "";
    if (user > 0)
        snprintf(buyer, sizeof(buyer), "&user_id=%zu", user);
    int n = snprintf(buf, cap,
                     "GET /api/v1/experiments/%s/purchase?item=%" PRId64
                     "%s&delay_ms=%d HTTP/1.1\r\nHost: t\r\n\r\n",
                     strategy, item, buyer, delay_ms);
    return n > 0 ? (size_t)n : 0;
}

typedef struct lab_storm {
    const char *strategy;
    int64_t item;
    int delay_ms;
} lab_storm;

static size_t build_lab_buy(void *ctx, size_t index, char *buf, size_t cap)
{
    const lab_storm *s = ctx;
    return harness_lab_buy_request(buf, cap, s->strategy, s->item, index + 1, s->delay_ms);
}

blast_result harness_lab_storm(int port, const char *strategy, int64_t item, size_t buyers,
                               int delay_ms)
{
    lab_storm s = {strategy, item, delay_ms};
    blast_spec spec = {.port = port,
                       .connections = buyers,
                       .requests = buyers,
                       .timeout_ms = 60000,
                       .build = build_lab_buy,
                       .ctx = &s};
    blast_result res;
    cr_assert_eq(blast_run(&spec, &res), 0, "%s: %s", strategy, res.errstr);
    return res;
}

int64_t harness_lab_audit(int port, const char *strategy, int64_t item, const char *field)
{
    char path[160], resp[1024], pattern[64];
    snprintf(path, sizeof(path), "/api/v1/experiments/%s/audit?item=%" PRId64, strategy, item);
    int status = harness_http(port, "GET", path, NULL, NULL, resp, sizeof(resp));
    cr_assert_eq(status, 200, "audit %s: %d %s", strategy, status, resp);
    snprintf(pattern, sizeof(pattern), "\"%s\":", field);
    const char *at = strstr(resp, pattern);
    cr_assert_not_null(at, "audit %s has no %s: %s", strategy, field, resp);
    return strtoll(at + strlen(pattern), NULL, 10);
}

int harness_raw(int port, const char *bytes, size_t len, int timeout_ms, char *resp, size_t cap)
{
    int fd = harness_connect(port);
    if (fd < 0)
        return -1;
    /* The server may answer and close before it read everything (413, 414):
     * a failed write is no failure here, the answer is what counts. */
    for (size_t off = 0; off < len;) {
        ssize_t w = send(fd, bytes + off, len - off, MSG_NOSIGNAL);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    size_t got = 0;
    int64_t deadline = clock_mono_ms() + timeout_ms;
    while (got + 1 < cap) {
        int64_t left = deadline - clock_mono_ms();
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            break;
        ssize_t r = recv(fd, resp + got, cap - 1 - got, 0);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    resp[got] = '\0';
    int status = 0;
    if (got >= 12 && sscanf(resp, "HTTP/1.%*d %d", &status) != 1)
        status = 0;
    return status;
}

/* Runs `scripts/services.sh <verb> <run folder>[/<sub>] <args>` (args: words
 * without quotes, may be NULL); its output lands in out (when not NULL, else
 * nowhere). Returns its exit code. */
static int services(const char *verb, const char *sub, const char *args, char *out, size_t cap)
{
    const char *dir = getenv("SECKILL_TEST_DIR");
    cr_assert(dir && *dir, "SECKILL_TEST_DIR is not set: run `make test`");
    char cmd[1024];
    int len = snprintf(cmd, sizeof(cmd), "'%s/scripts/services.sh' %s '%s%s%s' %s%s",
                       SECKILL_SOURCE_DIR, verb, dir, sub ? "/" : "", sub ? sub : "",
                       args ? args : "", out ? "" : " >/dev/null");
    cr_assert(len > 0 && (size_t)len < sizeof(cmd), "services.sh %s: command too long", verb);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p, "popen: %s", cmd);
    size_t n = out ? fread(out, 1, cap - 1, p) : 0;
    if (out)
        out[n] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int harness_nginx_start(const int *upstreams, int n)
{
    int port = harness_free_port();
    char args[512];
    int len = snprintf(args, sizeof(args), "%d", port);
    for (int i = 0; i < n && len > 0 && (size_t)len < sizeof(args); i++)
        len += snprintf(args + len, sizeof(args) - (size_t)len, " %d", upstreams[i]);
    cr_assert(len > 0 && (size_t)len < sizeof(args), "too many upstreams");
    cr_assert_eq(services("nginx-start", NULL, args, NULL, 0), 0,
                 "services.sh nginx-start failed (log: $SECKILL_TEST_DIR/nginx/error.log)");
    return port;
}

void harness_nginx_stop(void)
{
    services("nginx-stop", NULL, NULL, NULL, 0);
}

void harness_redlock_start(char *servers, size_t cap)
{
    char ports[64];
    cr_assert_eq(services("redlock-start", NULL, NULL, ports, sizeof(ports)), 0,
                 "services.sh redlock-start failed");
    int p1 = 0, p2 = 0;
    cr_assert_eq(sscanf(ports, "%d %d", &p1, &p2), 2, "redlock-start printed '%s'", ports);
    config cfg;
    harness_config(&cfg);
    snprintf(servers, cap, "127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", cfg.redis_port, p1, p2);
    config_free(&cfg);
}

int harness_redis_auth_start(const char *password)
{
    char port[16];
    cr_assert_eq(services("redis-auth-start", NULL, password, port, sizeof(port)), 0,
                 "services.sh redis-auth-start failed (log: "
                 "$SECKILL_TEST_DIR/redis-auth/redis.log)");
    int p = 0;
    cr_assert_eq(sscanf(port, "%d", &p), 1, "redis-auth-start printed '%s'", port);
    return p;
}

void harness_redis_auth_stop(void)
{
    services("redis-auth-stop", NULL, NULL, NULL, 0);
}

void harness_redlock_kill(int n)
{
    char sub[16];
    snprintf(sub, sizeof(sub), "redlock-%d", n);
    cr_assert_eq(services("redis-kill", sub, NULL, NULL, 0), 0, "services.sh redis-kill %s failed",
                 sub);
}

void harness_redlock_stop(void)
{
    services("redlock-stop", NULL, NULL, NULL, 0);
}

void harness_zk_start(char *servers, size_t cap)
{
    char port[32];
    cr_assert_eq(services("zk-start", NULL, NULL, port, sizeof(port)), 0,
                 "services.sh zk-start failed (log: $SECKILL_TEST_DIR/zookeeper/zookeeper.log)");
    int p = 0;
    cr_assert_eq(sscanf(port, "%d", &p), 1, "zk-start printed '%s'", port);
    snprintf(servers, cap, "127.0.0.1:%d", p);
}

void harness_zk_stop(void)
{
    services("zk-stop", NULL, NULL, NULL, 0);
}

int harness_cluster_start(char *seeds, size_t cap)
{
    seeds[0] = '\0';
    if (!getenv("SECKILL_TEST_DIR") || services("cluster-start", NULL, NULL, seeds, cap) != 0)
        return -1;
    seeds[strcspn(seeds, "\n")] = '\0';
    return strchr(seeds, ':') ? 0 : -1;
}

void harness_cluster_stop(void)
{
    if (getenv("SECKILL_TEST_DIR"))
        services("cluster-stop", NULL, NULL, NULL, 0);
}

void harness_cluster_node_restart(int port)
{
    char args[16];
    snprintf(args, sizeof(args), "%d", port);
    cr_assert_eq(services("cluster-node-restart", NULL, args, NULL, 0), 0,
                 "services.sh cluster-node-restart %d failed", port);
}

void harness_redis_crash(void)
{
    cr_assert_eq(services("redis-kill", NULL, NULL, NULL, 0), 0, "services.sh redis-kill failed");
}

void harness_redis_restart(void)
{
    cr_assert_eq(services("redis-restart", NULL, NULL, NULL, 0), 0,
                 "services.sh redis-restart failed");
}

void harness_redis_signal(int sig)
{
    const char *dir = getenv("SECKILL_TEST_DIR");
    cr_assert(dir && *dir, "SECKILL_TEST_DIR is not set: run `make test`");
    char path[1024];
    snprintf(path, sizeof(path), "%s/redis.pid", dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "no %s", path);
    long pid = 0;
    int got = fscanf(f, "%ld", &pid);
    fclose(f);
    cr_assert(got == 1 && pid > 0, "no pid in %s", path);
    if (sig == SIGSTOP)
        harness_freeze((pid_t)pid);
    else
        cr_assert_eq(kill((pid_t)pid, sig), 0, "signal %d to Redis (pid %ld)", sig, pid);
}

void harness_pg_crash(void)
{
    cr_assert_eq(services("pg-kill", NULL, NULL, NULL, 0), 0, "services.sh pg-kill failed");
}

void harness_pg_restart(void)
{
    cr_assert_eq(services("pg-restart", NULL, NULL, NULL, 0), 0, "services.sh pg-restart failed");
}

long long harness_metric(const char *text, const char *series)
{
    char needle[256];
    snprintf(needle, sizeof(needle), "\n%s ", series);
    const char *at = strstr(text, needle);
    return at ? atoll(at + strlen(needle)) : 0;
}

const char *harness_path(const char *name)
{
    static char path[512];
    const char *dir = getenv("SECKILL_TEST_DIR");
    snprintf(path, sizeof(path), "%s/%s", dir && *dir ? dir : "/tmp", name);
    return path;
}

void harness_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}
