/* admin_main.c: seckill-admin, the operator's tool. Today one command:
 *   seckill-admin reconcile [--json] [--rebuild] [config options]
 * Exit codes: 0 the books balance (or were rebuilt), 1 drift found,
 * 2 bad usage or config, 3 Redis or PostgreSQL unreachable. */
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "config.h"
#include "log.h"
#include "reconcile.h"

static void usage(FILE *out)
{
    fprintf(out, "Usage: seckill-admin reconcile [--json] [--rebuild] [config options]\n\n"
                 "Compares every item's sold units in Redis with its orders in PostgreSQL\n"
                 "and in seckill:pending, and prints the drift. --rebuild sets the drifting\n"
                 "items' stock and buyers in Redis back from those orders (pause the sale\n"
                 "first). Config options as for seckill-server (--help lists them).\n"
                 "Exit: 0 balanced or rebuilt, 1 drift, 2 usage, 3 backend unreachable.\n");
}

int main(int argc, char **argv)
{
    int json = 0, rebuild = 0, command = 0, rest = 1;
    char *pass[argc + 1];
    pass[0] = argv[0];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "reconcile") == 0)
            command = 1;
        else if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (strcmp(argv[i], "--rebuild") == 0)
            rebuild = 1;
        else
            pass[rest++] = argv[i];
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
    char err[512];
    config_init(&cfg);
    config_result cr = config_load(&cfg, "seckill-admin", rest, pass, stdout, err, sizeof(err));
    if (cr != CONFIG_OK) {
        if (cr == CONFIG_ERROR)
            fprintf(stderr, "seckill-admin: %s\n", err);
        config_free(&cfg);
        return cr == CONFIG_EXIT ? 0 : 2;
    }
    log_set_level(LOG_WARN);
    int code = 3;
    redisContext *redis = backend_redis_connect(&cfg, err, sizeof(err));
    PGconn *pg = redis ? backend_pg_connect(&cfg, err, sizeof(err)) : NULL;
    reconcile_report report;
    if (redis && pg && reconcile_scan(redis, pg, &report, err, sizeof(err)) == 0) {
        reconcile_print(&report, json, stdout);
        code = report.drifting ? 1 : 0;
        if (rebuild && report.drifting) {
            int n = reconcile_rebuild(redis, pg, &report, err, sizeof(err));
            if (n >= 0) {
                fprintf(json ? stderr : stdout,
                        "rebuilt %d item(s) from PostgreSQL and the "
                        "pending orders\n",
                        n);
                code = 0;
            } else {
                code = 3;
            }
        }
        reconcile_report_free(&report);
    }
    if (code == 3)
        fprintf(stderr, "seckill-admin: %s\n", err);
    if (redis)
        redisFree(redis);
    PQfinish(pg);
    config_free(&cfg);
    return code;
}
