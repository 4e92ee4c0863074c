/* api.h: the HTTP API v1: routing, input validation, admin auth, and the
 * dispatch of each route to the purchase path or the blocking pool. */
#ifndef SECKILL_API_H
#define SECKILL_API_H

#include "http_server.h"
#include "status.h"

/* The http_handler of the server; ctx is the app. */
void api_handle(void *ctx, http_exchange *ex);

/* Answers {"error": code of s, "message": message} with the status of s. */
void api_reply_error(http_exchange *ex, sk_status s, const char *message);

/* Constant-time check of "Bearer <token>" against the configured token; an
 * empty configured token refuses everyone. Returns 1 when authorized. */
int api_authorized(const char *header, const char *token);

#endif
