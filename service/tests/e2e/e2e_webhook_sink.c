/* e2e_webhook_sink.c: the bench's webhook receiver (seckill-webhook-sink,
 * loadtest/webhook_sink.c), a real process over real HTTP, checked as the
 * sample receiver is in e2e_webhooks: a genuine delivery is counted, a
 * repeat counted as a repeat, a forged or stale one refused 400, /stats
 * says so; a sale's events delivered by seckill-webhooks all reach it, as
 * `make bench` checks; a bad argument exits 2 and says which. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "clock.h"
#include "harness.h"
#include "hook_post.h"
#include "sale.h"
#include "webhook_sign.h"

#define TOKEN "e2e-webhook-sink-admin-token"
#define SECRET "whsec-e2e-sink-0123456789"

static harness_system sys;
static pid_t sink, deliverer;

static void kill_leftovers(void)
{
    harness_kill_leftover(&deliverer);
    harness_kill_leftover(&sink);
    harness_system_kill(&sys);
}

TestSuite(webhook_sink, .fini = kill_leftovers, .timeout = 120);

/* The sink on a free port, its secret from the environment. */
static pid_t start_sink(int *port)
{
    *port = harness_free_port();
    char port_s[12];
    snprintf(port_s, sizeof(port_s), "%d", *port);
    char *argv[] = {"seckill-webhook-sink", "--port", port_s, NULL};
    char *env[] = {"WEBHOOK_SECRET=" SECRET, NULL};
    pid_t pid =
        harness_spawn(SECKILL_WEBHOOK_SINK_BIN, argv, env, harness_path("e2e-webhook-sink.log"));
    cr_assert_eq(harness_wait_http(*port, "/health", 10000), 0, "the sink is not up");
    return pid;
}

/* body signed with secret at now + skew_s, posted. */
static int post_signed(int port, const char *secret, int64_t skew_s, const char *body, int64_t id)
{
    char sig[WEBHOOK_SIGNATURE_MAX];
    cr_assert_eq(
        webhook_sign(secret, clock_wall_ms() / 1000 + skew_s, body, strlen(body), sig, sizeof(sig)),
        0);
    return hook_post(port, body, sig, id);
}

/* The count named field of GET path (/stats...). */
static int64_t stat_of(int port, const char *path, const char *field)
{
    char resp[1024];
    cr_assert_eq(harness_http(port, "GET", path, NULL, NULL, resp, sizeof(resp)), 200, "%s", resp);
    json_t *j = json_loads(resp, 0, NULL);
    cr_assert(json_is_integer(json_object_get(j, field)), "%s in %s", field, resp);
    int64_t v = json_integer_value(json_object_get(j, field));
    json_decref(j);
    return v;
}

#define EVENT(id) "{\"id\":" #id ",\"type\":\"order.paid\",\"order\":{\"order_id\":\"9\"}}"

Test(webhook_sink, a_genuine_delivery_is_counted_a_repeat_as_a_repeat_a_forged_or_stale_one_400)
{
    int port;
    sink = start_sink(&port);
    cr_assert_eq(post_signed(port, SECRET, 0, EVENT(7), 7), 200, "signed by the secret");
    cr_assert_eq(stat_of(port, "/stats", "deliveries"), 1);
    cr_assert_eq(stat_of(port, "/stats", "events"), 1);
    cr_assert_eq(post_signed(port, SECRET, 0, EVENT(7), 7), 200, "a repeat is answered 200");
    cr_assert_eq(stat_of(port, "/stats", "deliveries"), 2);
    cr_assert_eq(stat_of(port, "/stats", "events"), 1, "a repeat is no new event");
    cr_assert_eq(stat_of(port, "/stats", "repeats"), 1);

    cr_assert_eq(post_signed(port, "whsec-another", 0, EVENT(8), 8), 400, "another secret");
    cr_assert_eq(post_signed(port, SECRET, -600, EVENT(8), 8), 400, "ten minutes old: a replay");
    cr_assert_eq(post_signed(port, SECRET, 600, EVENT(8), 8), 400, "ten minutes ahead");
    cr_assert_eq(post_signed(port, SECRET, 0, EVENT(8), 9), 400, "an event id not the body's");
    cr_assert_eq(post_signed(port, SECRET, 0, "{\"type\":\"x\",\"id\":8}", 8), 400,
                 "a body that does not open with its id");
    char sig[WEBHOOK_SIGNATURE_MAX], forged[] = EVENT(7);
    webhook_sign(SECRET, clock_wall_ms() / 1000, forged, strlen(forged), sig, sizeof(sig));
    forged[6] = '8'; /* the event id changed after signing */
    cr_assert_eq(hook_post(port, forged, sig, 8), 400, "a body changed after signing");
    cr_assert_eq(hook_post(port, EVENT(8), "", 8), 400, "no signature");
    cr_assert_eq(stat_of(port, "/stats", "refused"), 7);
    cr_assert_eq(stat_of(port, "/stats", "deliveries"), 2, "no refused delivery counted");
    cr_assert_eq(stat_of(port, "/stats", "events"), 1);

    cr_assert_eq(post_signed(port, SECRET, 0, EVENT(1000), 1000), 200);
    cr_assert_eq(stat_of(port, "/stats", "max_event_id"), 1000);
    cr_assert_eq(stat_of(port, "/stats?after=7", "events_after"), 1, "1000 alone is after 7");
    cr_assert_eq(stat_of(port, "/stats?after=6", "events_after"), 2);
    cr_assert_eq(stat_of(port, "/stats", "events_after"), 2, "all of them without after");
    char resp[512];
    cr_assert_eq(harness_http(port, "GET", "/stats?after=x", NULL, NULL, resp, sizeof(resp)), 400);
    cr_assert(strstr(resp, "\"error\""), "%s", resp);
    harness_stop_clean(&sink, "seckill-webhook-sink");
}

