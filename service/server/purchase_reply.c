/* purchase_reply.c: the answers a buyer hears, and their counters. */
#include "purchase_reply.h"

/* Each outcome's counter in /metrics. */
static const metrics_outcome counted[] = {
    [RESERVE_QUEUED] = METRICS_QUEUED,
    [RESERVE_NOT_STARTED] = METRICS_NOT_STARTED,
    [RESERVE_ENDED] = METRICS_ENDED,
    [RESERVE_SOLD_OUT] = METRICS_SOLD_OUT,
    [RESERVE_LIMIT_REACHED] = METRICS_LIMIT_REACHED,
    [RESERVE_INSUFFICIENT_STOCK] = METRICS_INSUFFICIENT_STOCK,
    [RESERVE_QUEUE_FULL] = METRICS_QUEUE_FULL,
    [RESERVE_UNKNOWN_ITEM] = METRICS_UNKNOWN_ITEM,
    [RESERVE_ARCHIVED] = METRICS_ARCHIVED,
    [RESERVE_BUYER_REQUIRED] = METRICS_BUYER_REQUIRED,
    [RESERVE_IN_PROGRESS] = METRICS_IN_PROGRESS,
    [RESERVE_ADMISSION_MISSING] = METRICS_ADMISSION_REFUSED,
    [RESERVE_ADMISSION_ROUND] = METRICS_ADMISSION_REFUSED,
    [RESERVE_ADMISSION_EXPIRED] = METRICS_ADMISSION_REFUSED,
    [RESERVE_DRAW_ITEM] = METRICS_ADMISSION_REFUSED, /* refused by its admission: a draw */
};

/* What a buyer whose order lock stands hears in Retry-After (seconds): a
 * worker persists an order within milliseconds, the lock's TTL bounds it. */
#define PURCHASE_IN_PROGRESS_RETRY_S 1

/* What a buyer of an archived item reads (404, as for no item). */
#define PURCHASE_ARCHIVED_MESSAGE "the item is archived: it is no longer on sale"

void purchase_reply_failed(app *a, http_exchange *ex)
{
    metrics_purchase(a->metrics, METRICS_FAILED);
    metrics_backend_error(a->metrics, METRICS_REDIS);
    http_exchange_reply_error(ex, SK_BACKEND_DOWN, "Redis is unavailable");
}

void purchase_reply_refusal(http_exchange *ex, const purchase_refusal *r)
{
    char body[512];
    int n = json_io_purchase_refused(body, sizeof(body), r);
    if (n < 0)
        http_exchange_reply_error(ex, r->status, NULL);
    else
        http_exchange_reply(ex, sk_status_http(r->status), body, (size_t)n, NULL);
}

void purchase_reply_archived(app *a, http_exchange *ex)
{
    metrics_purchase(a->metrics, METRICS_ARCHIVED);
    http_exchange_reply_error(ex, SK_NOT_FOUND, PURCHASE_ARCHIVED_MESSAGE);
}

void purchase_reply_sold_out_flag(app *a, http_exchange *ex)
{
    metrics_purchase(a->metrics, METRICS_SOLD_OUT_FLAG);
    http_exchange_reply_error(ex, SK_SOLD_OUT, NULL);
}

void purchase_reply_unconfirmed(app *a, http_exchange *ex, int64_t order_id)
{
    metrics_purchase(a->metrics, METRICS_UNCONFIRMED);
    char body[512];
    int n = json_io_purchase_unconfirmed(body, sizeof(body), order_id);
    if (n < 0)
        http_exchange_reply_error(ex, SK_UNCONFIRMED, NULL);
    else
        http_exchange_reply(ex, sk_status_http(SK_UNCONFIRMED), body, (size_t)n, NULL);
}

/* Redis's answer, one of the outcomes counted. */
static void reply_outcome(app *a, http_exchange *ex, int64_t order_id, int quantity,
                          const reserve_item *it, const reserve_answer *ans)
{
    if (ans->outcome == RESERVE_ARCHIVED) {
        purchase_reply_archived(a, ex);
        return;
    }
    metrics_purchase(a->metrics, counted[ans->outcome]);
    if (ans->outcome == RESERVE_QUEUED) {
        char body[192];
        int n = json_io_purchase_queued(body, sizeof(body), order_id, quantity, ans->remaining);
        http_exchange_reply(ex, sk_status_http(SK_QUEUED), body, (size_t)n, NULL);
        return;
    }
    if (ans->outcome == RESERVE_UNKNOWN_ITEM) {
        http_exchange_reply_error(ex, SK_NOT_FOUND, "no such item");
        return;
    }
    if (counted[ans->outcome] == METRICS_ADMISSION_REFUSED) {
        http_exchange_reply_error(ex, reserve_status(ans->outcome), NULL);
        return;
    }
    if (ans->outcome == RESERVE_IN_PROGRESS) /* the worker persists within moments */
        http_exchange_retry_after(ex, PURCHASE_IN_PROGRESS_RETRY_S);
    purchase_refusal r = {.status = reserve_status(ans->outcome),
                          .remaining = ans->remaining,
                          .bought = ans->bought,
                          .per_buyer_limit = it->per_buyer_limit,
                          .quantity = quantity,
                          .starts_ms = it->starts_ms,
                          .starts_in_ms = it->starts_ms - it->now_ms,
                          .ends_ms = it->ends_ms};
    purchase_reply_refusal(ex, &r);
}

void purchase_reply_answer(app *a, http_exchange *ex, int64_t order_id, int quantity,
                           const reserve_item *it, const reserve_answer *ans, int confirmed)
{
    if (ans->outcome == RESERVE_BAD_REPLY || (unsigned)ans->outcome > RESERVE_DRAW_ITEM)
        purchase_reply_failed(a, ex);
    else if (ans->outcome == RESERVE_QUEUED && !confirmed)
        purchase_reply_unconfirmed(a, ex, order_id);
    else
        reply_outcome(a, ex, order_id, quantity, it, ans);
}
