/* e2e_pow.c: proof-of-work on joining a waiting room and on entering a
 * draw, end to end on real servers (issue 28): a challenge solved by brute
 * force (pow_maxnumber kept small) joins (enters) once; replayed, expired,
 * another buyer's, another item's, a wrong number, a forged or a missing
 * one: refused 403 with its code, and nobody joined (entered). The terms
 * in the item's view, kept by a reset that does not name them. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "clock.h"
#include "draw_sale.h"
#include "harness.h"
#include "harness_suite.h"
#include "pow.h"
#include "pow_solver.h"
#include "rfc3339.h"
#include "sale.h"

#define TOKEN "e2e-admin-token"

static harness_system sys;
static char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=e2e-pow", NULL};

HARNESS_SYSTEM_SUITE(pow, harness_system_start, sys, env, "e2e-pow", .timeout = 60);

/* A room item starting in a minute (joins wait before the start), with
 * more terms. */
static int64_t create_room(const char *more)
{
    char view[4096], starts[RFC3339_MAX];
    cr_assert_gt(rfc3339_format(clock_wall_ms() + 60000, starts, sizeof(starts)), 0);
    return sale_create_item_view(
        sys.port, TOKEN, view, sizeof(view), "pow", 5,
        "\"admission\":\"room\",\"starts_at\":\"%s\",\"admit_per_s\":1%s%s", starts,
        more[0] ? "," : "", more);
}

/* One call; its JSON answer into *out (the caller decrefs). */
static int call(const char *method, const char *path, const char *body, json_t **out)
{
    static char resp[65536];
    int status = harness_http(sys.port, method, path, NULL, body, resp, sizeof(resp));
    *out = json_loads(resp, 0, NULL);
    cr_assert_not_null(*out, "%s %s: %d %s", method, path, status, resp);
    return status;
}

/* A challenge of item for user, solved: the payload into out. */
static void solved(int64_t item, int64_t user, char *out, size_t cap, json_t **challenge)
{
    char path[128], resp[2048];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/challenge?user_id=%" PRId64, item,
             user);
    int status = harness_http(sys.port, "GET", path, NULL, NULL, resp, sizeof(resp));
    cr_assert_eq(status, 200, "%s", resp);
    cr_assert_eq(pow_solver_solve(resp, out, cap, NULL), 0, "no number solves %s", resp);
    if (challenge)
        *challenge = json_loads(resp, 0, NULL);
}

/* A room's join ("queue") or a draw's entry ("entries") of item by user
 * carrying altcha (NULL: none): the status, and the error code of a
 * refusal into code. */
static int join(const char *route, int64_t item, int64_t user, const char *altcha, char *code)
{
    char path[96], body[POW_PAYLOAD_MAX + 96];
    json_t *o;
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/%s", item, route);
    if (altcha)
        snprintf(body, sizeof(body), "{\"user_id\":%" PRId64 ",\"altcha\":\"%s\"}", user, altcha);
    else
        snprintf(body, sizeof(body), "{\"user_id\":%" PRId64 "}", user);
    int status = call("POST", path, body, &o);
    json_t *e = json_object_get(o, "error");
    snprintf(code, 64, "%s", json_is_string(e) ? json_string_value(e) : "");
    json_decref(o);
    return status;
}

static void refused(const char *route, int64_t item, int64_t user, const char *altcha,
                    const char *want)
{
    char code[64];
    cr_assert_eq(join(route, item, user, altcha, code), 403, "%s", want);
    cr_assert_str_eq(code, want);
}

/* The buyers let in, as the item's view counts them: the room's joined, or
 * the draw's entries. */
static int64_t let_in(const char *route, int64_t item)
{
    char path[64];
    json_t *o;
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64, item);
    cr_assert_eq(call("GET", path, NULL, &o), 200);
    int room = strcmp(route, "queue") == 0;
    json_t *n =
        json_object_get(json_object_get(o, room ? "room" : "draw"), room ? "joined" : "entries");
    cr_assert(json_is_integer(n), "no count of %s", route);
    int64_t v = json_integer_value(n);
    json_decref(o);
    return v;
}

/* An item that asks a proof-of-work of more terms: a room, or a draw
 * whose entries are open. */
