/* draw_order.c: the HMAC is digest.h's (OpenSSL's); E is the
 * room's (room_entrant), so that a buyer's handle is the same in a room and
 * in a draw, and the ticket's message is built without a format string,
 * since the beacon is any bytes. */
#include "draw_order.h"

#include <stdlib.h>
#include <string.h>

#include "digest.h"
#include "room_order.h"

static const char *const outcome_names[] = {
    [DRAW_WON] = "won",
    [DRAW_WAITLISTED] = "waitlisted",
    [DRAW_SKIPPED] = "skipped",
    [DRAW_WON_FROM_WAITLIST] = "won_from_waitlist",
};

#define OUTCOMES (sizeof(outcome_names) / sizeof(outcome_names[0]))

const char *draw_outcome_name(draw_outcome o)
{
    return (size_t)o < OUTCOMES ? outcome_names[o] : NULL;
}

int draw_outcome_named(const char *name, draw_outcome *o)
{
    for (size_t i = 1; name && i < OUTCOMES; i++)
        if (strcmp(name, outcome_names[i]) == 0) {
            *o = (draw_outcome)i;
            return 0;
        }
    return -1;
}

int draw_ticket(const unsigned char k[32], const char *beacon, size_t beacon_len, const char *e,
                unsigned char ticket[32])
{
    /* "seckill-draw-v1|" + beacon + "|" + E */
    char msg[16 + DRAW_BEACON_MAX + 1 + ROOM_HEX_LEN];
    if (beacon_len > DRAW_BEACON_MAX || (beacon_len && !beacon) || !e ||
        strnlen(e, ROOM_HEX_LEN + 1) != ROOM_HEX_LEN)
        return -1;
    memcpy(msg, "seckill-draw-v1|", 16);
    if (beacon_len)
        memcpy(msg + 16, beacon, beacon_len);
    msg[16 + beacon_len] = '|';
    memcpy(msg + 17 + beacon_len, e, ROOM_HEX_LEN);
    return digest_hmac(k, ROOM_SECRET_LEN, msg, 17 + beacon_len + ROOM_HEX_LEN, ticket);
}

int draw_entrant_cmp(const draw_entrant *a, const draw_entrant *b)
{
    int c = memcmp(a->ticket, b->ticket, sizeof(a->ticket));
    return c ? c : strcmp(a->e, b->e);
}

static int entrant_cmp(const void *a, const void *b)
{
    return draw_entrant_cmp(a, b);
}

void draw_sort(draw_entrant *v, size_t n)
{
    if (n > 1)
        qsort(v, n, sizeof(*v), entrant_cmp);
}

int64_t draw_serve(draw_entrant *v, size_t n, int64_t stock)
{
    int64_t left = stock > 0 ? stock : 0;
    for (size_t i = 0; i < n; i++) {
        if (left == 0)
            v[i].outcome = DRAW_WAITLISTED;
        else if (v[i].quantity > 0 && v[i].quantity <= left) {
            v[i].outcome = DRAW_WON;
            left -= v[i].quantity;
        } else
            v[i].outcome = DRAW_SKIPPED;
    }
    return (stock > 0 ? stock : 0) - left;
}
