/* router.c: the route table of API v1, and after it the table a plugged-in
 * part registers (router_part_routes). Paths are split into segments and
 * compared against patterns in which "{}" stands for a positive integer id,
 * "{name}" for a lower-case name and "{file}" for a file name of the web
 * pages' assets. */
#include "router.h"

#include <string.h>

#include "validate.h"

typedef struct route_def {
    route_id route;
    const char *method;
    const char *pattern;
    const char *name;
} route_def;

static const route_def routes[] = {
    {ROUTE_HEALTH, "GET", "/health", "health"},
    {ROUTE_READY, "GET", "/ready", "ready"},
    {ROUTE_METRICS, "GET", "/metrics", "metrics"},
    {ROUTE_ITEM_CREATE, "POST", "/api/v1/items", "item_create"},
    {ROUTE_ITEM_LIST, "GET", "/api/v1/items", "item_list"},
    {ROUTE_ITEM_RESET, "POST", "/api/v1/items/{}/reset", "item_reset"},
    {ROUTE_ITEM_RESTOCK, "POST", "/api/v1/items/{}/stock", "item_restock"},
    {ROUTE_ITEM_GET, "GET", "/api/v1/items/{}", "item_get"},
    {ROUTE_ITEM_ARCHIVE, "DELETE", "/api/v1/items/{}", "item_archive"},
    {ROUTE_PURCHASE, "POST", "/api/v1/items/{}/purchase", "purchase"},
    {ROUTE_QUEUE_JOIN, "POST", "/api/v1/items/{}/queue", "queue_join"},
    {ROUTE_QUEUE_POLL, "GET", "/api/v1/items/{}/queue", "queue_poll"},
    {ROUTE_QUEUE_AUDIT, "GET", "/api/v1/items/{}/queue/audit", "queue_audit"},
    {ROUTE_POW_CHALLENGE, "GET", "/api/v1/items/{}/challenge", "pow_challenge"},
    {ROUTE_ENTRY_ADD, "POST", "/api/v1/items/{}/entries", "entry_add"},
    {ROUTE_ENTRY_GET, "GET", "/api/v1/items/{}/entries", "entry_get"},
    {ROUTE_DRAW, "POST", "/api/v1/items/{}/draw", "draw"},
    {ROUTE_DRAW_AUDIT, "GET", "/api/v1/items/{}/draw/audit", "draw_audit"},
    {ROUTE_ORDER_LIST, "GET", "/api/v1/orders", "order_list"},
    {ROUTE_ORDER_GET, "GET", "/api/v1/orders/{}", "order_get"},
    {ROUTE_ORDER_PAY, "POST", "/api/v1/orders/{}/pay", "order_pay"},
    {ROUTE_ORDER_CANCEL, "POST", "/api/v1/orders/{}/cancel", "order_cancel"},
    {ROUTE_ITEM_ORDERS, "GET", "/api/v1/items/{}/orders", "item_orders"},
    {ROUTE_EVENTS, "GET", "/api/v1/events", "events"},
    {ROUTE_WEBHOOK_DEAD, "GET", "/api/v1/webhooks/dead", "webhook_dead"},
    {ROUTE_WEBHOOK_REPLAY, "POST", "/api/v1/webhooks/dead/replay", "webhook_replay"},
    /* The pages (web.c); the JSON API lives under /api/v1 alone. */
    {ROUTE_PAGE, "GET", "/", "page"},
    {ROUTE_PAGE, "GET", "/lab", "page"},
    {ROUTE_PAGE, "GET", "/admin", "page"},
    {ROUTE_PAGE, "GET", "/static/{file}", "page"},
};

#define NROUTES (sizeof(routes) / sizeof(routes[0]))

/* Row i of the one table the router reads: the product's routes, then the
 * part's (i < router_count()). */
static void row(size_t i, route_id *route, const char **method, const char **pattern)
{
    if (i < NROUTES) {
        *route = routes[i].route;
        *method = routes[i].method;
        *pattern = routes[i].pattern;
        return;
    }
    const router_part_route *p = &router_part_routes[i - NROUTES];
    *route = p->route;
    *method = p->method;
    *pattern = p->pattern;
}

