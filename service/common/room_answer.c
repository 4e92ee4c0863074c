/* room_answer.c: a buyer's standing in a waiting room, and its JSON. */
#include "room_answer.h"

#include <string.h>

#include <jansson.h>

#include "rfc3339.h"

static int64_t clamp(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

void room_answer_standing(const room_seen *seen, double jitter01, room_standing *out)
{
    int64_t now = seen->now_ms, refresh = ROOM_REFRESH_MAX_MS;
    out->place = seen->rank >= 0 ? seen->rank + 1 : 0;
    out->ahead = -1;
    out->wait_ms = 0;
    out->admission_expires_ms = 0;
    out->admission_left_ms = 0;
    if (seen->ends_ms > 0 && now >= seen->ends_ms) {
        out->state = "ended";
    } else if (now < seen->starts_ms) {
        /* Before the start a place is not fixed yet: the shuffle fixes it. */
        out->state = "prequeue";
        out->place = 0;
        out->wait_ms = seen->starts_ms - now;
        refresh = out->wait_ms;
    } else if (seen->expiry_ms > now) {
        out->state = "admitted";
        out->ahead = 0;
        out->admission_expires_ms = seen->expiry_ms;
        out->admission_left_ms = seen->expiry_ms - now;
        refresh = seen->expiry_ms - now;
    } else if (seen->expiry_ms > 0) {
        out->state = "expired";
        out->ahead = 0;
    } else if (seen->sold_out) {
        out->state = "sold_out";
    } else {
        out->state = "waiting";
        int64_t behind = out->place - seen->admitted;
        out->ahead = behind > 1 ? behind - 1 : 0;
        double wait = seen->per_s > 0 ? (double)behind * 1000.0 / seen->per_s : 0;
        out->wait_ms = (int64_t)wait + ((double)(int64_t)wait < wait); /* rounded up */
        refresh = out->wait_ms / 2;
    }
    refresh = clamp(refresh, ROOM_REFRESH_MIN_MS, ROOM_REFRESH_MAX_MS);
    out->refresh_after_ms = (int64_t)((double)refresh * (0.8 + 0.4 * jitter01));
}

static json_t *count_or_null(int64_t v, int shown)
{
    return shown ? json_integer(v) : json_null();
}

char *room_answer_json(const room_standing *st)
{
    json_t *o =
        json_pack("{s:s, s:o, s:o, s:I, s:I, s:s}", "state", st->state, "place",
                  count_or_null(st->place, st->place > 0), "ahead",
                  count_or_null(st->ahead, st->ahead >= 0), "wait_ms", (json_int_t)st->wait_ms,
                  "refresh_after_ms", (json_int_t)st->refresh_after_ms, "entrant", st->entrant);
    char when[RFC3339_MAX];
    if (o && st->admission[0] &&
        (rfc3339_format(st->admission_expires_ms, when, sizeof(when)) < 0 ||
         json_object_set_new(o, "admission", json_string(st->admission)) < 0 ||
         json_object_set_new(o, "admission_expires_at", json_string(when)) < 0 ||
         json_object_set_new(o, "admission_expires_in_ms", json_integer(st->admission_left_ms)) <
             0)) {
        json_decref(o);
        o = NULL;
    }
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}
