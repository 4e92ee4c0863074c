/* reconcile_segment.h: one segment of an item being rebuilt
 * (reconcile_rebuild.c): its keys, its hold (step 1) and its state set back
 * from the books (step 3), through lua/item_reset.lua, which alone writes
 * the item-state hash's layout. */
#ifndef SECKILL_RECONCILE_SEGMENT_H
#define SECKILL_RECONCILE_SEGMENT_H

#include <stddef.h>
#include <stdint.h>

#include "keys.h"
#include "reconcile.h"
#include "redis_nodes.h"

/* One segment of the item being rebuilt (the item itself when it has one):
 * its keys, their staging keys, and its stock as PostgreSQL and the pending
 * orders say (reconcile_rebuild.c's step 2 fills those). */
typedef struct reconcile_segment {
    int j;
    int64_t key;
    char state[KEYS_MAX], buyers[KEYS_MAX], returned[KEYS_MAX], given_back[KEYS_MAX];
    char granted[KEYS_MAX]; /* a draw's granted orders (issue 28) */
    char staged_buyers[KEYS_MAX], staged_returned[KEYS_MAX], staged_given_back[KEYS_MAX];
    char staged_granted[KEYS_MAX];
    int64_t held, settled, back, pending;
    int has_buyers, has_returned, has_given_back, has_granted; /* staging keys written */
} reconcile_segment;

/* Segment j of item it: its keys, nothing counted yet. */
void reconcile_segment_init(reconcile_segment *sg, const reconcile_item *it, int j);

/* Step 1 for every segment of it: their state and any staging keys a crash
 * left removed: off sale. 0, or -1 with err set. */
int reconcile_hold_item(redis_nodes *rn, const reconcile_item *it, char *err, size_t errlen);

/* Step 3 for sg, in one MULTI on its node, tried again while Redis does not
 * answer (never twice): the state set as the books say (archived kept when
 * archived) and the staging keys renamed in; then its news announced (the
 * stock version never goes back). 0, or -1 with err set. */
int reconcile_segment_commit(redis_nodes *rn, const reconcile_item *it, const reconcile_segment *sg,
                             int archived, char *err, size_t errlen);

#endif
