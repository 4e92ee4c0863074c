/* status.h: the one outcome enum of the domain, and its single mapping to
 * HTTP statuses, error codes and messages (a plugged-in part's own outcomes,
 * from SK_STATUS_PART on, are mapped by that part). */
#ifndef SECKILL_STATUS_H
#define SECKILL_STATUS_H

typedef enum sk_status {
    SK_OK = 0,
    SK_QUEUED,  /* purchase accepted, order on the queue */
    SK_CREATED, /* item created */
    SK_SOLD_OUT,
    SK_LIMIT_REACHED,      /* the buyer's units would pass the item's per_buyer_limit */
    SK_INSUFFICIENT_STOCK, /* fewer units remain than the quantity asked for */
    SK_NOT_STARTED,        /* before the sale window's start */
    SK_ENDED,              /* at or after the sale window's end */
    SK_NOT_FOUND,
    SK_ITEM_EXISTS,
    SK_INVALID, /* bad input */
    SK_UNAUTHORIZED,
    SK_METHOD_NOT_ALLOWED,
    SK_TOO_LARGE,
    SK_BACKEND_DOWN, /* Redis or PostgreSQL did not answer */
    SK_QUEUE_FULL,   /* max_pending_orders accepted orders wait for PostgreSQL */
    SK_INTERNAL,
    SK_RATE_LIMITED,    /* the buyer's token bucket is empty */
    SK_LAB_OFF,         /* the laboratory is off (lab = off) or not built in */
    SK_FORBIDDEN,       /* a buyer acting for another buyer */
    SK_ORDER_PAID,      /* the order is paid: it cannot be cancelled */
    SK_ORDER_CANCELLED, /* the order was cancelled: it cannot be paid */
    SK_ORDER_EXPIRED,   /* the order expired unpaid: it cannot be paid or cancelled */
    SK_ORDER_FINAL,     /* the item has no payment step: its orders are final */
    SK_UNCONFIRMED,     /* reserved, but no replica confirmed it in time (reserve_wait_replicas) */
    SK_ARCHIVED,        /* the item is archived: no reset, restock or sale any more */
    SK_BUYER_REQUIRED,  /* an anonymous purchase where the limit is below the stock */
    SK_IN_PROGRESS,     /* the buyer's previous order is still being created (order lock) */
    /* The waiting room (issue 27): a purchase's admission token, and the queue. */
    SK_ADMISSION_MISSING,     /* a room item's purchase without an admission token */
    SK_ADMISSION_FORGED,      /* not a token of ours */
    SK_ADMISSION_EXPIRED,     /* the admission window is over */
    SK_ADMISSION_WRONG_BUYER, /* another buyer's */
    SK_ADMISSION_WRONG_ITEM,  /* another item's */
    SK_ADMISSION_WRONG_ROUND, /* another round's */
    SK_NOT_A_ROOM,            /* the queue of an item that sells as a race */
    SK_NOT_IN_QUEUE,          /* a poll of a buyer who has not joined */
    /* Proof-of-work (issue 28): a join's or an entry's solution (pow.h). */
    SK_POW_MISSING,      /* an item with pow_maxnumber, and no "altcha" */
    SK_POW_MALFORMED,    /* not ALTCHA's payload */
    SK_POW_FORGED,       /* a challenge we did not sign */
    SK_POW_WRONG_NUMBER, /* the number does not solve the challenge */
    SK_POW_EXPIRED,      /* the challenge's pow_ttl_s is over */
    SK_POW_WRONG_ITEM,   /* another item's challenge */
    SK_POW_WRONG_BUYER,  /* another buyer's challenge */
    SK_POW_REPLAYED,     /* a solution that already entered once */
    SK_POW_OFF,          /* a challenge asked of an item without pow_maxnumber */
    /* The draw (issue 28): entries, the draw, its audit. */
    SK_DRAW_ITEM,        /* a purchase of an item sold by a draw */
    SK_NOT_A_DRAW,       /* an entry, a draw or an audit of an item that is not drawn */
    SK_ENTRIES_NOT_OPEN, /* an entry before entries_open_at */
    SK_ENTRIES_CLOSED,   /* an entry at or after entries_close_at, or after the draw */
    SK_NOT_ENTERED,      /* the entry of a buyer who has not entered */
    SK_ENTRIES_OPEN,     /* a draw before entries_close_at */
    SK_NOT_DRAWN,        /* the audit of a draw that has not run */
    SK_STATUS_COUNT,
    /* A part plugged into the server (the laboratory: lab_status.h) numbers
     * outcomes of its own from here, and maps them to HTTP itself: the
     * functions below know none of them (500 internal_error). */
    SK_STATUS_PART = 64
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
