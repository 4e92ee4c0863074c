/* draw.c: the draw's routes, read on the HTTP thread and answered from the
 * pool: an entry is a PostgreSQL insert (its primary key keeps a buyer's
 * entry one, on every instance), the draw one transaction (draw_run.c), the
 * audit a page of the entries in ticket order. */
#include "draw.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "draw_order.h"
#include "draw_store.h"
#include "items.h"
#include "pool.h"
#include "pool_session.h"
#include "pow_gate.h"
#include "validate.h"

typedef struct draw_job {
    app *a;
    http_exchange *ex;
    route_id route;
    int64_t item, user;
    int quantity;
    int64_t after, limit; /* ROUTE_DRAW_AUDIT */
    char beacon[DRAW_BEACON_MAX + 1];
    size_t beacon_len; /* ROUTE_DRAW */
    /* An entry's proof-of-work (pow_gate.h): "" for none. */
    char altcha[POW_PAYLOAD_MAX + 1];
} draw_job;

/* Answers o (taken) with status, or 500 when it is NULL. */
static void reply_json(http_exchange *ex, int status, json_t *o)
{
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (text)
        http_exchange_reply_new(ex, status, text);
    else
        http_exchange_reply_error(ex, SK_INTERNAL, "out of memory");
}

/* A refusal of the entries window or of a draw too early: the error with
 * the item's entries_open_at and entries_close_at. */
static void reply_times(http_exchange *ex, sk_status st, const draw_item *it)
{
    reply_json(ex, sk_status_http(st),
               json_pack("{s:s, s:s, s:o, s:o}", "error", sk_status_code(st), "message",
                         sk_status_message(st), "entries_open_at", room_terms_time(it->opens_ms),
                         "entries_close_at", room_terms_time(it->closes_ms)));
}

static void run_entry(draw_job *j, pool_session *s)
{
    draw_entry e;
    draw_item it;
    const char *why = NULL;
    pow_gate_mark m;
    /* Proof-of-work checked first, marked used last (pow_gate.h): a refusal
     * of the window or the quantity leaves the solution to the buyer. */
    sk_status st = j->route == ROUTE_ENTRY_ADD
                       ? pow_gate_verify(j->a, s, j->item, j->user, j->altcha, &m)
                       : SK_OK;
    if (st != SK_OK) {
        http_exchange_reply_error(j->ex, st, NULL);
        return;
    }
    st = j->route == ROUTE_ENTRY_ADD
             ? draw_store_enter(s, j->item, j->user, j->quantity, &m, &e, &it, &why)
             : draw_store_entry(s, j->item, j->user, &e);
    if (st == SK_ENTRIES_NOT_OPEN || st == SK_ENTRIES_CLOSED)
        reply_times(j->ex, st, &it);
    else if (st != SK_OK && st != SK_CREATED)
        http_exchange_reply_error(j->ex, st, why);
    else if (st == SK_OK && j->route == ROUTE_ENTRY_ADD)
        reply_json(j->ex, 200,
                   json_pack("{s:o, s:b}", "entry", draw_entry_json(&e), "already_entered", 1));
    else
        reply_json(j->ex, sk_status_http(st), json_pack("{s:o}", "entry", draw_entry_json(&e)));
}

static void run_draw(draw_job *j, pool_session *s)
{
    draw_item it;
    item_view *v = malloc(sizeof(*v));
    sk_status st =
        v ? draw_run(s, &j->a->ids, j->item, j->beacon, j->beacon_len, &it) : SK_INTERNAL;
    if (st == SK_OK)
        st = items_get(s, j->item, v);
    if (st == SK_ENTRIES_OPEN)
        reply_times(j->ex, st, &it);
    else if (st != SK_OK)
        http_exchange_reply_error(j->ex, st, NULL);
    else
        reply_json(j->ex, 200,
                   json_pack("{s:o}", "draw", room_terms_draw_json(&v->room, &v->counts)));
    free(v);
}

static void run_audit(draw_job *j, pool_session *s)
{
    sk_status st;
    char *text = draw_store_audit(s, j->item, j->after, j->limit, &st);
    if (text)
        http_exchange_reply_new(j->ex, 200, text);
    else
        http_exchange_reply_error(j->ex, st, NULL);
}

static void run_job(void *thread_ctx, void *arg)
{
    draw_job *j = arg;
    pool_session *s = thread_ctx;
    if (!s)
        http_exchange_reply_error(j->ex, SK_BACKEND_DOWN, NULL);
    else if (j->route == ROUTE_DRAW)
        run_draw(j, s);
    else if (j->route == ROUTE_DRAW_AUDIT)
        run_audit(j, s);
    else
        run_entry(j, s);
    free(j);
}

/* The draw's body: {"beacon": <string of at most DRAW_BEACON_MAX bytes,
 * optional>}, or none. 0, or -1 with *why. */
static int beacon_of(http_exchange *ex, draw_job *j, const char **why)
{
    size_t len;
    const char *body = http_exchange_body(ex, &len);
    if (len == 0)
        return 0;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL);
    json_t *b = json_object_get(root, "beacon");
    int ok =
        json_is_object(root) && (!b || json_is_null(b) ||
                                 (json_is_string(b) && json_string_length(b) <= DRAW_BEACON_MAX &&
                                  !memchr(json_string_value(b), '\0', json_string_length(b))));
    if (ok && json_is_string(b)) {
        j->beacon_len = json_string_length(b);
        memcpy(j->beacon, json_string_value(b), j->beacon_len);
    }
    json_decref(root);
    if (!ok)
        *why = "the body must be {\"beacon\": a string of at most 256 bytes (optional)}";
    return ok ? 0 : -1;
}

/* ?after= and ?limit= (1..DRAW_AUDIT_MAX) of an audit page into j. */
static int audit_query(http_exchange *ex, draw_job *j)
{
    return validate_page(http_exchange_query(ex, "after"), http_exchange_query(ex, "limit"),
                         DRAW_AUDIT_MAX, &j->after, &j->limit);
}

void draw_start(app *a, http_exchange *ex, route_id route, int64_t item, int64_t user, int quantity,
                const char *altcha)
{
    draw_job *j = calloc(1, sizeof(*j));
    const char *why = NULL;
    if (!j) {
        http_exchange_reply_error(ex, SK_INTERNAL, "out of memory");
        return;
    }
    *j = (draw_job){
        .a = a, .ex = ex, .route = route, .item = item, .user = user, .quantity = quantity};
    snprintf(j->altcha, sizeof(j->altcha), "%s", altcha ? altcha : "");
    if (route == ROUTE_DRAW_AUDIT && audit_query(ex, j) < 0)
        why = "after must be a position (0 or more), limit from 1 to 1000";
    else if (route == ROUTE_DRAW)
        beacon_of(ex, j, &why);
    if (why) {
        free(j);
        http_exchange_reply_error(ex, SK_INVALID, why);
        return;
    }
    pool_submit_exchange(a->pool, ex, run_job, j);
}
