/* draw_sale.h: what the end-to-end tests of the draw (issue 28) do to a
 * running server: create a draw item, enter buyers (one at a time, or
 * thousands over keep-alive connections), run the draw, and check what it
 * published and wrote: the audit recomputed from K and the beacon, the
 * winners' orders in PostgreSQL. */
#ifndef SECKILL_DRAW_SALE_H
#define SECKILL_DRAW_SALE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <libpq-fe.h>

/* Creates a draw item of stock units whose entries open opens_in_ms from
 * now and close closes_in_ms from now, with more JSON members (may be "").
 * Aborts the test on failure. */
int64_t draw_sale_create(int port, const char *token, int64_t stock, int64_t opens_in_ms,
                         int64_t closes_in_ms, const char *more);

/* One request; its JSON answer into *out (the caller decrefs). Returns the
 * status; aborts the test when the answer is not JSON. */
int draw_sale_call(int port, const char *method, const char *path, const char *token,
                   const char *body, json_t **out);

/* POST /entries for user with quantity. */
int draw_sale_enter(int port, int64_t item, int64_t user, int quantity, json_t **out);

/* Enters users first_user .. first_user + n - 1 (quantity 1 + user %
 * max_quantity), `times` requests each, over `connections` keep-alive
 * connections; asserts each was answered 201 or 200, and returns the 201s. */
size_t draw_sale_enter_many(int port, int64_t item, int64_t first_user, size_t n, int times,
                            int max_quantity, size_t connections);

/* The entries window closed now, by PostgreSQL's clock (a test's shortcut
 * past the wait). */
void draw_sale_close_now(PGconn *pg, int64_t item);

/* POST /draw with beacon (NULL: no body); the answer into *out. */
int draw_sale_draw(int port, const char *token, int64_t item, const char *beacon, json_t **out);

/* Reads the whole audit of item a page of `page` (at most 200: harness_http
 * reads 64 KiB) at a time and checks it
 * against K and the beacon: the commitment is SHA-256(K); every line's
 * ticket is the one K and the beacon give its entrant; the lines are in
 * ticket order, positions 1.., each entrant once and one of the buyers
 * first_user .. + n; the outcomes are the serving rule's over the published
 * stock. Returns the units the draw served. */
int64_t draw_sale_assert_audit(int port, int64_t item, int64_t first_user, size_t n, int page);

/* The winners' orders in PostgreSQL: one per winning entry and its order
 * (the entry's order_id, the order's draw_position its position), every
 * one granted, no buyer twice, `units` units in all. */
void draw_sale_assert_orders(PGconn *pg, int64_t item, int64_t units);

/* An integer member of o; aborts the test when there is none. */
int64_t draw_sale_num(json_t *o, const char *key);

#endif
