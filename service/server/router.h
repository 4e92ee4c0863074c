/* router.h: method + path -> route, with the ids the path carries. Pure: it
 * knows nothing of HTTP connections, so it is tested by feeding strings. */
#ifndef SECKILL_ROUTER_H
#define SECKILL_ROUTER_H

#include <stddef.h>
#include <stdint.h>

#include "credentials.h"
#include "status.h"

typedef enum route_id {
    ROUTE_NONE = 0,
    ROUTE_HEALTH,
    ROUTE_READY,
    ROUTE_ITEM_CREATE,
    ROUTE_ITEM_LIST, /* GET /api/v1/items */
    ROUTE_ITEM_RESET,
    ROUTE_ITEM_GET,
    ROUTE_PURCHASE,
    ROUTE_ORDER_GET,
    ROUTE_PAGE,         /* GET /, /lab, /static/{file}: the web pages */
    ROUTE_METRICS,      /* GET /metrics: Prometheus text format */
    ROUTE_ITEM_RESTOCK, /* POST /api/v1/items/{id}/stock */
    ROUTE_ORDER_LIST,   /* GET /api/v1/orders?user_id=: a buyer's orders */
    ROUTE_ORDER_PAY,    /* POST /api/v1/orders/{id}/pay (admin: the payment provider's word) */
    ROUTE_ORDER_CANCEL, /* POST /api/v1/orders/{id}/cancel (its buyer or admin) */
    ROUTE_ITEM_ARCHIVE, /* DELETE /api/v1/items/{id} (admin): off sale for good */
    /* feed.h: GET /api/v1/items/{id}/orders and GET /api/v1/events (orders:read),
     * GET /api/v1/webhooks/dead and POST /api/v1/webhooks/dead/replay (admin) */
    ROUTE_ITEM_ORDERS,
    ROUTE_EVENTS,
    ROUTE_WEBHOOK_DEAD,
    ROUTE_WEBHOOK_REPLAY,
    ROUTE_QUEUE_JOIN,  /* POST /api/v1/items/{id}/queue: join the waiting room */
    ROUTE_QUEUE_POLL,  /* GET /api/v1/items/{id}/queue: place and admission */
    ROUTE_QUEUE_AUDIT, /* GET /api/v1/items/{id}/queue/audit: the published order */
    /* GET /api/v1/items/{id}/challenge: a proof-of-work challenge (pow_gate.h) */
    ROUTE_POW_CHALLENGE,
    ROUTE_ENTRY_ADD,  /* POST /api/v1/items/{id}/entries: enter the draw (issue 28) */
    ROUTE_ENTRY_GET,  /* GET /api/v1/items/{id}/entries: the buyer's entry */
    ROUTE_DRAW,       /* POST /api/v1/items/{id}/draw (admin): run the draw */
    ROUTE_DRAW_AUDIT, /* GET /api/v1/items/{id}/draw/audit: the draw's published order */
    ROUTE_COUNT       /* the product's routes; a part's are numbered on from here */
} route_id;

/* A part plugged into the server (app.h's app_plugin) numbers its routes
 * from here on, as it numbers its outcomes from SK_STATUS_PART, and
 * registers them in router_part_routes. */
#define ROUTE_PART ROUTE_COUNT

/* Most route ids, the product's and a part's: the size of the metrics'
 * table of route names. */
#define ROUTE_IDS_MAX (ROUTE_PART + 16)

/* A row of a part's route table. */
typedef struct router_part_route {
    route_id route;         /* ROUTE_PART + k */
    const char *method;     /* "GET", "POST", ... (HEAD is routed as GET) */
    const char *pattern;    /* as the product's: "{}", "{name}", "{file}" */
    const char *name;       /* for logs and metrics; distinct from every other */
    const char *allow;      /* the Allow header of a 405 on its path */
    credential_scope scope; /* router_scope's answer for it */
} router_part_route;

/* The hook through which a part registers its routes: a table the part
 * defines (lab_routes.c), linked into every build of the server so that
 * one built or started without the part still knows its paths and answers
 * them 404 lab_off. Matched after the product's routes. */
extern const router_part_route router_part_routes[];
extern const size_t router_part_nroutes;

typedef struct route_match {
    route_id route;
    int64_t item_id;   /* routes under /api/v1/items/{id} */
    int64_t order_id;  /* /api/v1/orders/{id} */
    const char *allow; /* on SK_METHOD_NOT_ALLOWED: the Allow header */
    const char *name;  /* the {name} or {file} segment: points into the path */
    size_t name_len;
} route_match;

/* Longest name a "{name}" segment may have. */
#define ROUTER_NAME_MAX 64

/* Matches method and path (no query string). Returns SK_OK with m filled,
 * SK_NOT_FOUND for an unknown path, an id that is not a positive integer or
 * a name that is not 1..ROUTER_NAME_MAX of [a-z0-9_], or
 * SK_METHOD_NOT_ALLOWED with m->allow set and m->route the path's route (for
 * the metrics). m->name points into path. */
sk_status router_match(const char *method, const char *path, route_match *m);

/* The route table, the product's and the part's, for the test that holds
 * it against docs/openapi.yaml: router_count() entries; router_at() gives
 * entry i's method and pattern (ids as "{}", names as "{name}" or
 * "{file}"). */
size_t router_count(void);
void router_at(size_t i, const char **method, const char **pattern);

/* How many route ids there are: ROUTE_PART and the part's after it. */
size_t router_ids(void);

/* The scope of the shop's credentials a route called with method needs
 * (credentials.h; CREDENTIAL_NONE: anyone, a buyer's own routes among
 * them); a part's route, the scope of its row. A route not named here
 * needs admin unless it only reads (GET, HEAD): a new route that changes a
 * sale is the shop's until said otherwise. */
credential_scope router_scope(route_id r, const char *method);

/* Whether a shop's page on another origin (cors_origins) may call a route
 * from a buyer's browser: the buyer's own routes (buy, their orders,
 * cancel) and the public reads of the items, never the shop's. Returns 1
 * or 0. */
int router_cross_origin(route_id r);

/* A stable name of a route for logs and metrics ("purchase"). */
const char *router_name(route_id r);

#endif
