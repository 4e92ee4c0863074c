/* lab_routes.h: the laboratory's routes, which it registers in the
 * product's router (router.h's router_part_routes). lab_routes.c is linked
 * into every build of the server, the one without the laboratory too, so
 * that its paths are known there and answered 404 lab_off (api.c). */
#ifndef SECKILL_LAB_ROUTES_H
#define SECKILL_LAB_ROUTES_H

#include "router.h"

/* Values of route_id itself, numbered from ROUTE_PART. */
#define ROUTE_LAB_LIST ((route_id)(ROUTE_PART + 0))     /* GET /api/v1/experiments */
#define ROUTE_LAB_PURCHASE ((route_id)(ROUTE_PART + 1)) /* GET|POST .../{strategy}/purchase */
#define ROUTE_LAB_AUDIT ((route_id)(ROUTE_PART + 2))    /* GET .../{strategy}/audit */
#define ROUTE_LAB_RESULTS ((route_id)(ROUTE_PART + 3))  /* GET /lab/results.json */

#endif