/* The part's row of route r (r >= ROUTE_PART), or NULL. */
static const router_part_route *part_row(route_id r)
{
    for (size_t i = 0; i < router_part_nroutes; i++)
        if (router_part_routes[i].route == r)
            return &router_part_routes[i];
    return NULL;
}

/* A file name: [A-Za-z0-9_.-], not starting with a dot (no "..", no
 * hidden files). */
static int is_file(const char *s, size_t len)
{
    if (len == 0 || len > ROUTER_NAME_MAX || s[0] == '.')
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '.' || s[i] == '-'))
            return 0;
    return 1;
}

static int is_name(const char *s, size_t len)
{
    if (len == 0 || len > ROUTER_NAME_MAX)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return 0;
    return 1;
}

/* Compares path against pattern; stores the ids found at "{}" in order and
 * the segment at "{name}" in m. Returns the number of ids (0..2) or -1 when
 * the path does not match. */
static int match_pattern(const char *pattern, const char *path, int64_t ids[2], route_match *m)
{
    int nids = 0;
    while (*pattern && *path) {
        int file = strncmp(pattern, "{file}", 6) == 0;
        if (file || strncmp(pattern, "{name}", 6) == 0) {
            size_t len = strcspn(path, "/");
            if (file ? !is_file(path, len) : !is_name(path, len))
                return -1;
            m->name = path;
            m->name_len = len;
            pattern += 6;
            path += len;
            continue;
        }
        if (pattern[0] == '{' && pattern[1] == '}') {
            size_t len = strcspn(path, "/");
            if (nids == 2 || validate_id(path, len, &ids[nids]) < 0)
                return -1;
            nids++;
            pattern += 2;
            path += len;
            continue;
        }
        if (*pattern != *path)
            return -1;
        pattern++;
        path++;
    }
    return *pattern == '\0' && *path == '\0' ? nids : -1;
}

sk_status router_match(const char *method, const char *path, route_match *m)
{
    static const char *allow_by_route[ROUTE_COUNT] = {
        [ROUTE_HEALTH] = "GET, HEAD",
        [ROUTE_READY] = "GET, HEAD",
        [ROUTE_ITEM_CREATE] = "GET, HEAD, POST",
        [ROUTE_ITEM_LIST] = "GET, HEAD, POST",
        [ROUTE_ITEM_RESET] = "POST",
        [ROUTE_ITEM_RESTOCK] = "POST",
        [ROUTE_ITEM_GET] = "DELETE, GET, HEAD",
        [ROUTE_ITEM_ARCHIVE] = "DELETE, GET, HEAD",
        [ROUTE_PURCHASE] = "POST",
        [ROUTE_ORDER_GET] = "GET, HEAD",
        [ROUTE_ORDER_LIST] = "GET, HEAD",
        [ROUTE_ORDER_PAY] = "POST",
        [ROUTE_ORDER_CANCEL] = "POST",
        [ROUTE_PAGE] = "GET, HEAD",
        [ROUTE_METRICS] = "GET, HEAD",
        [ROUTE_ITEM_ORDERS] = "GET, HEAD",
        [ROUTE_EVENTS] = "GET, HEAD",
        [ROUTE_WEBHOOK_DEAD] = "GET, HEAD",
        [ROUTE_WEBHOOK_REPLAY] = "POST",
        [ROUTE_QUEUE_JOIN] = "GET, HEAD, POST",
        [ROUTE_QUEUE_POLL] = "GET, HEAD, POST",
        [ROUTE_QUEUE_AUDIT] = "GET, HEAD",
        [ROUTE_POW_CHALLENGE] = "GET, HEAD",
        [ROUTE_ENTRY_ADD] = "GET, HEAD, POST",
        [ROUTE_ENTRY_GET] = "GET, HEAD, POST",
        [ROUTE_DRAW] = "POST",
        [ROUTE_DRAW_AUDIT] = "GET, HEAD",
    };
    int path_known = 0;
    const char *allow = NULL;
    memset(m, 0, sizeof(*m));
    /* HEAD is answered as GET without a body (libmicrohttpd drops it). */
    const char *as = strcmp(method, "HEAD") == 0 ? "GET" : method;
    for (size_t i = 0; i < router_count(); i++) {
        int64_t ids[2] = {0, 0};
        route_match seen = {0};
        route_id route;
        const char *rmethod, *pattern;
        row(i, &route, &rmethod, &pattern);
        if (match_pattern(pattern, path, ids, &seen) < 0)
            continue;
        if (strcmp(rmethod, as) != 0) {
            if (!path_known)
                m->route = route; /* the 405's route, for the metrics */
            path_known = 1;
            allow = route < ROUTE_PART ? allow_by_route[route] : part_row(route)->allow;
            continue;
        }
        memset(m, 0, sizeof(*m));
        m->route = route;
        m->name = seen.name;
        m->name_len = seen.name_len;
        if (route == ROUTE_ORDER_GET || route == ROUTE_ORDER_PAY || route == ROUTE_ORDER_CANCEL)
            m->order_id = ids[0];
        else
            m->item_id = ids[0];
        return SK_OK;
    }
    if (path_known) {
        m->allow = allow;
        return SK_METHOD_NOT_ALLOWED;
    }
    m->route = ROUTE_NONE;
    return SK_NOT_FOUND;
}

