/* lab_status.h: the laboratory's own outcomes. The product's (status.h)
 * know none of them: they are numbered from SK_STATUS_PART on, returned as
 * any sk_status by the strategies, and mapped to an HTTP status, a code and
 * a message here alone (lab_status_reply). */
#ifndef SECKILL_LAB_STATUS_H
#define SECKILL_LAB_STATUS_H

#include "http_server.h"
#include "status.h"

/* Values of sk_status itself (an enum of their own would be another type). */
#define SK_BUSY ((sk_status)(SK_STATUS_PART + 0))   /* a lab lock not won in time, or conflicts */
#define SK_FENCED ((sk_status)(SK_STATUS_PART + 1)) /* a write with an older fencing token */
#define SK_NOT_CONFIGURED ((sk_status)(SK_STATUS_PART + 2)) /* a strategy's servers not set */
#define SK_NOT_LAB_ITEM ((sk_status)(SK_STATUS_PART + 3))   /* an item not made with "lab": true */
#define LAB_STATUS_END (SK_STATUS_PART + 4)

/* The HTTP status and code of st, one of the laboratory's or the product's. */
int lab_status_http(sk_status st);
const char *lab_status_code(sk_status st);

/* Answers {"error": code, "message": message} for st, one of the
 * laboratory's outcomes or the product's; message NULL: the outcome's own. */
void lab_status_reply(http_exchange *ex, sk_status st, const char *message);

#endif
