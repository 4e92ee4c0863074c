/* probe_table.c: linear probing from an id's hash. */
#include "probe_table.h"

#include <stdlib.h>

unsigned probe_table_slots(unsigned want)
{
    unsigned n = 16;
    while (n < want && n < PROBE_TABLE_MAX_SLOTS)
        n <<= 1;
    return n;
}

uint64_t probe_table_hash(int64_t item)
{
    uint64_t x = (uint64_t)item * 0x9E3779B97F4A7C15ull;
    return x ^ (x >> 29);
}

int probe_table_init(probe_table *t, unsigned slots, size_t record_size)
{
    t->ids = calloc(slots, sizeof(*t->ids));
    t->records = record_size ? calloc(slots, record_size) : NULL;
    t->record_size = record_size;
    t->mask = slots - 1;
    return t->ids && (t->records || !record_size) ? 0 : -1;
}

void probe_table_close(probe_table *t)
{
    free(t->ids);
    free(t->records);
    t->ids = NULL;
    t->records = NULL;
}

long probe_table_find(probe_table *t, int64_t item, int create)
{
    unsigned at = (unsigned)probe_table_hash(item) & t->mask;
    for (unsigned i = 0; i <= t->mask; i++, at = (at + 1) & t->mask) {
        int64_t cur = atomic_load_explicit(&t->ids[at], memory_order_acquire);
        if (cur == item)
            return at;
        if (cur != 0)
            continue;
        if (!create)
            return -1;
        int64_t expected = 0;
        if (atomic_compare_exchange_strong(&t->ids[at], &expected, item) || expected == item)
            return at;
    }
    return -1;
}

int64_t probe_table_id(probe_table *t, unsigned i)
{
    return atomic_load_explicit(&t->ids[i], memory_order_acquire);
}

void *probe_table_record_at(probe_table *t, unsigned i)
{
    return t->records + (size_t)i * t->record_size;
}

void *probe_table_record(probe_table *t, int64_t item, int create)
{
    long i = probe_table_find(t, item, create);
    return i < 0 ? NULL : probe_table_record_at(t, (unsigned)i);
}
