/* api.c: one handler for every route. Who may call it is settled first
 * (identity.h: the scope a route needs, router_scope), and whether a page
 * on another origin may (cross_origin.h); cheap routes answer inline, the
 * purchase goes to the asynchronous Redis path, the plugged-in part's
 * routes (the laboratory's) to it, the pages to web.c, the rest to the
 * pool. */
#include "api.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "archive.h"
#include "clock.h"
#include "cross_origin.h"
#include "draw.h"
#include "feed.h"
#include "identity.h"
#include "items.h"
#include "json_io.h"
#include "log.h"
#include "orders.h"
#include "purchase.h"
#include "room.h"
#include "router.h"
#include "pool_session.h"
#include "pow_gate.h"
#include "validate.h"
#include "web.h"

/* A request for the pool: what the route needs, parsed on the HTTP thread. */
typedef struct pool_request {
    app *a;
    http_exchange *ex;
    route_id route;
    identity who;      /* the caller */
    int64_t id;        /* item or order id */
    item_spec spec;    /* ROUTE_ITEM_CREATE */
    item_reset reset;  /* ROUTE_ITEM_RESET */
    int64_t add;       /* ROUTE_ITEM_RESTOCK */
    int with_lab;      /* ROUTE_ITEM_LIST: ?lab=1 */
    int with_unlisted; /* ROUTE_ITEM_LIST: ?unlisted=1 */
    int with_archived; /* ROUTE_ITEM_LIST: ?archived=1 */
    int64_t before;    /* ROUTE_ORDER_LIST: ?before= (0: from the newest) */
    int limit;         /* ROUTE_ORDER_LIST: ?limit= */
} pool_request;

/* GET /metrics: the counters, and the gauges read now (Redis ones through
 * this pool thread's connection). */
static void reply_metrics(app *a, pool_session *s, http_exchange *ex)
{
    char *text = app_metrics_text(a, s);
    if (!text) {
        http_exchange_reply_error(ex, SK_INTERNAL, "out of memory");
        return;
    }
    http_exchange_reply_typed(ex, 200, text, strlen(text), "text/plain; version=0.0.4", NULL);
    free(text);
}

/* buyer_auth = token: only a buyer token says who a buyer is. */
static int buyer_tokens(const app *a)
{
    return a->cfg->buyer_auth == CONFIG_BUYER_AUTH_TOKEN;
}

/* The order routes: read, list, pay, cancel. A buyer reads and settles only
 * their own orders: under buyer tokens another's order is 404, as if it did
 * not exist. */
static void run_order_route(pool_request *r, pool_session *s)
{
    int64_t now = clock_wall_ms();
    int tokens = buyer_tokens(r->a);
    order_record rec;
    sk_status st = SK_BACKEND_DOWN;
    if (r->route == ROUTE_ORDER_LIST) {
        order_record *list = malloc((size_t)r->limit * sizeof(*list));
        size_t n = 0;
        st = !s      ? SK_BACKEND_DOWN
             : !list ? SK_INTERNAL
                     : orders_list(s, r->who.buyer, r->before, r->limit, list, &n);
        if (st == SK_OK)
            http_exchange_reply_new(r->ex, 200,
                                    json_io_order_list(list, n, n == (size_t)r->limit, now));
        else
            http_exchange_reply_error(r->ex, st, NULL);
        free(list);
        return;
    }
    if (s && r->route == ROUTE_ORDER_GET) {
        st = orders_get(s, r->id, &rec);
        if (st == SK_OK && tokens && !(r->who.scopes & CREDENTIAL_ORDERS_READ) &&
            rec.o.user_id != r->who.buyer)
            st = SK_NOT_FOUND;
    } else if (s) {
        /* A shop's credential here has the scope (payments to pay, admin to
         * cancel): it settles any order. */
        order_action act = r->route == ROUTE_ORDER_PAY ? ORDER_PAY : ORDER_CANCEL;
        st = orders_settle(s, r->id, act, r->who.scopes ? 0 : r->who.buyer, &rec);
    }
    if (st == SK_OK)
        http_exchange_reply_new(r->ex, 200, json_io_order(&rec, now));
    else if (st == SK_ORDER_PAID || st == SK_ORDER_CANCELLED || st == SK_ORDER_EXPIRED ||
             st == SK_ORDER_FINAL)
        http_exchange_reply_new(r->ex, sk_status_http(st), json_io_order_refused(st, &rec));
    else
        http_exchange_reply_error(r->ex, st, st == SK_NOT_FOUND ? "no such order" : NULL);
}

