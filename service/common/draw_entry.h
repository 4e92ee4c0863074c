/* draw_entry.h: a buyer's entry in an item's draw (issue 28) as the API
 * shows it: the entries routes answer it, and the outbox's entry.waitlisted
 * event (outbox.h) carries it, with its buyer, to the feed and the
 * webhooks. */
#ifndef SECKILL_DRAW_ENTRY_H
#define SECKILL_DRAW_ENTRY_H

#include <stdint.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "room_order.h"

/* A buyer's entry as stored (draw_entries). */
typedef struct draw_entry {
    int64_t item_id, round, user_id;
    char entrant[ROOM_HEX_LEN + 1]; /* E (room_order.h) */
    int quantity;
    int64_t entered_ms;
    int64_t position; /* 0: not drawn yet */
    char outcome[24]; /* "": not drawn yet */
    int64_t order_id; /* 0: none */
} draw_entry;

/* Reads row of res into *e from column at on: nine columns, item_id,
 * round, user_id, entrant, quantity, entered_at (Unix ms), position (0:
 * none), outcome ("": none), order_id (0: none). 0, or -1 (logged for
 * component) when the row is not an entry's. */
int draw_entry_read(const PGresult *res, int row, int at, draw_entry *e, const char *component);

/* The entry's JSON: {"item_id","round","entrant","quantity","entered_at",
 * "position","outcome","order_id"}, position and outcome null before the
 * draw, order_id (a 64-bit integer as a string) null until the entry has
 * an order. NULL when out of memory; the caller decrefs. */
json_t *draw_entry_json(const draw_entry *e);

#endif