size_t router_count(void)
{
    return NROUTES + router_part_nroutes;
}

void router_at(size_t i, const char **method, const char **pattern)
{
    route_id route;
    *method = *pattern = NULL;
    if (i < router_count())
        row(i, &route, method, pattern);
}

size_t router_ids(void)
{
    size_t n = ROUTE_PART;
    for (size_t i = 0; i < router_part_nroutes; i++)
        if ((size_t)router_part_routes[i].route + 1 > n)
            n = (size_t)router_part_routes[i].route + 1;
    return n;
}

credential_scope router_scope(route_id r, const char *method)
{
    const router_part_route *p = r >= ROUTE_PART ? part_row(r) : NULL;
    if (p)
        return p->scope;
    switch (r) {
    case ROUTE_ITEM_CREATE:
    case ROUTE_ITEM_RESET:
    case ROUTE_ITEM_RESTOCK:
    case ROUTE_ITEM_ARCHIVE:
    case ROUTE_WEBHOOK_DEAD: /* its rows name the endpoints' URLs */
    case ROUTE_WEBHOOK_REPLAY:
    case ROUTE_DRAW:
        return CREDENTIAL_ADMIN;
    case ROUTE_ORDER_PAY: /* the payment provider's word, through the shop */
        return CREDENTIAL_PAYMENTS;
    case ROUTE_METRICS:
    case ROUTE_ITEM_ORDERS:
    case ROUTE_EVENTS:
        return CREDENTIAL_ORDERS_READ;
    case ROUTE_HEALTH:
    case ROUTE_READY:
    case ROUTE_ITEM_LIST:
    case ROUTE_ITEM_GET:
    case ROUTE_PURCHASE:
    case ROUTE_QUEUE_JOIN:
    case ROUTE_QUEUE_POLL:
    case ROUTE_QUEUE_AUDIT:
    case ROUTE_POW_CHALLENGE:
    case ROUTE_ENTRY_ADD:
    case ROUTE_ENTRY_GET:
    case ROUTE_DRAW_AUDIT:
    case ROUTE_ORDER_GET:  /* a buyer's own; any with orders:read (api.c) */
    case ROUTE_ORDER_LIST: /* the same */
    case ROUTE_ORDER_CANCEL:
    case ROUTE_PAGE:
        return CREDENTIAL_NONE;
    default:
        return strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0 ? CREDENTIAL_NONE
                                                                         : CREDENTIAL_ADMIN;
    }
}

int router_cross_origin(route_id r)
{
    return r == ROUTE_PURCHASE || r == ROUTE_QUEUE_JOIN || r == ROUTE_QUEUE_POLL ||
           r == ROUTE_QUEUE_AUDIT || r == ROUTE_POW_CHALLENGE || r == ROUTE_ORDER_LIST ||
           r == ROUTE_ORDER_GET || r == ROUTE_ORDER_CANCEL || r == ROUTE_ITEM_GET ||
           r == ROUTE_ITEM_LIST || r == ROUTE_ENTRY_ADD || r == ROUTE_ENTRY_GET ||
           r == ROUTE_DRAW_AUDIT;
}

const char *router_name(route_id r)
{
    const router_part_route *p = r >= ROUTE_PART ? part_row(r) : NULL;
    if (p)
        return p->name;
    for (size_t i = 0; i < NROUTES; i++)
        if (routes[i].route == r)
            return routes[i].name;
    return "unknown";
}