/* A shop's view of an item (a credential of scope orders:read, as for
 * /metrics) adds the buyers' order locks standing now: a count by SCAN at
 * their nodes, too dear for the public's hot read of the same route. */
static sk_status add_locks(pool_session *s, item_view *v)
{
    int rc = pool_session_order_locks(s, v->id, v->segments, &v->locks_held);
    if (rc < 0)
        return SK_BACKEND_DOWN;
    v->locks_shown = 1;
    if (rc == 0)
        v->locks_held = -1;
    return SK_OK;
}

/* A new round (st: SK_OK of a reset, SK_CREATED of a create): the
 * plugged-in part clears what it keeps of the item before the admin hears of
 * it. A create is answered all the same (the item exists now); a reset the
 * part could not follow answers the part's failure, and may be repeated.
 * Returns the outcome to answer. */
static sk_status tell_new_round(const app_plugin *plug, sk_status st, const item_view *view)
{
    sk_status ps =
        plug->item_round ? plug->item_round(plug->ctx, view->id, view->initial_stock) : SK_OK;
    if (ps != SK_OK && st == SK_OK)
        return ps;
    if (ps != SK_OK)
        log_msg(LOG_WARN, "api", "item %" PRId64 " created, its laboratory state not cleared",
                view->id);
    return st;
}

static void run_in_pool(void *thread_ctx, void *arg)
{
    pool_request *r = arg;
    pool_session *s = thread_ctx;
    if (r->route == ROUTE_METRICS) {
        reply_metrics(r->a, s, r->ex);
        free(r);
        return;
    }
    if (r->route == ROUTE_ORDER_GET || r->route == ROUTE_ORDER_LIST ||
        r->route == ROUTE_ORDER_PAY || r->route == ROUTE_ORDER_CANCEL) {
        run_order_route(r, s);
        free(r);
        return;
    }
    item_view view;
    item_view *list = NULL;
    size_t nlist = 0;
    const char *why = NULL;
    sk_status st = SK_BACKEND_DOWN;

    if (s) {
        switch (r->route) {
        case ROUTE_READY:
            st = pool_session_ready(s);
            break;
        case ROUTE_ITEM_CREATE:
            st = items_create(s, &r->spec, &view);
            break;
        case ROUTE_ITEM_RESET:
            st = items_reset(s, r->id, &r->reset, &view, &why);
            break;
        case ROUTE_ITEM_RESTOCK:
            st = items_restock(s, r->id, r->add, &view, &why);
            break;
        case ROUTE_ITEM_GET:
            st = items_get(s, r->id, &view);
            if (st == SK_OK && (r->who.scopes & CREDENTIAL_ORDERS_READ))
                st = add_locks(s, &view);
            break;
        case ROUTE_ITEM_ARCHIVE:
            st = archive_item(s, r->id, &why);
            if (st == SK_OK)
                st = items_get(s, r->id, &view);
            break;
        case ROUTE_ITEM_LIST:
            list = malloc(ITEMS_LIST_MAX * sizeof(*list));
            st = list ? items_list(s, r->with_lab, r->with_unlisted, r->with_archived, list,
                                   ITEMS_LIST_MAX, &nlist)
                      : SK_INTERNAL;
            break;
        default:
            st = SK_INTERNAL;
        }
    }
    if ((st == SK_OK && r->route == ROUTE_ITEM_RESET) || st == SK_CREATED)
        st = tell_new_round(&r->a->plugin, st, &view);
    if (st != SK_OK && st != SK_CREATED) {
        http_exchange_reply_error(r->ex, st, why);
    } else if (r->route == ROUTE_READY) {
        static const char ready[] = "{\"status\":\"ready\"}";
        http_exchange_reply(r->ex, 200, ready, sizeof(ready) - 1, NULL);
    } else if (r->route == ROUTE_ITEM_LIST) {
        http_exchange_reply_new(r->ex, 200, json_io_item_list(list, nlist));
    } else {
        http_exchange_reply_new(r->ex, sk_status_http(st), json_io_item(&view));
    }
    free(list);
    free(r);
}

