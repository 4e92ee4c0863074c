/* e2e_metrics.c: /metrics under load is valid Prometheus text (promtool
 * says so) and counts what the buyers were answered; every answer carries
 * a request id, and the access log (in a file of its own, as `make run`
 * keeps it) has one line per answer with that id. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "blast.h"
#include "harness.h"
#include "sale.h"

#define TOKEN "metrics-admin-token"

static harness_system sys;
static int worker_port;
static char resp[1 << 17];

static char access_log[512];

static void start_system(void)
{
    static char worker_port_env[48], access_env[600];
    worker_port = harness_free_port();
    snprintf(worker_port_env, sizeof(worker_port_env), "SECKILL_WORKER_METRICS_PORT=%d",
             worker_port);
    snprintf(access_log, sizeof(access_log), "%s", harness_path("metrics-access.log"));
    unlink(access_log);
    snprintf(access_env, sizeof(access_env), "SECKILL_ACCESS_LOG_FILE=%s", access_log);
    char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN,
                   "SECKILL_WORKER_ID=metrics",
                   worker_port_env,
                   "SECKILL_ACCESS_LOG=true",
                   access_env,
                   NULL};
    harness_system_start(&sys, env, "metrics");
}

static void stop_system(void)
{
    harness_system_stop(&sys);
}

static void kill_leftovers(void)
{
    harness_system_kill(&sys);
}

TestSuite(metrics, .init = start_system, .fini = kill_leftovers, .timeout = 120);

/* promtool's verdict on an exposition, saved under the run's folder as name. */
static int promtool_check(const char *text, const char *name)
{
    const char *path = harness_path(name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "'%s/scripts/promtool.sh' check metrics < '%s' > '%s.check' 2>&1",
             SECKILL_SOURCE_DIR, path, path);
    return system(cmd);
}

/* Lines of the file at path that hold needle (-1 when it cannot be read). */
static long lines_with(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[2048];
    long n = 0;
    while (fgets(line, sizeof(line), f))
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

Test(metrics, a_scrape_under_load_is_valid_prometheus_text_that_counts_the_answers)
{
    sale s;
    sale_init(&s, sys.port, sale_create_item(sys.port, TOKEN, "metered", 500), 2000, 50, 1, 2000);
    cr_assert_eq(sale_run(&s), 0, "%s", s.result.errstr);
    cr_assert_eq(s.naccepted, 500);
    char path[96];
    snprintf(path, sizeof(path), "/api/v1/items/%lld/purchase", (long long)s.item);
    cr_assert_eq(harness_http(sys.port, "GET", path, NULL, NULL, resp, sizeof(resp)), 405);
    long long item = (long long)s.item;
    sale_free(&s);

    cr_assert_eq(harness_http(sys.port, "GET", "/metrics", TOKEN, NULL, resp, sizeof(resp)), 200);
    cr_expect_eq(promtool_check(resp, "metrics-server.txt"), 0,
                 "promtool check metrics failed: see %s.check", harness_path("metrics-server.txt"));

    cr_expect_eq(harness_metric(resp, "seckill_purchases_total{outcome=\"queued\"}"), 500, "%s",
                 resp);
    cr_expect_eq(harness_metric(resp, "seckill_purchases_total{outcome=\"sold_out\"}") +
                     harness_metric(resp, "seckill_purchases_total{outcome=\"sold_out_flag\"}"),
                 1500, "%s", resp);
    cr_expect_gt(harness_metric(resp, "seckill_purchases_total{outcome=\"sold_out_flag\"}"), 0,
                 "the in-memory flag answered none: %s", resp);
    cr_expect_eq(
        harness_metric(resp, "seckill_http_requests_total{route=\"purchase\",code=\"202\"}"), 500);
    cr_expect_eq(
        harness_metric(resp, "seckill_http_requests_total{route=\"purchase\",code=\"409\"}"), 1500);
    cr_expect_eq(
        harness_metric(resp, "seckill_http_requests_total{route=\"purchase\",code=\"405\"}"), 1,
        "a wrong method counts under its path's route");
    cr_expect_eq(
        harness_metric(resp, "seckill_http_request_duration_seconds_count{route=\"purchase\"}"),
        2001);
    cr_expect(strstr(resp, "\nseckill_pending_orders "), "%s", resp);
    cr_expect(strstr(resp, "\nseckill_soldout_flags 1\n"), "%s", resp);

    /* The worker's own /metrics: it persisted the 500, valid text too. */
    char series[128];
    snprintf(series, sizeof(series),
             "seckill_worker_orders_total{worker=\"metrics\",result=\"inserted\"}");
    long long inserted = 0;
    for (int i = 0; i < 200 && inserted < 500; i++) {
        cr_assert_eq(harness_http(worker_port, "GET", "/metrics", NULL, NULL, resp, sizeof(resp)),
                     200);
        inserted = harness_metric(resp, series);
        if (inserted < 500)
            usleep(50 * 1000);
    }
    cr_expect_eq(inserted, 500, "%s", resp);
    cr_expect_eq(promtool_check(resp, "metrics-worker.txt"), 0,
                 "promtool check metrics failed: see %s.check", harness_path("metrics-worker.txt"));

    /* Every answer names its request. */
    static const char get[] = "GET /health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    cr_assert_eq(harness_raw(sys.port, get, sizeof(get) - 1, 5000, resp, sizeof(resp)), 200);
    const char *id = strstr(resp, "X-Request-Id: ");
    cr_assert(id, "%s", resp);
    char needle[96];
    snprintf(needle, sizeof(needle), "id=%.*s ", (int)strcspn(id + 14, "\r\n"), id + 14);
    stop_system();

    /* The access log: in its file, one line an answer; none in the server's log. */
    snprintf(path, sizeof(path), "path=/api/v1/items/%lld/purchase status=", item);
    cr_expect_eq(lines_with(access_log, path), 2001, "%s", access_log);
    cr_expect_eq(lines_with(access_log, needle), 1, "%s in %s", needle, access_log);
    cr_expect_eq(lines_with(access_log, "component=access"), lines_with(access_log, "\n"),
                 "a line of another kind in %s", access_log);
    cr_expect_eq(lines_with(harness_path("metrics-server.log"), "component=access"), 0);
}
