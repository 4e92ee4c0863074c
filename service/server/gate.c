/* soldout.c: open addressing over a fixed array; slots are claimed with a
 * compare-and-swap on the item id and never released, so readers need no
 * lock. */
#include "soldout.h"

#include <stdatomic.h>
#include <stdlib.h>

typedef struct slot {
    _Atomic int64_t item;       /* 0: free */
    _Atomic int64_t sold_round; /* round in which it sold out, 0: none */
    _Atomic int64_t live_round; /* latest round announced */
} slot;

struct soldout {
    unsigned mask;
    slot *slots;
};

soldout *soldout_create(unsigned capacity)
{
    unsigned n = 16;
    while (n < capacity * 2) /* keep probes short: at most half full */
        n <<= 1;
    soldout *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->slots = calloc(n, sizeof(slot));
    if (!s->slots) {
        free(s);
        return NULL;
    }
    s->mask = n - 1;
    return s;
}

void soldout_free(soldout *s)
{
    if (!s)
        return;
    free(s->slots);
    free(s);
}

static uint64_t mix(int64_t item)
{
    uint64_t x = (uint64_t)item * 0x9E3779B97F4A7C15ull;
    return x ^ (x >> 29);
}

/* The slot of item; claims a free one when create is set. NULL when absent
 * (or the table is full). */
static slot *find(soldout *s, int64_t item, int create)
{
    for (unsigned i = 0, at = (unsigned)mix(item) & s->mask; i <= s->mask;
         i++, at = (at + 1) & s->mask) {
        slot *sl = &s->slots[at];
        int64_t cur = atomic_load_explicit(&sl->item, memory_order_acquire);
        if (cur == item)
            return sl;
        if (cur != 0)
            continue;
        if (!create)
            return NULL;
        int64_t expected = 0;
        if (atomic_compare_exchange_strong(&sl->item, &expected, item) || expected == item)
            return sl;
    }
    return NULL;
}

static void raise_to(_Atomic int64_t *v, int64_t to)
{
    int64_t cur = atomic_load(v);
    while (cur < to && !atomic_compare_exchange_weak(v, &cur, to))
        ;
}

void soldout_set(soldout *s, int64_t item, int64_t round)
{
    slot *sl = find(s, item, 1);
    if (sl)
        raise_to(&sl->sold_round, round);
}

void soldout_new_round(soldout *s, int64_t item, int64_t round)
{
    slot *sl = find(s, item, 1);
    if (sl)
        raise_to(&sl->live_round, round);
}

void soldout_clear_all(soldout *s)
{
    for (unsigned i = 0; i <= s->mask; i++)
        atomic_store(&s->slots[i].sold_round, 0);
}

int64_t soldout_count(soldout *s)
{
    int64_t n = 0;
    for (unsigned i = 0; i <= s->mask; i++) {
        int64_t item = atomic_load_explicit(&s->slots[i].item, memory_order_acquire);
        n += item != 0 && soldout_is_set(s, item);
    }
    return n;
}

int soldout_is_set(soldout *s, int64_t item)
{
    slot *sl = find(s, item, 0);
    if (!sl)
        return 0;
    int64_t sold = atomic_load_explicit(&sl->sold_round, memory_order_relaxed);
    return sold != 0 && sold >= atomic_load_explicit(&sl->live_round, memory_order_relaxed);
}