static int64_t create_pow(const char *route, const char *more)
{
    return strcmp(route, "queue") == 0 ? create_room(more)
                                       : draw_sale_create(sys.port, TOKEN, 5, -1000, 600000, more);
}

/* Every refusal, then the one solution let in once: through route. */
static void once_and_never_wrong(const char *route, int accepted)
{
    int64_t item = create_pow(route, "\"pow_maxnumber\":1000,\"pow_ttl_s\":300");
    int64_t other = create_pow(route, "\"pow_maxnumber\":1000");
    char ok[POW_PAYLOAD_MAX + 1], code[64], bad[POW_PAYLOAD_MAX + 1];
    json_t *c;
    solved(item, 1, ok, sizeof(ok), &c);
    cr_assert_str_eq(json_string_value(json_object_get(c, "algorithm")), "SHA-256");
    cr_assert_eq(json_integer_value(json_object_get(c, "maxnumber")), 1000);
    const char *challenge = json_string_value(json_object_get(c, "challenge"));
    const char *salt = json_string_value(json_object_get(c, "salt"));
    const char *signature = json_string_value(json_object_get(c, "signature"));
    cr_assert(strstr(salt, "&item=") && strstr(salt, "&user=1&") && strstr(salt, "?expires="), "%s",
              salt);
    cr_assert_eq(salt[strlen(salt) - 1], '&', "the salt's last parameter ends with '&': %s", salt);

    refused(route, item, 1, NULL, "pow_missing");
    refused(route, item, 1, "bm90IGEgcGF5bG9hZA==", "pow_malformed");
    refused(route, item, 2, ok, "pow_wrong_buyer");
    refused(route, other, 1, ok, "pow_wrong_item");
    char hash[POW_HEX_LEN + 1];
    int64_t wrong = 0;
    while (pow_hash(salt, wrong, hash) == 0 && strcmp(hash, challenge) == 0)
        wrong++;
    cr_assert_eq(pow_solver_payload(challenge, wrong, salt, signature, bad, sizeof(bad)), 0);
    refused(route, item, 1, bad, "pow_wrong_number");
    char forged[POW_HEX_LEN + 1];
    snprintf(forged, sizeof(forged), "%s", signature);
    forged[0] = forged[0] == 'a' ? 'b' : 'a';
    cr_assert_eq(pow_solver_payload(challenge, 0, salt, forged, bad, sizeof(bad)), 0);
    refused(route, item, 1, bad, "pow_forged");
    cr_assert_eq(let_in(route, item), 0, "no refusal let anybody in");

    cr_assert_eq(join(route, item, 1, ok, code), accepted, "%s", code);
    cr_assert_eq(let_in(route, item), 1);
    refused(route, item, 1, ok, "pow_replayed");
    cr_assert_eq(let_in(route, item), 1);
    cr_assert_eq(let_in(route, other), 0);
    json_decref(c);
}

Test(pow, a_solved_challenge_joins_once_and_every_wrong_one_joins_nobody)
{
    once_and_never_wrong("queue", 200);
}

Test(pow, a_solved_challenge_enters_a_draw_once_and_every_wrong_one_enters_nobody)
{
    once_and_never_wrong("entries", 201);
}

/* A draw's entry refused for its quantity (400) leaves the buyer's
 * solution unused: the same solution then enters, once. */
Test(pow, an_entry_refused_for_its_quantity_keeps_the_solution)
{
    int64_t item = create_pow("entries", "\"pow_maxnumber\":1000,\"per_buyer_limit\":1");
    char ok[POW_PAYLOAD_MAX + 1], path[96], body[POW_PAYLOAD_MAX + 96], code[64];
    json_t *o;
    solved(item, 3, ok, sizeof(ok), NULL);
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/entries", item);
    snprintf(body, sizeof(body), "{\"user_id\":3,\"quantity\":2,\"altcha\":\"%s\"}", ok);
    cr_assert_eq(call("POST", path, body, &o), 400, "above per_buyer_limit");
    json_decref(o);
    cr_assert_eq(join("entries", item, 3, ok, code), 201, "%s", code);
    refused("entries", item, 3, ok, "pow_replayed");
    cr_assert_eq(let_in("entries", item), 1);
}

/* A room's join refused before its queue opens (409 not_started) leaves
 * the buyer's solution unused: once the queue opens, the same solution
 * joins, once. */
