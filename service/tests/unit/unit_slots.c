/* unit_slots.c: every Redis script call (and the worker's MULTI) is given
 * keys of one Redis Cluster slot, as the callers build them: a cluster
 * refuses a CROSSSLOT call. (The slot function itself is checked in
 * unit_redis_cluster and against a real cluster.) */
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "keys.h"
#include "redis_cluster.h"
#include "reserve_batch.h"
#include "worker_batch.h"

static int slot(const char *key)
{
    return redis_cluster_slot(key, strlen(key));
}

/* Every key of keys[0..n) is in the slot of keys[0]. */
static void expect_one_slot(const char *what, const char *const *keys, size_t n)
{
    for (size_t i = 1; i < n; i++)
        cr_expect_eq(slot(keys[i]), slot(keys[0]), "%s: %s (slot %d) and %s (slot %d)", what,
                     keys[i], slot(keys[i]), keys[0], slot(keys[0]));
}

Test(slots, the_reserve_script_touches_one_slot)
{
    reserve_batch b;
    reserve_batch_init(&b, 42, 1000);
    cr_assert_geq(reserve_batch_add(&b, 7, 0, 1001, 1), 0);
    reserve_batch_keys_args(&b);
    expect_one_slot("reserve_batch", b.keys_args, RESERVE_BATCH_NKEYS);
    /* With the buyers' order locks. */
    reserve_batch_guard(&b, 5000);
    reserve_batch_keys_args(&b);
    cr_assert_eq(reserve_batch_nkeys(&b), RESERVE_BATCH_NKEYS + 1);
    expect_one_slot("reserve_batch with locks", b.keys_args, (size_t)reserve_batch_nkeys(&b));
}

Test(slots, the_workers_move_acknowledgement_and_sweep_touch_one_slot)
{
    for (int64_t item = 1; item <= 200; item++) {
        worker_source src;
        worker_source_init(&src, item, "host-7");
        char claim[KEYS_MAX];
        keys_claim(claim, sizeof(claim), item, "host-7");
        /* queue_move.lua and BLMOVE; the MULTI of the acknowledgement;
         * sweep_recover.lua. */
        const char *move[] = {src.queue, src.processing};
        const char *ack[] = {src.processing, src.pending, src.dead};
        const char *sweep[] = {src.processing, src.queue, claim};
        expect_one_slot("queue_move", move, 2);
        expect_one_slot("acknowledgement", ack, 3);
        expect_one_slot("sweep_recover", sweep, 3);
    }
}

Test(slots, the_item_scripts_and_the_reserve_script_share_the_items_slot)
{
    char state[KEYS_MAX], buyers[KEYS_MAX], returned[KEYS_MAX], given_back[KEYS_MAX],
        queue[KEYS_MAX], pending[KEYS_MAX];
    keys_item_state(state, sizeof(state), 9);
    keys_item_buyers(buyers, sizeof(buyers), 9);
    keys_item_returned(returned, sizeof(returned), 9);
    keys_item_given_back(given_back, sizeof(given_back), 9);
    keys_queue(queue, sizeof(queue), 9);
    keys_pending(pending, sizeof(pending), 9);
    /* item_reset.lua and order_return.lua: state, buyers, returned,
     * given_back; restock.lua: state; all beside the queue. */
    const char *keys[] = {state, buyers, returned, given_back, queue, pending};
    expect_one_slot("item scripts", keys, 6);
}

Test(slots, different_items_spread_over_the_slots)
{
    char a[KEYS_MAX], b[KEYS_MAX];
    keys_queue(a, sizeof(a), 1);
    keys_queue(b, sizeof(b), 2);
    cr_expect_neq(slot(a), slot(b), "one slot for all items would put them all on one master");
}
