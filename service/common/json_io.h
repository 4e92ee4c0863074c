/* json_io.h: request bodies in, response bodies out. Parsing validates fully
 * (types, ranges) and names what was wrong; the hot responses are written
 * from fixed templates, the rest through jansson. */
#ifndef SECKILL_JSON_IO_H
#define SECKILL_JSON_IO_H

#include <stddef.h>
#include <stdint.h>

#include "order.h"
#include "status.h"

#define ITEM_NAME_MAX 200

/* POST /api/v1/items */
typedef struct item_spec {
    int64_t id; /* 0: PostgreSQL assigns one */
    char name[ITEM_NAME_MAX + 1];
    int64_t stock;
    int lab; /* made by the laboratory: not a product for sale */
} item_spec;

/* GET /api/v1/items/{id} */
typedef struct item_view {
    int64_t id;
    char name[ITEM_NAME_MAX + 1];
    int64_t initial_stock;
    int64_t remaining;
    int64_t sold;
    int64_t queued;    /* accepted, not yet in PostgreSQL */
    int64_t persisted; /* the item's rows in PostgreSQL */
    int lab;           /* the laboratory's item */
} item_view;

/* Each parser returns SK_OK, or SK_INVALID with *why set to a static
 * sentence for the error message. */

/* {"user_id": <positive integer>} */
sk_status json_io_parse_purchase(const char *body, size_t len, int64_t *user_id, const char **why);

/* {"name": <1..200 bytes>, "stock": <integer >= 0>, "id": <positive integer, optional>,
 *  "lab": <boolean, optional: the laboratory's item>} */
sk_status json_io_parse_item_spec(const char *body, size_t len, item_spec *spec, const char **why);

/* {"stock": <integer >= 0>} */
sk_status json_io_parse_reset(const char *body, size_t len, int64_t *stock, const char **why);

/* Writers into a caller's buffer return the length, or -1 when it is too
 * small. */

/* {"error": "<code of s>", "message": "<message>"} */
int json_io_error(char *buf, size_t cap, sk_status s, const char *message);

/* {"status":"queued","order_id":"<id>","remaining":N} */
int json_io_purchase_queued(char *buf, size_t cap, int64_t order_id, int64_t remaining);

/* Allocating writers: the caller frees the result with free(); NULL when
 * out of memory. */
char *json_io_item(const item_view *v);

/* {"items":[<item>, ...]} of n views (GET /api/v1/items). */
char *json_io_item_list(const item_view *v, size_t n);

/* {"order_id":"..","status":"queued|persisted","item_id":..,"user_id":..} */
char *json_io_order(const order *o, const char *status);

#endif
