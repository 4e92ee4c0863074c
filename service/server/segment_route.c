/* segment_route.c: a purchase's way between the segments of an item. */
#include "segment_route.h"

#include <inttypes.h>
#include <stdio.h>

#include "keys.h"

static void answer(segment_step *step, reserve_outcome o)
{
    step->answer = 1;
    step->outcome = o;
}

static void send(segment_step *step, int segment, const char *mode)
{
    step->answer = 0;
    step->segment = segment;
    snprintf(step->mode, sizeof(step->mode), "%s", mode);
}

/* Gives the hold back at home, or answers the refusal (anonymous). */
static void give_up(segment_route *r, segment_step *step)
{
    if (r->stage == SEGMENT_ANON) {
        answer(step, r->refusal);
        return;
    }
    char mode[RESERVE_MODE_MAX];
    snprintf(mode, sizeof(mode), "r%" PRId64, r->round);
    r->stage = SEGMENT_RELEASE;
    send(step, r->home, mode);
}

/* Sends the buyer to the next segment not known sold out, or gives up. */
static void move_on(segment_route *r, segment_step *step)
{
    while (++r->tried < r->segments) {
        int j = (r->home + r->tried) % r->segments;
        if (r->sold_out && r->sold_out(r->ctx, r->keys[j]))
            continue;
        if (r->stage == SEGMENT_ANON) {
            send(step, j, "a");
        } else {
            char mode[RESERVE_MODE_MAX];
            snprintf(mode, sizeof(mode), "t%" PRId64 ":%" PRId64 ":%" PRId64, r->first_unit,
                     r->keys[r->home], r->round);
            send(step, j, mode);
        }
        return;
    }
    give_up(r, step);
}

void segment_route_start(segment_route *r, const int64_t *keys, int segments, int64_t buyer,
                         int anonymous, segment_sold_out_fn sold_out, void *ctx, segment_step *step)
{
    *r = (segment_route){.keys = keys,
                         .segments = segments,
                         .home = keys_segment_home(buyer, segments),
                         .stage = anonymous ? SEGMENT_ANON : SEGMENT_HOME,
                         .refusal = RESERVE_SOLD_OUT,
                         .sold_out = sold_out,
                         .ctx = ctx};
    if (!anonymous) {
        send(step, r->home, "h"); /* home counts the buyer, sold out or not */
        return;
    }
    /* Anonymous: the first segment from home on not known sold out. */
    r->tried = -1;
    move_on(r, step);
}

/* Keeps the most telling refusal of the segments: one that had some units
 * but fewer than asked says more than sold out. */
static void note_refusal(segment_route *r, reserve_outcome got)
{
    if (got == RESERVE_INSUFFICIENT_STOCK)
        r->refusal = RESERVE_INSUFFICIENT_STOCK;
}

void segment_route_next(segment_route *r, reserve_outcome got, int64_t remaining,
                        int64_t first_unit, int64_t round, segment_step *step)
{
    switch (r->stage) {
    case SEGMENT_HOME:
        if (got != RESERVE_HELD) {
            answer(step, got);
            return;
        }
        r->first_unit = first_unit;
        r->round = round;
        note_refusal(r, remaining > 0 ? RESERVE_INSUFFICIENT_STOCK : RESERVE_SOLD_OUT);
        r->stage = SEGMENT_TAKE;
        move_on(r, step);
        return;
    case SEGMENT_TAKE:
    case SEGMENT_ANON:
        if (got == RESERVE_SOLD_OUT || got == RESERVE_INSUFFICIENT_STOCK) {
            note_refusal(r, got);
            move_on(r, step);
            return;
        }
        if (got == RESERVE_QUEUED || r->stage == SEGMENT_ANON) {
            answer(step, got);
            return;
        }
        /* The window closed, the queue is full, the item is gone: the
         * buyer hears that, once the hold is back. */
        r->refusal = got;
        give_up(r, step);
        return;
    case SEGMENT_RELEASE:
        answer(step, got == RESERVE_RELEASED ? r->refusal : RESERVE_BAD_REPLY);
        return;
    }
    answer(step, RESERVE_BAD_REPLY);
}

void segment_route_abandon(segment_route *r, int64_t round, segment_step *step)
{
    r->stage = SEGMENT_TAKE;
    r->round = round;
    r->refusal = RESERVE_BAD_REPLY;
    give_up(r, step);
}
