/* unit_room_answer.c: a buyer's standing in a waiting room and its JSON,
 * and the room's terms read from a body: every state, the jitter's bounds,
 * and every term refused with its field named. */
#include <string.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "room_answer.h"
#include "room_terms.h"

#define NOW 1700000000000LL

static room_standing standing(room_seen seen, double jitter)
{
    room_standing st = {0};
    room_answer_standing(&seen, jitter, &st);
    return st;
}

Test(room_answer, before_the_start_a_pre_start_joiner_has_no_place_yet)
{
    room_seen seen = {.now_ms = NOW, .starts_ms = NOW + 4000, .per_s = 10, .rank = 3};
    room_standing st = standing(seen, 0.5);
    cr_assert_str_eq(st.state, "prequeue");
    cr_assert_eq(st.place, 0);
    cr_assert_eq(st.ahead, -1);
    cr_assert_eq(st.wait_ms, 4000);
    cr_assert_eq(st.refresh_after_ms, 4000);
}

Test(room_answer, a_waiting_buyer_hears_the_places_ahead_and_the_wait_at_the_rate)
{
    room_seen seen = {.now_ms = NOW, .starts_ms = NOW - 1, .per_s = 10, .admitted = 20, .rank = 49};
    room_standing st = standing(seen, 0.0);
    cr_assert_str_eq(st.state, "waiting");
    cr_assert_eq(st.place, 50);
    cr_assert_eq(st.ahead, 29);
    cr_assert_eq(st.wait_ms, 3000);
    cr_assert_eq(st.refresh_after_ms, 1200, "1500 less 20%%");
    cr_assert_eq(standing(seen, 0.999).refresh_after_ms, 1799);
}

Test(room_answer, admitted_expired_sold_out_and_ended_say_so)
{
    room_seen seen = {
        .now_ms = NOW, .starts_ms = NOW - 1, .per_s = 10, .rank = 0, .expiry_ms = NOW + 60000};
    room_standing st = standing(seen, 0.5);
    cr_assert_str_eq(st.state, "admitted");
    cr_assert_eq(st.admission_expires_ms, NOW + 60000);
    cr_assert_eq(st.admission_left_ms, 60000, "the time left by Redis's clock");
    cr_assert_eq(st.refresh_after_ms, ROOM_REFRESH_MAX_MS);
    seen.expiry_ms = NOW;
    cr_assert_str_eq(standing(seen, 0.5).state, "expired");
    seen.expiry_ms = 0;
    seen.rank = 5;
    seen.sold_out = 1;
    cr_assert_str_eq(standing(seen, 0.5).state, "sold_out");
    seen.ends_ms = NOW;
    cr_assert_str_eq(standing(seen, 0.5).state, "ended");
}

Test(room_answer, the_json_carries_the_admission_once_admitted)
{
    room_standing st = {"admitted", 1, 0, 0, 500, "ab", "1.2.3.4.sig", NOW, 4500};
    char *text = room_answer_json(&st);
    cr_assert_str_eq(text, "{\"state\":\"admitted\",\"place\":1,\"ahead\":0,\"wait_ms\":0,"
                           "\"refresh_after_ms\":500,\"entrant\":\"ab\",\"admission\":"
                           "\"1.2.3.4.sig\",\"admission_expires_at\":\"2023-11-14T22:13:20Z\","
                           "\"admission_expires_in_ms\":4500}");
    free(text);
    room_standing waiting = {"prequeue", 0, -1, 10, 250, "ab", "", 0, 0};
    text = room_answer_json(&waiting);
    cr_assert(strstr(text, "\"place\":null,\"ahead\":null"), "%s", text);
    cr_assert_null(strstr(text, "admission"));
    free(text);
}

/* Parses body's room terms for a sale starting at NOW. */
static sk_status parse(const char *body, room_terms *r, const char **why)
{
    json_t *root = json_loads(body, 0, NULL);
    cr_assert_not_null(root);
    sk_status st = room_terms_parse(root, NOW, 1, r, why);
    json_decref(root);
    return st;
}

Test(room_terms, a_race_is_the_default_and_a_room_takes_its_terms)
{
    room_terms r;
    const char *why = NULL;
    cr_assert_eq(parse("{}", &r, &why), SK_OK);
    cr_assert_not(r.room);
    cr_assert_eq(parse("{\"admission\":\"room\",\"admit_per_s\":2.5,\"max_active\":10}", &r, &why),
                 SK_OK);
    cr_assert(r.room);
    cr_assert_eq(r.admit_per_s, 2.5);
    cr_assert_eq(r.admit_burst, -1, "the stock, resolved at create");
    cr_assert_eq(r.max_active, 10);
    cr_assert_eq(r.admission_ttl_s, ROOM_TTL_DEFAULT_S);
}