/* A sale's events (an order.persisted each) posted by seckill-webhooks,
 * with its defaults (a storm of the sale's events waited out): the sink
 * counts each event once, refuses none, as `make bench` reads it. */
Test(webhook_sink, a_sales_events_delivered_by_seckill_webhooks_all_reach_the_sink)
{
    enum { UNITS = 200 };
    char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=e2e-webhook-sink", NULL};
    harness_system_start(&sys, env, "e2e-webhook-sink");
    int port;
    sink = start_sink(&port);
    char e[2][256];
    snprintf(e[0], sizeof(e[0]), "SECKILL_WEBHOOK_ENDPOINTS=http://127.0.0.1:%d/hook " SECRET,
             port);
    snprintf(e[1], sizeof(e[1]), "SECKILL_WEBHOOK_METRICS_PORT=%d", harness_free_port());
    char *extra[] = {e[0], e[1], NULL};
    char *argv[] = {"seckill-webhooks", NULL};
    deliverer = harness_spawn(SECKILL_WEBHOOKS_BIN, argv, extra,
                              harness_path("e2e-webhook-sink-deliverer.log"));
    /* A new endpoint's cursor starts at the last event: it is registered
     * before the sale. */
    PGconn *pg = harness_pg();
    for (int waited = 0;
         harness_pg_int(pg, "SELECT count(*) FROM webhook_endpoints") < 1 && waited < 10000;
         waited += 50)
        harness_sleep_ms(50);
    cr_assert_eq(harness_pg_int(pg, "SELECT count(*) FROM webhook_endpoints"), 1);
    int64_t item = sale_create_item(sys.port, TOKEN, "sink", UNITS);
    sale s;
    sale_init(&s, sys.port, item, UNITS, 20, 1, UNITS);
    cr_assert_eq(sale_run(&s), 0);
    cr_assert_eq(s.naccepted, UNITS);
    sale_free(&s);
    sale_wait_drained(30000);

    int64_t owed = harness_pg_int(pg, "SELECT count(*) FROM order_events");
    cr_assert_eq(owed, UNITS, "an order.persisted an order");
    for (int waited = 0; stat_of(port, "/stats", "events") < owed && waited < 30000; waited += 100)
        harness_sleep_ms(100);
    cr_assert_eq(stat_of(port, "/stats?after=0", "events_after"), owed);
    cr_assert_eq(stat_of(port, "/stats", "max_event_id"),
                 harness_pg_int(pg, "SELECT max(id) FROM order_events"));
    cr_assert_eq(stat_of(port, "/stats", "refused"), 0, "every signature held");
    PQfinish(pg);
    harness_stop_clean(&deliverer, "seckill-webhooks");
    harness_stop_clean(&sink, "seckill-webhook-sink");
    harness_system_stop(&sys);
}

/* The sink run with argv; its exit status, and what it said in out. */
static int run_sink(char *const argv[], char *out, size_t cap)
{
    const char *log = harness_path("e2e-webhook-sink-args.log");
    remove(log);
    char *env[] = {"WEBHOOK_SECRET", NULL}; /* none: each case names its own */
    pid_t pid = harness_launch_logged(SECKILL_WEBHOOK_SINK_BIN, argv, env, log);
    cr_assert_gt(pid, 0);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    FILE *f = fopen(log, "r");
    size_t n = f ? fread(out, 1, cap - 1, f) : 0;
    out[n] = '\0';
    if (f)
        fclose(f);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Test(webhook_sink, a_bad_argument_exits_2_and_says_which_and_help_exits_0)
{
    char out[2048];
    char *no_port[] = {"sink", "--secret", "s", NULL};
    cr_assert_eq(run_sink(no_port, out, sizeof(out)), 2);
    cr_assert(strstr(out, "--port is required"), "%s", out);
    char *bad_port[] = {"sink", "--secret", "s", "--port", "70000", NULL};
    cr_assert_eq(run_sink(bad_port, out, sizeof(out)), 2);
    cr_assert(strstr(out, "--port 70000: not a port"), "%s", out);
    char *no_secret[] = {"sink", "--port", "18999", NULL};
    cr_assert_eq(run_sink(no_secret, out, sizeof(out)), 2);
    cr_assert(strstr(out, "WEBHOOK_SECRET"), "%s", out);
    char *bad_host[] = {"sink", "--secret", "s", "--port", "18999", "--host", "nowhere", NULL};
    cr_assert_eq(run_sink(bad_host, out, sizeof(out)), 2);
    cr_assert(strstr(out, "--host nowhere: not an IPv4 address"), "%s", out);
    char *help[] = {"sink", "--help", NULL};
    cr_assert_eq(run_sink(help, out, sizeof(out)), 0);
    cr_assert(strstr(out, "usage: seckill-webhook-sink"), "%s", out);
}
