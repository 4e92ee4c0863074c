/* lab_reentrant.h: redis_lock_reentrant, the lock of document 001
 * (Redisson's RLock): a hash {owner -> hold count} taken and left by Lua
 * scripts, a lease renewed by a watchdog while it is held, waiters woken by
 * pub/sub when it is freed, and a fencing token per hold. */
#ifndef SECKILL_LAB_REENTRANT_H
#define SECKILL_LAB_REENTRANT_H

#include "lab_strategy.h"

/* Takes the lock {item:N}:lab:lock:<strategy> (lua/lab/reentrant_lock.lua,
 * lease cfg->lab_lock_ttl_ms); while another holds it, waits on the channel
 * {item:N}:lab:released:<strategy> for its release (or for the holder's
 * lease to run out) until cfg->lab_lock_wait_ms, then SK_BUSY. While held,
 * the thread's watchdog renews the lease every lease/3, so business work
 * longer than the lease keeps the lock. Check and work run under it; the
 * take re-enters the lock (hold count 2) as a nested synchronized method
 * would. Each hold gets a fencing token (lab_fence_issue) and the stock is
 * read and written through lab_fence_stock: a holder paused past its lease
 * (the pause stops its watchdog too) whose successor has read the stock gets
 * SK_FENCED (409 "fenced") and sells nothing. */
lab_strategy_fn lab_reentrant_lock;

#endif
