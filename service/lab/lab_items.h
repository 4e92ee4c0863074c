/* lab_items.h: which items the laboratory may act on: only those created
 * with "lab": true (items.lab in PostgreSQL), never a product item. What
 * PostgreSQL said of an item is kept in a small table, so that a lab call
 * costs no query after the first one of its item; a new round of the item
 * (a create or a reset: after a clean slate its id may name another item)
 * or a missed announcement forgets it. Pure: the query is the caller's
 * (lab.c), on the laboratory's own connection. */
#ifndef SECKILL_LAB_ITEMS_H
#define SECKILL_LAB_ITEMS_H

#include <stdint.h>

typedef struct lab_items lab_items;

typedef enum lab_items_kind {
    LAB_ITEMS_UNKNOWN, /* not in the table: ask PostgreSQL */
    LAB_ITEMS_LAB,     /* created with "lab": true */
    LAB_ITEMS_PRODUCT  /* a product item: the laboratory refuses it */
} lab_items_kind;

/* Remembers up to capacity items (rounded up to a power of two; an item
 * whose place another took is asked again). NULL on OOM. */
lab_items *lab_items_create(unsigned capacity);
/* NULL is a no-op. */
void lab_items_free(lab_items *t);

/* What the table knows of item, and in *epoch the table's epoch, to hand
 * to lab_items_learn. Thread-safe, as all of the below. */
lab_items_kind lab_items_lookup(lab_items *t, int64_t item, uint64_t *epoch);

/* Keeps what PostgreSQL answered of item (is_lab), unless an item was
 * forgotten since epoch: that answer may predate a new round. */
void lab_items_learn(lab_items *t, int64_t item, int is_lab, uint64_t epoch);

/* A new round of item began: it is asked again. */
void lab_items_forget(lab_items *t, int64_t item);
/* Announcements may have been missed: every item is asked again. */
void lab_items_forget_all(lab_items *t);

#endif
