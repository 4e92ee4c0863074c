/* lab_local.c: per-item counters in the slot probe_table gives an item's id
 * (claimed with a compare-and-swap, never released). Each
 * strategy has its own counter, so runs of different strategies on one item
 * do not disturb each other. The counters are C11 atomics even where the
 * strategy is meant to race (local_unsafe): the lost updates come from its
 * separate load and store, not from undefined behaviour. */
#include "lab_local.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "probe_table.h"

enum { COUNTER_PLAIN, COUNTER_ATOMIC, COUNTER_GUARDED, NCOUNTERS };

/* A slot's counters: not loaded, loaded for its round, or loaded but to be
 * checked against the item's round (announcements may have been missed). */
enum { UNLOADED, LOADED, TO_CHECK };

typedef struct slot {
    pthread_mutex_t state; /* loading and forgetting */
    atomic_int loaded;     /* UNLOADED, LOADED or TO_CHECK */
    int64_t round;
    _Atomic int64_t units[NCOUNTERS];
    pthread_mutex_t guard; /* local_mutex's lock */
} slot;

struct lab_local {
    probe_table ids; /* a slot per item */
};

lab_local *lab_local_create(unsigned capacity)
{
    unsigned n = probe_table_slots(capacity);
    lab_local *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    if (probe_table_init(&l->ids, n, sizeof(slot)) < 0) {
        probe_table_close(&l->ids);
        free(l);
        return NULL;
    }
    for (unsigned i = 0; i < n; i++) {
        slot *s = probe_table_record_at(&l->ids, i);
        pthread_mutex_init(&s->state, NULL);
        pthread_mutex_init(&s->guard, NULL);
    }
    return l;
}

void lab_local_free(lab_local *l)
{
    if (!l)
        return;
    for (unsigned i = 0; i <= l->ids.mask; i++) {
        slot *s = probe_table_record_at(&l->ids, i);
        pthread_mutex_destroy(&s->state);
        pthread_mutex_destroy(&s->guard);
    }
    probe_table_close(&l->ids);
    free(l);
}

/* The slot of item; claims a free one when create is set. NULL when absent
 * (or the table is full). */
static slot *find(lab_local *l, int64_t item, int create)
{
    return probe_table_record(&l->ids, item, create);
}

static void unload(slot *s, int64_t older_than)
{
    pthread_mutex_lock(&s->state);
    if (older_than == 0 || s->round < older_than)
        atomic_store(&s->loaded, UNLOADED);
    pthread_mutex_unlock(&s->state);
}

void lab_local_new_round(lab_local *l, int64_t item, int64_t round)
{
    slot *s = find(l, item, 0);
    if (s)
        unload(s, round);
}

void lab_local_forget(lab_local *l, int64_t item)
{
    slot *s = find(l, item, 0);
    if (s)
        unload(s, 0);
}

void lab_local_forget_all(lab_local *l)
{
    for (unsigned i = 0; i <= l->ids.mask; i++) {
        if (probe_table_id(&l->ids, i) == 0)
            continue;
        slot *s = probe_table_record_at(&l->ids, i);
        int loaded = LOADED;
        atomic_compare_exchange_strong(&s->loaded, &loaded, TO_CHECK);
    }
}

/* The item's slot with its counters loaded for the current round. */
static sk_status loaded_slot(lab_ctx *c, int64_t item, slot **out)
{
    slot *s = find(c->local, item, 1);
    if (!s)
        return SK_BACKEND_DOWN;
    sk_status st = SK_OK;
    if (atomic_load(&s->loaded) != LOADED) {
        pthread_mutex_lock(&s->state);
        int loaded = atomic_load(&s->loaded);
        int64_t initial, round;
        if (loaded != LOADED && (st = lab_initial_stock(c, item, &initial, &round)) == SK_OK) {
            /* Counters to check keep what they sold while the round is the
             * same: reloading them would sell the units again. */
            if (loaded == UNLOADED || round != s->round)
                for (int i = 0; i < NCOUNTERS; i++)
                    atomic_store(&s->units[i], initial);
            s->round = round;
            atomic_store(&s->loaded, LOADED);
        }
        pthread_mutex_unlock(&s->state);
    }
    *out = s;
    return st;
}

