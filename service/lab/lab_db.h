/* lab_db.h: the PostgreSQL strategies of the laboratory. They sell from
 * lab_stock.stock and record each sale as a row of lab_sales (item_id,
 * strategy) in the statement or transaction that takes the unit. */
#ifndef SECKILL_LAB_DB_H
#define SECKILL_LAB_DB_H

#include "lab_strategy.h"

/* SELECT stock, check in code, work, UPDATE stock = <read value - 1>. */
lab_strategy_fn lab_db_read_modify_write;
/* One UPDATE ... SET stock = stock - 1 WHERE stock > 0; with a delay, the
 * work follows in its transaction (holding the row lock). */
lab_strategy_fn lab_db_single_update;
/* A transaction: SELECT ... FOR UPDATE, check, work, UPDATE. */
lab_strategy_fn lab_db_for_update;
/* SELECT stock, version; check, work; UPDATE ... WHERE version = <read>;
 * retried on a conflict until the wait runs out (429 busy). */
lab_strategy_fn lab_db_optimistic;
/* A transaction that first takes pg_advisory_xact_lock(item) (waiting in
 * PostgreSQL's queue, without a bound: no 429), then runs check, work and
 * the read-modify-write of lab_stock.stock; COMMIT frees the lock. */
lab_strategy_fn lab_db_advisory;
/* lab_stock.stock of r->item. */
lab_remaining_fn lab_db_remaining;

/* The read-modify-write counter over lab_stock.stock (no guard of its own),
 * for the lock strategies that keep their stock in PostgreSQL. */
extern const lab_counter lab_db_stock;

#endif
