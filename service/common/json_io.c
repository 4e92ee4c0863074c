/* json_io.c: JSON bodies of the API. */
#include "json_io.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "json_member.h"
#include "keys.h"
#include "rfc3339.h"
#include "validate.h"

/* Loads an object; jansson already refuses invalid UTF-8, duplicate keys
 * (with the flag), integer overflow and deep nesting. A NUL byte is refused
 * here: jansson would stop reading at it and take what came before. */
static json_t *load_object(const char *body, size_t len, const char **why)
{
    if (memchr(body, '\0', len)) {
        *why = "body contains a NUL byte";
        return NULL;
    }
    json_error_t error;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &error);
    if (!root) {
        *why = json_error_code(&error) == json_error_numeric_overflow
                   ? "a number in the body is out of range (integers are at most 2^63-1)"
                   : "body is not valid JSON";
        return NULL;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        *why = "body must be a JSON object";
        return NULL;
    }
    return root;
}

/* The members of a body's object into out: SK_OK, or SK_INVALID with *why. */
typedef sk_status (*members_parser)(json_t *root, void *out, const char **why);

/* The plumbing of every body parser: the object loaded, its members read,
 * the object freed. */
static sk_status parse_object(const char *body, size_t len, members_parser members, void *out,
                              const char **why)
{
    json_t *root = load_object(body, len, why);
    if (!root)
        return SK_INVALID;
    sk_status st = members(root, out, why);
    json_decref(root);
    return st;
}

/* Reads an id given as an integer or as a decimal string (the form ids go
 * out in). Returns as json_member_int. */
static int get_id(json_t *obj, const char *key, int64_t *out)
{
    json_t *v = json_object_get(obj, key);
    if (v && json_is_string(v))
        return validate_id(json_string_value(v), json_string_length(v), out) == 0 ? 1 : -1;
    return json_member_int(obj, key, 1, INT64_MAX, out);
}

/* Reads a time member: RFC 3339 text, or null for no bound (*ms = 0).
 * Returns as json_member_int. */
static int get_time(json_t *obj, const char *key, int64_t *ms)
{
    json_t *v = json_object_get(obj, key);
    if (!v)
        return 0;
    if (json_is_null(v)) {
        *ms = 0;
        return 1;
    }
    if (!json_is_string(v) || rfc3339_parse(json_string_value(v), json_string_length(v), ms) < 0)
        return -1;
    return 1;
}

static const char why_quantity[] = "quantity must be an integer from 1 to 1000";

static sk_status purchase_members(json_t *root, void *out, const char **why)
{
    purchase_request *req = out;
    int64_t quantity = 1;
    sk_status st = SK_INVALID;
    json_t *admission = json_object_get(root, "admission");
    json_t *altcha = json_object_get(root, "altcha");
    req->user_id = 0;
    req->admission[0] = req->altcha[0] = '\0';
    if (get_id(root, "user_id", &req->user_id) < 0)
        *why = "user_id must be a positive integer (a number or a decimal string)";
    else if (admission &&
             (!json_is_string(admission) || json_string_length(admission) > ROOM_TOKEN_MAX))
        *why = "admission must be the admission token (a string) of the item's waiting room";
    else if (altcha && (!json_is_string(altcha) || json_string_length(altcha) > POW_PAYLOAD_MAX))
        *why = "altcha must be a proof-of-work solution: ALTCHA's payload, base64 text";
    else if (json_member_int(root, "quantity", 1, SALE_LIMIT_MAX, &quantity) < 0)
        *why = why_quantity;
    else
        st = SK_OK;
    req->quantity = (int)quantity;
    if (st == SK_OK && admission)
        memcpy(req->admission, json_string_value(admission), json_string_length(admission) + 1);
    if (st == SK_OK && altcha)
        memcpy(req->altcha, json_string_value(altcha), json_string_length(altcha) + 1);
    return st;
}

sk_status json_io_parse_purchase(const char *body, size_t len, purchase_request *req,
                                 const char **why)
{
    return parse_object(body, len, purchase_members, req, why);
}

sk_status json_io_parse_purchase_query(const char *user, const char *quantity,
                                       purchase_request *req, const char **why)
{
    int64_t q = 1;
    req->user_id = 0;
    req->quantity = 1;
    req->admission[0] = req->altcha[0] = '\0';
    if (user && validate_id(user, strlen(user), &req->user_id) < 0) {
        *why = "user_id must be a positive integer";
        return SK_INVALID;
    }
    if (quantity && (validate_id(quantity, strlen(quantity), &q) < 0 || q > SALE_LIMIT_MAX)) {
        *why = why_quantity;
        return SK_INVALID;
    }
    req->quantity = (int)q;
    return SK_OK;
}

