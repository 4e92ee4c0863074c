/* room_admission.c: the waiting room on a purchase's side: the admission
 * token a purchase brings, checked in memory under the master key, and the
 * admission marked used once it bought. */
#include "room_admission.h"

#include <stdlib.h>

#include "pool_session.h"
#include "room_cache.h"
#include "room_order.h"
#include "room_store.h"

typedef struct room_used {
    app *a;
    int64_t item, round, user;
} room_used;

static void run_master(void *thread_ctx, void *arg)
{
    app *a = arg;
    unsigned char master[ROOM_SECRET_LEN];
    int read = thread_ctx && room_store_master(thread_ctx, master) == 0;
    room_cache_set_master(a->rooms, read ? master : NULL);
}

void room_load_master(app *a)
{
    if (room_cache_claim_master(a->rooms))
        pool_submit(a->pool, run_master, a);
}

sk_status room_check_admission(app *a, int64_t item, int64_t user, const char *token,
                               int64_t *round, int64_t *expiry_ms)
{
    static const sk_status refused[] = {
        [ROOM_TOKEN_OK] = SK_OK,
        [ROOM_TOKEN_MISSING] = SK_ADMISSION_MISSING,
        [ROOM_TOKEN_FORGED] = SK_ADMISSION_FORGED,
        [ROOM_TOKEN_EXPIRED] = SK_ADMISSION_EXPIRED,
        [ROOM_TOKEN_WRONG_BUYER] = SK_ADMISSION_WRONG_BUYER,
        [ROOM_TOKEN_WRONG_ITEM] = SK_ADMISSION_WRONG_ITEM,
        [ROOM_TOKEN_WRONG_ROUND] = SK_ADMISSION_WRONG_ROUND,
    };
    unsigned char master[ROOM_SECRET_LEN];
    if (!room_cache_master(a->rooms, master)) {
        room_load_master(a); /* read at the start (app_start): only after a failed read */
        return SK_BACKEND_DOWN;
    }
    /* The round and the expiry are Redis's to judge, by its clock
     * (lua/reserve_batch.lua): memory's round may be one behind, and this
     * server's clock may run ahead of Redis's. */
    room_token t = {0};
    room_token_result r = room_token_verify(master, token, item, 0, user, INT64_MIN, &t);
    *round = t.round;
    *expiry_ms = t.expiry_ms;
    return refused[r];
}

static void run_used(void *thread_ctx, void *arg)
{
    room_used *u = arg;
    char e[ROOM_HEX_LEN + 1];
    if (thread_ctx && room_entrant(u->item, u->round, u->user, e) == 0)
        room_store_used(thread_ctx, u->item, e);
    free(u);
}

void room_admission_used(app *a, int64_t item, int64_t round, int64_t user)
{
    room_used *u = malloc(sizeof(*u));
    if (!u)
        return;
    *u = (room_used){a, item, round, user};
    if (pool_submit(a->pool, run_used, u) < 0)
        free(u);
}
