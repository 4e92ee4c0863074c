/* lab_lock.h: the lock strategies of the laboratory. Each takes its lock
 * (spinning until cfg->lab_lock_wait_ms, then 429 busy), runs check, work
 * and a plain read-modify-write of its stock under it, and unlocks: only the
 * lock makes them correct. Redis locks are {item:N}:lab:lock:<strategy>. */
#ifndef SECKILL_LAB_LOCK_H
#define SECKILL_LAB_LOCK_H

#include "lab_strategy.h"

/* SETNX, then EXPIRE (two commands: a crash between them leaves the lock
 * forever); DEL to unlock (frees whoever holds it). Stock: a Redis string. */
lab_strategy_fn lab_lock_setnx_expire;
/* Document 000's lock: the value is the expiry time; SETNX, or GETSET once
 * the value is in the past; unlock by GET and DEL when the value is ours
 * (a loser's GETSET may have overwritten it: the key is then left behind
 * until its time passes). Stock: a Redis string. */
lab_strategy_fn lab_lock_getset;
/* SET key token NX PX ttl; unlock by compare-and-delete
 * (lua/lock_release.lua). Stock: a Redis string. */
lab_strategy_fn lab_lock_redis;
/* What runs under a lock: SK_* as a lab_strategy_fn. */
typedef sk_status (*lab_lock_body)(lab_ctx *c, const lab_request *r, void *arg, int64_t *remaining);
/* Takes redis_lock's lock (SET NX PX, spinning) of r->strategy, runs
 * body(c, r, arg, remaining), and unlocks by compare-and-delete. Returns
 * body's answer, or SK_BUSY / SK_BACKEND_DOWN when the lock was not won. */
sk_status lab_lock_redis_run(lab_ctx *c, const lab_request *r, lab_lock_body body, void *arg,
                             int64_t *remaining);
/* A row of lab_locks (unique item and strategy) is the lock: INSERT to take
 * it, DELETE to free it. Stock: items.stock. */
lab_strategy_fn lab_lock_pg_table;
/* The stock split into cfg->lab_segments segments ({item:N}:lab:seg), each
 * under its own Redis lock (as redis_lock); a buyer starts at a random
 * segment and moves on when one is held or empty. */
lab_strategy_fn lab_lock_segmented;
/* The units left over all segments. */
lab_remaining_fn lab_lock_segments_remaining;

#endif