Test(room_terms, every_bad_term_is_refused_naming_its_field)
{
    static const char *const bad[][2] = {
        {"{\"admission\":\"draw\"}", "draw"},
        {"{\"admission\":7}", "admission"},
        {"{\"admission\":\"room\"}", "admit_per_s"},
        {"{\"admission\":\"room\",\"admit_per_s\":-1}", "admit_per_s"},
        {"{\"admission\":\"room\",\"admit_per_s\":1,\"admit_burst\":-1}", "admit_burst"},
        {"{\"admission\":\"room\",\"admit_per_s\":1,\"max_active\":0}", "max_active"},
        {"{\"admission\":\"room\",\"admit_per_s\":1,\"admission_ttl_s\":0}", "admission_ttl_s"},
        {"{\"admission\":\"room\",\"admit_per_s\":1,\"prequeue_opens_at\":\"2023-11-14T22:13:"
         "20Z\"}",
         "prequeue_opens_at"},
        {"{\"admit_per_s\":1}", "admission"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        room_terms r;
        const char *why = NULL;
        cr_assert_eq(parse(bad[i][0], &r, &why), SK_INVALID, "%s", bad[i][0]);
        cr_assert(strstr(why, bad[i][1]), "%s: %s", bad[i][0], why);
    }
    room_terms r;
    const char *why = NULL;
    json_t *root = json_loads("{\"admission\":\"room\",\"admit_per_s\":1}", 0, NULL);
    cr_assert_eq(room_terms_parse(root, 0, 0, &r, &why), SK_INVALID);
    cr_assert(strstr(why, "starts_at"));
    json_decref(root);
}

Test(room_terms, a_draw_takes_its_entries_window_and_one_segment)
{
    room_terms r;
    const char *why = NULL;
    cr_assert_eq(parse("{\"admission\":\"draw\",\"entries_open_at\":\"2026-11-26T10:00:00Z\","
                       "\"entries_close_at\":\"2026-11-26T12:00:00Z\"}",
                       &r, &why),
                 SK_OK);
    cr_assert(r.draw);
    cr_assert_not(r.room);
    cr_assert_eq(r.entries_close_ms - r.entries_open_ms, 2 * 3600 * 1000);
    static const char *const bad[][2] = {
        {"{\"admission\":\"draw\",\"entries_close_at\":\"2026-11-26T12:00:00Z\"}",
         "entries_open_at"},
        {"{\"admission\":\"draw\",\"entries_open_at\":\"2026-11-26T12:00:00Z\","
         "\"entries_close_at\":\"2026-11-26T12:00:00Z\"}",
         "entries_close_at"},
        {"{\"admission\":\"draw\",\"entries_open_at\":\"2026-11-26T10:00:00Z\","
         "\"entries_close_at\":\"2026-11-26T12:00:00Z\",\"segments\":2}",
         "segments"},
        {"{\"admission\":\"draw\",\"entries_open_at\":\"2026-11-26T10:00:00Z\","
         "\"entries_close_at\":\"2026-11-26T12:00:00Z\",\"admit_per_s\":1}",
         "admit_per_s"},
        {"{\"admission\":\"room\",\"admit_per_s\":1,\"entries_open_at\":\"2026-11-26T10:00:00Z\"}",
         "entries_open_at"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_eq(parse(bad[i][0], &r, &why), SK_INVALID, "%s", bad[i][0]);
        cr_assert(strstr(why, bad[i][1]), "%s: %s", bad[i][0], why);
    }
}

Test(room_terms, a_draw_shows_its_secret_and_beacon_only_once_drawn)
{
    room_terms r = {.draw = 1, .entries_open_ms = 1000, .entries_close_ms = 2000};
    room_counts c = {.commitment = "c0", .secret = "5e"};
    c.draw.entries = 3;
    json_t *item = json_object();
    cr_assert_eq(room_terms_json(item, &r, &c, 0, 0), 0);
    cr_assert_str_eq(json_string_value(json_object_get(item, "admission")), "draw");
    json_t *d = json_object_get(item, "draw");
    cr_assert(json_is_null(json_object_get(d, "secret")), "K hidden before the draw");
    cr_assert(json_is_null(json_object_get(d, "beacon")));
    cr_assert(json_is_null(json_object_get(d, "drawn_at")));
    cr_assert_eq(json_integer_value(json_object_get(d, "entries")), 3);
    json_decref(item);
    c.draw.drawn_ms = 3000;
    json_t *drawn = room_terms_draw_json(&r, &c);
    cr_assert_str_eq(json_string_value(json_object_get(drawn, "secret")), "5e");
    cr_assert_str_eq(json_string_value(json_object_get(drawn, "beacon")), "");
    json_decref(drawn);
}