static sk_status read_units(lab_ctx *c, const lab_request *r, void *arg, int64_t *value)
{
    (void)c;
    (void)r;
    *value = atomic_load_explicit((_Atomic int64_t *)arg, memory_order_relaxed);
    return SK_OK;
}

/* Writes back what was read minus one: whatever others took meanwhile is
 * overwritten (a lost update). */
static sk_status store_seen_minus_one(lab_ctx *c, const lab_request *r, void *arg, int64_t seen,
                                      int64_t *remaining)
{
    (void)c;
    (void)r;
    atomic_store_explicit((_Atomic int64_t *)arg, seen - 1, memory_order_relaxed);
    *remaining = seen - 1;
    return SK_OK;
}

static sk_status atomic_decrement(lab_ctx *c, const lab_request *r, void *arg, int64_t seen,
                                  int64_t *remaining)
{
    (void)c;
    (void)r;
    (void)seen;
    *remaining = atomic_fetch_sub((_Atomic int64_t *)arg, 1) - 1;
    return SK_OK;
}

/* The slot is loaded before (loaded_slot): nothing to make. */
static const lab_counter plain_counter = {read_units, store_seen_minus_one, NULL};
static const lab_counter atomic_counter = {read_units, atomic_decrement, NULL};

/* Check, work and take on the item's counter `which`, the ops' way. */
static sk_status take_from(lab_ctx *c, const lab_request *r, const lab_counter *ops, int which,
                           int64_t *remaining)
{
    slot *s;
    sk_status st = loaded_slot(c, r->item, &s);
    if (st != SK_OK)
        return st;
    return lab_check_work_take(c, r, ops, &s->units[which], remaining);
}

sk_status lab_local_unsafe(lab_ctx *c, const lab_request *r, int64_t *remaining)
{
    return take_from(c, r, &plain_counter, COUNTER_PLAIN, remaining);
}

sk_status lab_local_atomic_check(lab_ctx *c, const lab_request *r, int64_t *remaining)
{
    return take_from(c, r, &atomic_counter, COUNTER_ATOMIC, remaining);
}

sk_status lab_local_mutex(lab_ctx *c, const lab_request *r, int64_t *remaining)
{
    slot *s;
    sk_status st = loaded_slot(c, r->item, &s);
    if (st != SK_OK)
        return st;
    struct timespec until = clock_after(CLOCK_REALTIME, c->cfg->lab_lock_wait_ms);
    int rc = pthread_mutex_timedlock(&s->guard, &until);
    if (rc == ETIMEDOUT)
        return SK_BUSY;
    if (rc != 0)
        return SK_INTERNAL;
    st = lab_check_work_take(c, r, &plain_counter, &s->units[COUNTER_GUARDED], remaining);
    pthread_mutex_unlock(&s->guard);
    return st;
}

sk_status lab_local_remaining(lab_ctx *c, const lab_request *r, int64_t *remaining)
{
    static const struct {
        const char *strategy;
        int counter;
    } counters[] = {
        {"local_unsafe", COUNTER_PLAIN},
        {"local_atomic_check", COUNTER_ATOMIC},
        {"local_mutex", COUNTER_GUARDED},
    };
    slot *s;
    sk_status st = loaded_slot(c, r->item, &s);
    if (st != SK_OK)
        return st;
    for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
        if (strcmp(counters[i].strategy, r->strategy) == 0) {
            *remaining = atomic_load(&s->units[counters[i].counter]);
            return SK_OK;
        }
    }
    return SK_NOT_FOUND;
}
