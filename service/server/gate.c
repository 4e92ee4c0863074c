/* gate.c: an item's flags in the slot probe_table gives its id; slots are
 * never released, so readers need no lock. */
#include "gate.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "keys.h"
#include "probe_table.h"
#include "reserve.h"

typedef struct slot {
    _Atomic int64_t sold_version; /* version at which it sold out, 0: none */
    _Atomic int64_t live_version; /* latest version announced or answered */
    _Atomic int64_t probe_ms;     /* when a flagged purchase last went to Redis */
    _Atomic int segments;         /* the item's segments, 0: not known yet */
    _Atomic int archived;         /* the item is archived (for good) */
    /* The window of round window_round (0: none known), under a sequence
     * lock: a writer makes window_seq odd, writes, makes it even again; a
     * reader that sees the same even sequence before and after its reads
     * read one writer's values. A writer that finds it odd gives up (the
     * next answer writes it). */
    _Atomic uint64_t window_seq;
    _Atomic int64_t window_round;
    _Atomic int64_t starts_ms;
    _Atomic int64_t ends_ms;
} slot;

struct gate {
    probe_table ids; /* a slot per item */
};

gate *gate_create(unsigned capacity)
{
    /* Keep probes short: at most half full. */
    unsigned n = probe_table_slots(capacity * 2);
    gate *g = calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    if (probe_table_init(&g->ids, n, sizeof(slot)) < 0) {
        gate_free(g);
        return NULL;
    }
    return g;
}

void gate_free(gate *g)
{
    if (!g)
        return;
    probe_table_close(&g->ids);
    free(g);
}

/* The slot of item; claims a free one when create is set. NULL when absent
 * (or the table is full). */
static slot *find(gate *g, int64_t item, int create)
{
    return probe_table_record(&g->ids, item, create);
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

/* Writes a window under the slot's sequence lock; 0 when another writer
 * holds it. */
static int window_write(slot *sl, int64_t round, int64_t starts_ms, int64_t ends_ms)
{
    uint64_t seq = atomic_load(&sl->window_seq);
    if ((seq & 1) || !atomic_compare_exchange_strong(&sl->window_seq, &seq, seq + 1))
        return 0;
    atomic_store(&sl->window_round, round);
    atomic_store(&sl->starts_ms, starts_ms);
    atomic_store(&sl->ends_ms, ends_ms);
    atomic_store(&sl->window_seq, seq + 2);
    return 1;
}

/* Only the slots claimed: an unclaimed one's record was never written (a
 * slot is claimed before its record is), and writing it would make the
 * whole table resident, 8 MiB of the server's memory from its first
 * subscription on, for the items it never sees. */
void gate_clear_all(gate *g)
{
    for (unsigned i = 0; i <= g->ids.mask; i++) {
        if (probe_table_id(&g->ids, i) == 0)
            continue;
        slot *sl = probe_table_record_at(&g->ids, i);
        atomic_store(&sl->sold_version, 0);
        while (!window_write(sl, 0, 0, 0))
            ;
    }
}

static int flagged(slot *sl)
{
    int64_t sold = atomic_load_explicit(&sl->sold_version, memory_order_relaxed);
    return sold != 0 && sold >= atomic_load_explicit(&sl->live_version, memory_order_relaxed);
}

/* Whether the item of slot sl is flagged: every one of its segments is,
 * when it is split. */
static int item_flagged(gate *g, slot *sl, int64_t item)
{
    if (!flagged(sl))
        return 0;
    int segments = atomic_load_explicit(&sl->segments, memory_order_relaxed);
    for (int j = 1; j < segments; j++) {
        slot *seg = find(g, keys_segment(item, j, segments), 0);
        if (!seg || !flagged(seg))
            return 0;
    }
    return 1;
}

int64_t gate_sold_out_count(gate *g)
{
    int64_t n = 0;
    for (unsigned i = 0; i <= g->ids.mask; i++) {
        int64_t item = probe_table_id(&g->ids, i);
        /* A segment's own slot is counted with its item's (segment 0's). */
        if (item != 0 && keys_segment_item(item) == item)
            n += item_flagged(g, probe_table_record_at(&g->ids, i), item);
    }
    return n;
}

int gate_is_sold_out(gate *g, int64_t item, int64_t now_ms)
{
    slot *sl = find(g, item, 0);
    if (!sl || !flagged(sl))
        return 0;
    /* Once a GATE_PROBE_MS one purchase goes to Redis all the same: its
     * answer carries the stock version, so a restock or a reset whose
     * announcement never came clears the flag within a second. */
    int64_t last = atomic_load_explicit(&sl->probe_ms, memory_order_relaxed);
    if (now_ms - last >= GATE_PROBE_MS &&
        atomic_compare_exchange_strong(&sl->probe_ms, &last, now_ms))
        return 0;
    return 1;
}

/* The round of the latest version announced (0: none yet). */
static int64_t live_round(slot *sl)
{
    return atomic_load_explicit(&sl->live_version, memory_order_relaxed) >> RESERVE_CHANGES_BITS;
}

/* Reads a slot's window under its sequence lock. Returns 1 with the round
 * and bounds of one writer, 0 while a writer holds it. */
static int window_read(slot *sl, int64_t *round, int64_t *starts_ms, int64_t *ends_ms)
{
    uint64_t seq = atomic_load(&sl->window_seq);
    if (seq & 1)
        return 0;
    *round = atomic_load(&sl->window_round);
    *starts_ms = atomic_load(&sl->starts_ms);
    *ends_ms = atomic_load(&sl->ends_ms);
    return atomic_load(&sl->window_seq) == seq;
}

void gate_set_window(gate *g, int64_t item, int64_t round, int64_t starts_ms, int64_t ends_ms)
{
    slot *sl = find(g, item, 1);
    if (!sl || round < live_round(sl))
        return;
    int64_t have_round, have_starts, have_ends;
    if (window_read(sl, &have_round, &have_starts, &have_ends) && have_round == round &&
        have_starts == starts_ms && have_ends == ends_ms)
        return; /* the common case: nothing to write */
    window_write(sl, round, starts_ms, ends_ms);
}

int gate_window(gate *g, int64_t item, int64_t *starts_ms, int64_t *ends_ms)
{
    slot *sl = find(g, item, 0);
    int64_t round, starts, ends;
    if (!sl || !window_read(sl, &round, &starts, &ends) || round == 0 || round < live_round(sl))
        return 0;
    *starts_ms = starts;
    *ends_ms = ends;
    return 1;
}

void gate_set_segments(gate *g, int64_t item, int segments)
{
    slot *sl = find(g, item, 1);
    if (sl)
        atomic_store_explicit(&sl->segments, segments, memory_order_relaxed);
}

int gate_segments(gate *g, int64_t item)
{
    slot *sl = find(g, item, 0);
    return sl ? atomic_load_explicit(&sl->segments, memory_order_relaxed) : 0;
}

void gate_set_archived(gate *g, int64_t item)
{
    slot *sl = find(g, item, 1);
    if (sl)
        atomic_store_explicit(&sl->archived, 1, memory_order_relaxed);
}

int gate_is_archived(gate *g, int64_t item)
{
    slot *sl = find(g, item, 0);
    return sl ? atomic_load_explicit(&sl->archived, memory_order_relaxed) : 0;
}
