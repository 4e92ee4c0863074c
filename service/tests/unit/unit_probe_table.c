/* unit_probe_table.c: the lock-free table of item ids that gate.c and
 * lab_local.c keep their per-item state by, and its sizes. */
#include <pthread.h>
#include <stdint.h>

#include <criterion/criterion.h>

#include "probe_table.h"

Test(probe_table, sizes_are_powers_of_two_from_16_to_the_bound)
{
    cr_assert_eq(probe_table_slots(0), 16);
    cr_assert_eq(probe_table_slots(16), 16);
    cr_assert_eq(probe_table_slots(17), 32);
    cr_assert_eq(probe_table_slots(4096), 4096);
    cr_assert_eq(probe_table_slots(4097), 8192);
    cr_assert_eq(probe_table_slots(131072), 131072);
    cr_assert_eq(probe_table_slots(UINT32_MAX), PROBE_TABLE_MAX_SLOTS);
}

Test(probe_table, an_item_keeps_the_slot_it_claimed_and_others_get_their_own)
{
    probe_table t;
    cr_assert_eq(probe_table_init(&t, 16, 0), 0);
    cr_assert_eq(probe_table_find(&t, 7, 0), -1, "absent before a claim");
    long a = probe_table_find(&t, 7, 1), b = probe_table_find(&t, 8, 1);
    cr_assert(a >= 0 && a < 16 && b >= 0 && b < 16 && a != b, "%ld %ld", a, b);
    cr_assert_eq(probe_table_find(&t, 7, 0), a);
    cr_assert_eq(probe_table_find(&t, 7, 1), a, "a second claim finds the first");
    cr_assert_eq(probe_table_id(&t, (unsigned)a), 7);
    cr_assert_eq(probe_table_id(&t, (unsigned)b), 8);
    probe_table_close(&t);
}

Test(probe_table, a_full_table_claims_nothing_more_and_still_finds_its_items)
{
    probe_table t;
    cr_assert_eq(probe_table_init(&t, 16, 0), 0);
    for (int64_t i = 1; i <= 16; i++)
        cr_assert_geq(probe_table_find(&t, i, 1), 0, "item %lld", (long long)i);
    cr_assert_eq(probe_table_find(&t, 17, 1), -1);
    cr_assert_eq(probe_table_find(&t, 17, 0), -1);
    for (int64_t i = 1; i <= 16; i++)
        cr_assert_eq(probe_table_id(&t, (unsigned)probe_table_find(&t, i, 0)), i);
    probe_table_close(&t);
}

static void *claim_many(void *arg)
{
    probe_table *t = arg;
    for (int64_t i = 1; i <= 1000; i++)
        probe_table_find(t, i, 1);
    return NULL;
}

Test(probe_table, threads_claiming_the_same_items_get_one_slot_each)
{
    probe_table t;
    cr_assert_eq(probe_table_init(&t, probe_table_slots(2048), 0), 0);
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, claim_many, &t);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    int used = 0;
    for (unsigned i = 0; i <= t.mask; i++) {
        int64_t id = probe_table_id(&t, i);
        if (id == 0)
            continue;
        used++;
        cr_assert_eq(probe_table_find(&t, id, 0), (long)i, "item %lld twice", (long long)id);
    }
    cr_assert_eq(used, 1000);
    probe_table_close(&t);
}

/* Each slot holds the caller's record, zeroed, at its item's index: found by
 * the item again, and by the index when the caller walks every slot. */
Test(probe_table, an_items_record_is_kept_in_its_slot)
{
    typedef struct record {
        int64_t seen;
        char pad[40];
    } record;
    probe_table t;
    cr_assert_eq(probe_table_init(&t, 16, sizeof(record)), 0);
    cr_assert_null(probe_table_record(&t, 7, 0), "absent before a claim");
    record *r = probe_table_record(&t, 7, 1);
    cr_assert_not_null(r);
    cr_assert_eq(r->seen, 0, "zeroed");
    r->seen = 70;
    record *other = probe_table_record(&t, 8, 1);
    cr_assert_neq(other, r);
    other->seen = 80;
    cr_assert_eq(((record *)probe_table_record(&t, 7, 0))->seen, 70);
    long i = probe_table_find(&t, 8, 0);
    cr_assert_eq(probe_table_record_at(&t, (unsigned)i), other);
    for (int64_t id = 9; id <= 22; id++)
        cr_assert_not_null(probe_table_record(&t, id, 1));
    cr_assert_null(probe_table_record(&t, 23, 1), "the table is full");
    probe_table_close(&t);
}
