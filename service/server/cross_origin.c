/* cross_origin.c: any preflight that is not allowed gets the same 204
 * without any Access-Control-* header, which the browser takes as a
 * refusal: OPTIONS changes nothing, so refusing it (403) would protect
 * nothing, and every client still learns what Allow says. */
#include "cross_origin.h"

#include "cors.h"

void cross_origin_headers(http_exchange *ex, const char *origins, route_id route)
{
    if (!origins[0] || !router_cross_origin(route))
        return;
    http_exchange_add_header(ex, "Vary", "Origin");
    const char *origin = http_exchange_header(ex, "Origin");
    if (!cors_allowed(origins, origin))
        return;
    http_exchange_add_header(ex, "Access-Control-Allow-Origin", origin);
    http_exchange_add_header(ex, "Access-Control-Expose-Headers", "Retry-After, X-Request-Id");
}

void cross_origin_preflight(http_exchange *ex, const char *origins, const char *allow)
{
    /* The method is echoed only once the router knows it for this path: one
     * of the route table's, never the request's own text. */
    const char *method = http_exchange_header(ex, "Access-Control-Request-Method");
    const char *origin = http_exchange_header(ex, "Origin");
    route_match asked;
    if (method && cors_allowed(origins, origin) &&
        router_match(method, http_exchange_path(ex), &asked) == SK_OK &&
        router_cross_origin(asked.route)) {
        http_exchange_add_header(ex, "Access-Control-Allow-Origin", origin);
        http_exchange_add_header(ex, "Access-Control-Allow-Methods", method);
        http_exchange_add_header(ex, "Access-Control-Allow-Headers", "Authorization, Content-Type");
        http_exchange_add_header(ex, "Access-Control-Max-Age", "600");
    }
    if (origins[0])
        http_exchange_add_header(ex, "Vary", "Origin");
    http_exchange_reply_typed(ex, 204, "", 0, NULL, allow);
}
