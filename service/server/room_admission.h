/* room_admission.h: the waiting room on a purchase's side (issue 27): the
 * admission token a purchase of a room item must bring, and its use. */
#ifndef SECKILL_ROOM_ADMISSION_H
#define SECKILL_ROOM_ADMISSION_H

#include <stdint.h>

#include "app.h"
#include "status.h"

/* The admission a purchase of item by user carries (token: NULL or "" for
 * none), checked in memory (room_order.h): SK_OK with *round and *expiry_ms
 * the token's, or the refusal (SK_ADMISSION_*; SK_BACKEND_DOWN while the
 * master key is not loaded yet). */
sk_status room_check_admission(app *a, int64_t item, int64_t user, const char *token,
                               int64_t *round, int64_t *expiry_ms);

/* Reads the master key that signs admission tokens into memory, on the pool
 * (app_start calls it; a purchase again while it is missing). */
void room_load_master(app *a);

/* The buyer used their admission of item: it stops being active (on the
 * pool, best effort). */
void room_admission_used(app *a, int64_t item, int64_t round, int64_t user);

#endif
