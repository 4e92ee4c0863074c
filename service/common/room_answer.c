/* room_answer.c: a buyer's standing in a waiting room, and its JSON. */
#include "room_answer.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Whether text goes into JSON as it is: letters, digits, '.', '_' and '-'
 * only (the states, hex handles and tokens of this module's answers). */
static int plain(const char *text)
{
    for (const char *c = text; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '.' && *c != '_' && *c != '-')
            return 0;
    return 1;
}

/* v, or null when not shown, into buf (24). */
static const char *count_or_null(int64_t v, int shown, char *buf)
{
    if (!shown)
        return "null";
    snprintf(buf, 24, "%" PRId64, v);
    return buf;
}

char *room_answer_json(const room_standing *st)
{
    /* A template, not jansson: this is the answer of every poll answered
     * from memory, and none of its strings needs escaping (checked). */
    char place[24], ahead[24], when[RFC3339_MAX], more[ROOM_TOKEN_MAX + RFC3339_MAX + 96] = "";
    if (!plain(st->state) || !plain(st->entrant) || !plain(st->admission))
        return NULL;
    if (st->admission[0] &&
        (rfc3339_format(st->admission_expires_ms, when, sizeof(when)) < 0 ||
         snprintf(more, sizeof(more),
                  ",\"admission\":\"%s\",\"admission_expires_at\":\"%s\","
                  "\"admission_expires_in_ms\":%" PRId64,
                  st->admission, when, st->admission_left_ms) >= (int)sizeof(more)))
        return NULL;
    char text[ROOM_ANSWER_MAX];
    int n = snprintf(text, sizeof(text),
                     "{\"state\":\"%s\",\"place\":%s,\"ahead\":%s,\"wait_ms\":%" PRId64
                     ",\"refresh_after_ms\":%" PRId64 ",\"entrant\":\"%s\"%s}",
                     st->state, count_or_null(st->place, st->place > 0, place),
                     count_or_null(st->ahead, st->ahead >= 0, ahead), st->wait_ms,
                     st->refresh_after_ms, st->entrant, more);
    return n < 0 || (size_t)n >= sizeof(text) ? NULL : strdup(text);
}
