/* gate.c: open addressing over a fixed array; slots are claimed with a
 * compare-and-swap on the item id and never released, so readers need no
 * lock. */
#include "gate.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "reserve.h"

typedef struct slot {
    _Atomic int64_t item;         /* 0: free */
    _Atomic int64_t sold_version; /* version at which it sold out, 0: none */
    _Atomic int64_t live_version; /* latest version announced */
    /* The window of round window_round (0: none known). A writer clears the
     * round, writes the bounds, then sets the round; a reader that sees the
     * same round before and after reading the bounds read one writer's. */
    _Atomic int64_t window_round;
    _Atomic int64_t starts_ms;
    _Atomic int64_t ends_ms;
} slot;

struct gate {
    unsigned mask;
    slot *slots;
};

gate *gate_create(unsigned capacity)
{
    unsigned n = 16;
    while (n < capacity * 2) /* keep probes short: at most half full */
        n <<= 1;
    gate *g = calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    g->slots = calloc(n, sizeof(slot));
    if (!g->slots) {
        free(g);
        return NULL;
    }
    g->mask = n - 1;
    return g;
}

void gate_free(gate *g)
{
    if (!g)
        return;
    free(g->slots);
    free(g);
}

static uint64_t mix(int64_t item)
{
    uint64_t x = (uint64_t)item * 0x9E3779B97F4A7C15ull;
    return x ^ (x >> 29);
}

/* The slot of item; claims a free one when create is set. NULL when absent
 * (or the table is full). */
static slot *find(gate *g, int64_t item, int create)
{
    for (unsigned i = 0, at = (unsigned)mix(item) & g->mask; i <= g->mask;
         i++, at = (at + 1) & g->mask) {
        slot *sl = &g->slots[at];
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

void gate_set_sold_out(gate *g, int64_t item, int64_t version)
{
    slot *sl = find(g, item, 1);
    if (sl)
        raise_to(&sl->sold_version, version);
}

void gate_new_version(gate *g, int64_t item, int64_t version)
{
    slot *sl = find(g, item, 1);
    if (sl)
        raise_to(&sl->live_version, version);
}

void gate_clear_all(gate *g)
{
    for (unsigned i = 0; i <= g->mask; i++) {
        atomic_store(&g->slots[i].sold_version, 0);
        atomic_store(&g->slots[i].window_round, 0);
    }
}

int64_t gate_sold_out_count(gate *g)
{
    int64_t n = 0;
    for (unsigned i = 0; i <= g->mask; i++) {
        int64_t item = atomic_load_explicit(&g->slots[i].item, memory_order_acquire);
        n += item != 0 && gate_is_sold_out(g, item);
    }
    return n;
}

int gate_is_sold_out(gate *g, int64_t item)
{
    slot *sl = find(g, item, 0);
    if (!sl)
        return 0;
    int64_t sold = atomic_load_explicit(&sl->sold_version, memory_order_relaxed);
    return sold != 0 && sold >= atomic_load_explicit(&sl->live_version, memory_order_relaxed);
}

/* The round of the latest version announced (0: none yet). */
static int64_t live_round(slot *sl)
{
    return atomic_load_explicit(&sl->live_version, memory_order_relaxed) >> RESERVE_RESTOCKS_BITS;
}

void gate_set_window(gate *g, int64_t item, int64_t round, int64_t starts_ms, int64_t ends_ms)
{
    slot *sl = find(g, item, 1);
    if (!sl || round < live_round(sl) ||
        (atomic_load(&sl->window_round) == round && atomic_load(&sl->starts_ms) == starts_ms &&
         atomic_load(&sl->ends_ms) == ends_ms))
        return;
    atomic_store(&sl->window_round, 0);
    atomic_store(&sl->starts_ms, starts_ms);
    atomic_store(&sl->ends_ms, ends_ms);
    atomic_store(&sl->window_round, round);
}

int gate_window(gate *g, int64_t item, int64_t *starts_ms, int64_t *ends_ms)
{
    slot *sl = find(g, item, 0);
    if (!sl)
        return 0;
    int64_t round = atomic_load(&sl->window_round);
    if (round == 0 || round < live_round(sl))
        return 0;
    *starts_ms = atomic_load(&sl->starts_ms);
    *ends_ms = atomic_load(&sl->ends_ms);
    return atomic_load(&sl->window_round) == round;
}
