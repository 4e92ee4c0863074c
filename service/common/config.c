/* config.c: one table of keys drives defaults, the file format, environment
 * variables, flags, --help and --print-config, so they cannot disagree. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buyer_token.h"
#include "cors.h"
#include "credentials.h"
#include "log.h"
#include "metrics_http.h"
#include "redis_cluster.h"
#include "validate.h"
#include "version.h"
#include "webhook_endpoints.h"

/* KEY_ENUM: one word of a fixed list (any case), kept as its index in an enum field. */
typedef enum { KEY_INT, KEY_BOOL, KEY_STR, KEY_ENUM } key_type;

typedef struct config_key {
    const char *name;
    key_type type;
    size_t offset;
    const char *fallback;
    long min, max;
    int secret;
    const char *const *words; /* KEY_ENUM: the enum's values by name, NULL-terminated */
    const char *help;
    /* KEY_STR: a value's own rule (NULL: any text); -1 with why when broken */
    int (*check)(const char *value, char *why, size_t whylen);
} config_key;

#define INT_KEY(f, d, lo, hi, h)                                                                   \
    {                                                                                              \
#f, KEY_INT, offsetof(config, f), d, lo, hi, 0, NULL, h, NULL                              \
    }
/* A number that may also be the word "auto" (kept as CONFIG_WAIT_AUTO). */
#define AUTO_INT_KEY(f, d, lo, hi, h)                                                              \
    {                                                                                              \
#f, KEY_INT, offsetof(config, f), d, lo, hi, 0, auto_words, h, NULL                        \
    }
#define BOOL_KEY(f, d, h)                                                                          \
    {                                                                                              \
#f, KEY_BOOL, offsetof(config, f), d, 0, 1, 0, NULL, h, NULL                               \
    }
#define STR_KEY(f, d, s, h)                                                                        \
    {                                                                                              \
#f, KEY_STR, offsetof(config, f), d, 0, 0, s, NULL, h, NULL                                \
    }
#define CHECKED_STR_KEY(f, d, c, h)                                                                \
    {                                                                                              \
#f, KEY_STR, offsetof(config, f), d, 0, 0, 0, NULL, h, c                                   \
    }
/* A list of secret tokens: its check names a bad one by position, never by its text. */
#define SECRET_LIST_KEY(f, c, h)                                                                   \
    {                                                                                              \
#f, KEY_STR, offsetof(config, f), "", 0, 0, 1, NULL, h, c                                  \
    }
#define ENUM_KEY(f, d, w, h)                                                                       \
    {                                                                                              \
#f, KEY_ENUM, offsetof(config, f), d, 0, 0, 0, w, h, NULL                                  \
    }

/* An enum field is set through an int, as the other numbers are. */
_Static_assert(sizeof(config_buyer_auth) == sizeof(int), "config_buyer_auth is not int-sized");
_Static_assert(sizeof(config_order_guard) == sizeof(int), "config_order_guard is not int-sized");

/* metrics_listen: empty, or an address metrics_http can listen on. */
static int check_metrics_listen(const char *value, char *why, size_t whylen)
{
    char host[METRICS_HTTP_HOST_MAX];
    int port;
    return !*value ? 0 : metrics_http_parse_address(value, host, &port, why, whylen);
}

/* redis_cluster: a list of seeds redis_cluster.c can read (empty: none). */
static int check_cluster_seeds(const char *value, char *why, size_t whylen)
{
    redis_cluster_node seeds[REDIS_CLUSTER_MAX_SEEDS];
    return redis_cluster_seeds_parse(value, seeds, REDIS_CLUSTER_MAX_SEEDS, why, whylen) < 0 ? -1
                                                                                             : 0;
}

/* The word an AUTO_INT_KEY takes besides its numbers. */
static const char *const auto_words[] = {"auto", NULL};

/* By value: CONFIG_BUYER_AUTH_NONE, CONFIG_BUYER_AUTH_TOKEN. */
static const char *const buyer_auth_words[] = {"none", "token", NULL};
static const char *const order_guard_words[] = {"lock", "script", NULL};

