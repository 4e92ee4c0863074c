/* probe_table.h: item ids placed by open addressing over a fixed array of
 * slots. A slot is claimed for an id with a compare-and-swap and never
 * released, so finding an id takes no lock. Each slot holds a record of the
 * caller's, what it knows of the item (gate.c, lab_local.c). */
#ifndef SECKILL_PROBE_TABLE_H
#define SECKILL_PROBE_TABLE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* The most slots a table has (a larger want is cut to it). */
#define PROBE_TABLE_MAX_SLOTS (1u << 24)

typedef struct probe_table {
    unsigned mask;        /* slots - 1 */
    _Atomic int64_t *ids; /* per slot, 0: free */
    char *records;        /* per slot, record_size bytes: the caller's */
    size_t record_size;
} probe_table;

/* The slots of a table for `want`: the power of two at least want, from 16
 * to PROBE_TABLE_MAX_SLOTS. Also the size of lab_items' direct-mapped table. */
unsigned probe_table_slots(unsigned want);

/* Where an item id's search begins, before the mask (lab_items places an
 * item there alone). */
uint64_t probe_table_hash(int64_t item);

/* A table of `slots` slots (a power of two: probe_table_slots), all free,
 * each with a record of record_size bytes, zeroed (0: none). Returns 0, or
 * -1 on OOM. probe_table_close() frees it (also after a failed init). */
int probe_table_init(probe_table *t, unsigned slots, size_t record_size);
void probe_table_close(probe_table *t);

/* The index of item's slot (item != 0); claims a free one when create is
 * set, and two threads claiming the same id get the same slot. -1 when the
 * item is absent, or the table is full. */
long probe_table_find(probe_table *t, int64_t item, int create);

/* The id in slot i (0: free). */
int64_t probe_table_id(probe_table *t, unsigned i);

/* The record of slot i (i <= mask). */
void *probe_table_record_at(probe_table *t, unsigned i);

/* The record of item's slot (probe_table_find): NULL when the item is
 * absent, or the table is full. */
void *probe_table_record(probe_table *t, int64_t item, int create);

#endif
