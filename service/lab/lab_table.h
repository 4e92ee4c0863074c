/* lab_table.h: the laboratory's one table of strategies (name -> function,
 * family, verdict): the only file that knows every family. */
#ifndef SECKILL_LAB_TABLE_H
#define SECKILL_LAB_TABLE_H

#include <stddef.h>

#include "lab_strategy.h"

typedef struct lab_strategy {
    const char *name;
    const char *family; /* "local", "db", "redis" or "lock" */
    int safe;           /* EXPERIMENTS.md's verdict: 1 never oversells (one instance) */
    lab_strategy_fn *run;
    lab_remaining_fn *remaining;
    /* Locks it holds outside Redis and PostgreSQL (the audit counts those
     * two for every strategy), as a count; NULL for none. */
    lab_remaining_fn *locks;
} lab_strategy;

/* The strategy named by the len bytes at name; NULL when there is none. */
const lab_strategy *lab_table_find(const char *name, size_t len);

/* The table, for listings: strategies 0 .. lab_table_count() - 1. */
size_t lab_table_count(void);
const lab_strategy *lab_table_at(size_t i);

/* Frees what the families keep per lab thread in c (the reentrant lock's
 * watchdog and subscriber, Redlock's connections); before lab_ctx_free(). */
void lab_table_close_ctx(lab_ctx *c);

#endif
