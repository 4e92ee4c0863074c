/* reserve.c: the reserve script's outcomes. */
#include "reserve.h"

#include <string.h>

static const struct {
    const char *name;
    sk_status status;
} outcomes[] = {
    [RESERVE_QUEUED] = {"queued", SK_QUEUED},
    [RESERVE_NOT_STARTED] = {"not_started", SK_NOT_STARTED},
    [RESERVE_ENDED] = {"ended", SK_ENDED},
    [RESERVE_SOLD_OUT] = {"sold_out", SK_SOLD_OUT},
    [RESERVE_LIMIT_REACHED] = {"limit_reached", SK_LIMIT_REACHED},
    [RESERVE_INSUFFICIENT_STOCK] = {"insufficient_stock", SK_INSUFFICIENT_STOCK},
    [RESERVE_QUEUE_FULL] = {"queue_full", SK_QUEUE_FULL},
    [RESERVE_ARCHIVED] = {"archived", SK_NOT_FOUND},
    [RESERVE_BUYER_REQUIRED] = {"buyer_required", SK_BUYER_REQUIRED},
    [RESERVE_IN_PROGRESS] = {"in_progress", SK_IN_PROGRESS},
    [RESERVE_UNKNOWN_ITEM] = {"unknown_item", SK_NOT_FOUND},
    [RESERVE_ADMISSION_MISSING] = {"admission_missing", SK_ADMISSION_MISSING},
    [RESERVE_ADMISSION_ROUND] = {"admission_wrong_round", SK_ADMISSION_WRONG_ROUND},
    [RESERVE_ADMISSION_EXPIRED] = {"admission_expired", SK_ADMISSION_EXPIRED},
    [RESERVE_DRAW_ITEM] = {"draw_item", SK_DRAW_ITEM},
    [RESERVE_HELD] = {"held", SK_INTERNAL},
    [RESERVE_RELEASED] = {"released", SK_INTERNAL},
    [RESERVE_SEGMENTED] = {"segmented", SK_INTERNAL},
    [RESERVE_BAD_REPLY] = {NULL, SK_INTERNAL},
};

sk_status reserve_status(reserve_outcome o)
{
    return (unsigned)o <= RESERVE_BAD_REPLY ? outcomes[o].status : SK_INTERNAL;
}

reserve_outcome reserve_outcome_named(const char *name)
{
    for (int o = 0; o < RESERVE_BAD_REPLY; o++)
        if (strcmp(name, outcomes[o].name) == 0)
            return (reserve_outcome)o;
    return RESERVE_BAD_REPLY;
}

int64_t reserve_stock_version(int64_t round, int64_t changes)
{
    return (int64_t)(((uint64_t)round << RESERVE_CHANGES_BITS) |
                     ((uint64_t)changes & ((1ull << RESERVE_CHANGES_BITS) - 1)));
}