Test(pow, a_join_refused_before_the_queue_opens_keeps_the_solution)
{
    char opens[RFC3339_MAX], more[128], ok[POW_PAYLOAD_MAX + 1], code[64];
    int64_t opens_ms = clock_wall_ms() + 3000;
    cr_assert_gt(rfc3339_format(opens_ms, opens, sizeof(opens)), 0);
    snprintf(more, sizeof(more), "\"pow_maxnumber\":1000,\"prequeue_opens_at\":\"%s\"", opens);
    int64_t item = create_room(more);
    solved(item, 4, ok, sizeof(ok), NULL);
    cr_assert_eq(join("queue", item, 4, ok, code), 409, "%s", code);
    cr_assert_str_eq(code, "not_started");
    while (clock_wall_ms() < opens_ms + 200)
        harness_sleep_ms(100);
    cr_assert_eq(join("queue", item, 4, ok, code), 200, "%s", code);
    refused("queue", item, 4, ok, "pow_replayed");
    cr_assert_eq(let_in("queue", item), 1);
}

/* A solution is marked used only once its join is placed; a replay must
 * still be refused before the join: in a new round of the room, it would
 * otherwise place the buyer again. */
Test(pow, a_solution_used_in_one_round_places_nobody_in_the_next)
{
    char ok[POW_PAYLOAD_MAX + 1], code[64], path[96], body[256], starts[RFC3339_MAX], resp[4096];
    int64_t item = create_room("\"pow_maxnumber\":1000,\"pow_ttl_s\":60");
    solved(item, 5, ok, sizeof(ok), NULL);
    cr_assert_eq(join("queue", item, 5, ok, code), 200, "%s", code);
    cr_assert_eq(let_in("queue", item), 1);
    cr_assert_gt(rfc3339_format(clock_wall_ms() + 60000, starts, sizeof(starts)), 0);
    snprintf(body, sizeof(body), "{\"stock\":5,\"starts_at\":\"%s\"}", starts);
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/reset", item);
    cr_assert_eq(harness_http(sys.port, "POST", path, TOKEN, body, resp, sizeof(resp)), 200, "%s",
                 resp);
    cr_assert_eq(let_in("queue", item), 0, "a new round starts with nobody");
    refused("queue", item, 5, ok, "pow_replayed");
    cr_assert_eq(let_in("queue", item), 0, "the replayed solution placed the buyer");
}

/* The EXISTS and SET of a used-solution key that Redis's MONITOR on mon
 * showed up to the ECHO of marker (sent on another connection): those a
 * script ran into *in_script, those a client sent into *from_client. */
static void pow_commands(redisContext *mon, const char *marker, int *in_script, int *from_client)
{
    redisContext *c = harness_redis();
    redisReply *r = redisCommand(c, "ECHO %s", marker);
    freeReplyObject(r);
    redisFree(c);
    *in_script = *from_client = 0;
    for (;;) {
        cr_assert_eq(redisGetReply(mon, (void **)&r), REDIS_OK, "MONITOR ended: %s", mon->errstr);
        int done = strstr(r->str, marker) != NULL;
        /* <time> [<db> lua|<address>] "<command>" "<key>" ... */
        const char *cmd = strstr(r->str, "] \"");
        if (cmd && strstr(r->str, ":pow:") &&
            (strncasecmp(cmd + 3, "EXISTS\"", 7) == 0 || strncasecmp(cmd + 3, "SET\"", 4) == 0))
            (strstr(r->str, " lua] ") ? in_script : from_client)[0]++;
        freeReplyObject(r);
        if (done)
            return;
    }
}

/* A join asks whether its solution was used, and marks it, inside its own
 * script call (lua/room_join.lua): proof-of-work adds no round trip to
 * Redis, however many joins a batch holds. */
