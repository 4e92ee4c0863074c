/* api.h: the HTTP API v1: routing, input validation, who may call what
 * (identity.h), and the dispatch of each route to the purchase path, the
 * blocking pool or the plugged-in part (app.h). */
#ifndef SECKILL_API_H
#define SECKILL_API_H

#include "http_server.h"
#include "status.h"

/* The http_handler of the server; ctx is the app. */
void api_handle(void *ctx, http_exchange *ex);

#endif
