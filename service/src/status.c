/* status.c: the only place where a domain outcome becomes an HTTP status. */
#include "status.h"

static const struct {
    int http;
    const char *code;
} table[SK_STATUS_COUNT] = {
    [SK_OK] = {200, "ok"},
    [SK_QUEUED] = {202, "queued"},
    [SK_CREATED] = {201, "created"},
    [SK_SOLD_OUT] = {409, "sold_out"},
    [SK_ALREADY_PURCHASED] = {409, "already_purchased"},
    [SK_IN_PROGRESS] = {429, "in_progress"},
    [SK_BUSY] = {429, "busy"},
    [SK_FENCED] = {409, "fenced"},
    [SK_NOT_FOUND] = {404, "not_found"},
    [SK_ITEM_EXISTS] = {409, "item_exists"},
    [SK_INVALID] = {400, "invalid_request"},
    [SK_UNAUTHORIZED] = {401, "unauthorized"},
    [SK_METHOD_NOT_ALLOWED] = {405, "method_not_allowed"},
    [SK_TOO_LARGE] = {413, "payload_too_large"},
    [SK_BACKEND_DOWN] = {503, "backend_unavailable"},
    [SK_QUEUE_FULL] = {503, "queue_full"},
    [SK_INTERNAL] = {500, "internal_error"},
    [SK_RATE_LIMITED] = {429, "rate_limited"},
    [SK_NOT_CONFIGURED] = {503, "not_configured"},
};

int sk_status_http(sk_status s)
{
    return (unsigned)s < SK_STATUS_COUNT ? table[s].http : 500;
}

const char *sk_status_code(sk_status s)
{
    return (unsigned)s < SK_STATUS_COUNT ? table[s].code : "internal_error";
}