static void to_pool(app *a, http_exchange *ex, const pool_request *req)
{
    pool_request *r = malloc(sizeof(*r));
    if (!r) {
        http_exchange_reply_error(ex, SK_INTERNAL, "out of memory");
        return;
    }
    *r = *req;
    r->a = a;
    r->ex = ex;
    /* Anyone may read an item; a shop's credential sees more (add_locks). */
    if (r->route == ROUTE_ITEM_GET)
        r->who.scopes = credentials_scopes(a->creds, http_exchange_header(ex, "Authorization"));
    pool_submit_exchange(a->pool, ex, run_in_pool, r);
}

/* Who the request speaks for (identity.h), naming user `named` (0: none). */
static sk_status identify(app *a, http_exchange *ex, int64_t named, identity *who, const char **why)
{
    identity_rules rules = {a->creds, buyer_tokens(a), a->cfg->buyer_token_secret};
    return identity_of(&rules, http_exchange_header(ex, "Authorization"), named,
                       clock_wall_ms() / 1000, who, why);
}

/* The buyer a request names and the quantity: in the JSON body, or
 * ?user_id=&quantity=. */
static sk_status named_buyer(http_exchange *ex, purchase_request *req, const char **why)
{
    size_t len;
    const char *body = http_exchange_body(ex, &len);
    sk_status st =
        len > 0 ? json_io_parse_purchase(body, len, req, why)
                : json_io_parse_purchase_query(http_exchange_query(ex, "user_id"),
                                               http_exchange_query(ex, "quantity"), req, why);
    return st == SK_OK ? SK_OK : SK_INVALID;
}

/* The buyer and the quantity of a purchase: the buyer the request names, or
 * under buyer tokens the token's. No buyer is anonymous (0) where the config
 * allows it, never under buyer tokens. */
static sk_status purchase_request_of(app *a, http_exchange *ex, purchase_request *req,
                                     const char **why)
{
    sk_status st = named_buyer(ex, req, why);
    identity who;
    if (st == SK_OK)
        st = identify(a, ex, req->user_id, &who, why);
    if (st != SK_OK)
        return st;
    if (!identity_acts_for_buyer(&who)) {
        *why = "buying for a buyer needs their buyer token or a credential of scope admin";
        return SK_FORBIDDEN;
    }
    req->user_id = who.buyer;
    if (req->user_id == 0 && (!a->cfg->allow_anonymous || buyer_tokens(a))) {
        *why = "user_id is required (in the JSON body or the query)";
        return SK_INVALID;
    }
    return SK_OK;
}

/* A positive integer query parameter at most max; def when absent. 0, or -1
 * when it is not one. */
static int query_int(http_exchange *ex, const char *name, int64_t max, int64_t def, int64_t *out)
{
    const char *v = http_exchange_query(ex, name);
    *out = def;
    if (!v)
        return 0;
    return validate_id(v, strlen(v), out) == 0 && *out <= max ? 0 : -1;
}

/* Who may call an order route, and what it asks (into req). */
static sk_status order_request_of(app *a, http_exchange *ex, pool_request *req, const char **why)
{
    int tokens = buyer_tokens(a);
    purchase_request named = {.user_id = 0, .quantity = 1};
    int64_t v;
    switch (req->route) {
    case ROUTE_ORDER_PAY:
        /* Scope payments (checked with the other routes' scopes): the
         * payment provider's confirmation reaches the shop. */
        req->who.scopes = CREDENTIAL_PAYMENTS;
        return SK_OK;
    case ROUTE_ORDER_GET:
        /* Without buyer tokens anyone with the id reads it, as before. */
        return tokens ? identify(a, ex, 0, &req->who, why) : SK_OK;
    case ROUTE_ORDER_LIST:
        if (query_int(ex, "user_id", INT64_MAX, 0, &named.user_id) < 0) {
            *why = "user_id must be a positive integer";
            return SK_INVALID;
        }
        if (query_int(ex, "limit", ORDERS_PAGE_MAX, ORDERS_PAGE_DEFAULT, &v) < 0) {
            *why = "limit must be an integer from 1 to 100";
            return SK_INVALID;
        }
        req->limit = (int)v;
        if (query_int(ex, "before", INT64_MAX, 0, &req->before) < 0) {
            *why = "before must be an order id";
            return SK_INVALID;
        }
        break;
    default: /* ROUTE_ORDER_CANCEL: by its buyer (named in the body or the query) */
        if (named_buyer(ex, &named, why) != SK_OK)
            return SK_INVALID;
    }
    sk_status st = identify(a, ex, named.user_id, &req->who, why);
    if (st == SK_OK && req->route == ROUTE_ORDER_CANCEL && !identity_acts_for_buyer(&req->who)) {
        *why = "cancelling needs the order's buyer or a credential of scope admin";
        return SK_FORBIDDEN;
    }
    if (st == SK_OK && req->who.buyer == 0 &&
        !(req->who.scopes && req->route == ROUTE_ORDER_CANCEL)) {
        *why = tokens ? "user_id is required: the buyer whose orders to list"
                      : "user_id is required (in the JSON body or the query): the order's buyer";
        return SK_INVALID;
    }
    return st;
}

