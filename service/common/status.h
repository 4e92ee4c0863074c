/* status.h: the one outcome enum of the domain, and its single mapping to
 * HTTP statuses, error codes and messages. */
#ifndef SECKILL_STATUS_H
#define SECKILL_STATUS_H

typedef enum sk_status {
    SK_OK = 0,
    SK_QUEUED,  /* purchase accepted, order on the queue */
    SK_CREATED, /* item created */
    SK_SOLD_OUT,
    SK_ALREADY_PURCHASED,
    SK_IN_PROGRESS, /* the buyer's lock is held by another request */
    SK_BUSY,        /* a lab lock not won within its wait, or too many conflicts */
    SK_FENCED,      /* a lab write refused: its fencing token is older than one seen */
    SK_NOT_FOUND,
    SK_ITEM_EXISTS,
    SK_INVALID, /* bad input */
    SK_UNAUTHORIZED,
    SK_METHOD_NOT_ALLOWED,
    SK_TOO_LARGE,
    SK_BACKEND_DOWN, /* Redis or PostgreSQL did not answer */
    SK_QUEUE_FULL,   /* max_pending_orders accepted orders wait for PostgreSQL */
    SK_INTERNAL,
    SK_RATE_LIMITED,   /* the buyer's token bucket is empty */
    SK_NOT_CONFIGURED, /* a lab strategy whose servers are not configured */
    SK_STATUS_COUNT
} sk_status;

/* HTTP status code of an outcome. */
int sk_status_http(sk_status s);

/* The machine-readable code of an outcome ("sold_out", ...), as sent in
 * {"error": code} and {"status": code}. Static storage. */
const char *sk_status_code(sk_status s);

/* The message a client reads for an outcome when the caller has nothing more
 * specific to say ("the item is sold out"). Static storage. */
const char *sk_status_message(sk_status s);

#endif
