/* expiry.h: the expiry sweep, run by one worker per period (elected on
 * KEYS_EXPIRY_LOCK, as the recovery sweep is): unpaid orders past their
 * pay_by expire, their units go back on sale (order_return.h), and returns
 * a crash interrupted (cancelled or expired orders whose units were never
 * confirmed given back) are finished.
 *
 * The deadline lives in PostgreSQL (orders.pay_by), so a restart loses
 * nothing: whichever worker is elected next expires what is due. A pass
 * run twice, or by two workers (a pass outlasting its period), expires an
 * order once (UPDATE ... WHERE status = 'persisted', rows another pass holds
 * skipped) and gives its units back once (the return is idempotent). */
#ifndef SECKILL_EXPIRY_H
#define SECKILL_EXPIRY_H

#include <stdint.h>

#include <hiredis/hiredis.h>
#include <libpq-fe.h>

#include "redis_nodes.h"
#include "scripts.h"

/* Orders one statement expires or finishes at most; a pass repeats it
 * until fewer come, at most EXPIRY_BATCHES times (the worker's own batches
 * wait meanwhile: a wave of deadlines is spread over the next periods). */
#define EXPIRY_BATCH 256
#define EXPIRY_BATCHES 16

/* A return owed this long after its order ended is the sweep's to finish:
 * before that the server that cancelled it is still at it. */
#define EXPIRY_OWED_AFTER_S 2

typedef struct expiry_result {
    int64_t expired;  /* orders expired by this pass */
    int64_t finished; /* returns owed by earlier passes or crashed servers, finished */
    int64_t units;    /* units of both confirmed given back (or of rounds over) */
} expiry_result;

/* One pass over rn (each item's returns on its node) and pg. Returns 0, -1
 * on a Redis error (what is not confirmed stays owed for the next pass), -2
 * on a PostgreSQL error. */
int expiry_run(redis_nodes *rn, PGconn *pg, const scripts *sc, expiry_result *out);

#endif