/* GET /, /lab and their assets, from the binary itself. */
static void reply_page(http_exchange *ex)
{
    const char *body, *type;
    size_t len;
    if (web_find(http_exchange_path(ex), &body, &len, &type) < 0) {
        http_exchange_reply_error(ex, SK_NOT_FOUND, "no such page");
        return;
    }
    http_exchange_reply_typed(ex, 200, body, len, type, NULL);
}

/* A route the plugged-in part registered (router_part_routes): the part
 * answers it, or, with none plugged in, 404 lab_off. */
static void to_part(app *a, http_exchange *ex, const route_match *m)
{
    if (a->plugin.handle)
        a->plugin.handle(a->plugin.ctx, ex, m);
    else /* lab = off, or built without it */
        http_exchange_reply_error(ex, SK_LAB_OFF,
                                  a->cfg->lab ? "this server is built without the oversell "
                                                "laboratory (cmake -DSECKILL_LAB=OFF)"
                                              : NULL);
}

/* Ready means buyers can buy: the purchase path's own Redis connections are
 * up, not only the pool's (they reconnect on their own schedules). */
static int purchase_path_connected(app *a)
{
    for (int i = 0; i < a->nconns; i++) {
        redis_conn *c = atomic_load(&a->conns[i]);
        if (!c || !redis_conn_connected(c))
            return 0;
    }
    return 1;
}

/* Matches the request to a route and labels the exchange with it; a path
 * the router does not know, or a method it does not take, is answered here
 * (OPTIONS: a preflight). Returns 0 with m filled, or -1 when answered. */
static int route_of(app *a, http_exchange *ex, route_match *m)
{
    const char *method = http_exchange_method(ex);
    sk_status st = router_match(method, http_exchange_path(ex), m);
    /* A wrong method on a known path counts under that path's route. */
    http_exchange_tag(ex, st == SK_OK || st == SK_METHOD_NOT_ALLOWED ? (int)m->route : ROUTE_NONE);
    if (st == SK_METHOD_NOT_ALLOWED) {
        char allow[96]; /* every known path answers OPTIONS too */
        snprintf(allow, sizeof(allow), "%s, OPTIONS", m->allow);
        if (strcmp(method, "OPTIONS") == 0)
            cross_origin_preflight(ex, a->cfg->cors_origins, allow);
        else
            http_exchange_reply_error_allow(ex, st, NULL, allow);
        return -1;
    }
    if (st != SK_OK) {
        http_exchange_reply_error(ex, SK_NOT_FOUND, "no such route");
        return -1;
    }
    return 0;
}

/* What a route the pool answers asks for, read and checked on the HTTP
 * thread (into req). SK_OK, or the error to answer with *why. */
static sk_status pool_request_of(app *a, http_exchange *ex, pool_request *req, const char **why)
{
    size_t len;
    const char *body = http_exchange_body(ex, &len);
    sk_status st = SK_OK;
    switch (req->route) {
    case ROUTE_READY:
        if (!purchase_path_connected(a)) {
            *why = "the purchase path has no Redis connection";
            return SK_BACKEND_DOWN;
        }
        return SK_OK;
    case ROUTE_ITEM_CREATE:
        st = json_io_parse_item_spec(body, len, &req->spec, why);
        if (st == SK_OK)
            st = json_io_window_ahead(&req->spec.terms, clock_wall_ms(), why);
        /* A laboratory item has no payment step: its orders are final. */
        if (req->spec.lab)
            req->spec.payment_timeout_s = 0;
        else if (req->spec.payment_timeout_s < 0)
            req->spec.payment_timeout_s = a->cfg->payment_timeout_s;
        return st;
    case ROUTE_ORDER_GET:
    case ROUTE_ORDER_LIST:
    case ROUTE_ORDER_PAY:
    case ROUTE_ORDER_CANCEL:
        return order_request_of(a, ex, req, why);
    case ROUTE_ITEM_RESET:
        st = json_io_parse_reset(body, len, &req->reset, why);
        return st == SK_OK ? json_io_window_ahead(&req->reset.terms, clock_wall_ms(), why) : st;
    case ROUTE_ITEM_RESTOCK:
        return json_io_parse_restock(body, len, &req->add, why);
    case ROUTE_ITEM_LIST: {
        const char *lab = http_exchange_query(ex, "lab");
        const char *unlisted = http_exchange_query(ex, "unlisted");
        const char *archived = http_exchange_query(ex, "archived");
        req->with_lab = lab && strcmp(lab, "1") == 0;
        req->with_unlisted = unlisted && strcmp(unlisted, "1") == 0;
        req->with_archived = archived && strcmp(archived, "1") == 0;
        return SK_OK;
    }
    default:
        return SK_OK;
    }
}