static const config_key keys[] = {
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
    INT_KEY(lock_ttl_ms, "5000", 1, 3600000,
            "unused: the buyer's order lock is order_guard's, order_lock_ttl_ms (old files may set "
            "it)"),
    INT_KEY(rate_limit_per_s, "5", 0, 1000000,
            "purchases a second per buyer and instance, then 429 rate_limited (0: no limit)"),
    INT_KEY(rate_limit_burst, "10", 1, 1000000,
            "a buyer's burst of purchases before the rate applies"),
    INT_KEY(purchase_batch, "32", 1, 64,
            "purchases of one item sent to Redis as one script call at most (group commit)"),
    INT_KEY(max_pending_orders, "1000000", 0, 2000000000,
            "accepted orders of one item not yet persisted at most, then 503 queue_full (0: no "
            "bound)"),
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
    STR_KEY(redlock_servers, "", 0,
            "lab: host:port,... of the Redis servers of `redlock` (empty: the main Redis alone)"),
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
    STR_KEY(migrations_dir, "", 0,
            "folder of the SQL migrations of seckill-admin migrate (empty: the installed ones "
            "beside the binary, else ./sql of a checkout)"),
    STR_KEY(log_level, "info", 0, "debug, info, warn or error"),
    BOOL_KEY(access_log, "false",
             "one log line per answered request (id, method, path, status, ms)"),
    STR_KEY(access_log_file, "", 0,
            "where access_log writes, appended (empty: stderr with the rest; rotate with "
            "copytruncate)"),
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static const config_key *find_key(const char *name, size_t len)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (strlen(keys[i].name) == len && memcmp(keys[i].name, name, len) == 0)
            return &keys[i];
    return NULL;
}

static int parse_bool(const char *v, int *out)
{
    static const char *yes[] = {"1", "true", "yes", "on"};
    static const char *no[] = {"0", "false", "no", "off"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0)
            return *out = 1, 0;
        if (strcasecmp(v, no[i]) == 0)
            return *out = 0, 0;
    }
    return -1;
}

/* "a, b or c": the words of an enum key, for its error message. */
static void list_words(const config_key *k, char *out, size_t outlen)
{
    size_t at = 0;
    out[0] = '\0';
    for (size_t i = 0; k->words[i] && at < outlen; i++) {
        const char *sep = i == 0 ? "" : k->words[i + 1] ? ", " : " or ";
        int n = snprintf(out + at, outlen - at, "%s%s", sep, k->words[i]);
        if (n < 0)
            return;
        at += (size_t)n;
    }
}

static int set_key(config *cfg, const config_key *k, const char *value, char *err, size_t errlen)
{
    char *field = (char *)cfg + k->offset;
    if (k->type == KEY_ENUM) {
        for (int i = 0; k->words[i]; i++) {
            if (strcasecmp(value, k->words[i]) == 0)
                return *(int *)field = i, 0;
        }
        char words[128];
        list_words(k, words, sizeof(words));
        snprintf(err, errlen, "%s: expected %s, got '%s'", k->name, words, value);
        return -1;
    }
    if (k->type == KEY_STR) {
        char why[CONFIG_ERRLEN];
        if (k->check && k->check(value, why, sizeof(why)) < 0) {
            snprintf(err, errlen, "%s: %s", k->name, why);
            return -1;
        }
        char *copy = strdup(value);
        if (!copy) {
            snprintf(err, errlen, "%s: out of memory", k->name);
            return -1;
        }
        free(*(char **)field);
        *(char **)field = copy;
        return 0;
    }
    if (k->type == KEY_BOOL) {
        if (parse_bool(value, (int *)field) < 0) {
            snprintf(err, errlen, "%s: expected true or false, got '%s'", k->name, value);
            return -1;
        }
        return 0;
    }
    if (k->words && strcasecmp(value, k->words[0]) == 0)
        return *(int *)field = CONFIG_WAIT_AUTO, 0;
    int64_t n;
    if (validate_i64(value, strlen(value), &n) < 0) {
        snprintf(err, errlen, "%s: expected an integer%s%s, got '%s'", k->name,
                 k->words ? " or " : "", k->words ? k->words[0] : "", value);
        return -1;
    }
    if (n < k->min || n > k->max) {
        snprintf(err, errlen, "%s: %lld is out of range [%ld, %ld]", k->name, (long long)n, k->min,
                 k->max);
        return -1;
    }
    *(int *)field = (int)n;
    return 0;
}

