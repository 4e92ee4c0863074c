/* api.c: one handler for every route. Cheap routes answer inline, the
 * purchase goes to the asynchronous Redis path, the plugged-in part's routes
 * (the laboratory's) to it, the pages to web.c, the rest to the pool. */
#include "api.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "items.h"
#include "json_io.h"
#include "log.h"
#include "purchase.h"
#include "router.h"
#include "store.h"
#include "web.h"

int api_authorized(const char *header, const char *token)
{
    static const char prefix[] = "Bearer ";
    size_t tlen = strlen(token);
    if (tlen == 0 || !header || strncmp(header, prefix, sizeof(prefix) - 1) != 0)
        return 0;
    const char *given = header + sizeof(prefix) - 1;
    size_t glen = strlen(given);
    /* Compare every byte whatever the first difference: the time taken must
     * not tell how much of a guess was right. */
    unsigned char diff = glen != tlen;
    for (size_t i = 0; i < tlen; i++)
        diff |= (unsigned char)(token[i] ^ (i < glen ? given[i] : 0));
    return diff == 0;
}

/* A request for the pool: what the route needs, parsed on the HTTP thread. */
typedef struct pool_request {
    app *a;
    http_exchange *ex;
    route_id route;
    int64_t id;       /* item or order id */
    item_spec spec;   /* ROUTE_ITEM_CREATE */
    item_reset reset; /* ROUTE_ITEM_RESET */
    int64_t add;      /* ROUTE_ITEM_RESTOCK */
    int with_lab;     /* ROUTE_ITEM_LIST: ?lab=1 */
} pool_request;

static void reply_item(http_exchange *ex, int status, const item_view *v)
{
    char *body = json_io_item(v);
    if (!body) {
        http_exchange_reply_error(ex, SK_INTERNAL, "out of memory");
        return;
    }
    http_exchange_reply(ex, status, body, strlen(body), NULL);
    free(body);
}

/* GET /metrics: the counters, and the gauges read now (Redis ones through
 * this pool thread's connection). */
static void reply_metrics(app *a, store *s, http_exchange *ex)
{
    metrics_gauges g = {.soldout_flags = gate_sold_out_count(a->gate), -1, -1, -1, -1};
    if (s)
        store_gauges(s, &g);
    char *text = metrics_render(a->metrics, &g);
    if (!text) {
        http_exchange_reply_error(ex, SK_INTERNAL, "out of memory");
        return;
    }
    http_exchange_reply_typed(ex, 200, text, strlen(text), "text/plain; version=0.0.4", NULL);
    free(text);
}