/* The optional sale terms of a create or a reset; marks those named in
 * t->given. Returns SK_OK or SK_INVALID with *why. */
static sk_status parse_terms(json_t *root, sale_terms *t, const char **why)
{
    int64_t limit = 1;
    int got;
    if ((got = get_time(root, "starts_at", &t->starts_ms)) < 0) {
        *why = "starts_at must be an RFC 3339 time (2026-11-22T20:00:00Z) or null";
        return SK_INVALID;
    }
    t->given |= got ? SALE_STARTS : 0;
    if ((got = get_time(root, "ends_at", &t->ends_ms)) < 0) {
        *why = "ends_at must be an RFC 3339 time (2026-11-22T21:00:00Z) or null";
        return SK_INVALID;
    }
    t->given |= got ? SALE_ENDS : 0;
    if ((got = json_member_int(root, "per_buyer_limit", 1, SALE_LIMIT_MAX, &limit)) < 0) {
        *why = "per_buyer_limit must be an integer from 1 to 1000";
        return SK_INVALID;
    }
    t->given |= got ? SALE_LIMIT : 0;
    t->per_buyer_limit = (int)limit;
    if (!json_io_window_ok(t)) {
        *why = "ends_at must come after starts_at";
        return SK_INVALID;
    }
    return SK_OK;
}

int json_io_window_ok(const sale_terms *t)
{
    return t->starts_ms == 0 || t->ends_ms == 0 || t->ends_ms > t->starts_ms;
}

sk_status json_io_window_ahead(const sale_terms *t, int64_t now_ms, const char **why)
{
    if ((t->given & SALE_ENDS) && t->ends_ms != 0 && t->ends_ms <= now_ms) {
        *why = "ends_at is in the past: the sale would never be open";
        return SK_INVALID;
    }
    return SK_OK;
}

/* stock in [0, 10^12]: SK_OK, or SK_INVALID with a message that says which. */
static sk_status parse_stock(json_t *root, int64_t *stock, const char **why)
{
    json_t *v = json_object_get(root, "stock");
    if (json_member_int(root, "stock", 0, SALE_STOCK_MAX, stock) == 1)
        return SK_OK;
    *why = json_is_integer(v) && json_integer_value(v) > SALE_STOCK_MAX
               ? "stock is out of range: at most 10^12 units"
               : "stock must be an integer from 0 to 10^12";
    return SK_INVALID;
}

static sk_status item_spec_members(json_t *root, void *out, const char **why)
{
    item_spec *spec = out;
    sk_status st = SK_INVALID;
    int64_t timeout = -1, segments = 1;
    memset(spec, 0, sizeof(*spec));
    json_t *name = json_object_get(root, "name");
    if (!json_is_string(name) || json_string_length(name) == 0 ||
        json_string_length(name) > ITEM_NAME_MAX ||
        memchr(json_string_value(name), '\0', json_string_length(name))) {
        *why = "name must be a string of 1 to 200 bytes";
    } else if (parse_stock(root, &spec->stock, why) != SK_OK) {
        /* why set */
    } else if (json_member_int(root, "id", 1, ITEM_ID_MAX, &spec->id) < 0) {
        *why = "id must be an integer from 1 to 2^53-1";
    } else if (json_object_get(root, "lab") && !json_is_boolean(json_object_get(root, "lab"))) {
        *why = "lab must be true or false";
    } else if (json_object_get(root, "listed") &&
               !json_is_boolean(json_object_get(root, "listed"))) {
        *why = "listed must be true or false";
    } else if (json_member_int(root, "payment_timeout_s", 0, PAYMENT_TIMEOUT_MAX_S, &timeout) < 0) {
        *why = "payment_timeout_s must be an integer from 0 (no payment step) to 604800";
    } else if (json_member_int(root, "segments", 1, KEYS_SEGMENTS_MAX, &segments) < 0) {
        *why = "segments must be an integer from 1 to 64";
    } else if (segments > 1 && spec->id >= KEYS_SEGMENT_ITEM_LIMIT) {
        *why = "an item of several segments must have an id below 2^40";
    } else if (segments > 1 && json_is_true(json_object_get(root, "lab"))) {
        *why = "a laboratory item is not split into segments";
    } else if (parse_terms(root, &spec->terms, why) == SK_OK &&
               room_terms_parse(root, spec->terms.starts_ms, 1, &spec->room, why) == SK_OK &&
               pow_terms_parse(root, &spec->pow, why) == SK_OK) {
        spec->segments = (int)segments;
        spec->lab = json_is_true(json_object_get(root, "lab"));
        spec->payment_timeout_s = (int)timeout;
        spec->unlisted = json_is_false(json_object_get(root, "listed"));
        memcpy(spec->name, json_string_value(name), json_string_length(name));
        st = SK_OK;
    }
    return st;
}