void config_init(config *cfg)
{
    char err[CONFIG_ERRLEN];
    memset(cfg, 0, sizeof(*cfg));
    for (size_t i = 0; i < NKEYS; i++)
        set_key(cfg, &keys[i], keys[i].fallback, err, sizeof(err));
}

void config_free(config *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < NKEYS; i++) {
        if (keys[i].type != KEY_STR)
            continue;
        char **field = (char **)((char *)cfg + keys[i].offset);
        free(*field);
        *field = NULL;
    }
}

int config_check(const config *cfg, char *err, size_t errlen)
{
    size_t secret = cfg->buyer_token_secret ? strlen(cfg->buyer_token_secret) : 0;
    if (cfg->buyer_auth == CONFIG_BUYER_AUTH_TOKEN && secret < BUYER_TOKEN_SECRET_MIN) {
        snprintf(err, errlen,
                 "buyer_token_secret: buyer_auth = token needs a secret of at least %d bytes, "
                 "this one has %zu (e.g. openssl rand -base64 48, in SECKILL_BUYER_TOKEN_SECRET)",
                 BUYER_TOKEN_SECRET_MIN, secret);
        return -1;
    }
    return 0;
}

/* Keys a release stopped using: accepted, so that a config file written for
 * it still starts, with a warning that says what took their place. */
static const struct {
    const char *name, *why;
} retired[] = {
    {"io_threads", "each HTTP loop thread (http_threads) now owns its purchase path's Redis "
                   "connection"},
};

int config_set(config *cfg, const char *key, const char *value, char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof(retired) / sizeof(retired[0]); i++) {
        if (strcmp(key, retired[i].name) == 0) {
            log_msg(LOG_WARN, "config", "%s is no longer used and is ignored: %s", key,
                    retired[i].why);
            return 0;
        }
    }
    const config_key *k = find_key(key, strlen(key));
    if (!k) {
        snprintf(err, errlen, "%s: unknown key", key);
        return -1;
    }
    return set_key(cfg, k, value, err, errlen);
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    return s;
}

int config_parse_text(config *cfg, const char *text, const char *origin, char *err, size_t errlen)
{
    char *copy = strdup(text);
    if (!copy) {
        snprintf(err, errlen, "%s: out of memory", origin);
        return -1;
    }
    int lineno = 0, rc = 0;
    char *next = copy;
    while (next && rc == 0) {
        char *line = next;
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *s = trim(line);
        if (*s == '\0')
            continue;
        char *eq = strchr(s, '=');
        char sub[CONFIG_ERRLEN];
        if (!eq) {
            snprintf(err, errlen, "%s:%d: expected 'key = value'", origin, lineno);
            rc = -1;
        } else {
            *eq = '\0';
            if (config_set(cfg, trim(s), trim(eq + 1), sub, sizeof(sub)) < 0) {
                snprintf(err, errlen, "%s:%d: %s", origin, lineno, sub);
                rc = -1;
            }
        }
    }
    free(copy);
    return rc;
}

static int load_file(config *cfg, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "config file %s: %s", path, strerror(errno));
        return -1;
    }
    char *text = NULL;
    size_t len = 0, cap = 0, n;
    char chunk[4096];
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            char *grown = realloc(text, cap);
            if (!grown) {
                free(text);
                fclose(f);
                snprintf(err, errlen, "config file %s: out of memory", path);
                return -1;
            }
            text = grown;
        }
        memcpy(text + len, chunk, n);
        len += n;
    }
    fclose(f);
    if (!text)
        return 0;
    text[len] = '\0';
    int rc = config_parse_text(cfg, text, path, err, errlen);
    free(text);
    return rc;
}

