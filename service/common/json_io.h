/* json_io.h: request bodies in, response bodies out. Parsing validates fully
 * (types, ranges) and names what was wrong; the hot responses are written
 * from fixed templates, the rest through jansson.
 *
 * Numbers stay exact everywhere they travel: Redis's Lua holds them as
 * doubles (exact to 2^53) and so does JavaScript, so stock and limits are
 * bounded well below that, item ids are at most 2^53 - 1, and the 64-bit ids
 * of orders and buyers go out as JSON strings. */
#ifndef SECKILL_JSON_IO_H
#define SECKILL_JSON_IO_H

#include <stddef.h>
#include <stdint.h>

#include "order.h"
#include "order_life.h"
#include "pow.h"
#include "pow_terms.h"
#include "room_terms.h"
#include "status.h"

#define ITEM_NAME_MAX 200
#define ITEM_ID_MAX 9007199254740991LL /* 2^53 - 1 */
/* Stock, a restock and an item's total units are at most 10^12. */
#define SALE_STOCK_MAX 1000000000000LL
/* per_buyer_limit and a purchase's quantity are at most this. */
#define SALE_LIMIT_MAX ORDER_QUANTITY_MAX

/* Which sale terms a body named: a reset keeps those it did not name. */
#define SALE_STARTS 1u
#define SALE_ENDS 2u
#define SALE_LIMIT 4u

/* The terms of a sale round. */
typedef struct sale_terms {
    int64_t starts_ms; /* the window, Unix ms; 0: no bound (null in JSON) */
    int64_t ends_ms;
    int per_buyer_limit;
    unsigned given; /* SALE_* bits */
} sale_terms;

/* POST /api/v1/items */
typedef struct item_spec {
    int64_t id; /* 0: PostgreSQL assigns one */
    char name[ITEM_NAME_MAX + 1];
    int64_t stock;
    int lab; /* made by the laboratory: not a product for sale */
    sale_terms terms;
    int payment_timeout_s; /* -1: not given (the config's default applies) */
    int segments;          /* the stock split over this many segments (keys.h) */
    int unlisted;          /* "listed": false: never on the lists nor the sale page */
    room_terms room;       /* "admission" and the waiting room's terms */
    pow_terms pow;         /* pow_maxnumber, pow_ttl_s */
} item_spec;

/* The longest payment window an item may have: a week. */
#define PAYMENT_TIMEOUT_MAX_S 604800

/* POST /api/v1/items/{id}/reset */
typedef struct item_reset {
    int64_t stock;
    sale_terms terms; /* what the body did not name stays as it was */
    room_terms room;  /* taken whole when room.given, else kept */
    pow_terms pow;    /* each kept unless named */
} item_reset;

/* POST /api/v1/items/{id}/purchase */
typedef struct purchase_request {
    int64_t user_id; /* 0: not given */
    int quantity;
    char admission[ROOM_TOKEN_MAX + 1]; /* a room's admission token ("admission"); "": none */
    char altcha[POW_PAYLOAD_MAX + 1];   /* a proof-of-work solution ("altcha", pow.h); "": none */
} purchase_request;

/* GET /api/v1/items/{id}. Units of the current round unless said. */
typedef struct item_view {
    int64_t id;
    char name[ITEM_NAME_MAX + 1];
    int64_t round;
    int64_t initial_stock;
    int64_t restocked; /* units restocks added this round */
    int64_t remaining;
    int64_t sold;
    int64_t queued;    /* accepted, not yet in PostgreSQL */
    int64_t persisted; /* units of the round's orders in PostgreSQL awaiting payment (or final) */
    int64_t paid;      /* units of its paid orders */
    int64_t cancelled; /* units of its cancelled orders */
    int64_t expired;   /* units of its expired orders */
    int64_t returned;  /* units of cancelled and expired orders back on sale */
    int64_t orders;    /* the round's orders in PostgreSQL, whatever their state */
    int payment_timeout_s;
    int64_t starts_ms; /* the window, 0: no bound */
    int64_t ends_ms;
    int per_buyer_limit;
    int64_t now_ms;      /* Redis's clock when the view was read: says the state */
    int lab;             /* the laboratory's item */
    int segments;        /* its stock is split over this many (keys.h) */
    int listed;          /* on GET /api/v1/items (and the sale page) unless archived */
    int64_t archived_ms; /* when it was archived, Unix ms; 0: it is not */
    int locks_shown;     /* a shop's view (api.c): locks_held is part of it */
    int64_t locks_held;  /* buyers' order locks standing; -1: not all counted (null) */
    room_terms room;     /* its admission terms */
    room_counts counts;  /* a room's counts and secret */
    pow_terms pow;       /* its proof-of-work terms */
} item_view;

