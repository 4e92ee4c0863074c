/* sweep.h: recovery of the orders of dead workers. Each worker keeps a
 * heartbeat key while it lives; once per period one worker, elected by a
 * Redis lock, moves the processing list of every worker without a heartbeat
 * back onto its item's queue (see sweep.c for why nothing is lost or doubled). */
#ifndef SECKILL_SWEEP_H
#define SECKILL_SWEEP_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "redis_nodes.h"
#include "scripts.h"

/* Large enough for any token sweep_token() writes. */
#define SWEEP_TOKEN_MAX 160

/* What one sweep did. */
typedef struct sweep_result {
    long long lists;  /* processing lists of dead workers that held orders */
    long long orders; /* orders moved back onto the queue */
} sweep_result;

/* Writes a token unique to this run of worker_id: "<id>:<pid>:<random>". */
void sweep_token(char *buf, size_t len, const char *worker_id);

/* Sets worker_id's heartbeat to token for ttl_ms, unless another token holds
 * it. Returns 1 when set (taken or refreshed), 0 when another token holds it
 * (copied into holder, cut at holder_len - 1; its remaining time in
 * *pttl_ms), -1 on a Redis error (logged). */
int sweep_heartbeat(redis_nodes *rn, const scripts *sc, const char *worker_id, const char *token,
                    int64_t ttl_ms, char *holder, size_t holder_len, int64_t *pttl_ms);

/* Deletes worker_id's heartbeat if token still holds it (a clean stop: the
 * next run with the id need not wait for it to expire). Returns 0, or -1 on
 * a Redis error. */
int sweep_heartbeat_release(redis_nodes *rn, const scripts *sc, const char *worker_id,
                            const char *token);

/* Tries to become the one to run a periodic job for period_ms (SET lock
 * "<token>" NX PX period_ms; lock is KEYS_SWEEP_LOCK for the sweep,
 * KEYS_EXPIRY_LOCK for the expiry). Returns 1 when elected, 0 when another
 * holds the lock, -1 on a Redis error. The lock is never released: it
 * expires with its period, so there is at most one run per period. */
int sweep_elect(redis_nodes *rn, const char *lock, const char *token, int64_t period_ms);

/* Claims this run's processing list of item for worker_id (SET of
 * keys_claim to token): done before the run first reads or moves into the
 * list, so that a sweep that took the worker for dead leaves the list
 * alone. Returns 0, or -1 on a Redis error (logged). */
int sweep_claim(redis_nodes *rn, int64_t item, const char *worker_id, const char *token);

/* Moves every order of worker_id's processing list of item back onto the
 * item's queue, only if the worker has no heartbeat, in one script that
 * also checks that no run claimed the list since the heartbeat was read.
 * Returns how many moved (0: an empty list), -2 when the worker is alive
 * or claimed the list meanwhile (nothing moved), -1 on a Redis error. */
long long sweep_recover(redis_nodes *rn, const scripts *sc, int64_t item, const char *worker_id);

/* The sweep: every processing list (SCAN, on every master) but self_id's
 * is recovered with sweep_recover(); each recovery is logged and counted
 * into *out (zeroed first). Returns 0, or -1 on a Redis error (what was
 * moved stays moved). */
int sweep_run(redis_nodes *rn, const scripts *sc, const char *self_id, sweep_result *out);

#endif
