/* integration_lab_redlock.c: the strategy `redlock` against a Redis that
 * asks for a password (services.sh redis-auth-start): with redis_password
 * set, the main Redis (its one server when redlock_servers is empty, or
 * named there) is reached with the password as every other connection of
 * the product does, and the independent servers of the list without it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "backend.h"
#include "harness.h"
#include "lab_ctx.h"
#include "lab_redlock.h"
#include "order.h"
#include "scripts.h"

#define ITEM 42
#define STOCK 5
#define PASSWORD "redlock-test-password"

static config cfg;
static scripts sc;
static redisContext *redis;
static order_id_gen ids; /* of the lock's tokens */
static lab_ctx *ctx;

/* The run's config pointed at a Redis of its own that asks for PASSWORD,
 * item ITEM with a round of STOCK units there. */
static void setup(void)
{
    harness_config(&cfg);
    cfg.redis_port = harness_redis_auth_start(PASSWORD);
    free(cfg.redis_password);
    cfg.redis_password = strdup(PASSWORD);
    cr_assert_not_null(cfg.redis_password);
    cfg.lab_lock_wait_ms = 1000; /* a lock never won fails the test in a second */
    char err[256];
    redis = backend_redis_connect(&cfg, err, sizeof(err));
    cr_assert_not_null(redis, "%s", err);
    cr_assert_eq(scripts_init(&sc), 0, "a script is missing from the build");
    cr_assert_eq(scripts_load(&sc, redis), 0, "SCRIPT LOAD failed");
    harness_item_reset(redis, &sc, ITEM, STOCK, 1);
    order_id_gen_init(&ids, 1);
    ctx = lab_ctx_create(&cfg, &sc, NULL, &ids, NULL);
    cr_assert_not_null(ctx);
}

static void teardown(void)
{
    lab_ctx_free(ctx);
    if (redis)
        redisFree(redis);
    harness_redis_auth_stop();
    config_free(&cfg);
}

TestSuite(lab_redlock, .init = setup, .fini = teardown, .timeout = 60);

Test(lab_redlock, takes_its_lock_on_the_main_redis_with_the_password_and_sells_a_unit)
{
    lab_request r = {.strategy = "redlock", .item = ITEM};
    int64_t remaining = -1;
    cr_assert_eq(lab_redlock_lock(ctx, &r, &remaining), SK_OK,
                 "redlock could not take its lock on a Redis with a password");
    cr_assert_eq(remaining, STOCK - 1);
}

/* Sets cfg's redlock_servers: the main Redis, then more. */
static void redlock_servers(const char *more)
{
    char list[128];
    snprintf(list, sizeof(list), "127.0.0.1:%d%s", cfg.redis_port, more);
    free(cfg.redlock_servers);
    cfg.redlock_servers = strdup(list);
    cr_assert_not_null(cfg.redlock_servers);
}

Test(lab_redlock, takes_its_lock_on_the_main_redis_named_in_its_servers_with_the_password)
{
    redlock_servers("");
    lab_request r = {.strategy = "redlock", .item = ITEM};
    int64_t remaining = -1;
    cr_assert_eq(lab_redlock_lock(ctx, &r, &remaining), SK_OK);
    cr_assert_eq(remaining, STOCK - 1);
}

/* A quorum of two servers is both: the run's Redis, which asks for no
 * password (and refuses an AUTH), must vote too. */
Test(lab_redlock, reaches_an_independent_server_without_the_password)
{
    config run;
    harness_config(&run);
    char more[32];
    snprintf(more, sizeof(more), ",127.0.0.1:%d", run.redis_port);
    config_free(&run);
    redlock_servers(more);
    lab_request r = {.strategy = "redlock", .item = ITEM};
    int64_t remaining = -1;
    cr_assert_eq(lab_redlock_lock(ctx, &r, &remaining), SK_OK,
                 "the run's Redis did not vote: was it sent the password?");
    cr_assert_eq(remaining, STOCK - 1);
}