sk_status json_io_parse_item_spec(const char *body, size_t len, item_spec *spec, const char **why)
{
    return parse_object(body, len, item_spec_members, spec, why);
}

static sk_status reset_members(json_t *root, void *out, const char **why)
{
    item_reset *reset = out;
    memset(reset, 0, sizeof(*reset));
    sk_status st = parse_stock(root, &reset->stock, why);
    if (st == SK_OK)
        st = parse_terms(root, &reset->terms, why);
    if (st == SK_OK)
        st = room_terms_parse(root, reset->terms.starts_ms, (reset->terms.given & SALE_STARTS) != 0,
                              &reset->room, why);
    return st == SK_OK ? pow_terms_parse(root, &reset->pow, why) : st;
}

sk_status json_io_parse_reset(const char *body, size_t len, item_reset *reset, const char **why)
{
    return parse_object(body, len, reset_members, reset, why);
}

static sk_status restock_members(json_t *root, void *out, const char **why)
{
    if (json_member_int(root, "add", 1, SALE_STOCK_MAX, out) == 1)
        return SK_OK;
    *why = "add must be an integer from 1 to 10^12";
    return SK_INVALID;
}

sk_status json_io_parse_restock(const char *body, size_t len, int64_t *add, const char **why)
{
    return parse_object(body, len, restock_members, add, why);
}

int json_io_error_body(char *buf, size_t cap, const char *code, const char *message,
                       const char *more)
{
    /* Messages are our own sentences, but escape them anyway: a reply must
     * stay valid JSON whatever a future caller passes. */
    char escaped[512];
    size_t j = 0;
    for (const char *p = message ? message : ""; *p && j + 7 < sizeof(escaped); p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\') {
            escaped[j++] = '\\';
            escaped[j++] = (char)c;
        } else if (c < 0x20) {
            j += (size_t)snprintf(escaped + j, sizeof(escaped) - j, "\\u%04x", c);
        } else {
            escaped[j++] = (char)c;
        }
    }
    escaped[j] = '\0';
    int n = snprintf(buf, cap, "{\"error\":\"%s\",\"message\":\"%s\"%s}", code, escaped,
                     more ? more : "");
    return n < 0 || (size_t)n >= cap ? -1 : n;
}

int json_io_error(char *buf, size_t cap, sk_status s, const char *message)
{
    return json_io_error_body(buf, cap, sk_status_code(s), message ? message : sk_status_message(s),
                              NULL);
}

int json_io_purchase_unconfirmed(char *buf, size_t cap, int64_t order_id)
{
    char more[48];
    snprintf(more, sizeof(more), ",\"order_id\":\"%" PRId64 "\"", order_id);
    return json_io_error_body(buf, cap, sk_status_code(SK_UNCONFIRMED),
                              sk_status_message(SK_UNCONFIRMED), more);
}

int json_io_purchase_queued(char *buf, size_t cap, int64_t order_id, int quantity,
                            int64_t remaining)
{
    int n = snprintf(buf, cap,
                     "{\"status\":\"queued\",\"order_id\":\"%" PRId64
                     "\",\"quantity\":%d,\"remaining\":%" PRId64 "}",
                     order_id, quantity, remaining);
    return n < 0 || (size_t)n >= cap ? -1 : n;
}

/* A time as RFC 3339 text into buf (RFC3339_MAX), "" when out of range. */
static const char *time_text(int64_t ms, char *buf)
{
    if (rfc3339_format(ms, buf, RFC3339_MAX) < 0)
        buf[0] = '\0';
    return buf;
}

