/* e2e_metrics_listen.c: with metrics_listen, a server answers GET /metrics
 * on that address of its own, without any credential, with the counters of
 * the main port and the gauges read from Redis; nothing else is served
 * there; an address it cannot use stops it at start. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include <criterion/criterion.h>

#include "harness.h"

static pid_t server;
static char resp[1 << 17];

static void kill_leftovers(void)
{
    harness_kill_leftover(&server);
}

TestSuite(metrics_listen, .fini = kill_leftovers, .timeout = 60);

Test(metrics_listen, metrics_answer_on_their_own_address_without_credential)
{
    harness_reset_backends();
    int port, metrics_port = harness_free_port();
    char listen_env[64];
    snprintf(listen_env, sizeof(listen_env), "SECKILL_METRICS_LISTEN=127.0.0.1:%d", metrics_port);
    char *env[] = {listen_env, NULL};
    server = harness_start_server(&port, env, "metrics-listen.log");
    cr_assert_eq(harness_wait_http(metrics_port, "/metrics", 5000), 0,
                 "nothing answers /metrics on port %d", metrics_port);

    /* Three answers on the main port, counted where Prometheus reads. */
    for (int i = 0; i < 3; i++)
        cr_assert_eq(harness_http(port, "GET", "/health", NULL, NULL, resp, sizeof(resp)), 200);
    cr_assert_eq(harness_http(metrics_port, "GET", "/metrics", NULL, NULL, resp, sizeof(resp)), 200,
                 "%s", resp);
    cr_expect_eq(harness_metric(resp, "seckill_http_requests_total{route=\"health\",code=\"200\"}"),
                 3, "%s", resp);
    cr_expect(strstr(resp, "\nseckill_queue_orders 0\n"),
              "the Redis gauges are read on the listener's own connection: %s", resp);

    cr_expect_eq(harness_http(metrics_port, "GET", "/api/v1/items", NULL, NULL, resp, sizeof(resp)),
                 404, "only /metrics there: %s", resp);
    cr_expect_str_eq(resp, "{\"error\":\"not_found\",\"message\":\"only /metrics here\"}");
    cr_expect_eq(harness_http(metrics_port, "POST", "/metrics", NULL, "{}", resp, sizeof(resp)),
                 405, "%s", resp);
    cr_expect_str_eq(resp, "{\"error\":\"method_not_allowed\",\"message\":\"GET only\"}");
    harness_stop_clean(&server, "server");
}

/* seckill-server with args; its output in resp; its exit code. */
static int run_server(const char *args)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "'%s' %s 2>&1", SECKILL_SERVER_BIN, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(resp, 1, sizeof(resp) - 1, p);
    resp[n] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Test(metrics_listen, an_address_that_is_not_host_and_port_is_refused_at_start)
{
    const char *bad[] = {
        "9100",          "localhost:9100", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:70000",
        "127.0.0.1:91x", ":9100"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char args[128];
        snprintf(args, sizeof(args), "--metrics-listen '%s' --print-config", bad[i]);
        cr_expect_eq(run_server(args), 2, "%s: %s", bad[i], resp);
        cr_expect(strstr(resp, "metrics_listen"), "the key is named: %s", resp);
    }
    cr_expect_eq(run_server("--metrics-listen 127.0.0.1:9100 --print-config"), 0, "%s", resp);
    cr_expect(strstr(resp, "metrics_listen = 127.0.0.1:9100\n"), "%s", resp);
}

Test(metrics_listen, an_address_taken_stops_the_server_saying_so)
{
    harness_reset_backends();
    int port, taken;
    char listen_env[64];
    /* The main port of one server is the metrics address of another. */
    server = harness_start_server(&taken, NULL, "metrics-listen-first.log");
    snprintf(listen_env, sizeof(listen_env), "SECKILL_METRICS_LISTEN=127.0.0.1:%d", taken);
    char *env[] = {listen_env, NULL};
    port = harness_free_port();
    char port_arg[32];
    snprintf(port_arg, sizeof(port_arg), "--port=%d", port);
    char *argv[] = {"seckill-server", port_arg, NULL};
    const char *log = harness_path("metrics-listen-taken.log");
    pid_t second = harness_spawn(SECKILL_SERVER_BIN, argv, env, log);
    int status;
    cr_assert_eq(waitpid(second, &status, 0), second);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 1, "exit status %d", status);
    FILE *f = fopen(log, "r");
    cr_assert_not_null(f);
    size_t n = fread(resp, 1, sizeof(resp) - 1, f);
    resp[n] = '\0';
    fclose(f);
    cr_expect(strstr(resp, "/metrics"), "the log says why: %s", resp);
    harness_stop_clean(&server, "server");
}
