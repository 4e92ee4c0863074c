/* config_keys.c: one table of keys drives defaults, the file format, environment
 * variables, flags, --help and --print-config, so they cannot disagree; and
 * the keys a release retired, still accepted with a warning. */
#include "config_key.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "cors.h"
#include "credentials.h"
#include "log.h"
#include "metrics_http.h"
#include "redis_cluster.h"
#include "webhook_endpoints.h"

#define INT_KEY(f, d, lo, hi, h)                                                                   \
    {                                                                                              \
#f, CONFIG_KEY_INT, offsetof(config, f), d, lo, hi, 0, NULL, h, NULL                       \
    }
/* A number that may also be the word "auto" (kept as CONFIG_WAIT_AUTO). */
#define AUTO_INT_KEY(f, d, lo, hi, h)                                                              \
    {                                                                                              \
#f, CONFIG_KEY_INT, offsetof(config, f), d, lo, hi, 0, auto_words, h, NULL                 \
    }
#define BOOL_KEY(f, d, h)                                                                          \
    {                                                                                              \
#f, CONFIG_KEY_BOOL, offsetof(config, f), d, 0, 1, 0, NULL, h, NULL                        \
    }
#define STR_KEY(f, d, s, h)                                                                        \
    {                                                                                              \
#f, CONFIG_KEY_STR, offsetof(config, f), d, 0, 0, s, NULL, h, NULL                         \
    }
#define CHECKED_STR_KEY(f, d, c, h)                                                                \
    {                                                                                              \
#f, CONFIG_KEY_STR, offsetof(config, f), d, 0, 0, 0, NULL, h, c                            \
    }
/* A list of secret tokens: its check names a bad one by position, never by its text. */
#define SECRET_LIST_KEY(f, c, h)                                                                   \
    {                                                                                              \
#f, CONFIG_KEY_STR, offsetof(config, f), "", 0, 0, 1, NULL, h, c                           \
    }
#define ENUM_KEY(f, d, w, h)                                                                       \
    {                                                                                              \
#f, CONFIG_KEY_ENUM, offsetof(config, f), d, 0, 0, 0, w, h, NULL                           \
    }

/* metrics_listen: empty, or an address metrics_http can listen on. */
static int check_metrics_listen(const char *value, char *why, size_t whylen)
{
    char host[METRICS_HTTP_HOST_MAX];
    int port;
    return !*value ? 0 : metrics_http_parse_address(value, host, &port, why, whylen);
}

/* A list "host:port,..." of at most cap addresses (empty: none), read by the
 * one parser of such lists, redis_cluster_seeds_parse. */
static int check_addresses(const char *value, size_t cap, char *why, size_t whylen)
{
    redis_cluster_node nodes[REDIS_CLUSTER_MAX_SEEDS];
    if (cap > REDIS_CLUSTER_MAX_SEEDS)
        cap = REDIS_CLUSTER_MAX_SEEDS;
    return redis_cluster_seeds_parse(value, nodes, cap, why, whylen) < 0 ? -1 : 0;
}

/* redis_cluster: the seeds of a Redis Cluster. */
static int check_cluster_seeds(const char *value, char *why, size_t whylen)
{
    return check_addresses(value, REDIS_CLUSTER_MAX_SEEDS, why, whylen);
}

/* redlock_servers: the servers of the lab's `redlock`. */
static int check_redlock_servers(const char *value, char *why, size_t whylen)
{
    return check_addresses(value, CONFIG_REDLOCK_MAX, why, whylen);
}

/* log_level: one of log.h's levels. */
static int check_log_level(const char *value, char *why, size_t whylen)
{
    log_level level;
    if (log_parse_level(value, &level) == 0)
        return 0;
    snprintf(why, whylen, "expected debug, info, warn or error, got '%s'", value);
    return -1;
}

/* The word an AUTO_INT_KEY takes besides its numbers. */
static const char *const auto_words[] = {"auto", NULL};

