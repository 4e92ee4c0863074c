/* lab_table.c: the strategy table. */
#include "lab_table.h"

#include <hiredis/hiredis.h>
#include <string.h>

#include "lab_db.h"
#include "lab_fence.h"
#include "lab_local.h"
#include "lab_lock.h"
#include "lab_redis.h"
#include "lab_redlock.h"
#include "lab_reentrant.h"
#include "lab_watchdog.h"
#include "lab_zookeeper.h"

/* In EXPERIMENTS.md's order (redis_lock_fenced beside redis_lock, pg_advisory
 * beside pg_lock_table); the verdicts are the documents'. Only
 * zookeeper_lock holds locks outside Redis and PostgreSQL. */
static const lab_strategy table[] = {
    {"local_unsafe", "local", 0, lab_local_unsafe, lab_local_remaining, NULL},
    {"local_atomic_check", "local", 0, lab_local_atomic_check, lab_local_remaining, NULL},
    {"local_mutex", "local", 1, lab_local_mutex, lab_local_remaining, NULL},
    {"db_read_modify_write", "db", 0, lab_db_read_modify_write, lab_db_remaining, NULL},
    {"db_single_update", "db", 1, lab_db_single_update, lab_db_remaining, NULL},
    {"db_for_update", "db", 1, lab_db_for_update, lab_db_remaining, NULL},
    {"db_optimistic", "db", 1, lab_db_optimistic, lab_db_remaining, NULL},
    {"redis_read_check_decr", "redis", 0, lab_redis_read_check_decr, lab_redis_remaining, NULL},
    {"redis_watch", "redis", 1, lab_redis_watch, lab_redis_remaining, NULL},
    {"redis_lock_setnx_expire", "lock", 1, lab_lock_setnx_expire, lab_redis_remaining, NULL},
    {"redis_lock_getset", "lock", 1, lab_lock_getset, lab_redis_remaining, NULL},
    {"redis_lock", "lock", 1, lab_lock_redis, lab_redis_remaining, NULL},
    {"redis_lock_fenced", "lock", 1, lab_fence_redis_lock, lab_redis_remaining, NULL},
    {"redis_lock_reentrant", "lock", 1, lab_reentrant_lock, lab_redis_remaining, NULL},
    {"redlock", "lock", 1, lab_redlock_lock, lab_redis_remaining, NULL},
    {"pg_lock_table", "lock", 1, lab_lock_pg_table, lab_db_remaining, NULL},
    {"pg_advisory", "lock", 1, lab_db_advisory, lab_db_remaining, NULL},
    {"zookeeper_lock", "lock", 1, lab_zookeeper_lock, lab_redis_remaining, lab_zookeeper_locks},
    {"segmented", "lock", 1, lab_lock_segmented, lab_lock_segments_remaining, NULL},
    {"lua_reserve", "redis", 1, lab_redis_lua_reserve, lab_redis_state_remaining, NULL},
};

#define NSTRATEGIES (sizeof(table) / sizeof(table[0]))

const lab_strategy *lab_table_find(const char *name, size_t len)
{
    for (size_t i = 0; i < NSTRATEGIES; i++)
        if (strlen(table[i].name) == len && memcmp(table[i].name, name, len) == 0)
            return &table[i];
    return NULL;
}

size_t lab_table_count(void)
{
    return NSTRATEGIES;
}

const lab_strategy *lab_table_at(size_t i)
{
    return i < NSTRATEGIES ? &table[i] : NULL;
}

void lab_table_close_ctx(lab_ctx *c)
{
    lab_watchdog_free(c->watchdog);
    c->watchdog = NULL;
    if (c->subscriber)
        redisFree(c->subscriber);
    c->subscriber = NULL;
    lab_redlock_free(c->redlock);
    c->redlock = NULL;
}
