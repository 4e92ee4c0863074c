/* purchase_reply.h: what a buyer hears at the end of a purchase (the body,
 * the status, Retry-After) and the counter it moves in /metrics. Each call
 * answers ex and nothing else: the caller frees its own purchase. */
#ifndef SECKILL_PURCHASE_REPLY_H
#define SECKILL_PURCHASE_REPLY_H

#include <stdint.h>

#include "app.h"
#include "http_server.h"
#include "json_io.h"
#include "reserve_batch.h"

/* Redis gave no usable answer: 503, nothing was sold to this buyer. */
void purchase_reply_failed(app *a, http_exchange *ex);

/* The answer to buyer ex (order order_id of quantity units) once its way
 * ends, from Redis's answer ans about the item it: queued (202, unless the
 * replicas did not confirm it: 503 unconfirmed), a refusal, or 503 (ans is
 * RESERVE_BAD_REPLY or of no known outcome). */
void purchase_reply_answer(app *a, http_exchange *ex, int64_t order_id, int quantity,
                           const reserve_item *it, const reserve_answer *ans, int confirmed);

/* Reserved, but no reply or no replica confirmed it in time: the order may
 * still go through (or be lost with its master), so the buyer hears 503
 * with the order id to read later. */
void purchase_reply_unconfirmed(app *a, http_exchange *ex, int64_t order_id);

/* From memory: the item is archived (404), or sold out (409, counted as
 * answered by the flag). */
void purchase_reply_archived(app *a, http_exchange *ex);
void purchase_reply_sold_out_flag(app *a, http_exchange *ex);

/* A refusal with what the buyer needs to know of it (not counted: the
 * caller counts it). */
void purchase_reply_refusal(http_exchange *ex, const purchase_refusal *r);

#endif
