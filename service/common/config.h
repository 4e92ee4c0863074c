/* config.h: the settings of seckill-server and seckill-worker, from defaults,
 * a file, SECKILL_* environment variables and flags, in that order. */
#ifndef SECKILL_CONFIG_H
#define SECKILL_CONFIG_H

#include <stdio.h>

#define CONFIG_ERRLEN 256

/* How a buyer proves who they are (the key buyer_auth). */
typedef enum config_buyer_auth {
    CONFIG_BUYER_AUTH_NONE = 0, /* the user_id in the request is believed */
    CONFIG_BUYER_AUTH_TOKEN     /* Authorization: Bearer, a buyer_token under buyer_token_secret */
} config_buyer_auth;

/* What guards the creation of one buyer's order (the key order_guard). */
typedef enum config_order_guard {
    CONFIG_ORDER_GUARD_LOCK = 0, /* the reserve script takes the buyer's order lock */
    CONFIG_ORDER_GUARD_SCRIPT    /* the script alone (its limit), no lock key */
} config_order_guard;

/* How seckill-webhooks is scheduled (the key webhook_priority). */
typedef enum config_webhook_priority {
    CONFIG_WEBHOOK_PRIORITY_NORMAL = 0, /* as it was started (a unit's Nice=, nice(1)) */
    CONFIG_WEBHOOK_PRIORITY_IDLE        /* SCHED_IDLE: only the CPU nothing else wants */
} config_webhook_priority;

/* reserve_wait_replicas = auto. */
#define CONFIG_WAIT_AUTO (-1)

/* Entries of redlock_servers at most. */
#define CONFIG_REDLOCK_MAX 7

typedef struct config {
    /* HTTP server */
    char *host;
    int port;
    int http_threads; /* 0: one per core */
    int pool_threads; /* threads for the blocking calls (admin, reads) */
    int max_connections;
    int connection_timeout_s;
    int max_body_bytes;
    char *metrics_listen;        /* "host:port" of /metrics alone, no credential; empty: port's */
    int per_ip_connection_limit; /* 0: no limit */
    char *admin_token;           /* secret; a credential of scope admin (credentials.h) */
    char *admin_tokens;          /* secret; "token,...": more of scope admin */
    char *payments_tokens;       /* secret; "token,...": scope payments */
    char *orders_read_tokens;    /* secret; "token,...": scope orders:read */
    char *cors_origins;          /* "scheme://host[:port],...": cors.h */
    int allow_anonymous;         /* purchases without user_id, one new buyer each */
    int rate_limit_per_s;        /* purchases a second per buyer and instance; 0: no limit */
    int rate_limit_burst;        /* ... in bursts of at most this many */
    int purchase_batch;          /* buyers of one reserve_batch call at most */
    int max_pending_orders;      /* accepted, not yet persisted; 0: no bound */
    int room_places;             /* waiting-room places remembered (room_cache) */
    config_order_guard order_guard; /* lock (the buyer's order lock) or script */
    int order_lock_ttl_ms;          /* how long an order lock stands without its worker */
    /* buyers and their orders */
    config_buyer_auth buyer_auth; /* how a buyer proves who they are */
    char *buyer_token_secret;     /* secret; for buyer_auth token, BUYER_TOKEN_SECRET_MIN bytes */
    int payment_timeout_s;        /* an order's default wait for payment; 0: no payment step */
    /* backends */
    char *redis_host;
    int redis_port;
    char *redis_password; /* secret */
    int redis_timeout_ms;
    char *redis_cluster; /* seeds "host:port,..." of a Redis Cluster; empty: the one Redis above */
    /* replicas holding a batch before its 202s (WAIT); 0: none; CONFIG_WAIT_AUTO: one where the
     * slot map lists a replica of the item's master (a Redis Cluster with replicas), else none */
    int reserve_wait_replicas;
    int reserve_wait_timeout_ms; /* WAIT's timeout, then 503 unconfirmed */
    char *pg_conninfo;           /* secret when it holds a password */
    /* oversell laboratory (/api/v1/experiments) */
    int lab;                  /* on: its routes answer and its threads run; off: 404 lab_off */
    int lab_threads;          /* blocking threads of the lab, each with its own connections */
    int lab_delay_ms;         /* default business work inside the critical section */
    int lab_lock_wait_ms;     /* how long a lab strategy waits for its lock (then 429 busy) */
    int lab_lock_ttl_ms;      /* expiry of the lab's Redis locks */
    int lab_segments;         /* stock segments of the strategy `segmented` */
    int lab_faults;           /* honour the lab's fault injection (?crash=, ?race=): scenarios */
    char *redlock_servers;    /* "host:port,..." of `redlock` (checked); empty: the main Redis */
    char *zookeeper_servers;  /* "host:port,..." of `zookeeper_lock`; empty: not configured */
    int zookeeper_session_ms; /* its session timeout: a dead holder's lock lasts this long */
    char *lab_results;        /* `make experiments`' JSON, served at /lab/results.json */
    /* worker */
    char *worker_id;
    int worker_batch_size;
    int worker_batch_ms;
    int worker_retry_max_ms;
    int worker_sweep_ms;     /* period of the recovery sweep; 0: never */
    int worker_expiry_ms;    /* period of the expiry sweep; 0: never */
    int worker_metrics_port; /* GET /metrics of the worker on host:port; 0: none */
    /* seckill-webhooks (webhook_endpoints.h) */
    char *webhook_endpoints;    /* secret; "url secret,..." */
    int webhook_max_attempts;   /* then the dead-letter */
    int webhook_retry_first_ms; /* the first retry's delay, doubled after each failure */
    int webhook_retry_max_ms;   /* ... up to this */
    int webhook_timeout_ms;     /* one delivery's time */
    int webhook_metrics_port;   /* GET /metrics of seckill-webhooks on host:port; 0: none */
    config_webhook_priority webhook_priority; /* normal or idle (SCHED_IDLE) */
    int webhook_storm_rate;    /* events a second that make a storm; 0: no storm waits */
    int webhook_storm_wait_ms; /* the longest deliveries wait out one storm */
    /* seckill-admin */
    char *migrations_dir; /* the sql/NNN_*.sql of migrate; empty: the installed ones, or ./sql */
    /* both */
    char *log_level;
    int access_log;        /* one log line per answered request */
    char *access_log_file; /* where they go, appended; empty: stderr */
} config;

