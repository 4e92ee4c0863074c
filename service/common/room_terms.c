/* room_terms.c: the admission terms of an item's body, and their JSON. */
#include "room_terms.h"

#include <string.h>

#include "json_member.h"
#include "rfc3339.h"

/* A number member > 0 (integer or real). Returns 1, 0 when absent, -1 when wrong. */
static int get_rate(json_t *root, const char *key, double *out)
{
    json_t *v = json_object_get(root, key);
    if (!v)
        return 0;
    if (!json_is_number(v) || !(json_number_value(v) > 0) || json_number_value(v) > 1e9)
        return -1;
    *out = json_number_value(v);
    return 1;
}

static const char *const room_only[] = {"prequeue_opens_at", "admit_per_s", "admit_burst",
                                        "max_active", "admission_ttl_s"};

static const char *const draw_only[] = {"entries_open_at", "entries_close_at"};

/* Whether root names one of the n members of names. */
static int names_any(json_t *root, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (json_object_get(root, names[i]))
            return 1;
    return 0;
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The kind of admission named: SK_OK with r->room, r->draw and r->given set. */
static sk_status parse_kind(json_t *root, room_terms *r, const char **why)
{
    json_t *v = json_object_get(root, "admission");
    const char *kind = json_is_string(v) ? json_string_value(v) : NULL;
    r->given = v != NULL;
    if (v && (!kind || (strcmp(kind, "race") != 0 && strcmp(kind, "room") != 0 &&
                        strcmp(kind, "draw") != 0))) {
        *why = "admission must be \"race\" (the default), \"room\" or \"draw\"";
        return SK_INVALID;
    }
    r->room = kind && strcmp(kind, "room") == 0;
    r->draw = kind && strcmp(kind, "draw") == 0;
    if (!r->room && names_any(root, room_only, COUNT(room_only))) {
        *why = "prequeue_opens_at, admit_per_s, admit_burst, max_active and admission_ttl_s "
               "are terms of \"admission\": \"room\" (name it with them)";
        return SK_INVALID;
    }
    if (!r->draw && names_any(root, draw_only, COUNT(draw_only))) {
        *why = "entries_open_at and entries_close_at are terms of \"admission\": \"draw\" "
               "(name it with them)";
        return SK_INVALID;
    }
    return SK_OK;
}

/* An RFC 3339 time member into *ms. Returns 0, or -1 when absent or not one. */
static int get_time(json_t *root, const char *key, int64_t *ms)
{
    json_t *v = json_object_get(root, key);
    return json_is_string(v) && rfc3339_parse(json_string_value(v), json_string_length(v), ms) == 0
               ? 0
               : -1;
}

/* A draw's terms: its entries window, one segment. */
static sk_status parse_draw(json_t *root, room_terms *r, const char **why)
{
    json_t *segments = json_object_get(root, "segments");
    if (get_time(root, "entries_open_at", &r->entries_open_ms) < 0)
        *why = "entries_open_at must be an RFC 3339 time: when the draw's entries open";
    else if (get_time(root, "entries_close_at", &r->entries_close_ms) < 0)
        *why = "entries_close_at must be an RFC 3339 time: when the draw's entries close";
    else if (r->entries_open_ms >= r->entries_close_ms)
        *why = "entries_close_at must come after entries_open_at";
    else if (json_is_integer(segments) && json_integer_value(segments) > 1)
        *why = "segments must be 1 for a draw: its units are drawn in one place";
    else
        return SK_OK;
    return SK_INVALID;
}

sk_status room_terms_parse(json_t *root, int64_t starts_ms, int starts_named, room_terms *r,
                           const char **why)
{
    memset(r, 0, sizeof(*r));
    r->admit_burst = -1;
    r->admission_ttl_s = ROOM_TTL_DEFAULT_S;
    if (parse_kind(root, r, why) != SK_OK)
        return SK_INVALID;
    if (r->draw)
        return parse_draw(root, r, why);
    if (!r->room)
        return SK_OK;
    json_t *pq = json_object_get(root, "prequeue_opens_at");
    int64_t ttl = ROOM_TTL_DEFAULT_S;
    if (starts_ms == 0 || !starts_named)
        *why = "a room needs starts_at: the moment the shuffled places are fixed";
    else if (pq && !json_is_null(pq) &&
             (!json_is_string(pq) ||
              rfc3339_parse(json_string_value(pq), json_string_length(pq), &r->prequeue_ms) < 0))
        *why = "prequeue_opens_at must be an RFC 3339 time or null";
    else if (r->prequeue_ms != 0 && r->prequeue_ms >= starts_ms)
        *why = "prequeue_opens_at must come before starts_at";
    else if (get_rate(root, "admit_per_s", &r->admit_per_s) != 1)
        *why = "admit_per_s must be a number above 0 (places admitted a second), at most 10^9";
    else if (json_member_int(root, "admit_burst", 0, ROOM_COUNT_MAX, &r->admit_burst) < 0)
        *why = "admit_burst must be an integer from 0 to 10^12 (default: the stock)";
    else if (json_member_int(root, "max_active", 1, ROOM_COUNT_MAX, &r->max_active) < 0)
        *why = "max_active must be an integer from 1 to 10^12";
    else if (json_member_int(root, "admission_ttl_s", 1, ROOM_TTL_MAX_S, &ttl) < 0)
        *why = "admission_ttl_s must be an integer from 1 to 86400";
    else {
        r->admission_ttl_s = (int)ttl;
        return SK_OK;
    }
    return SK_INVALID;
}

json_t *room_terms_time(int64_t ms)
{
    char when[RFC3339_MAX];
    return ms > 0 && rfc3339_format(ms, when, sizeof(when)) > 0 ? json_string(when) : json_null();
}

json_t *room_terms_draw_json(const room_terms *r, const room_counts *c)
{
    const draw_counts *d = &c->draw;
    int drawn = d->drawn_ms > 0;
    return json_pack(
        "{s:s, s:o, s:o, s:I, s:o, s:o, s:o, s:o, s:I, s:I, s:I, s:I, s:I}", "commitment",
        c->commitment, "entries_open_at", room_terms_time(r->entries_open_ms), "entries_close_at",
        room_terms_time(r->entries_close_ms), "entries", (json_int_t)d->entries, "drawn_at",
        room_terms_time(d->drawn_ms), "secret", drawn ? json_string(c->secret) : json_null(),
        "beacon", drawn ? json_string(d->beacon) : json_null(), "stock",
        drawn ? json_integer(d->stock) : json_null(), "won", (json_int_t)d->won, "waitlisted",
        (json_int_t)d->waitlisted, "skipped", (json_int_t)d->skipped, "won_from_waitlist",
        (json_int_t)d->won_from_waitlist, "units_won", (json_int_t)d->units_won);
}

/* A draw item's members. Returns 0 or -1. */
static int draw_json(json_t *item, const room_terms *r, const room_counts *c)
{
    json_t *draw = room_terms_draw_json(r, c);
    if (!draw || json_object_set_new(item, "draw", draw) < 0 ||
        json_object_set_new(item, "entries_open_at", room_terms_time(r->entries_open_ms)) < 0 ||
        json_object_set_new(item, "entries_close_at", room_terms_time(r->entries_close_ms)) < 0)
        return -1;
    return 0;
}

int room_terms_json(json_t *item, const room_terms *r, const room_counts *c)
{
    const char *kind = r->draw ? "draw" : r->room ? "room" : "race";
    if (json_object_set_new(item, "admission", json_string(kind)) < 0)
        return -1;
    if (r->draw)
        return draw_json(item, r, c);
    if (!r->room)
        return 0;
    int revealed = c->started && c->secret[0];
    json_t *room =
        json_pack("{s:s, s:o, s:I, s:I, s:I, s:I}", "commitment", c->commitment, "secret",
                  revealed ? json_string(c->secret) : json_null(), "joined", (json_int_t)c->joined,
                  "admitted", (json_int_t)c->admitted, "active", (json_int_t)c->active,
                  "expired_unused", (json_int_t)c->expired_unused);
    if (!room || json_object_set_new(item, "room", room) < 0 ||
        json_object_set_new(item, "prequeue_opens_at", room_terms_time(r->prequeue_ms)) < 0 ||
        json_object_set_new(item, "admit_per_s", json_real(r->admit_per_s)) < 0 ||
        json_object_set_new(item, "admit_burst", json_integer(r->admit_burst)) < 0 ||
        json_object_set_new(item, "max_active",
                            r->max_active > 0 ? json_integer(r->max_active) : json_null()) < 0 ||
        json_object_set_new(item, "admission_ttl_s", json_integer(r->admission_ttl_s)) < 0)
        return -1;
    return 0;
}
