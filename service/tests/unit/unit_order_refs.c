/* unit_order_refs.c: the runs that a return's or a grant's script calls
 * serve (order_refs_runs): consecutive orders one call may serve, a batch at
 * most each, and done[i] set for the orders of the runs confirmed only. The
 * calls here are recorded, not sent: Redis's part is the integration tests'. And
 * the ref of an order read with its row (order_ref_of), field by field. */
#include <criterion/criterion.h>

#include <string.h>

#include "order.h"
#include "order_return.h"

/* The calls made: each run's first order id and length. */
static struct {
    int64_t first[16];
    size_t len[16];
    int n;
    int64_t refuse; /* a run holding this order id is not confirmed */
} calls;

static int record(redis_nodes *rn, const scripts *sc, const order_ref *o, size_t n,
                  const char *component)
{
    (void)rn, (void)sc, (void)component;
    cr_assert_lt(calls.n, 16);
    calls.first[calls.n] = o->id;
    calls.len[calls.n++] = n;
    for (size_t i = 0; i < n; i++)
        if (o[i].id == calls.refuse)
            return -1;
    return 0;
}

static int same_item(const order_ref *a, const order_ref *b)
{
    return a->item_id == b->item_id;
}

/* Orders 1..n of the items items[0..n). */
static void orders_of(order_ref *o, const int64_t *items, size_t n)
{
    memset(&calls, 0, sizeof(calls));
    for (size_t i = 0; i < n; i++)
        o[i] = (order_ref){.id = (int64_t)i + 1, .item_id = items[i], .quantity = 1};
}

Test(order_refs, a_run_is_the_consecutive_orders_of_one_item_a_batch_at_most)
{
    const int64_t items[] = {7, 7, 7, 7, 7, 8, 7};
    order_ref o[7];
    unsigned char done[7];
    orders_of(o, items, 7);
    cr_expect_eq(order_refs_runs(NULL, NULL, o, 7, 3, same_item, record, done, "test"), 0);
    const int64_t first[] = {1, 4, 6, 7};
    const size_t len[] = {3, 2, 1, 1};
    cr_assert_eq(calls.n, 4, "runs: %d", calls.n);
    for (int i = 0; i < 4; i++) {
        cr_expect_eq(calls.first[i], first[i], "run %d starts at %lld", i,
                     (long long)calls.first[i]);
        cr_expect_eq(calls.len[i], len[i], "run %d holds %zu", i, calls.len[i]);
    }
    for (int i = 0; i < 7; i++)
        cr_expect_eq(done[i], 1, "order %d confirmed", i + 1);
}

Test(order_refs, a_run_not_confirmed_leaves_its_orders_owed_and_the_next_is_tried)
{
    const int64_t items[] = {7, 7, 8, 8, 9};
    order_ref o[5];
    unsigned char done[5];
    memset(done, 1, sizeof(done));
    orders_of(o, items, 5);
    calls.refuse = 4;
    cr_expect_eq(order_refs_runs(NULL, NULL, o, 5, 16, same_item, record, done, "test"), -1);
    cr_expect_eq(calls.n, 3, "every run is tried");
    const unsigned char want[] = {1, 1, 0, 0, 1};
    for (int i = 0; i < 5; i++)
        cr_expect_eq(done[i], want[i], "order %d: done %d", i + 1, done[i]);
}

Test(order_refs, no_orders_make_no_call)
{
    memset(&calls, 0, sizeof(calls));
    unsigned char done[1] = {1};
    cr_expect_eq(order_refs_runs(NULL, NULL, NULL, 0, 16, same_item, record, done, "test"), 0);
    cr_expect_eq(calls.n, 0);
}

Test(order_refs, the_ref_of_an_order_row_carries_its_keys_and_draw_position)
{
    /* As order_row_read fills it: id, item, user, round, created, quantity,
     * first unit, segment, home. */
    order o = {11, 7, 42, 3, 0, 2, 1, 700002, 700001};
    order_ref r = order_ref_of(&o, 5);
    cr_assert_eq(r.id, 11);
    cr_assert_eq(r.item_id, 7);
    cr_assert_eq(r.round, 3);
    cr_assert_eq(r.user_id, 42);
    cr_assert_eq(r.quantity, 2);
    cr_assert_eq(r.stock_key, 700002, "the segment its units came from");
    cr_assert_eq(r.home_key, 700001, "its buyer's home");
    cr_assert_eq(r.draw_position, 5);
    cr_assert_eq(order_ref_of(&o, 0).draw_position, 0, "a purchase's");
}
