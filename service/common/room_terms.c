/* room_terms.c: the admission terms of an item's body, and their JSON. */
#include "room_terms.h"

#include <string.h>

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

/* An integer member in [min, max]. Returns as get_rate. */
static int get_count(json_t *root, const char *key, int64_t min, int64_t max, int64_t *out)
{
    json_t *v = json_object_get(root, key);
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
        return -1;
    *out = json_integer_value(v);
    return 1;
}

static const char *const room_only[] = {"prequeue_opens_at", "admit_per_s", "admit_burst",
                                        "max_active", "admission_ttl_s"};

/* The kind of admission named: SK_OK with r->room and r->given set. */
static sk_status parse_kind(json_t *root, room_terms *r, const char **why)
{
    json_t *v = json_object_get(root, "admission");
    const char *kind = json_is_string(v) ? json_string_value(v) : NULL;
    r->given = v != NULL;
    if (v && (!kind || (strcmp(kind, "race") != 0 && strcmp(kind, "room") != 0 &&
                        strcmp(kind, "draw") != 0))) {
        *why = "admission must be \"race\" (the default) or \"room\"";
        return SK_INVALID;
    }
    if (kind && strcmp(kind, "draw") == 0) {
        *why = "admission \"draw\" is not available yet: use \"race\" or \"room\"";
        return SK_INVALID;
    }
    r->room = kind && strcmp(kind, "room") == 0;
    for (size_t i = 0; !r->room && i < sizeof(room_only) / sizeof(room_only[0]); i++) {
        if (json_object_get(root, room_only[i])) {
            *why = "prequeue_opens_at, admit_per_s, admit_burst, max_active and admission_ttl_s "
                   "are terms of \"admission\": \"room\" (name it with them)";
            return SK_INVALID;
        }
    }
    return SK_OK;
}

sk_status room_terms_parse(json_t *root, int64_t starts_ms, int starts_named, room_terms *r,
                           const char **why)
{
    memset(r, 0, sizeof(*r));
    r->admit_burst = -1;
    r->admission_ttl_s = ROOM_TTL_DEFAULT_S;
    if (parse_kind(root, r, why) != SK_OK)
        return SK_INVALID;
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
    else if (get_count(root, "admit_burst", 0, ROOM_COUNT_MAX, &r->admit_burst) < 0)
        *why = "admit_burst must be an integer from 0 to 10^12 (default: the stock)";
    else if (get_count(root, "max_active", 1, ROOM_COUNT_MAX, &r->max_active) < 0)
        *why = "max_active must be an integer from 1 to 10^12";
    else if (get_count(root, "admission_ttl_s", 1, ROOM_TTL_MAX_S, &ttl) < 0)
        *why = "admission_ttl_s must be an integer from 1 to 86400";
    else {
        r->admission_ttl_s = (int)ttl;
        return SK_OK;
    }
    return SK_INVALID;
}

static json_t *time_or_null(int64_t ms)
{
    char when[RFC3339_MAX];
    return ms > 0 && rfc3339_format(ms, when, sizeof(when)) > 0 ? json_string(when) : json_null();
}

int room_terms_json(json_t *item, const room_terms *r, const room_counts *c)
{
    if (json_object_set_new(item, "admission", json_string(r->room ? "room" : "race")) < 0)
        return -1;
    if (!r->room)
        return 0;
    int revealed = c->started && c->secret[0];
    json_t *room =
        json_pack("{s:s, s:o, s:I, s:I, s:I, s:I}", "commitment", c->commitment, "secret",
                  revealed ? json_string(c->secret) : json_null(), "joined", (json_int_t)c->joined,
                  "admitted", (json_int_t)c->admitted, "active", (json_int_t)c->active,
                  "expired_unused", (json_int_t)c->expired_unused);
    if (!room || json_object_set_new(item, "room", room) < 0 ||
        json_object_set_new(item, "prequeue_opens_at", time_or_null(r->prequeue_ms)) < 0 ||
        json_object_set_new(item, "admit_per_s", json_real(r->admit_per_s)) < 0 ||
        json_object_set_new(item, "admit_burst", json_integer(r->admit_burst)) < 0 ||
        json_object_set_new(item, "max_active",
                            r->max_active > 0 ? json_integer(r->max_active) : json_null()) < 0 ||
        json_object_set_new(item, "admission_ttl_s", json_integer(r->admission_ttl_s)) < 0)
        return -1;
    return 0;
}
