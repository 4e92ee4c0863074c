/* lab_db.h: the PostgreSQL strategies of the laboratory. They sell from
 * lab_stock.stock and record each sale as a row of lab_sales (item_id,
 * strategy) in the statement or transaction that takes the unit. */
#ifndef SECKILL_LAB_DB_H
#define SECKILL_LAB_DB_H

#include "lab_strategy.h"

/* SELECT stock, check in code, work, UPDATE stock = <read value - 1>. */
sk_status lab_db_read_modify_write(lab_ctx *c, const lab_request *r, int64_t *remaining);
/* One UPDATE ... SET stock = stock - 1 WHERE stock > 0; with a delay, the
 * work follows in its transaction (holding the row lock). */
sk_status lab_db_single_update(lab_ctx *c, const lab_request *r, int64_t *remaining);
/* A transaction: SELECT ... FOR UPDATE, check, work, UPDATE. */
sk_status lab_db_for_update(lab_ctx *c, const lab_request *r, int64_t *remaining);
/* SELECT stock, version; check, work; UPDATE ... WHERE version = <read>;
 * retried on a conflict until the wait runs out (429 busy). */
sk_status lab_db_optimistic(lab_ctx *c, const lab_request *r, int64_t *remaining);
/* A transaction that first takes pg_advisory_xact_lock(item) (waiting in
 * PostgreSQL's queue, without a bound: no 429), then runs check, work and
 * the read-modify-write of lab_stock.stock; COMMIT frees the lock. */
sk_status lab_db_advisory(lab_ctx *c, const lab_request *r, int64_t *remaining);
/* lab_stock.stock of r->item. */
sk_status lab_db_remaining(lab_ctx *c, const lab_request *r, int64_t *remaining);

/* The read-modify-write counter over lab_stock.stock (no guard of its own),
 * for the lock strategies that keep their stock in PostgreSQL. */
extern const lab_counter lab_db_stock;

#endif