static void run_in_pool(void *thread_ctx, void *arg)
{
    pool_request *r = arg;
    store *s = thread_ctx;
    if (r->route == ROUTE_METRICS) {
        reply_metrics(r->a, s, r->ex);
        free(r);
        return;
    }
    item_view view;
    item_view *list = NULL;
    size_t nlist = 0;
    order o;
    const char *where = NULL, *why = NULL;
    sk_status st = SK_BACKEND_DOWN;

    if (s) {
        switch (r->route) {
        case ROUTE_READY:
            st = store_ready(s);
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
            break;
        case ROUTE_ITEM_LIST:
            list = malloc(ITEMS_LIST_MAX * sizeof(*list));
            st = list ? items_list(s, r->with_lab, list, ITEMS_LIST_MAX, &nlist) : SK_INTERNAL;
            break;
        case ROUTE_ORDER_GET:
            st = store_order_get(s, r->id, &o, &where);
            break;
        default:
            st = SK_INTERNAL;
        }
    }
    /* A new round: the plugged-in part clears what it keeps of the item
     * before the admin hears of it. A create is answered all the same (the
     * item exists now); a reset may be repeated. */
    const app_plugin *plug = &r->a->plugin;
    if ((st == SK_OK && r->route == ROUTE_ITEM_RESET) || st == SK_CREATED) {
        sk_status ps =
            plug->item_round ? plug->item_round(plug->ctx, view.id, view.initial_stock) : SK_OK;
        if (ps != SK_OK && st == SK_OK)
            st = ps;
        else if (ps != SK_OK)
            log_msg(LOG_WARN, "api", "item %" PRId64 " created, its laboratory state not cleared",
                    view.id);
    }
    if (st != SK_OK && st != SK_CREATED) {
        http_exchange_reply_error(r->ex, st, why);
    } else if (r->route == ROUTE_READY) {
        static const char ready[] = "{\"status\":\"ready\"}";
        http_exchange_reply(r->ex, 200, ready, sizeof(ready) - 1, NULL);
    } else if (r->route == ROUTE_ORDER_GET || r->route == ROUTE_ITEM_LIST) {
        char *body =
            r->route == ROUTE_ORDER_GET ? json_io_order(&o, where) : json_io_item_list(list, nlist);
        if (body)
            http_exchange_reply(r->ex, 200, body, strlen(body), NULL);
        else
            http_exchange_reply_error(r->ex, SK_INTERNAL, "out of memory");
        free(body);
    } else {
        reply_item(r->ex, sk_status_http(st), &view);
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
    http_exchange_defer(ex);
    if (pool_submit(a->pool, run_in_pool, r) < 0) {
        free(r);
        http_exchange_reply_error(ex, SK_BACKEND_DOWN, "the server is stopping");
    }
}

/* The buyer and the quantity: in the JSON body, or ?user_id=&quantity=;
 * no buyer is anonymous (0) where the config allows it. */
static sk_status purchase_request_of(app *a, http_exchange *ex, purchase_request *req,
                                     const char **why)
{
    size_t len;
    const char *body = http_exchange_body(ex, &len);
    sk_status st =
        len > 0 ? json_io_parse_purchase(body, len, req, why)
                : json_io_parse_purchase_query(http_exchange_query(ex, "user_id"),
                                               http_exchange_query(ex, "quantity"), req, why);
    if (st != SK_OK)
        return SK_INVALID;
    if (req->user_id == 0 && !a->cfg->allow_anonymous) {
        *why = "user_id is required (in the JSON body or the query)";
        return SK_INVALID;
    }
    return SK_OK;
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

/* Ready means buyers can buy: the purchase path's own Redis connections are
 * up, not only the pool's (they reconnect on their own schedules). */
static int purchase_path_connected(app *a)
{
    for (int i = 0; i < a->nloops; i++)
        if (!redis_loop_connected(a->loops[i]))
            return 0;
    return 1;
}

void api_handle(void *ctx, http_exchange *ex)
{
    app *a = ctx;
    route_match m;
    pool_request req = {0};
    const char *why = NULL;
    sk_status st = router_match(http_exchange_method(ex), http_exchange_path(ex), &m);
    /* A wrong method on a known path counts under that path's route. */
    http_exchange_tag(ex, st == SK_OK || st == SK_METHOD_NOT_ALLOWED ? (int)m.route : ROUTE_NONE);

    if (st == SK_METHOD_NOT_ALLOWED) {
        http_exchange_reply_error_allow(ex, st, NULL, m.allow);
        return;
    }
    if (st != SK_OK) {
        http_exchange_reply_error(ex, SK_NOT_FOUND, "no such route");
        return;
    }
    req.route = m.route;
    req.id = m.route == ROUTE_ORDER_GET ? m.order_id : m.item_id;
    if ((m.route == ROUTE_ITEM_CREATE || m.route == ROUTE_ITEM_RESET ||
         m.route == ROUTE_ITEM_RESTOCK) &&
        !api_authorized(http_exchange_header(ex, "Authorization"), a->cfg->admin_token)) {
        http_exchange_reply_error(ex, SK_UNAUTHORIZED, NULL);
        return;
    }
    size_t len;
    const char *body = http_exchange_body(ex, &len);
    switch (m.route) {
    case ROUTE_HEALTH: {
        static const char ok[] = "{\"status\":\"ok\"}";
        http_exchange_reply(ex, 200, ok, sizeof(ok) - 1, NULL);
        return;
    }
    case ROUTE_PURCHASE: {
        purchase_request pr;
        if (purchase_request_of(a, ex, &pr, &why) != SK_OK) {
            http_exchange_reply_error(ex, SK_INVALID, why);
            return;
        }
        purchase_start(a, ex, m.item_id, pr.user_id, pr.quantity);
        return;
    }
    case ROUTE_PAGE:
        reply_page(ex);
        return;
    case ROUTE_LAB_RESULTS:
    case ROUTE_LAB_LIST:
    case ROUTE_LAB_PURCHASE:
    case ROUTE_LAB_AUDIT:
        if (a->plugin.handle)
            a->plugin.handle(a->plugin.ctx, ex, &m);
        else
            http_exchange_reply_error(ex, SK_NOT_FOUND,
                                      "this server is built without the laboratory");
        return;
    case ROUTE_READY:
        if (!purchase_path_connected(a)) {
            http_exchange_reply_error(ex, SK_BACKEND_DOWN,
                                      "the purchase path has no Redis connection");
            return;
        }
        st = SK_OK;
        break;
    case ROUTE_ITEM_CREATE:
        st = json_io_parse_item_spec(body, len, &req.spec, &why);
        break;
    case ROUTE_ITEM_RESET:
        st = json_io_parse_reset(body, len, &req.reset, &why);
        break;
    case ROUTE_ITEM_RESTOCK:
        st = json_io_parse_restock(body, len, &req.add, &why);
        break;
    case ROUTE_ITEM_LIST: {
        const char *lab = http_exchange_query(ex, "lab");
        req.with_lab = lab && strcmp(lab, "1") == 0;
        st = SK_OK;
        break;
    }
    default:
        st = SK_OK;
    }
    if (st != SK_OK) {
        http_exchange_reply_error(ex, st, why);
        return;
    }
    to_pool(a, ex, &req);
}