/* By value: CONFIG_BUYER_AUTH_NONE, CONFIG_BUYER_AUTH_TOKEN. */
static const char *const buyer_auth_words[] = {"none", "token", NULL};
static const char *const order_guard_words[] = {"lock", "script", NULL};
static const char *const webhook_priority_words[] = {"normal", "idle", NULL};

const config_key config_keys[] = {
    STR_KEY(host, "127.0.0.1", 0, "address the HTTP server listens on"),
    INT_KEY(port, "8080", 1, 65535, "HTTP port"),
    INT_KEY(http_threads, "0", 0, 256, "HTTP event-loop threads (0: one per core)"),
    INT_KEY(pool_threads, "4", 1, 256, "threads for blocking calls (admin, item and order reads)"),
    INT_KEY(max_connections, "16384", 16, 1000000, "open HTTP connections at most"),
    INT_KEY(connection_timeout_s, "30", 1, 3600, "idle HTTP connections are closed after this"),
    INT_KEY(max_body_bytes, "4096", 64, 16777216, "larger request bodies get 413"),
    CHECKED_STR_KEY(metrics_listen, "", check_metrics_listen,
                    "host:port of a listener of GET /metrics alone, without credential, for "
                    "Prometheus on a private address (empty: /metrics on port)"),
    INT_KEY(per_ip_connection_limit, "0", 0, 1000000,
            "open HTTP connections per client IP at most (0: no limit)"),
    STR_KEY(admin_token, "", 1,
            "bearer token of scope admin (empty: none); admin_tokens may list more"),
    SECRET_LIST_KEY(admin_tokens, credentials_check_list,
                    "token,... of scope admin: the sales (create, reset, restock), and all that "
                    "payments and orders:read may (at least 16 characters each)"),
    SECRET_LIST_KEY(payments_tokens, credentials_check_list,
                    "token,... of scope payments: confirm an order's payment, read orders (the "
                    "shop's payment service)"),
    SECRET_LIST_KEY(orders_read_tokens, credentials_check_list,
                    "token,... of scope orders:read: read any order and buyer's orders, and GET "
                    "/metrics on the HTTP port"),
    CHECKED_STR_KEY(
        cors_origins, "", cors_check_list,
        "scheme://host[:port],... of the shop's pages whose browsers may call the buyer "
        "routes (purchase, orders, cancel, the item reads) from another origin (empty: none)"),
    BOOL_KEY(allow_anonymous, "false", "purchases without user_id, each one a new buyer"),
    INT_KEY(rate_limit_per_s, "5", 0, 1000000,
            "purchases a second per buyer and instance, then 429 rate_limited (0: no limit)"),
    INT_KEY(rate_limit_burst, "10", 1, 1000000,
            "a buyer's burst of purchases before the rate applies"),
    INT_KEY(purchase_batch, "32", 1, 64,
            "purchases of one item sent to Redis as one script call at most (group commit)"),
    INT_KEY(max_pending_orders, "1000000", 0, 2000000000,
            "accepted orders of one item not yet persisted at most, then 503 queue_full (0: no "
            "bound)"),
    INT_KEY(room_places, "65536", 1024, 16777216,
            "waiting-room places an instance remembers, so that polls from far back cost no Redis "
            "call (64 bytes each, rounded up to a power of two; a place pushed out is read again)"),
    ENUM_KEY(order_guard, "lock", order_guard_words,
             "what guards the creation of a buyer's order: lock (the buyer's order lock, from "
             "the reservation until the order is in PostgreSQL; 429 in_progress meanwhile) or "
             "script (the reserve script's limit alone, no lock key)"),
    INT_KEY(order_lock_ttl_ms, "5000", 100, 3600000,
            "how long a buyer's order lock stands when no worker releases it (ms)"),
    ENUM_KEY(buyer_auth, "none", buyer_auth_words,
             "how a buyer proves who they are: none (user_id in the request) or token "
             "(Authorization: Bearer, HMAC-signed by the shop's login service)"),
    STR_KEY(buyer_token_secret, "", 1,
            "HMAC-SHA256 key of the buyer tokens, shared with the shop's login service (at "
            "least 32 bytes with buyer_auth = token)"),
    INT_KEY(payment_timeout_s, "900", 0, 86400 * 7,
            "default seconds an order may wait for payment before it expires and its units go "
            "back on sale (0: no payment step, orders are final once persisted); an item may set "
            "its own"),
    STR_KEY(redis_host, "127.0.0.1", 0, "Redis host"),
    INT_KEY(redis_port, "6379", 1, 65535, "Redis port"),
    STR_KEY(redis_password, "", 1, "Redis password (AUTH), empty for none"),
    INT_KEY(redis_timeout_ms, "2000", 1, 600000, "connect and command timeout of Redis calls"),
    CHECKED_STR_KEY(redis_cluster, "", check_cluster_seeds,
                    "host:port,... seeds of a Redis Cluster (empty: the single Redis of redis_host "
                    "and redis_port); the slot map is read from them, and each key goes to the "
                    "master of its slot"),
    AUTO_INT_KEY(reserve_wait_replicas, "auto", 0, 16,
                 "replicas that must hold a batch of reservations before its buyers hear 202 "
                 "(Redis WAIT; auto: one where the item's Redis Cluster master has a replica, "
                 "else none; 0: answer at once, and a master lost before it replicated loses "
                 "them)"),
    INT_KEY(reserve_wait_timeout_ms, "200", 1, 60000,
            "how long a batch waits for reserve_wait_replicas, then its buyers hear 503 "
            "unconfirmed (the orders may still go through)"),
    STR_KEY(pg_conninfo, "host=127.0.0.1 port=5432 dbname=seckill user=seckill", 1,
            "libpq connection string of PostgreSQL"),
    BOOL_KEY(lab, "off",
             "the oversell laboratory (/api/v1/experiments, /lab): on for experiments and tests, "
             "off in production; off, its routes answer 404 lab_off and it starts no thread and "
             "opens no connection; on, it acts only on items created with \"lab\": true"),
    INT_KEY(lab_threads, "64", 1, 1024, "threads of the oversell laboratory's blocking strategies"),
    INT_KEY(lab_delay_ms, "0", 0, 10000, "lab: default business work inside the critical section"),
    INT_KEY(lab_lock_wait_ms, "5000", 0, 600000, "lab: wait for a lock or a retry, then 429 busy"),
    INT_KEY(lab_lock_ttl_ms, "10000", 1, 3600000, "lab: expiry of the Redis locks of the lab"),
    INT_KEY(lab_segments, "8", 1, 256, "lab: stock segments of the strategy `segmented`"),
    BOOL_KEY(lab_faults, "false",
             "lab: let ?crash=after_setnx kill the server mid-lock and ?race=first|second force "
             "two racers' order at a lock (scenarios; never in production)"),
    CHECKED_STR_KEY(redlock_servers, "", check_redlock_servers,
                    "lab: host:port,... of the Redis servers of `redlock`, 7 at most (empty: the "
                    "main Redis alone; the main Redis is reached with redis_password, the others "
                    "without)"),
    STR_KEY(zookeeper_servers, "", 0,
            "lab: host:port,... of the ZooKeeper of `zookeeper_lock` (empty: it answers 503)"),
    INT_KEY(zookeeper_session_ms, "10000", 1000, 600000,
            "lab: ZooKeeper session timeout; a crashed holder's lock goes when it runs out"),
    STR_KEY(lab_results, "loadtest/results/experiments.json", 0,
            "lab: results file of `make experiments`, served at /lab/results.json"),
    STR_KEY(worker_id, "1", 0,
            "worker name; its processing lists are seckill:{item:N}:processing:<id>"),
    INT_KEY(worker_batch_size, "500", 1, 100000, "orders per PostgreSQL transaction at most"),
    INT_KEY(worker_batch_ms, "20", 0, 60000, "how long a batch waits to fill up"),
    INT_KEY(worker_retry_max_ms, "5000", 10, 600000, "longest backoff while PostgreSQL is down"),
    INT_KEY(worker_expiry_ms, "1000", 0, 3600000,
            "period of the expiry sweep: unpaid orders past their deadline expire, and their "
            "units and returns a crash interrupted go back on sale (0: never)"),
    INT_KEY(worker_sweep_ms, "5000", 0, 3600000,
            "period of the sweep of dead workers' lists (0: never; heartbeat TTL 3 periods)"),
    INT_KEY(worker_metrics_port, "0", 0, 65535,
            "port of the worker's own GET /metrics, on host (0: none)"),
    SECRET_LIST_KEY(webhook_endpoints, webhook_endpoints_check,
                    "url secret,... of the shop's webhook endpoints, each with its own signing "
                    "secret (16 to 256 characters), for seckill-webhooks (empty: none)"),
    INT_KEY(webhook_max_attempts, "20", 1, 1000,
            "attempts of one event at one endpoint, then it goes to the endpoint's dead-letter"),
    INT_KEY(webhook_retry_first_ms, "1000", 1, 3600000,
            "delay before a webhook's first retry, doubled after each failure"),
    INT_KEY(webhook_retry_max_ms, "3600000", 1, 86400000, "longest delay between two retries"),
    INT_KEY(webhook_timeout_ms, "10000", 100, 600000,
            "how long one delivery may take (connect and answer), then it counts as failed"),
    INT_KEY(webhook_metrics_port, "0", 0, 65535,
            "port of seckill-webhooks' own GET /metrics, on host (0: none)"),
    ENUM_KEY(webhook_priority, "normal", webhook_priority_words,
             "how seckill-webhooks is scheduled: normal (as started) or idle (SCHED_IDLE: it "
             "runs on the CPU the purchase path leaves; deliveries wait during a storm)"),
    INT_KEY(webhook_storm_rate, "1000", 0, 100000000,
            "events a second written to the feed that make a sale's storm: seckill-webhooks "
            "starts no delivery while one lasts (0: never waits)"),
    INT_KEY(webhook_storm_wait_ms, "60000", 0, 3600000,
            "the longest deliveries wait out one storm, then they go while it lasts"),
    STR_KEY(migrations_dir, "", 0,
            "folder of the SQL migrations of seckill-admin migrate (empty: the installed ones "
            "beside the binary, else ./sql of a checkout)"),
    CHECKED_STR_KEY(log_level, "info", check_log_level, "debug, info, warn or error"),
    BOOL_KEY(access_log, "false",
             "one log line per answered request (id, method, path, status, ms)"),
    STR_KEY(access_log_file, "", 0,
            "where access_log writes, appended (empty: stderr with the rest; rotate with "
            "copytruncate)"),
};

