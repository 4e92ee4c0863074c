/* gate.h: what one server instance knows of an item without asking Redis,
 * so that the storms around a sale cost Redis nothing:
 *   - sold out: once Redis said an item is sold out, purchases of it are
 *     answered 409 from memory. The flag belongs to a stock version (a round,
 *     and the restocks within it, reserve_stock_version()): a reset or a
 *     restock announces a newer version and older flags stop counting, even
 *     one set late by a request that was in flight during the change; and
 *     once a second a purchase goes to Redis all the same, whose answer
 *     carries the current version, should an announcement be lost.
 *   - the sale window: the start and end Redis's answers carried, for the
 *     round they came from, so that the pre-start storm is answered
 *     not_started from memory (purchase.c decides with Redis's clock).
 *   - archived: the item is off sale for good (announced, or answered by
 *     Redis), so its purchases are answered 404 from memory.
 * Lock-free. */
#ifndef SECKILL_GATE_H
#define SECKILL_GATE_H

#include <stdint.h>

typedef struct gate gate;

/* capacity: items tracked at most (rounded up to a power of two); items past
 * it are simply never remembered, which costs speed, not correctness. */
gate *gate_create(unsigned capacity);
void gate_free(gate *g);

/* Redis said item is sold out at stock version `version`. */
void gate_set_sold_out(gate *g, int64_t item, int64_t version);

/* Stock version `version` of item began (a round or a restock, announced
 * or carried by a reserve answer): flags of older versions stop counting. */
void gate_new_version(gate *g, int64_t item, int64_t version);

/* Forgets every flag and window (after missed announcements, e.g. a lost
 * subscription). */
void gate_clear_all(gate *g);

/* How many items are flagged sold out now (for the metrics): a split item
 * once every one of its segments is. */
int64_t gate_sold_out_count(gate *g);

/* A flagged item lets one purchase through to Redis this often, so that a
 * lost announcement costs a second at most. */
#define GATE_PROBE_MS 1000

/* True when item is flagged sold out at its latest known version, except
 * for one call a GATE_PROBE_MS (now_ms: a monotonic clock), which goes to
 * Redis to learn the current version. */
int gate_is_sold_out(gate *g, int64_t item, int64_t now_ms);

/* Redis said item's round `round` sells from starts_ms to ends_ms (Unix ms,
 * 0: no bound). */
void gate_set_window(gate *g, int64_t item, int64_t round, int64_t starts_ms, int64_t ends_ms);

/* The window of item's latest known round: 1 with *starts_ms and *ends_ms
 * set, or 0 when unknown. */
int gate_window(gate *g, int64_t item, int64_t *starts_ms, int64_t *ends_ms);

/* Redis said item is split into `segments` segments (keys.h; 1: not
 * split). A segment's sold-out flags and versions are kept under its key
 * id, like an item's. */
void gate_set_segments(gate *g, int64_t item, int segments);

/* The item's segments, or 0 when no answer said yet. */
int gate_segments(gate *g, int64_t item);

/* item was archived (an announcement, or a reserve answer). For good:
 * nothing un-archives an item, so gate_clear_all keeps it. */
void gate_set_archived(gate *g, int64_t item);

/* True once item is known archived. */
int gate_is_archived(gate *g, int64_t item);

#endif
