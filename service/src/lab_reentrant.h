/* lab_reentrant.h: redis_lock_reentrant, the lock of document 001
 * (Redisson's RLock): a hash {owner -> hold count} taken and left by Lua
 * scripts, a lease renewed by a watchdog while it is held, and waiters woken
 * by pub/sub when it is freed. */
#ifndef SECKILL_LAB_REENTRANT_H
#define SECKILL_LAB_REENTRANT_H

#include "lab_strategy.h"

/* Takes the lock {item:N}:lab:lock:<strategy> (lua/lab_reentrant_lock.lua,
 * lease cfg->lab_lock_ttl_ms); while another holds it, waits on the channel
 * {item:N}:lab:released:<strategy> for its release (or for the holder's
 * lease to run out) until cfg->lab_lock_wait_ms, then SK_BUSY. While held,
 * the thread's watchdog renews the lease every lease/3, so business work
 * longer than the lease keeps the lock. Check and work run under it; the
 * take re-enters the lock (hold count 2) as a nested synchronized method
 * would. Stock: the string {item:N}:lab:stock:<strategy>. */
sk_status lab_reentrant_lock(lab_ctx *c, const lab_request *r, int64_t *remaining);

#endif