void api_handle(void *ctx, http_exchange *ex)
{
    app *a = ctx;
    route_match m;
    const char *why = NULL;
    if (route_of(a, ex, &m) < 0)
        return;
    pool_request req = {.route = m.route, .id = m.order_id ? m.order_id : m.item_id};
    cross_origin_headers(ex, a->cfg->cors_origins, m.route);
    identity_rules rules = {a->creds, 0, NULL};
    sk_status st = identity_require(&rules, http_exchange_header(ex, "Authorization"),
                                    router_scope(m.route, http_exchange_method(ex)), &why);
    if (st != SK_OK) {
        http_exchange_reply_error(ex, st, why);
        return;
    }
    switch (m.route) {
    case ROUTE_HEALTH: {
        static const char ok[] = "{\"status\":\"ok\"}";
        http_exchange_reply(ex, 200, ok, sizeof(ok) - 1, NULL);
        return;
    }
    case ROUTE_PURCHASE: {
        purchase_request pr;
        if ((st = purchase_request_of(a, ex, &pr, &why)) != SK_OK)
            http_exchange_reply_error(ex, st, why);
        else
            purchase_start(a, ex, m.item_id, pr.user_id, pr.quantity,
                           pr.admission[0] ? pr.admission
                                           : http_exchange_header(ex, "X-Admission"));
        return;
    }
    case ROUTE_QUEUE_JOIN:
    case ROUTE_QUEUE_POLL:
    case ROUTE_ENTRY_ADD:
    case ROUTE_ENTRY_GET:
    case ROUTE_POW_CHALLENGE: {
        purchase_request pr;
        int queue = m.route == ROUTE_QUEUE_JOIN || m.route == ROUTE_QUEUE_POLL;
        if ((st = purchase_request_of(a, ex, &pr, &why)) == SK_OK && pr.user_id == 0) {
            st = SK_INVALID;
            why = queue ? "user_id is required (in the JSON body or the query): the buyer in the "
                          "queue"
                        : "user_id is required (in the JSON body or the query): the entrant";
        }
        if (st != SK_OK)
            http_exchange_reply_error(ex, st, why);
        else if (m.route == ROUTE_POW_CHALLENGE)
            pow_gate_challenge(a, ex, m.item_id, pr.user_id);
        else if (queue)
            room_start(a, ex, m.route, m.item_id, pr.user_id, pr.altcha);
        else
            draw_start(a, ex, m.route, m.item_id, pr.user_id, pr.quantity, pr.altcha);
        return;
    }
    case ROUTE_QUEUE_AUDIT:
        room_start(a, ex, m.route, m.item_id, 0, NULL);
        return;
    case ROUTE_DRAW:
    case ROUTE_DRAW_AUDIT:
        draw_start(a, ex, m.route, m.item_id, 0, 0, NULL);
        return;
    case ROUTE_PAGE:
        reply_page(ex);
        return;
    case ROUTE_ITEM_ORDERS:
    case ROUTE_EVENTS:
    case ROUTE_WEBHOOK_DEAD:
    case ROUTE_WEBHOOK_REPLAY:
        feed_start(a, ex, &m);
        return;
    default:
        if (m.route >= ROUTE_PART)
            to_part(a, ex, &m);
        else if ((st = pool_request_of(a, ex, &req, &why)) != SK_OK)
            http_exchange_reply_error(ex, st, why);
        else
            to_pool(a, ex, &req);
    }
}