/* A purchase refused, with what the buyer needs to know of it. */
typedef struct purchase_refusal {
    sk_status status;
    int64_t remaining;       /* SK_INSUFFICIENT_STOCK */
    int64_t bought;          /* SK_LIMIT_REACHED: the buyer's units so far */
    int64_t per_buyer_limit; /* SK_LIMIT_REACHED */
    int64_t quantity;        /* SK_LIMIT_REACHED: the units asked for */
    int64_t starts_ms;       /* SK_NOT_STARTED */
    int64_t starts_in_ms;    /* SK_NOT_STARTED */
    int64_t ends_ms;         /* SK_ENDED */
} purchase_refusal;

/* Each parser returns SK_OK, or SK_INVALID with *why set to a static
 * sentence for the error message. A body with a NUL byte is refused. */

/* {"user_id": <id: integer or decimal string, optional>, "quantity": <1..1000, optional>,
 *  "admission": <a room's admission token, optional>, "altcha": <a proof-of-work
 *  solution, optional>}; absent fields stay 0 (user), 1 (quantity) and "". */
sk_status json_io_parse_purchase(const char *body, size_t len, purchase_request *req,
                                 const char **why);

/* The same from a query's user_id and quantity (NULL: not given), both
 * decimal text. */
sk_status json_io_parse_purchase_query(const char *user, const char *quantity,
                                       purchase_request *req, const char **why);

/* {"name": <1..200 bytes>, "stock": <0..10^12>, "id": <1..2^53-1, optional>,
 *  "lab": <boolean, optional>, "starts_at", "ends_at": <RFC 3339 or null, optional>,
 *  "per_buyer_limit": <1..1000, optional, default 1>,
 *  "payment_timeout_s": <0..604800, optional>, "listed": <boolean, optional, default true>} */
sk_status json_io_parse_item_spec(const char *body, size_t len, item_spec *spec, const char **why);

/* {"stock": <0..10^12>, and the sale terms of item_spec, each optional} */
sk_status json_io_parse_reset(const char *body, size_t len, item_reset *reset, const char **why);

/* {"add": <1..10^12>} */
sk_status json_io_parse_restock(const char *body, size_t len, int64_t *add, const char **why);

/* The window's end must come after its start; true when it does (or a bound
 * is open). */
int json_io_window_ok(const sale_terms *t);

/* A window given an end must end after now_ms (Unix ms): a sale created or
 * reset to end in the past would never sell. SK_OK, or SK_INVALID with *why
 * set. */
sk_status json_io_window_ahead(const sale_terms *t, int64_t now_ms, const char **why);

/* Writers into a caller's buffer return the length, or -1 when it is too
 * small. */

/* {"error": "<code>", "message": "<message>"<more>}: the one writer of an
 * error body, every other one (and every error answer of the servers) goes
 * through it. The message is escaped; more, when not NULL, is members the
 * caller wrote (",\"key\":value" each) and goes in as it is. */
int json_io_error_body(char *buf, size_t cap, const char *code, const char *message,
                       const char *more);

/* {"error": "<code of s>", "message": "<message>"}; message NULL: the
 * outcome's own (sk_status_message). */
int json_io_error(char *buf, size_t cap, sk_status s, const char *message);

/* The 503 of a reservation no replica confirmed in time: the error, and the
 * order id the buyer may read later (the order may still go through). */
int json_io_purchase_unconfirmed(char *buf, size_t cap, int64_t order_id);

/* {"status":"queued","order_id":"<id>","quantity":q,"remaining":N} */
int json_io_purchase_queued(char *buf, size_t cap, int64_t order_id, int quantity,
                            int64_t remaining);

/* {"error": ..., "message": ..., and the refusal's own fields} */
int json_io_purchase_refused(char *buf, size_t cap, const purchase_refusal *r);

/* Allocating writers: the caller frees the result with free(); NULL when
 * out of memory. */
char *json_io_item(const item_view *v);

/* {"items":[<item>, ...]} of n views (GET /api/v1/items). */
char *json_io_item_list(const item_view *v, size_t n);

/* {"order_id":"..","status":"queued|persisted|paid|cancelled|expired","item_id":..,
 *  "user_id":"..","round":..,"quantity":..,"created_at":"..","pay_by":<time or null>,
 *  "pay_in_ms":<ms left to pay while awaiting payment, else 0>,"paid_at":..,"ended_at":..,
 *  "returned":<bool: the units are back on sale>,
 *  "return":null|"owed"|"returned"|"round_over"}, now_ms the clock pay_in_ms counts from. */
char *json_io_order(const order_record *r, int64_t now_ms);

/* {"orders":[<order>, ...],"next_before":"<id>" or null}: next_before is
 * the ?before= of the next page when this one is full. */
char *json_io_order_list(const order_record *r, size_t n, int full, int64_t now_ms);

/* An error body for a refused order action, with the order's state:
 * {"error":..,"message":..,"order_id":"..","status":".."}. */
char *json_io_order_refused(sk_status s, const order_record *r);

/* The state an item view shows: archived, upcoming, ended, sold_out or on_sale. */
const char *json_io_item_state(const item_view *v);

#endif
