/* cross_origin.h: the CORS headers of the answers, for the shop's pages on
 * other origins (cors_origins, cors.h): which routes a buyer's browser may
 * call from one (router_cross_origin), the preflight, and the headers an
 * actual answer carries. */
#ifndef SECKILL_CROSS_ORIGIN_H
#define SECKILL_CROSS_ORIGIN_H

#include "http_server.h"
#include "router.h"

/* Before the answer of route: Vary: Origin on every answer of a route a
 * page on another origin may call (when origins is not empty), so that no
 * cache hands one origin's answer to another; and when the request's
 * Origin is one of origins, Access-Control-Allow-Origin (that origin) and
 * Access-Control-Expose-Headers. Nothing for any other route. */
void cross_origin_headers(http_exchange *ex, const char *origins, route_id route);

/* Answers OPTIONS on a known path: 204 with allow as Allow, and for a
 * preflight (Origin and Access-Control-Request-Method) from one of origins
 * to a route a page on another origin may call, what the browser may send:
 * Access-Control-Allow-Origin, -Methods, -Headers (Authorization,
 * Content-Type), -Max-Age and Vary: Origin. */
void cross_origin_preflight(http_exchange *ex, const char *origins, const char *allow);

#endif
