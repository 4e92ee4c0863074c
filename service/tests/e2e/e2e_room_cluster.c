/* e2e_room_cluster.c: the waiting room on a real Redis Cluster of 3 masters
 * and 3 replicas (issue 27): an item split in 4 segments over the masters
 * keeps one room, in its own slot (every room key on segment 0's master);
 * its buyers join, are admitted, and buy with their tokens from whichever
 * segment the route reaches, never past the stock, and a segment's buyer
 * without a token is refused; the secret is shown once the room's own
 * master counts the start (its started flag), not before. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "clock.h"
#include "harness.h"
#include "harness_suite.h"
#include "keys.h"
#include "redis_cluster.h"
#include "rfc3339.h"
#include "room_order.h"
#include "sale.h"

#define TOKEN "e2e-room-cluster-token"

static harness_system sys;
static char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=e2e-room-cluster", NULL};

HARNESS_CLUSTER_SYSTEM_SUITE(room_cluster, sys, env, "e2e-room-cluster", .timeout = 180);

static json_t *call(const char *method, const char *path, const char *body, int *status)
{
    static char resp[16384];
    *status = harness_http(sys.port, method, path, NULL, body, resp, sizeof(resp));
    json_t *o = json_loads(resp, 0, NULL);
    cr_assert_not_null(o, "%s %s: %d %s", method, path, *status, resp);
    return o;
}

/* The queue's answer to user: a join (POST) or a poll (GET). */
static json_t *queue(const char *method, int64_t item, int64_t user, int *status)
{
    char path[128], body[64];
    int join = strcmp(method, "POST") == 0;
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/queue", item);
    if (!join)
        snprintf(path + strlen(path), sizeof(path) - strlen(path), "?user_id=%" PRId64, user);
    snprintf(body, sizeof(body), "{\"user_id\":%" PRId64 "}", user);
    return call(method, path, join ? body : NULL, status);
}

static int buy(int64_t item, int64_t user, const char *tok)
{
    char path[96], body[512];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/purchase", item);
    if (tok)
        snprintf(body, sizeof(body), "{\"user_id\":%" PRId64 ",\"admission\":\"%s\"}", user, tok);
    else
        snprintf(body, sizeof(body), "{\"user_id\":%" PRId64 "}", user);
    int status;
    json_decref(call("POST", path, body, &status));
    return status;
}

Test(room_cluster, a_segmented_item_keeps_one_room_and_sells_exactly_through_it)
{
    enum { SEGMENTS = 4, STOCK = 6, BUYERS = 9 };
    char view[4096], starts[RFC3339_MAX];
    cr_assert_gt(rfc3339_format(clock_wall_ms() + 1500, starts, sizeof(starts)), 0);
    int64_t item = sale_create_item_view(sys.port, TOKEN, view, sizeof(view), "room", STOCK,
                                         "\"segments\":%d,\"admission\":\"room\",\"starts_at\":"
                                         "\"%s\",\"admit_per_s\":1000,\"payment_timeout_s\":0",
                                         SEGMENTS, starts);
    int status;
    for (int64_t u = 1; u <= BUYERS; u++)
        json_decref(queue("POST", item, u, &status));
    cr_assert_eq(status, 200);

    /* Every room key on the master of the item's own slot. */
    redis_cluster_map *map = harness_cluster_map();
    char state[KEYS_MAX], places[KEYS_MAX];
    keys_item_state(state, sizeof(state), item);
    keys_room(places, sizeof(places), item, "places");
    cr_assert_eq(redis_cluster_slot(places, strlen(places)),
                 redis_cluster_slot(state, strlen(state)));
    cr_assert_eq(harness_cluster_int(map, "ZCARD", places), BUYERS);
    char path[64];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64, item);
    json_t *v = call("GET", path, NULL, &status);
    cr_assert(json_is_null(json_object_get(json_object_get(v, "room"), "secret")), "not before");
    json_decref(v);

    usleep(1700 * 1000);
    char tok[BUYERS + 1][ROOM_TOKEN_MAX];
    for (int64_t u = 1; u <= BUYERS; u++) {
        int64_t until = clock_mono_ms() + 5000;
        tok[u][0] = '\0';
        while (!tok[u][0] && clock_mono_ms() < until) {
            json_t *o = queue("GET", item, u, &status);
            const char *st = json_string_value(json_object_get(o, "state"));
            if (st && strcmp(st, "admitted") == 0)
                snprintf(tok[u], sizeof(tok[u]), "%s",
                         json_string_value(json_object_get(o, "admission")));
            json_decref(o);
            if (!tok[u][0])
                usleep(50 * 1000);
        }
        cr_assert_neq(tok[u][0], '\0', "buyer %" PRId64 " admitted", u);
    }
    cr_assert_eq(buy(item, 1, NULL), 403, "no token, no sale, whatever the segment");
    int sold = 0;
    for (int64_t u = 1; u <= BUYERS; u++)
        sold += buy(item, u, tok[u]) == 202;
    cr_assert_eq(sold, STOCK);
    v = call("GET", path, NULL, &status);
    cr_assert_eq(json_integer_value(json_object_get(v, "sold")), STOCK);
    cr_assert(json_is_string(json_object_get(json_object_get(v, "room"), "secret")));
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(v, "room"), "joined")), BUYERS);
    json_decref(v);
    redis_cluster_map_free(map);
}
