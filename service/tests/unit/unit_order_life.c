/* unit_order_life.c: which move a payment or a cancellation makes from each
 * state, and the states' names. */
#include <criterion/criterion.h>

#include "order_life.h"

static void expect_move(order_action a, order_state from, int step, int overdue, int change,
                        order_state to, sk_status status)
{
    order_move m = order_decide(a, from, step, overdue);
    cr_expect_eq(m.change, change, "%s from %s: change", a == ORDER_PAY ? "pay" : "cancel",
                 order_state_name(from));
    cr_expect_eq(m.to, to, "%s from %s: to %s", a == ORDER_PAY ? "pay" : "cancel",
                 order_state_name(from), order_state_name(m.to));
    cr_expect_eq(m.status, status, "%s from %s: status %s", a == ORDER_PAY ? "pay" : "cancel",
                 order_state_name(from), sk_status_code(m.status));
}

Test(order_life, an_order_awaiting_payment_is_paid_or_cancelled)
{
    expect_move(ORDER_PAY, ORDER_PERSISTED, 1, 0, 1, ORDER_PAID, SK_OK);
    expect_move(ORDER_CANCEL, ORDER_PERSISTED, 1, 0, 1, ORDER_CANCELLED, SK_OK);
}

Test(order_life, a_payment_after_the_deadline_expires_the_order_instead)
{
    expect_move(ORDER_PAY, ORDER_PERSISTED, 1, 1, 1, ORDER_EXPIRED, SK_ORDER_EXPIRED);
    /* An unpaid order past its deadline may still be cancelled: its units
     * come back either way. */
    expect_move(ORDER_CANCEL, ORDER_PERSISTED, 1, 1, 1, ORDER_CANCELLED, SK_OK);
}

Test(order_life, a_repeat_answers_the_same_and_changes_nothing)
{
    expect_move(ORDER_PAY, ORDER_PAID, 1, 0, 0, ORDER_PAID, SK_OK);
    expect_move(ORDER_PAY, ORDER_PAID, 1, 1, 0, ORDER_PAID, SK_OK);
    expect_move(ORDER_CANCEL, ORDER_CANCELLED, 1, 0, 0, ORDER_CANCELLED, SK_OK);
}

Test(order_life, a_settled_order_refuses_the_other_action)
{
    expect_move(ORDER_CANCEL, ORDER_PAID, 1, 0, 0, ORDER_PAID, SK_ORDER_PAID);
    expect_move(ORDER_PAY, ORDER_CANCELLED, 1, 0, 0, ORDER_CANCELLED, SK_ORDER_CANCELLED);
    expect_move(ORDER_PAY, ORDER_EXPIRED, 1, 1, 0, ORDER_EXPIRED, SK_ORDER_EXPIRED);
    expect_move(ORDER_CANCEL, ORDER_EXPIRED, 1, 1, 0, ORDER_EXPIRED, SK_ORDER_EXPIRED);
}

Test(order_life, without_a_payment_step_an_order_is_final)
{
    expect_move(ORDER_PAY, ORDER_PERSISTED, 0, 0, 0, ORDER_PERSISTED, SK_ORDER_FINAL);
    expect_move(ORDER_CANCEL, ORDER_PERSISTED, 0, 0, 0, ORDER_PERSISTED, SK_ORDER_FINAL);
}

Test(order_life, names_round_trip_and_unknown_names_are_refused)
{
    for (int s = 0; s < ORDER_STATE_COUNT; s++) {
        order_state back;
        cr_assert_eq(order_state_named(order_state_name((order_state)s), &back), 0);
        cr_assert_eq(back, (order_state)s);
    }
    order_state x;
    cr_assert_eq(order_state_named("refunded", &x), -1);
    cr_assert_eq(order_state_named("", &x), -1);
    cr_assert_str_eq(order_state_name(ORDER_STATE_COUNT), "unknown");
}