int json_io_purchase_refused(char *buf, size_t cap, const purchase_refusal *r)
{
    char when[RFC3339_MAX], message[192], more[160];
    switch (r->status) {
    case SK_NOT_STARTED:
        time_text(r->starts_ms, when);
        snprintf(message, sizeof(message), "the sale starts at %s", when);
        snprintf(more, sizeof(more), ",\"starts_at\":\"%s\",\"starts_in_ms\":%" PRId64, when,
                 r->starts_in_ms);
        break;
    case SK_ENDED:
        time_text(r->ends_ms, when);
        snprintf(message, sizeof(message), "the sale ended at %s", when);
        snprintf(more, sizeof(more), ",\"ends_at\":\"%s\"", when);
        break;
    case SK_LIMIT_REACHED:
        /* A quantity above the limit is refused whatever the buyer has:
         * say that, not how many they have. */
        if (r->quantity > r->per_buyer_limit)
            snprintf(message, sizeof(message),
                     "%" PRId64 " units asked, and one buyer may have at most %" PRId64
                     " (the limit is per buyer)",
                     r->quantity, r->per_buyer_limit);
        else
            snprintf(message, sizeof(message),
                     "this buyer has %" PRId64 " of the %" PRId64
                     " units one buyer may have; %" PRId64 " more would pass the limit",
                     r->bought, r->per_buyer_limit, r->quantity);
        snprintf(more, sizeof(more),
                 ",\"bought\":%" PRId64 ",\"per_buyer_limit\":%" PRId64 ",\"quantity\":%" PRId64,
                 r->bought, r->per_buyer_limit, r->quantity);
        break;
    case SK_INSUFFICIENT_STOCK:
        snprintf(message, sizeof(message), "only %" PRId64 " units remain; nothing was taken",
                 r->remaining);
        snprintf(more, sizeof(more), ",\"remaining\":%" PRId64, r->remaining);
        break;
    default:
        return json_io_error(buf, cap, r->status, NULL);
    }
    return json_io_error_body(buf, cap, sk_status_code(r->status), message, more);
}

static char *dump_and_free(json_t *obj)
{
    if (!obj)
        return NULL;
    char *text = json_dumps(obj, JSON_COMPACT);
    json_decref(obj);
    return text;
}

const char *json_io_item_state(const item_view *v)
{
    if (v->archived_ms > 0)
        return "archived";
    if (v->starts_ms > 0 && v->now_ms < v->starts_ms)
        return "upcoming";
    if (v->ends_ms > 0 && v->now_ms >= v->ends_ms)
        return "ended";
    return v->remaining <= 0 ? "sold_out" : "on_sale";
}

/* A time member: RFC 3339 text, or null for an open bound. */
static json_t *time_json(int64_t ms)
{
    char when[RFC3339_MAX];
    return ms > 0 && rfc3339_format(ms, when, sizeof(when)) > 0 ? json_string(when) : json_null();
}

static json_t *item_json(const item_view *v)
{
    int64_t starts_in = v->starts_ms > v->now_ms ? v->starts_ms - v->now_ms : 0;
    int64_t ends_in = v->ends_ms > v->now_ms ? v->ends_ms - v->now_ms : 0;
    json_t *item = json_pack(
        "{s:I, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:i, s:o, s:o, "
        "s:s, s:I, s:I, s:b}",
        "id", (json_int_t)v->id, "name", v->name, "round", (json_int_t)v->round, "initial_stock",
        (json_int_t)v->initial_stock, "restocked", (json_int_t)v->restocked, "remaining",
        (json_int_t)v->remaining, "sold", (json_int_t)v->sold, "queued", (json_int_t)v->queued,
        "persisted", (json_int_t)v->persisted, "orders", (json_int_t)v->orders, "per_buyer_limit",
        v->per_buyer_limit, "starts_at", time_json(v->starts_ms), "ends_at", time_json(v->ends_ms),
        "state", json_io_item_state(v), "starts_in_ms", (json_int_t)starts_in, "ends_in_ms",
        (json_int_t)ends_in, "lab", v->lab);
    /* The orders' later states (json_pack takes at most so many pairs
     * readably: the rest are set one by one). */
    if (item &&
        (json_object_set_new(item, "paid", json_integer(v->paid)) < 0 ||
         json_object_set_new(item, "cancelled", json_integer(v->cancelled)) < 0 ||
         json_object_set_new(item, "expired", json_integer(v->expired)) < 0 ||
         json_object_set_new(item, "returned", json_integer(v->returned)) < 0 ||
         json_object_set_new(item, "payment_timeout_s", json_integer(v->payment_timeout_s)) < 0 ||
         json_object_set_new(item, "segments", json_integer(v->segments ? v->segments : 1)) < 0 ||
         json_object_set_new(item, "listed", json_boolean(v->listed)) < 0 ||
         json_object_set_new(item, "archived", json_boolean(v->archived_ms > 0)) < 0 ||
         json_object_set_new(item, "archived_at", time_json(v->archived_ms)) < 0)) {
        json_decref(item);
        item = NULL;
    }
    if (item &&
        (room_terms_json(item, &v->room, &v->counts) < 0 || pow_terms_json(item, &v->pow) < 0)) {
        json_decref(item);
        item = NULL;
    }
    if (item && v->locks_shown &&
        json_object_set_new(item, "locks_held",
                            v->locks_held >= 0 ? json_integer(v->locks_held) : json_null()) < 0) {
        json_decref(item);
        item = NULL;
    }
    return item;
}

