/* lab_watchdog.h: Redisson's watchdog (document 001) for the lab's
 * reentrant lock: a thread that renews the lease of the lock its lab thread
 * holds every lease/3 (lua/lab/reentrant_renew.lua), over a Redis
 * connection of its own, until told to stop. If the process dies, the
 * renewals stop with it and the lease runs out. One per lab thread. */
#ifndef SECKILL_LAB_WATCHDOG_H
#define SECKILL_LAB_WATCHDOG_H

#include "config.h"
#include "scripts.h"

typedef struct lab_watchdog lab_watchdog;

/* Starts the (idle) thread; it renews leases of cfg->lab_lock_ttl_ms with
 * the script renew. Both must outlive the watchdog. NULL on failure. */
lab_watchdog *lab_watchdog_create(const config *cfg, const script *renew);
/* Stops and joins the thread, closes its connection. NULL is a no-op. */
void lab_watchdog_free(lab_watchdog *w);

/* Renews the lock key held by owner from now on (copies both), replacing
 * whatever it renewed before. */
void lab_watchdog_watch(lab_watchdog *w, const char *key, const char *owner);
/* Stops renewing; once it returns, no renewal of the previous lock is sent
 * any more. Returns how many renewals that lock received. */
long lab_watchdog_unwatch(lab_watchdog *w);

#endif
