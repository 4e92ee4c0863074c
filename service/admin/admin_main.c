/* admin_main.c: seckill-admin, the operator's tool. Three commands:
 *   seckill-admin reconcile [--json] [--hold | --rebuild] [config options]
 *   seckill-admin buyer-token USER [--ttl S] [config options]
 *   seckill-admin migrate [config options]
 * Exit codes: 0 the books balance (or were rebuilt), the token was printed,
 * or the schema is up to date; 1 drift found, returns owed that only a
 * rebuild makes, or a migration failed; 2 bad usage or config; 3 Redis or
 * PostgreSQL unreachable, or a rebuild that failed. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "backend.h"
#include "buyer_token.h"
#include "clock.h"
#include "config.h"
#include "log.h"
#include "migrate.h"
#include "reconcile.h"
#include "redis_nodes.h"
#include "validate.h"

/* buyer-token's --ttl: an hour by default, a year at most. */
#define TOKEN_TTL_DEFAULT 3600
#define TOKEN_TTL_MAX (365 * 86400)

typedef enum {
    COMMAND_NONE,
    COMMAND_RECONCILE,
    COMMAND_BUYER_TOKEN,
    COMMAND_MIGRATE
} admin_command;

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: seckill-admin reconcile [--json] [--hold | --rebuild] [config options]\n"
            "       seckill-admin buyer-token USER [--ttl S] [config options]\n"
            "       seckill-admin migrate [config options]\n\n"
            "reconcile compares every item's sold units in Redis with its orders in\n"
            "PostgreSQL and in its pending hash, and prints the drift. --rebuild sets the\n"
            "drifting items' stock and buyers in Redis back from those orders, and gives\n"
            "back the returns owed by another Redis; each item is off sale (404) while it\n"
            "is rebuilt, in pieces, with its progress on stderr.\n"
            "--hold only takes the drifting items off sale (their buyers get 404) until a\n"
            "--rebuild puts them back: the other items can sell meanwhile.\n\n"
            "buyer-token prints a buyer token for the buyer id USER (1 to 2^53-1), valid\n"
            "for S seconds (default %d, at most %d), signed with buyer_token_secret\n"
            "(SECKILL_BUYER_TOKEN_SECRET, at least %d bytes) as a shop's login service\n"
            "signs them: for trying and testing a server with buyer_auth = token.\n\n"
            "migrate applies the SQL migrations of migrations_dir (default: those installed\n"
            "beside seckill-admin, else ./sql) that PostgreSQL has not applied yet, in\n"
            "order, each in one transaction, and prints the schema version. Forward only;\n"
            "safe to repeat, and to run from two hosts at once (an advisory lock).\n\n"
            "Config options as for seckill-server (--help lists them).\n"
            "Exit: 0 balanced, rebuilt, printed or migrated, 1 drift, returns owed (a rebuild\n"
            "mends them) or a migration failed, 2 usage, 3 backend unreachable or a rebuild\n"
            "that failed.\n",
            TOKEN_TTL_DEFAULT, TOKEN_TTL_MAX, BUYER_TOKEN_SECRET_MIN);
}

/* Prints the token of the buyer id user valid for ttl seconds (NULL: the
 * default) from now, and a newline. Returns the exit code. */
static int print_buyer_token(const config *cfg, const char *user, const char *ttl)
{
    int64_t user_id, ttl_s = TOKEN_TTL_DEFAULT;
    if (!user) {
        fprintf(stderr, "seckill-admin: buyer-token needs USER, a buyer id (1 to 2^53-1)\n");
        return 2;
    }
    if (validate_id(user, strlen(user), &user_id) < 0 || user_id > BUYER_TOKEN_USER_MAX) {
        fprintf(stderr,
                "seckill-admin: buyer-token: USER must be a buyer id, 1 to 2^53-1, got '%s'\n",
                user);
        return 2;
    }
    if (ttl && (validate_id(ttl, strlen(ttl), &ttl_s) < 0 || ttl_s > TOKEN_TTL_MAX)) {
        fprintf(stderr, "seckill-admin: buyer-token: --ttl must be seconds, 1 to %d, got '%s'\n",
                TOKEN_TTL_MAX, ttl);
        return 2;
    }
    /* A token under a shorter secret would be refused by any server that
     * checks tokens (config_check), so none is made. */
    size_t secret = strlen(cfg->buyer_token_secret);
    if (secret < BUYER_TOKEN_SECRET_MIN) {
        fprintf(stderr,
                "seckill-admin: buyer-token needs buyer_token_secret (SECKILL_BUYER_TOKEN_SECRET), "
                "the server's, at least %d bytes; this one has %zu\n",
                BUYER_TOKEN_SECRET_MIN, secret);
        return 2;
    }
    char token[BUYER_TOKEN_MAX];
    if (buyer_token_mint(cfg->buyer_token_secret, user_id, clock_wall_s() + ttl_s, token,
                         sizeof(token)) < 0) {
        fprintf(stderr, "seckill-admin: buyer-token: signing failed (libcrypto)\n");
        return 2;
    }
    printf("%s\n", token);
    return 0;
}

typedef enum { MEND_NONE, MEND_HOLD, MEND_REBUILD } mend;

/* Compares Redis with PostgreSQL and prints the drift; --hold takes the
 * drifting items off sale, --rebuild mends them. Returns the exit code. */
