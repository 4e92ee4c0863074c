/* lab_routes.c: the laboratory's route table, registered in the product's
 * router (router_part_routes). Pure data, compiled into seckill_server in
 * every build (CMakeLists.txt), so a server without the laboratory still
 * knows these paths and answers them 404 lab_off. */
#include "lab_routes.h"

const router_part_route router_part_routes[] = {
    {ROUTE_LAB_LIST, "GET", "/api/v1/experiments", "experiments", "GET, HEAD", CREDENTIAL_NONE},
    /* GET as well, so that a bare `ab URL` buys. */
    {ROUTE_LAB_PURCHASE, "GET", "/api/v1/experiments/{name}/purchase", "experiment_purchase",
     "GET, HEAD, POST", CREDENTIAL_NONE},
    {ROUTE_LAB_PURCHASE, "POST", "/api/v1/experiments/{name}/purchase", "experiment_purchase",
     "GET, HEAD, POST", CREDENTIAL_NONE},
    {ROUTE_LAB_AUDIT, "GET", "/api/v1/experiments/{name}/audit", "experiment_audit", "GET, HEAD",
     CREDENTIAL_NONE},
    /* `make experiments`' results, read by the /lab page. */
    {ROUTE_LAB_RESULTS, "GET", "/lab/results.json", "lab_results", "GET, HEAD", CREDENTIAL_NONE},
};

const size_t router_part_nroutes = sizeof(router_part_routes) / sizeof(router_part_routes[0]);
