/* e2e_room_verify.c: scripts/room-verify against a real waiting room: a room
 * sale with pre-start joiners, then the script, from the public answers
 * alone, finds the published order to be the committed secret's and each
 * buyer's line where the server's queue answer puts it; and it fails on the
 * same audit with two lines swapped by hand, and with a secret that is not
 * the committed one. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "clock.h"
#include "harness.h"
#include "harness_suite.h"
#include "rfc3339.h"
#include "sale.h"
#include "web.h"

#define TOKEN "e2e-admin-token"
#define JOINERS 40
#define FIRST_USER 7001

static harness_system sys;
static char resp[1 << 16];
static char out[1 << 16];
static char *env[] = {"SECKILL_ADMIN_TOKEN=" TOKEN, "SECKILL_WORKER_ID=e2e-room-verify", NULL};

HARNESS_SYSTEM_SUITE(room_verify, harness_system_start, sys, env, "e2e-room-verify",
                     .timeout = 120);

/* Runs scripts/room-verify with args, as a buyer would from a shell; what it
 * printed (both streams) in out. Returns its exit code. */
static int verify(const char *args)
{
    char cmd[2048];
    const char *said = harness_path("room-verify.out");
    snprintf(cmd, sizeof(cmd), "python3 '%s/scripts/room-verify' %s >'%s' 2>&1", SECKILL_SOURCE_DIR,
             args, said);
    int status = system(cmd);
    size_t len = 0;
    char *text = web_read_file(said, sizeof(out) - 1, &len);
    cr_assert_not_null(text, "room-verify wrote nothing to %s", said);
    memcpy(out, text, len + 1);
    free(text);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int join(int64_t item, int64_t user)
{
    char path[96], body[64];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/queue", item);
    snprintf(body, sizeof(body), "{\"user_id\":\"%" PRId64 "\"}", user);
    return harness_http(sys.port, "POST", path, NULL, body, resp, sizeof(resp));
}

/* The buyer's queue answer, parsed; the caller frees it. */
static json_t *line_of(int64_t item, int64_t user)
{
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/items/%" PRId64 "/queue?user_id=%" PRId64, item, user);
    cr_assert_eq(harness_http(sys.port, "GET", path, NULL, NULL, resp, sizeof(resp)), 200, "%s",
                 resp);
    json_t *j = json_loads(resp, 0, NULL);
    cr_assert_not_null(j, "%s", resp);
    return j;
}

/* A room item whose pre-queue is open and whose sale starts at *starts_ms
 * (the next whole second at least two seconds away). */
static int64_t room_item(int64_t *starts_ms)
{
    char at[RFC3339_MAX];
    *starts_ms = (clock_wall_ms() / 1000 + 3) * 1000;
    cr_assert_gt(rfc3339_format(*starts_ms, at, sizeof(at)), 0);
    return sale_create_item_view(sys.port, TOKEN, resp, sizeof(resp), "room", 100,
                                 "\"admission\":\"room\",\"starts_at\":\"%s\","
                                 "\"admit_per_s\":1000",
                                 at);
}

/* Writes audit to path; aborts the test on failure. */
static void save(json_t *audit, const char *path)
{
    cr_assert_eq(json_dump_file(audit, path, JSON_INDENT(1)), 0, "cannot write %s", path);
}

Test(room_verify, finds_the_published_order_to_be_the_secrets_and_fails_on_a_tampered_one)
{
    int64_t starts_ms;
    int64_t item = room_item(&starts_ms);
    for (int64_t u = FIRST_USER; u < FIRST_USER + JOINERS; u++)
        cr_assert_eq(join(item, u), 200, "join of %" PRId64 ": %s", u, resp);

    char args[1024], saved[512], tampered[512];
    snprintf(args, sizeof(args), "--url http://127.0.0.1:%d %" PRId64, sys.port, item);
    int64_t left_ms = starts_ms - clock_wall_ms();
    cr_expect_eq(verify(args), 2,
                 "before the start there is no secret to check (%" PRId64
                 " ms before the start when asked): %s",
                 left_ms, out);

    while (clock_wall_ms() < starts_ms + 300)
        usleep(50000);
    /* A late joiner: behind the draw, not in the audit. */
    cr_assert_eq(join(item, 1), 200, "%s", resp);

    snprintf(saved, sizeof(saved), "%s", harness_path("room-audit.json"));
    snprintf(tampered, sizeof(tampered), "%s", harness_path("room-audit-tampered.json"));
    snprintf(args, sizeof(args), "--url http://127.0.0.1:%d --save '%s' --user %d %" PRId64,
             sys.port, saved, FIRST_USER + 5, item);
    cr_assert_eq(verify(args), 0, "the server's own order: %s", out);
    cr_expect(strstr(out, "the 40 pre-start joiners"), "%s", out);

    /* The buyer's line as room-verify finds it is the one the server told the buyer. */
    json_t *line = line_of(item, FIRST_USER + 5);
    char expect[256];
    snprintf(expect, sizeof(expect), "buyer %d: entrant %s, place %" JSON_INTEGER_FORMAT " of 40",
             FIRST_USER + 5, json_string_value(json_object_get(line, "entrant")),
             json_integer_value(json_object_get(line, "place")));
    cr_expect(strstr(out, expect), "expected \"%s\" in: %s", expect, out);
    json_decref(line);

    json_error_t err;
    json_t *audit = json_load_file(saved, 0, &err);
    cr_assert_not_null(audit, "%s: %s", saved, err.text);
    json_t *entrants = json_object_get(audit, "entrants");
    cr_assert_eq(json_array_size(entrants), JOINERS);

    /* Two lines swapped by hand: the places stay 1..N, the handles move. */
    json_t *a = json_object_get(json_array_get(entrants, 2), "entrant");
    json_t *b = json_object_get(json_array_get(entrants, 30), "entrant");
    char first[65];
    snprintf(first, sizeof(first), "%s", json_string_value(a));
    json_string_set(a, json_string_value(b));
    json_string_set(b, first);
    save(audit, tampered);
    snprintf(args, sizeof(args), "--audit '%s'", tampered);
    cr_expect_eq(verify(args), 1, "two lines swapped: %s", out);
    cr_expect(strstr(out, "place 3:") && strstr(out, "place 31:"), "%s", out);

    /* Swapped back, the file passes again: the failure was the swap's. */
    json_string_set(b, json_string_value(a));
    json_string_set(a, first);
    save(audit, tampered);
    cr_expect_eq(verify(args), 0, "%s", out);

    /* A secret that is not the committed one. */
    json_object_set_new(
        audit, "secret",
        json_string("0000000000000000000000000000000000000000000000000000000000000001"));
    save(audit, tampered);
    cr_expect_eq(verify(args), 1, "another secret: %s", out);
    cr_expect(strstr(out, "not the commitment"), "%s", out);
    json_decref(audit);
    harness_system_stop(&sys);
}