Test(pow, a_join_asks_and_marks_its_solution_in_its_own_script_call)
{
    enum { BUYERS = 4 };
    char ok[BUYERS][POW_PAYLOAD_MAX + 1], code[64];
    int64_t item = create_room("\"pow_maxnumber\":1000");
    for (int i = 0; i < BUYERS; i++)
        solved(item, 20 + i, ok[i], sizeof(ok[i]), NULL);
    redisContext *mon = harness_redis();
    redisReply *r = redisCommand(mon, "MONITOR");
    cr_assert(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    for (int i = 0; i < BUYERS; i++)
        cr_assert_eq(join("queue", item, 20 + i, ok[i], code), 200, "%s", code);
    refused("queue", item, 20, ok[0], "pow_replayed");
    int in_script, from_client;
    pow_commands(mon, "e2e-pow-monitor-end", &in_script, &from_client);
    redisFree(mon);
    cr_assert_eq(from_client, 0, "the server sent %d commands of a used-solution key itself",
                 from_client);
    /* An EXISTS and a SET a placed join, an EXISTS the replayed one. */
    cr_assert_eq(in_script, 2 * BUYERS + 1);
    cr_assert_eq(let_in("queue", item), BUYERS);
}

Test(pow, an_expired_challenge_is_refused)
{
    static const char *const routes[] = {"queue", "entries"};
    int64_t items[2];
    char ok[2][POW_PAYLOAD_MAX + 1];
    for (int i = 0; i < 2; i++) {
        items[i] = create_pow(routes[i], "\"pow_maxnumber\":1000,\"pow_ttl_s\":1");
        solved(items[i], 7, ok[i], sizeof(ok[i]), NULL);
    }
    usleep(2100 * 1000);
    for (int i = 0; i < 2; i++) {
        refused(routes[i], items[i], 7, ok[i], "pow_expired");
        cr_assert_eq(let_in(routes[i], items[i]), 0);
    }
}

Test(pow, the_terms_are_shown_checked_and_kept_by_a_reset)
{
    json_t *o;
    char path[96], resp[1024], starts[RFC3339_MAX], body[256];
    int64_t item = create_room("\"pow_maxnumber\":5000,\"pow_ttl_s\":60");
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64, item);
    cr_assert_eq(call("GET", path, NULL, &o), 200);
    cr_assert_eq(json_integer_value(json_object_get(o, "pow_maxnumber")), 5000);
    cr_assert_eq(json_integer_value(json_object_get(o, "pow_ttl_s")), 60);
    json_decref(o);
    /* A reset that names other terms keeps them. */
    cr_assert_gt(rfc3339_format(clock_wall_ms() + 60000, starts, sizeof(starts)), 0);
    snprintf(body, sizeof(body), "{\"stock\":3,\"starts_at\":\"%s\"}", starts);
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/reset", item);
    int status = harness_http(sys.port, "POST", path, TOKEN, body, resp, sizeof(resp));
    cr_assert_eq(status, 200, "%s", resp);
    o = json_loads(resp, 0, NULL);
    cr_assert_eq(json_integer_value(json_object_get(o, "pow_maxnumber")), 5000, "%s", resp);
    cr_assert_eq(json_integer_value(json_object_get(o, "pow_ttl_s")), 60);
    json_decref(o);
    /* ... and one that names them changes them: null turns the work off. */
    snprintf(body, sizeof(body), "{\"stock\":3,\"pow_maxnumber\":null}");
    status = harness_http(sys.port, "POST", path, TOKEN, body, resp, sizeof(resp));
    cr_assert_eq(status, 200, "%s", resp);
    o = json_loads(resp, 0, NULL);
    cr_assert(json_is_null(json_object_get(o, "pow_maxnumber")), "%s", resp);
    json_decref(o);
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/challenge?user_id=1", item);
    cr_assert_eq(call("GET", path, NULL, &o), 409);
    cr_assert_str_eq(json_string_value(json_object_get(o, "error")), "pow_not_required");
    json_decref(o);
    cr_assert_eq(call("GET", "/api/v1/items/999999999/challenge?user_id=1", NULL, &o), 404);
    json_decref(o);
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/challenge", item);
    cr_assert_eq(call("GET", path, NULL, &o), 400, "a challenge is a buyer's");
    json_decref(o);
    const char *bad[] = {"{\"name\":\"p\",\"stock\":1,\"pow_maxnumber\":10}",
                         "{\"name\":\"p\",\"stock\":1,\"pow_ttl_s\":0}"};
    const char *field[] = {"pow_maxnumber", "pow_ttl_s"};
    for (size_t i = 0; i < 2; i++) {
        status = harness_http(sys.port, "POST", "/api/v1/items", TOKEN, bad[i], resp, sizeof(resp));
        cr_assert_eq(status, 400, "%s: %s", bad[i], resp);
        cr_assert(strstr(resp, field[i]), "%s", resp);
    }
}