typedef enum config_result {
    CONFIG_OK = 0,   /* go on */
    CONFIG_EXIT = 1, /* --help, --version or --print-config was answered: exit 0 */
    CONFIG_ERROR = 2 /* err says which key and why: exit 2 */
} config_result;

/* Fills cfg with the defaults. config_free() releases it. */
void config_init(config *cfg);
void config_free(config *cfg);

/* Sets one key from its text value. A retired key (config_retired_name) is
 * ignored with a warning. Returns 0, or -1 with err naming the key. */
int config_set(config *cfg, const char *key, const char *value, char *err, size_t errlen);

/* Checks what no key can check alone: buyer_auth = token needs a
 * buyer_token_secret of at least BUYER_TOKEN_SECRET_MIN bytes. Returns 0, or
 * -1 with err naming the key (never the secret). config_load calls it. */
int config_check(const config *cfg, char *err, size_t errlen);

/* Reads "key = value" lines ('#' starts a comment). Returns 0 or -1 with err. */
int config_parse_text(config *cfg, const char *text, const char *origin, char *err, size_t errlen);

/* config_parse_text of the file at path. Returns 0 or -1 with err. */
int config_load_file(config *cfg, const char *path, char *err, size_t errlen);

/* The whole start-up: defaults, --config FILE (or SECKILL_CONFIG), environment,
 * then flags, then config_check. `program` names the binary in --help. Prints
 * help/version/config to out itself; on CONFIG_ERROR err holds the message. */
config_result config_load(config *cfg, const char *program, int argc, char **argv, FILE *out,
                          char *err, size_t errlen);

/* A binary's start-up: config_init, then config_load of cfg (answers on
 * stdout). Returns -1 when the binary goes on with cfg; otherwise its exit
 * code, cfg freed: 0 after --help, --version or --print-config, 2 after an
 * error, printed to stderr as "program: why". */
int config_start(config *cfg, const char *program, int argc, char **argv);

/* Writes every key and its value, secrets masked, in the file format. */
void config_print(const config *cfg, FILE *out);

/* The i-th key a release stopped using (from 0; NULL past the last). A file,
 * an environment variable or a flag that still sets one is accepted, with a
 * warning that says what took its place; its value is not read. */
const char *config_retired_name(size_t i);

#endif
