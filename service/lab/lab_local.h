/* lab_local.h: the in-process strategies of the laboratory (local_unsafe,
 * local_atomic_check, local_mutex) and the per-item counters they share
 * within one server instance. A counter is loaded from the item's initial
 * stock on first use in a round and forgotten when a new round begins
 * (reset on this instance, or the round event from another one). */
#ifndef SECKILL_LAB_LOCAL_H
#define SECKILL_LAB_LOCAL_H

#include <stdint.h>

#include "lab_strategy.h"

typedef struct lab_local lab_local;

/* capacity: items tracked at most (rounded up to a power of two); a
 * purchase of one more item answers SK_BACKEND_DOWN. NULL on OOM. */
lab_local *lab_local_create(unsigned capacity);
/* NULL is a no-op. No strategy may run any more. */
void lab_local_free(lab_local *l);

/* Round `round` of item began: counters of an older round are reloaded on
 * their next use. Thread-safe, as all of the below. */
void lab_local_new_round(lab_local *l, int64_t item, int64_t round);
/* The item was reset here: its counters are reloaded on their next use. */
void lab_local_forget(lab_local *l, int64_t item);
/* Announcements may have been missed: every counter checks the item's round
 * on its next use, and is reloaded only if the round changed (the units it
 * sold in the same round stay sold). */
void lab_local_forget_all(lab_local *l);

/* Check, work, then a plain read-modify-write (lost updates and oversell). */
lab_strategy_fn lab_local_unsafe;
/* Check, work, then an atomic decrement (no lost update, still oversells). */
lab_strategy_fn lab_local_atomic_check;
/* A process-local mutex around check, work and decrement. */
lab_strategy_fn lab_local_mutex;
/* The counter of the strategy r->strategy in this process. */
lab_remaining_fn lab_local_remaining;

#endif