static int reconcile(const config *cfg, int json, mend how)
{
    char err[512];
    int code = 3;
    /* Redis first, as the books are read: a Redis that does not answer is
     * said before PostgreSQL is tried. */
    redis_nodes *redis = redis_nodes_create(cfg, "reconcile");
    PGconn *pg = NULL;
    if (!redis || redis_nodes_count(redis) == 0 || !redis_nodes_at(redis, 0))
        snprintf(err, sizeof(err), "redis: %s", redis ? "no node answers" : "out of memory");
    else
        pg = backend_pg_connect(cfg, err, sizeof(err));
    reconcile_report report;
    if (redis && pg && reconcile_scan(redis, pg, &report, err, sizeof(err)) == 0) {
        reconcile_print(&report, json, stdout);
        code = report.drifting || report.owing ? 1 : 0;
        if (how == MEND_HOLD) {
            int n = reconcile_hold(redis, &report, err, sizeof(err));
            if (n >= 0)
                fprintf(json ? stderr : stdout,
                        "held %d item(s) off sale until seckill-admin reconcile --rebuild\n", n);
            code = n >= 0 ? code : 3;
        }
        if (how == MEND_REBUILD && code == 1) {
            int n = reconcile_rebuild(redis, pg, &report, stderr, err, sizeof(err));
            if (n >= 0)
                fprintf(json ? stderr : stdout,
                        "rebuilt %d item(s) from PostgreSQL and the pending orders\n", n);
            code = n >= 0 ? 0 : 3;
        }
        reconcile_report_free(&report);
    }
    if (code == 3)
        fprintf(stderr, "seckill-admin: %s\n", err);
    redis_nodes_free(redis);
    PQfinish(pg);
    return code;
}

/* Applies the migrations PostgreSQL lacks. Returns the exit code. */
static int migrate(const config *cfg)
{
    char dir[4096], err[1024];
    if (cfg->migrations_dir[0])
        snprintf(dir, sizeof(dir), "%s", cfg->migrations_dir);
    else
        migrate_default_dir(dir, sizeof(dir));
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr,
                "seckill-admin: migrate: no folder of migrations at %s (migrations_dir names "
                "it)\n",
                dir);
        return 2;
    }
    PGconn *pg = backend_pg_connect(cfg, err, sizeof(err));
    int code = 3;
    if (pg && migrate_run(pg, dir, stdout, err, sizeof(err)) >= 0)
        code = 0;
    else if (pg && PQstatus(pg) == CONNECTION_OK)
        code = 1;
    if (code != 0)
        fprintf(stderr, "seckill-admin: migrate: %s\n", err);
    PQfinish(pg);
    return code;
}

int main(int argc, char **argv)
{
    int json = 0, rest = 1;
    mend how = MEND_NONE;
    admin_command command = COMMAND_NONE;
    const char *user = NULL, *ttl = NULL;
    char *pass[argc + 1];
    pass[0] = argv[0];
    for (int i = 1; i < argc; i++) {
        if (command == COMMAND_NONE && strcmp(argv[i], "reconcile") == 0) {
            command = COMMAND_RECONCILE;
        } else if (command == COMMAND_NONE && strcmp(argv[i], "migrate") == 0) {
            command = COMMAND_MIGRATE;
        } else if (command == COMMAND_NONE && strcmp(argv[i], "buyer-token") == 0) {
            command = COMMAND_BUYER_TOKEN;
            /* USER comes right after the command; a flag there means none. */
            if (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0)
                user = argv[++i];
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--rebuild") == 0 && how != MEND_HOLD) {
            how = MEND_REBUILD;
        } else if (strcmp(argv[i], "--hold") == 0 && how != MEND_REBUILD) {
            how = MEND_HOLD;
        } else if (strcmp(argv[i], "--ttl") == 0) {
            ttl = i + 1 < argc ? argv[++i] : "";
        } else if (strncmp(argv[i], "--ttl=", 6) == 0) {
            ttl = argv[i] + 6;
        } else {
            pass[rest++] = argv[i];
        }
    }
    pass[rest] = NULL;
    int wants_info = 0, wants_help = 0;
    for (int i = 1; i < rest; i++) {
        wants_help |= !strcmp(pass[i], "--help");
        wants_info |= !strcmp(pass[i], "--version") || !strcmp(pass[i], "--print-config");
    }
    if (!command && !wants_info && !wants_help) {
        usage(stderr);
        return 2;
    }
    /* The tool's own usage before the config's keys; --version says only
     * the version. */
    if (wants_help)
        usage(stdout);

    config cfg;
    int started = config_start(&cfg, "seckill-admin", rest, pass);
    if (started >= 0)
        return started;
    log_set_level(LOG_WARN);
    int code;
    if (command != COMMAND_RECONCILE && (json || how != MEND_NONE)) {
        fprintf(stderr, "seckill-admin: --json, --hold and --rebuild belong to reconcile\n");
        code = 2;
    } else if (command != COMMAND_BUYER_TOKEN && ttl) {
        fprintf(stderr, "seckill-admin: --ttl belongs to buyer-token\n");
        code = 2;
    } else if (command == COMMAND_MIGRATE) {
        code = migrate(&cfg);
    } else if (command == COMMAND_BUYER_TOKEN) {
        code = print_buyer_token(&cfg, user, ttl);
    } else {
        code = reconcile(&cfg, json, how);
    }
    config_free(&cfg);
    return code;
}
