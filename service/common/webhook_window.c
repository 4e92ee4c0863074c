/* webhook_window.c: one endpoint's events between its cursor and the last
 * one read, and the rules of what may go (webhook_window.h). */
#include "webhook_window.h"

#include <stdlib.h>
#include <string.h>

int webhook_window_init(webhook_window *w, size_t cap, int64_t cursor)
{
    memset(w, 0, sizeof(*w));
    w->slots = calloc(cap, sizeof(*w->slots));
    w->orders = calloc(cap, sizeof(*w->orders));
    if (!w->slots || !w->orders) {
        webhook_window_close(w);
        return -1;
    }
    w->cap = cap;
    webhook_window_reset(w, cursor);
    return 0;
}

void webhook_window_close(webhook_window *w)
{
    free(w->slots);
    free(w->orders);
    memset(w, 0, sizeof(*w));
}

void webhook_window_reset(webhook_window *w, int64_t cursor)
{
    w->head = w->resolved = w->pending = w->tail;
    w->cursor = w->read_upto = cursor;
}

size_t webhook_window_room(const webhook_window *w)
{
    return w->cap - (size_t)(w->tail - w->head);
}

webhook_slot *webhook_window_at(webhook_window *w, uint64_t seq)
{
    return &w->slots[seq % w->cap];
}

static const webhook_slot *slot_at(const webhook_window *w, uint64_t seq)
{
    return &w->slots[seq % w->cap];
}

int64_t webhook_window_push(webhook_window *w, const outbox_event *ev, int has_row)
{
    if (webhook_window_room(w) == 0 || ev->id <= w->read_upto)
        return -1;
    uint64_t seq = w->tail;
    webhook_slot *s = webhook_window_at(w, seq);
    s->ev = *ev;
    s->state = WEBHOOK_PENDING;
    s->must_park = has_row;
    s->prev = 0;
    /* The window is small (a thousand events): a scan back over their
     * packed order ids costs less than keeping a map of orders in step. */
    size_t i = (size_t)(seq % w->cap);
    for (uint64_t k = seq; k > w->head; k--) {
        i = i == 0 ? w->cap - 1 : i - 1; /* slot k - 1 */
        if (w->orders[i] == ev->order.o.id) {
            const webhook_slot *p = slot_at(w, k - 1);
            s->prev = k;
            s->must_park |= p->state == WEBHOOK_PARKED || p->must_park;
            break;
        }
    }
    w->orders[seq % w->cap] = ev->order.o.id;
    w->tail++;
    w->read_upto = ev->id;
    return (int64_t)seq;
}

size_t webhook_window_take(webhook_window *w, int64_t after, const outbox_event *page,
                           const uint32_t *has_row, size_t n, unsigned bit)
{
    size_t took = 0;
    for (size_t k = 0; k < n && w->read_upto >= after && webhook_window_room(w) > 0; k++)
        if (page[k].id > w->read_upto &&
            webhook_window_push(w, &page[k], (int)((has_row[k] >> bit) & 1u)) >= 0)
            took++;
    return took;
}

webhook_action webhook_window_next(const webhook_window *w, uint64_t *pos, uint64_t *seq)
{
    for (uint64_t k = *pos > w->pending ? *pos : w->pending; k < w->tail; k++) {
        const webhook_slot *s = slot_at(w, k);
        if (s->state != WEBHOOK_PENDING)
            continue;
        webhook_action act = WEBHOOK_SEND;
        if (s->must_park)
            act = WEBHOOK_PARK;
        else if (s->prev > w->head)
            /* The previous event of its order is still held: not yet
             * written down as done, so it could be sent again after a
             * crash; this one waits, or is parked behind it. */
            act = slot_at(w, s->prev - 1)->state == WEBHOOK_PARKED ? WEBHOOK_PARK : WEBHOOK_WAIT;
        if (act != WEBHOOK_WAIT) {
            *seq = k;
            *pos = k + 1;
            return act;
        }
    }
    *pos = w->tail;
    return WEBHOOK_WAIT;
}

void webhook_window_mark(webhook_window *w, uint64_t seq, webhook_slot_state state)
{
    webhook_slot *s = webhook_window_at(w, seq);
    s->state = state;
    if (state == WEBHOOK_PARKED)
        for (uint64_t k = seq + 1; k < w->tail; k++)
            if (w->orders[k % w->cap] == s->ev.order.o.id)
                webhook_window_at(w, k)->must_park = 1;
    while (w->pending < w->tail && slot_at(w, w->pending)->state != WEBHOOK_PENDING)
        w->pending++;
    while (w->resolved < w->tail) {
        webhook_slot_state r = slot_at(w, w->resolved)->state;
        if (r != WEBHOOK_DONE && r != WEBHOOK_PARKED)
            break;
        w->resolved++;
    }
}

int64_t webhook_window_movable(const webhook_window *w)
{
    return w->resolved > w->head ? slot_at(w, w->resolved - 1)->ev.id : w->cursor;
}

void webhook_window_moved(webhook_window *w, int64_t cursor)
{
    while (w->head < w->resolved && slot_at(w, w->head)->ev.id <= cursor)
        w->head++;
    if (cursor > w->cursor)
        w->cursor = cursor;
}

int webhook_window_waits_on_cursor(const webhook_window *w)
{
    for (uint64_t k = w->pending; k < w->tail; k++) {
        const webhook_slot *s = slot_at(w, k);
        if (s->state == WEBHOOK_PENDING && !s->must_park && s->prev > w->head &&
            s->prev - 1 < w->resolved && slot_at(w, s->prev - 1)->state == WEBHOOK_DONE)
            return 1;
    }
    return 0;
}

int webhook_window_busy(const webhook_window *w, int in_flight)
{
    uint64_t pos = 0, seq;
    return in_flight > 0 || webhook_window_next(w, &pos, &seq) != WEBHOOK_WAIT;
}

int webhook_window_write_due(const webhook_window *w, int busy, int64_t waited_ms, int look,
                             int64_t late_ms)
{
    if (webhook_window_movable(w) <= w->cursor)
        return 0;
    return !busy || waited_ms >= late_ms || 2 * (w->resolved - w->head) >= w->cap ||
           (look && webhook_window_waits_on_cursor(w));
}
