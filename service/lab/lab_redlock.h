/* lab_redlock.h: the strategy `redlock` (documents 003 and 004, Redis'
 * Redlock): the same SET NX PX lock taken on N independent Redis servers
 * (cfg->redlock_servers), won with a majority while its validity lasts,
 * released on all of them. */
#ifndef SECKILL_LAB_REDLOCK_H
#define SECKILL_LAB_REDLOCK_H

#include <stddef.h>

#include "config.h"
#include "lab_strategy.h"

/* Servers at most: the config's bound, which config_load checks with the one
 * parser of host:port lists (redis_cluster_seeds_parse). */
#define LAB_REDLOCK_MAX CONFIG_REDLOCK_MAX

/* The votes a lock on n servers needs: n / 2 + 1. */
int lab_redlock_quorum(int n);

/* Validity left to a lock of ttl_ms that took elapsed_ms to win on the
 * servers: ttl - elapsed - drift, drift being 1% of the ttl plus 2 ms (the
 * servers' clocks may run at slightly different rates). Pure. */
long lab_redlock_validity_ms(long ttl_ms, long elapsed_ms);

typedef struct lab_redlock lab_redlock;

/* The thread's connections to the servers of cfg->redlock_servers (the main
 * Redis when empty), made on first use: the main Redis's with
 * cfg->redis_password, the others' without. NULL on OOM or a bad spec (logged).
 * lab_redlock_free() closes them; NULL is a no-op. */
lab_redlock *lab_redlock_create(const config *cfg, const scripts *sc);
void lab_redlock_free(lab_redlock *l);

/* Takes the lock {item:N}:lab:lock:<strategy> on every server (each attempt
 * bounded by cfg->redis_timeout_ms; a server down is a vote lost), and
 * counts it won when a quorum said yes and validity is left; otherwise it
 * is released on all of them and tried again after a random pause, until
 * cfg->lab_lock_wait_ms (SK_BUSY). Check, work and take of the stock string
 * {item:N}:lab:stock:<strategy> (on the main Redis) run under it; then it
 * is released on all servers by compare-and-delete. */
lab_strategy_fn lab_redlock_lock;

#endif
