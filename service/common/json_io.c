/* json_io.c: JSON bodies of the API. */
#include "json_io.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

/* Loads an object; jansson already refuses invalid UTF-8, NUL bytes,
 * duplicate keys (with the flag), integer overflow and deep nesting. */
static json_t *load_object(const char *body, size_t len, const char **why)
{
    json_error_t error;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &error);
    if (!root) {
        *why = "body is not valid JSON";
        return NULL;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        *why = "body must be a JSON object";
        return NULL;
    }
    return root;
}

/* Reads an integer member in [min, INT64_MAX]. Returns 1 when present and
 * valid, 0 when absent, -1 when present but wrong. */
static int get_int(json_t *obj, const char *key, int64_t min, int64_t *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < min)
        return -1;
    *out = json_integer_value(v);
    return 1;
}

sk_status json_io_parse_purchase(const char *body, size_t len, int64_t *user_id, const char **why)
{
    json_t *root = load_object(body, len, why);
    if (!root)
        return SK_INVALID;
    int got = get_int(root, "user_id", 1, user_id);
    json_decref(root);
    if (got <= 0) {
        *why = "user_id must be a positive integer";
        return SK_INVALID;
    }
    return SK_OK;
}

sk_status json_io_parse_item_spec(const char *body, size_t len, item_spec *spec, const char **why)
{
    json_t *root = load_object(body, len, why);
    if (!root)
        return SK_INVALID;
    sk_status st = SK_INVALID;
    memset(spec, 0, sizeof(*spec));
    json_t *name = json_object_get(root, "name");
    if (!json_is_string(name) || json_string_length(name) == 0 ||
        json_string_length(name) > ITEM_NAME_MAX) {
        *why = "name must be a string of 1 to 200 bytes";
    } else if (get_int(root, "stock", 0, &spec->stock) != 1) {
        *why = "stock must be an integer >= 0";
    } else if (get_int(root, "id", 1, &spec->id) < 0) {
        *why = "id must be a positive integer";
    } else if (json_object_get(root, "lab") && !json_is_boolean(json_object_get(root, "lab"))) {
        *why = "lab must be true or false";
    } else {
        spec->lab = json_is_true(json_object_get(root, "lab"));
        memcpy(spec->name, json_string_value(name), json_string_length(name));
        st = SK_OK;
    }
    json_decref(root);
    return st;
}

sk_status json_io_parse_reset(const char *body, size_t len, int64_t *stock, const char **why)
{
    json_t *root = load_object(body, len, why);
    if (!root)
        return SK_INVALID;
    int got = get_int(root, "stock", 0, stock);
    json_decref(root);
    if (got != 1) {
        *why = "stock must be an integer >= 0";
        return SK_INVALID;
    }
    return SK_OK;
}

int json_io_error(char *buf, size_t cap, sk_status s, const char *message)
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
    int n = snprintf(buf, cap, "{\"error\":\"%s\",\"message\":\"%s\"}", sk_status_code(s), escaped);
    return n < 0 || (size_t)n >= cap ? -1 : n;
}

int json_io_purchase_queued(char *buf, size_t cap, int64_t order_id, int64_t remaining)
{
    int n = snprintf(
        buf, cap, "{\"status\":\"queued\",\"order_id\":\"%" PRId64 "\",\"remaining\":%" PRId64 "}",
        order_id, remaining);
    return n < 0 || (size_t)n >= cap ? -1 : n;
}

static char *dump_and_free(json_t *obj)
{
    if (!obj)
        return NULL;
    char *text = json_dumps(obj, JSON_COMPACT);
    json_decref(obj);
    return text;
}

static json_t *item_json(const item_view *v)
{
    return json_pack("{s:I, s:s, s:I, s:I, s:I, s:I, s:I, s:b}", "id", (json_int_t)v->id, "name",
                     v->name, "initial_stock", (json_int_t)v->initial_stock, "remaining",
                     (json_int_t)v->remaining, "sold", (json_int_t)v->sold, "queued",
                     (json_int_t)v->queued, "persisted", (json_int_t)v->persisted, "lab", v->lab);
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

char *json_io_order(const order *o, const char *status)
{
    char id[24];
    snprintf(id, sizeof(id), "%" PRId64, o->id);
    return dump_and_free(json_pack("{s:s, s:s, s:I, s:I}", "order_id", id, "status", status,
                                   "item_id", (json_int_t)o->item_id, "user_id",
                                   (json_int_t)o->user_id));
}