static void env_name(const char *key, char *out, size_t outlen)
{
    size_t i = snprintf(out, outlen, "SECKILL_");
    for (; *key && i + 1 < outlen; key++)
        out[i++] = (char)toupper((unsigned char)*key);
    out[i] = '\0';
}

/* Whether a value is shown as ****: secrets are, but a conninfo only when it
 * carries a password. */
static int masked(const config_key *k, const char *value)
{
    if (!k->secret || !value || !*value)
        return 0;
    return strcmp(k->name, "pg_conninfo") != 0 || strstr(value, "password") != NULL;
}

/* Which binaries read a key: a config file is shared by all three, and each
 * one's --help lists only the keys it reads. */
enum { READ_BY_SERVER = 1, READ_BY_WORKER = 2, READ_BY_ADMIN = 4, READ_BY_ALL = 7 };

static unsigned readers(const char *key)
{
    static const struct {
        const char *prefix;
        unsigned by;
    } table[] = {
        {"redis_", READ_BY_ALL},
        {"pg_", READ_BY_ALL},
        {"order_", READ_BY_ALL}, /* the worker and reconcile release the order locks */
        {"log_level", READ_BY_ALL},
        {"worker_", READ_BY_WORKER},
        {"migrations_", READ_BY_ADMIN},
        {"host", READ_BY_SERVER | READ_BY_WORKER},  /* the worker's /metrics listens on it */
        {"buyer_", READ_BY_SERVER | READ_BY_ADMIN}, /* seckill-admin buyer-token signs */
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (strncmp(key, table[i].prefix, strlen(table[i].prefix)) == 0)
            return table[i].by;
    return READ_BY_SERVER;
}

/* The binary a program name is (the server for any other: tests use their own names). */
static unsigned reader_of(const char *program)
{
    if (strcmp(program, "seckill-worker") == 0)
        return READ_BY_WORKER;
    if (strcmp(program, "seckill-admin") == 0)
        return READ_BY_ADMIN;
    return READ_BY_SERVER;
}

static void print_help(const char *program, FILE *out)
{
    fprintf(out,
            "Usage: %s [options]\n\n"
            "Options (each also a config file key, and an environment variable SECKILL_<KEY>;\n"
            "the other binaries' keys are accepted too, so that one config file serves all):\n",
            program);
    unsigned me = reader_of(program);
    for (size_t i = 0; i < NKEYS; i++) {
        if (!(readers(keys[i].name) & me))
            continue;
        char flag[64];
        snprintf(flag, sizeof(flag), "--%s", keys[i].name);
        for (char *p = flag + 2; *p; p++)
            if (*p == '_')
                *p = '-';
        fprintf(out, "  %-26s %s (default: %s)\n", flag, keys[i].help,
                masked(&keys[i], keys[i].fallback) ? "****" : keys[i].fallback);
    }
    fprintf(out,
            "\n  %-26s %s\n  %-26s %s\n  %-26s %s\n  %-26s %s\n\n"
            "Precedence: defaults < config file < environment < flags.\n",
            "--config FILE", "read a config file first (also SECKILL_CONFIG)", "--print-config",
            "print the effective config (secrets masked) and exit", "--version",
            "print the version and exit", "--help", "print this help and exit");
}

/* Matches "--name" or "--name=value" against a key, with '-' for '_'. */
static const config_key *match_flag(const char *arg, const char **inline_value)
{
    if (strncmp(arg, "--", 2) != 0)
        return NULL;
    arg += 2;
    const char *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    char name[64];
    if (len >= sizeof(name))
        return NULL;
    for (size_t i = 0; i < len; i++)
        name[i] = arg[i] == '-' ? '_' : arg[i];
    *inline_value = eq ? eq + 1 : NULL;
    return find_key(name, len);
}

config_result config_load(config *cfg, const char *program, int argc, char **argv, FILE *out,
                          char *err, size_t errlen)
{
    const char *file = getenv("SECKILL_CONFIG");
    int want_help = 0, want_version = 0, want_print = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            want_help = 1;
        else if (strcmp(argv[i], "--version") == 0)
            want_version = 1;
        else if (strcmp(argv[i], "--print-config") == 0)
            want_print = 1;
        else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            file = argv[++i];
        else if (strcmp(argv[i], "--config") == 0) {
            snprintf(err, errlen, "option '--config' needs a value");
            return CONFIG_ERROR;
        } else if (strncmp(argv[i], "--config=", 9) == 0)
            file = argv[i] + 9;
    }
    if (want_help) {
        print_help(program, out);
        return CONFIG_EXIT;
    }
    if (want_version) {
        fprintf(out, "%s %s\n", program, SECKILL_VERSION);
        return CONFIG_EXIT;
    }
    if (file && *file && load_file(cfg, file, err, errlen) < 0)
        return CONFIG_ERROR;

    for (size_t i = 0; i < NKEYS; i++) {
        char name[80];
        env_name(keys[i].name, name, sizeof(name));
        const char *v = getenv(name);
        char sub[CONFIG_ERRLEN];
        if (v && set_key(cfg, &keys[i], v, sub, sizeof(sub)) < 0) {
            snprintf(err, errlen, "environment %s: %s", name, sub);
            return CONFIG_ERROR;
        }
    }

    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value;
        if (strcmp(arg, "--print-config") == 0)
            continue;
        if (strcmp(arg, "--config") == 0) {
            i++;
            continue;
        }
        if (strncmp(arg, "--config=", 9) == 0)
            continue;
        const config_key *k = match_flag(arg, &value);
        if (!k) {
            snprintf(err, errlen, "unknown option '%s' (see --help)", arg);
            return CONFIG_ERROR;
        }
        if (!value) {
            if (k->type == KEY_BOOL && (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0)) {
                value = "true";
            } else if (i + 1 < argc) {
                value = argv[++i];
            } else {
                snprintf(err, errlen, "option '%s' needs a value", arg);
                return CONFIG_ERROR;
            }
        }
        if (set_key(cfg, k, value, err, errlen) < 0)
            return CONFIG_ERROR;
    }
    /* The buyer keys' rules concern only the binaries that read them: a
     * worker need not hold the buyers' secret. */
    if ((reader_of(program) & readers("buyer_auth")) && config_check(cfg, err, errlen) < 0)
        return CONFIG_ERROR;
    if (want_print) {
        config_print(cfg, out);
        return CONFIG_EXIT;
    }
    return CONFIG_OK;
}

void config_print(const config *cfg, FILE *out)
{
    for (size_t i = 0; i < NKEYS; i++) {
        const char *field = (const char *)cfg + keys[i].offset;
        switch (keys[i].type) {
        case KEY_INT:
            if (keys[i].words && *(const int *)field == CONFIG_WAIT_AUTO)
                fprintf(out, "%s = %s\n", keys[i].name, keys[i].words[0]);
            else
                fprintf(out, "%s = %d\n", keys[i].name, *(const int *)field);
            break;
        case KEY_BOOL: {
            /* A switch whose default is spelled off (lab) prints as on/off. */
            int switch_words = strcmp(keys[i].fallback, "off") == 0;
            int on = *(const int *)field;
            fprintf(out, "%s = %s\n", keys[i].name,
                    switch_words ? (on ? "on" : "off") : (on ? "true" : "false"));
            break;
        }
        case KEY_ENUM:
            fprintf(out, "%s = %s\n", keys[i].name, keys[i].words[*(const int *)field]);
            break;
        case KEY_STR: {
            const char *s = *(char *const *)field;
            fprintf(out, "%s = %s\n", keys[i].name, masked(&keys[i], s) ? "****" : (s ? s : ""));
            break;
        }
        }
    }
}