const size_t config_nkeys = sizeof(config_keys) / sizeof(config_keys[0]);

const config_key *config_key_find(const char *name, size_t len)
{
    for (size_t i = 0; i < config_nkeys; i++)
        if (strlen(config_keys[i].name) == len && memcmp(config_keys[i].name, name, len) == 0)
            return &config_keys[i];
    return NULL;
}

/* Keys a release stopped using: accepted, so that a config file (or an
 * environment, or a command line) written for it still starts, with a
 * warning that says what took their place. The value is not read. */
static const struct {
    const char *name, *why;
} retired[] = {
    {"io_threads", "each HTTP loop thread (http_threads) now owns its purchase path's Redis "
                   "connection"},
    {"lock_ttl_ms", "the buyer's order lock is order_guard's, and stands order_lock_ttl_ms"},
};

const char *config_retired_name(size_t i)
{
    return i < sizeof(retired) / sizeof(retired[0]) ? retired[i].name : NULL;
}

int config_key_skip_retired(const char *name, size_t len, const char *where)
{
    for (size_t i = 0; i < sizeof(retired) / sizeof(retired[0]); i++) {
        if (strlen(retired[i].name) == len && memcmp(retired[i].name, name, len) == 0) {
            log_msg(LOG_WARN, "config", "%s: %s is no longer used and is ignored: %s", where,
                    retired[i].name, retired[i].why);
            return 1;
        }
    }
    return 0;
}

int config_key_masked(const config_key *k, const char *value)
{
    if (!k->secret || !value || !*value)
        return 0;
    return strcmp(k->name, "pg_conninfo") != 0 || strstr(value, "password") != NULL;
}