char *json_io_item(const item_view *v)
{
    return dump_and_free(item_json(v));
}

char *json_io_item_list(const item_view *v, size_t n)
{
    json_t *items = json_array();
    for (size_t i = 0; items && i < n; i++) {
        if (json_array_append_new(items, item_json(&v[i])) < 0) {
            json_decref(items);
            items = NULL;
        }
    }
    return items ? dump_and_free(json_pack("{s:o}", "items", items)) : NULL;
}

/* What became of a settled order's units: null while the order holds
 * them, "owed" until they are back, "returned", or "round_over" (a reset had
 * ended their round: the stock was set anew, nothing came back). */
static json_t *return_json(const order_record *r)
{
    if (r->state != ORDER_CANCELLED && r->state != ORDER_EXPIRED)
        return json_null();
    return json_string(!r->returned ? "owed" : r->round_over ? "round_over" : "returned");
}

static json_t *order_json(const order_record *r, int64_t now_ms)
{
    char id[24], user[24];
    snprintf(id, sizeof(id), "%" PRId64, r->o.id);
    snprintf(user, sizeof(user), "%" PRId64, r->o.user_id);
    int64_t pay_in =
        r->state == ORDER_PERSISTED && r->pay_by_ms > now_ms ? r->pay_by_ms - now_ms : 0;
    json_t *o = json_pack("{s:s, s:s, s:I, s:s, s:I, s:i, s:o}", "order_id", id, "status",
                          order_state_name(r->state), "item_id", (json_int_t)r->o.item_id,
                          "user_id", user, "round", (json_int_t)r->o.round, "quantity",
                          r->o.quantity, "created_at", time_json(r->o.created_ms));
    if (o && (json_object_set_new(o, "pay_by", time_json(r->pay_by_ms)) < 0 ||
              json_object_set_new(o, "pay_in_ms", json_integer(pay_in)) < 0 ||
              json_object_set_new(o, "paid_at", time_json(r->paid_ms)) < 0 ||
              json_object_set_new(o, "ended_at", time_json(r->ended_ms)) < 0 ||
              json_object_set_new(o, "returned", json_boolean(r->returned && !r->round_over)) < 0 ||
              json_object_set_new(o, "return", return_json(r)) < 0)) {
        json_decref(o);
        o = NULL;
    }
    return o;
}

char *json_io_order(const order_record *r, int64_t now_ms)
{
    return dump_and_free(order_json(r, now_ms));
}

char *json_io_order_list(const order_record *r, size_t n, int full, int64_t now_ms)
{
    json_t *list = json_array();
    for (size_t i = 0; list && i < n; i++) {
        if (json_array_append_new(list, order_json(&r[i], now_ms)) < 0) {
            json_decref(list);
            list = NULL;
        }
    }
    if (!list)
        return NULL;
    char next[24];
    if (full && n > 0)
        snprintf(next, sizeof(next), "%" PRId64, r[n - 1].o.id);
    return dump_and_free(json_pack("{s:o, s:o}", "orders", list, "next_before",
                                   full && n > 0 ? json_string(next) : json_null()));
}

char *json_io_order_refused(sk_status s, const order_record *r)
{
    char more[96], body[640];
    snprintf(more, sizeof(more), ",\"order_id\":\"%" PRId64 "\",\"status\":\"%s\"", r->o.id,
             order_state_name(r->state));
    return json_io_error_body(body, sizeof(body), sk_status_code(s), sk_status_message(s), more) < 0
               ? NULL
               : strdup(body);
}
