/* unit_pool.c: the hand-over of a request to the pool (pool_submit_exchange)
 * on a real HTTP server in this process, with no backend: a request handed
 * over is answered by its job on a pool thread, and one that arrives while
 * the pool stops is answered 503 at once, its job freed without running. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "pool.h"

static config cfg;
static http_server *server;
static int port;
static pool *_Atomic current; /* the pool the handler hands its requests to */
static _Atomic int jobs_run;
static _Atomic int hold; /* the blocker job waits while it is set */
static _Atomic int blocking;

typedef struct job {
    http_exchange *ex;
} job;

static void run(void *thread_ctx, void *arg)
{
    (void)thread_ctx;
    job *j = arg;
    atomic_fetch_add(&jobs_run, 1);
    http_exchange_reply(j->ex, 200, "ran", 3, NULL);
    free(j);
}

static void handle(void *ctx, http_exchange *ex)
{
    (void)ctx;
    job *j = malloc(sizeof(*j));
    cr_assert_not_null(j);
    j->ex = ex;
    pool_submit_exchange(atomic_load(&current), ex, run, j);
}

static void setup(void)
{
    config_init(&cfg);
    char err[256], value[16];
    port = harness_free_port();
    snprintf(value, sizeof(value), "%d", port);
    cr_assert_eq(config_set(&cfg, "port", value, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(config_set(&cfg, "http_threads", "1", err, sizeof(err)), 0, "%s", err);
    server = http_server_create(&cfg, handle, NULL, NULL, err, sizeof(err));
    cr_assert_not_null(server, "%s", err);
}

static void teardown(void)
{
    http_server_free(server);
    config_free(&cfg);
}

TestSuite(pool, .init = setup, .fini = teardown, .timeout = 60);

Test(pool, a_request_handed_to_the_pool_is_answered_by_its_job)
{
    pool *p = pool_create(2, NULL, NULL, NULL);
    cr_assert_not_null(p);
    atomic_store(&current, p);
    char body[64];
    cr_expect_eq(harness_http(port, "GET", "/anything", NULL, NULL, body, sizeof(body)), 200);
    cr_expect_str_eq(body, "ran");
    cr_expect_eq(atomic_load(&jobs_run), 1);
    pool_free(p);
}

static void blocker(void *thread_ctx, void *arg)
{
    (void)thread_ctx;
    (void)arg;
    atomic_store(&blocking, 1);
    while (atomic_load(&hold))
        usleep(1000);
}

static void nothing(void *thread_ctx, void *arg)
{
    (void)thread_ctx;
    (void)arg;
}

static void *stop(void *arg)
{
    pool_free(arg);
    return NULL;
}

Test(pool, a_request_that_arrives_while_the_pool_stops_is_answered_503_and_its_job_freed)
{
    pool *p = pool_create(1, NULL, NULL, NULL);
    cr_assert_not_null(p);
    atomic_store(&current, p);
    /* The pool's one thread busy, then told to stop: pool_free waits for it. */
    atomic_store(&hold, 1);
    cr_assert_eq(pool_submit(p, blocker, NULL), 0);
    while (!atomic_load(&blocking))
        usleep(1000);
    pthread_t stopper;
    cr_assert_eq(pthread_create(&stopper, NULL, stop, p), 0);
    while (pool_submit(p, nothing, NULL) == 0) /* queued before the stop: run by it */
        usleep(1000);
    char body[256];
    int status = harness_http(port, "GET", "/anything", NULL, NULL, body, sizeof(body));
    atomic_store(&hold, 0);
    pthread_join(stopper, NULL);
    cr_expect_eq(status, 503);
    cr_expect(strstr(body, "\"error\":\"backend_unavailable\"") != NULL, "%s", body);
    cr_expect(strstr(body, "the server is stopping") != NULL, "%s", body);
    cr_expect_eq(atomic_load(&jobs_run), 0, "the job did not run");
}
